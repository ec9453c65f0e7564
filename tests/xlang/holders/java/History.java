// The shared history of tests/xlang, as the JVM holders (RedissonHolder: Redisson; CuratorHolder: Curator;
// BatonHolder: baton's jar) write it: one appended JSON line per event (System.nanoTime is
// CLOCK_MONOTONIC on Linux, the clock of every holder), and the start barrier.
import java.io.File;
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

final class History {
    static final long WAIT_S = 90; // one acquire's bound: far above any fair share of a run

    private final Map<String, String> a;
    private final String via;

    History(Map<String, String> a, String via) {
        this.a = a;
        this.via = via;
    }

    /** `key=value` arguments, as every holder takes them. */
    static Map<String, String> args(String[] argv) {
        Map<String, String> a = new HashMap<>();
        for (String s : argv) {
            int i = s.indexOf('=');
            a.put(s.substring(0, i), s.substring(i + 1));
        }
        return a;
    }

    /** "ready", then wait (bounded) for the driver's go file: all holders start together. */
    void barrier(String mode) throws Exception {
        record("ready", mode, null, null);
        File go = new File(a.get("history") + ".go");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!go.exists()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no " + go + " within 120 s");
            }
            Thread.sleep(10);
        }
    }

    interface Hold {
        void release() throws Exception;
    }

    record Granted(Hold hold, Long token, String owner) {}

    interface Taker {
        Granted take() throws Exception;
    }

    /** Takes one name `n` times through `taker`, recording every ask, grant and release
     * ("grant" after the acquire returned, "release" before releasing: the recorded
     * interval lies inside the real hold). */
    void holds(String mode, Taker taker) throws Exception {
        int n = Integer.parseInt(a.getOrDefault("n", "3"));
        long holdMs = Long.parseLong(a.getOrDefault("hold_ms", "40"));
        barrier(mode);
        for (int i = 0; i < n; i++) {
            record("ask", mode, null, null);
            Granted g = taker.take();
            record("grant", mode, g.token(), g.owner());
            Thread.sleep(holdMs);
            record("release", mode, null, null);
            g.hold().release();
        }
    }

    /** The latch's side: "latch-down" counts it down `count` times, hold_ms apart, recording
     * each; "latch-wait" waits for it to open, recording when it did. */
    void latch(String kind, Hold countDown, Waiter await) throws Exception {
        barrier("latch");
        if (kind.equals("latch-down")) {
            long gap = Long.parseLong(a.getOrDefault("hold_ms", "200"));
            for (int i = Integer.parseInt(a.get("count")); i > 0; i--) {
                Thread.sleep(gap);
                record("countdown", "latch", null, null);
                countDown.release();
            }
        } else {
            check(await.await(), "the latch's wait");
            record("opened", "latch", null, null);
        }
    }

    interface Waiter {
        boolean await() throws Exception;
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what + " not acquired in " + WAIT_S + " s");
        }
    }

    synchronized void record(String ev, String mode, Long token, String owner) throws Exception {
        long t = System.nanoTime();
        String line = "{\"t\":" + t + ",\"ev\":\"" + ev + "\",\"id\":\"" + a.get("id")
                + "\",\"lang\":\"java\",\"via\":\"" + via + "\",\"mode\":\"" + mode + "\",\"token\":" + token
                + ",\"owner\":" + (owner == null ? "null" : "\"" + owner + "\"") + "}\n";
        try (FileOutputStream f = new FileOutputStream(a.get("history"), true)) { // O_APPEND
            f.write(line.getBytes(StandardCharsets.UTF_8)); // one write per line
        }
    }
}
