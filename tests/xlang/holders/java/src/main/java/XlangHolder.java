// A JVM holder of Redisson (Maven Central), contending with baton's holders on Redis's
// default layout: takes one name `n` times and records every ask, grant and release in the
// shared history (one appended JSON line per event; System.nanoTime is CLOCK_MONOTONIC on
// Linux, the clock of every holder).
//
//   java XlangHolder url=redis://… name=… kind=lock|fair|read|write|permit|pes id=jvm1 n=3 \
//       hold_ms=40 history=… [permits=2] [lease_ms=15000]
//   java XlangHolder … kind=latch-down|latch-wait count=3   (RCountDownLatch, below)
//
// lock = RFencedLock (an RLock whose tokens come from the counter baton's locks use), fair =
// RFairLock, read/write = RReadWriteLock, permit = RSemaphore, pes =
// RPermitExpirableSemaphore.
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

public final class XlangHolder {
    private static final long WAIT_S = 90; // one acquire's bound

    interface Hold {
        void release() throws Exception;
    }

    record Granted(Hold hold, Long token, String owner) {}

    interface Taker {
        Granted take() throws Exception;
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String s : argv) {
            int i = s.indexOf('=');
            a.put(s.substring(0, i), s.substring(i + 1));
        }
        Config cfg = new Config();
        cfg.useSingleServer().setAddress(a.get("url").split("\\?")[0]);
        RedissonClient r = Redisson.create(cfg);
        try {
            String kind = a.getOrDefault("kind", "lock");
            if (kind.startsWith("latch")) {
                latch(r, a, kind);
            } else {
                hold(r, a, kind);
            }
        } finally {
            r.shutdown();
        }
    }

    static void hold(RedissonClient r, Map<String, String> a, String kind) throws Exception {
        int n = Integer.parseInt(a.getOrDefault("n", "3"));
        long holdMs = Long.parseLong(a.getOrDefault("hold_ms", "40"));
        String name = a.get("name");
        String owner = r.getId() + ":" + Thread.currentThread().getId();
        Taker taker = switch (kind) {
            case "lock" -> () -> {
                RFencedLock l = r.getFencedLock(name);
                Long token = l.tryLockAndGetToken(WAIT_S, TimeUnit.SECONDS);
                check(token != null, "RFencedLock");
                return new Granted(l::unlock, token, owner);
            };
            case "fair" -> () -> locked(r.getFairLock(name), "RFairLock", owner);
            case "read" -> () -> locked(r.getReadWriteLock(name).readLock(), "read lock", owner);
            case "write" -> () -> locked(r.getReadWriteLock(name).writeLock(), "write lock", owner);
            case "permit" -> () -> {
                RSemaphore s = r.getSemaphore(name);
                s.trySetPermits(Integer.parseInt(a.get("permits")));
                check(s.tryAcquire(1, WAIT_S, TimeUnit.SECONDS), "RSemaphore");
                return new Granted(s::release, null, null);
            };
            case "pes" -> () -> {
                RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(name);
                s.trySetPermits(Integer.parseInt(a.get("permits")));
                long lease = Long.parseLong(a.getOrDefault("lease_ms", "15000"));
                String id = s.tryAcquire(WAIT_S * 1000, lease, TimeUnit.MILLISECONDS);
                check(id != null, "RPermitExpirableSemaphore");
                return new Granted(() -> s.release(id), null, id);
            };
            default -> throw new IllegalArgumentException("unknown kind " + kind);
        };
        String mode = kind.equals("fair") ? "lock" : kind.equals("pes") ? "permit" : kind;
        barrier(a, mode);
        for (int i = 0; i < n; i++) {
            record(a, "ask", mode, null, null);
            Granted g = taker.take();
            record(a, "grant", mode, g.token(), g.owner());
            Thread.sleep(holdMs);
            record(a, "release", mode, null, null);
            g.hold().release();
        }
    }

    // "ready", then wait (bounded) for the driver's go file: all holders start together.
    static void barrier(Map<String, String> a, String mode) throws Exception {
        record(a, "ready", mode, null, null);
        java.io.File go = new java.io.File(a.get("history") + ".go");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!go.exists()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no " + go + " within 120 s");
            }
            Thread.sleep(10);
        }
    }

    static Granted locked(RLock l, String what, String owner) throws Exception {
        check(l.tryLock(WAIT_S, TimeUnit.SECONDS), what);
        return new Granted(l::unlock, null, owner);
    }

    // latch-down: counts the latch down `count` times, hold_ms apart, recording each;
    // latch-wait: waits for it to open, recording when it did.
    static void latch(RedissonClient r, Map<String, String> a, String kind) throws Exception {
        RCountDownLatch l = r.getCountDownLatch(a.get("name"));
        if (kind.equals("latch-wait")) {
            l.trySetCount(Long.parseLong(a.get("count")));
        }
        barrier(a, "latch");
        if (kind.equals("latch-down")) {
            long gap = Long.parseLong(a.getOrDefault("hold_ms", "200"));
            for (int i = Integer.parseInt(a.get("count")); i > 0; i--) {
                Thread.sleep(gap);
                record(a, "countdown", "latch", null, null);
                l.countDown();
            }
        } else {
            check(l.await(WAIT_S, TimeUnit.SECONDS), "RCountDownLatch.await");
            record(a, "opened", "latch", null, null);
        }
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what + " not acquired in " + WAIT_S + " s");
        }
    }

    static synchronized void record(Map<String, String> a, String ev, String mode, Long token, String owner)
            throws Exception {
        long t = System.nanoTime();
        String line = "{\"t\":" + t + ",\"ev\":\"" + ev + "\",\"id\":\"" + a.get("id")
                + "\",\"lang\":\"java\",\"via\":\"redisson\",\"mode\":\"" + mode + "\",\"token\":" + token
                + ",\"owner\":" + (owner == null ? "null" : "\"" + owner + "\"") + "}\n";
        try (FileOutputStream f = new FileOutputStream(a.get("history"), true)) { // O_APPEND
            f.write(line.getBytes(StandardCharsets.UTF_8)); // one write per line
        }
    }
}
