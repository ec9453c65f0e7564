// Redisson's RLock, the JVM side of `benches/peers/bench-peers`, timed in the three scenarios of
// `baton bench` and printed as one JSON object, the shape every side of the bench prints:
//
//   java -cp … PeersRedisson 127.0.0.1:31010 DURATION_MS ITERATIONS HANDOFF_MAX
//
// `lock()` without a lease time: Redisson's watchdog (30 s), as baton's default lease.

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

public final class PeersRedisson {
    static final int MANY = 64;

    static String summary(List<Long> ns, double elapsedSec) {
        Collections.sort(ns);
        int n = ns.size();
        java.util.function.DoubleUnaryOperator q = p -> n == 0 ? 0 : ns.get((int) (p * (n - 1))) / 1000.0;
        String rate = elapsedSec > 0 ? String.format(Locale.ROOT, "%.1f", n / elapsedSec) : "null";
        // A timed loop ends just now: its wall-clock window, for bench-peers --cpu.
        double t1 = System.currentTimeMillis() / 1000.0;
        String window = elapsedSec > 0
                ? String.format(Locale.ROOT, ",\"t0_unix\":%.3f,\"t1_unix\":%.3f", t1 - elapsedSec, t1) : "";
        return String.format(Locale.ROOT, "{\"ops\":%d,\"ops_per_sec\":%s,\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f%s}",
                n, rate, q.applyAsDouble(0.5), q.applyAsDouble(0.99), q.applyAsDouble(1.0), window);
    }

    static String uncontended(RedissonClient r, int tasks, long durationMs, long iterations) throws Exception {
        List<RLock> locks = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            RLock l = r.getLock("bench/peer-jvm/" + tasks + "-" + System.nanoTime() + "/" + i);
            l.lock();
            l.unlock(); // warm-up: connections, scripts
            locks.add(l);
        }
        AtomicLong claimed = new AtomicLong();
        List<Long> all = Collections.synchronizedList(new ArrayList<>());
        long start = System.nanoTime();
        long deadline = start + durationMs * 1_000_000L;
        List<Thread> threads = new ArrayList<>();
        for (RLock l : locks) {
            Thread t = new Thread(() -> {
                List<Long> mine = new ArrayList<>();
                while (System.nanoTime() < deadline && claimed.incrementAndGet() <= iterations) {
                    long t0 = System.nanoTime();
                    l.lock();
                    l.unlock();
                    mine.add(System.nanoTime() - t0);
                }
                all.addAll(mine);
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
        return summary(new ArrayList<>(all), (System.nanoTime() - start) / 1e9);
    }

    // An RLock belongs to the thread that took it: each of the two handles is a thread of its own.
    static String handoff(RedissonClient r, long durationMs, int most) throws Exception {
        String name = "bench/peer-jvm/handoff-" + System.nanoTime();
        ExecutorService[] owners = {Executors.newSingleThreadExecutor(), Executors.newSingleThreadExecutor()};
        RLock lock = r.getLock(name);
        owners[0].submit(() -> lock.lock()).get();
        int holder = 0;
        List<Long> samples = new ArrayList<>();
        long deadline = System.nanoTime() + durationMs * 1_000_000L;
        while (samples.size() < most && System.nanoTime() < deadline) {
            int waiter = 1 - holder;
            Future<Long> granted = owners[waiter].submit(() -> {
                lock.lock();
                return System.nanoTime();
            });
            Thread.sleep(10);
            long t0 = System.nanoTime();
            owners[holder].submit(() -> lock.unlock()).get();
            samples.add(granted.get() - t0);
            holder = waiter;
        }
        owners[holder].submit(() -> lock.unlock()).get();
        for (ExecutorService e : owners) e.shutdown();
        return summary(samples, 0);
    }

    public static void main(String[] args) throws Exception {
        Config config = new Config();
        config.useSingleServer().setAddress("redis://" + args[0]).setConnectionPoolSize(MANY)
                .setConnectionMinimumIdleSize(MANY);
        long durationMs = Long.parseLong(args[1]);
        long iterations = Long.parseLong(args[2]);
        int most = Integer.parseInt(args[3]);
        RedissonClient r = Redisson.create(config);
        try {
            uncontended(r, 1, Math.min(durationMs, 2000), iterations); // JIT warm-up, not reported
            String one = uncontended(r, 1, durationMs, iterations);
            String many = uncontended(r, MANY, durationMs, iterations);
            String ho = handoff(r, durationMs, most);
            System.out.println("{\"scenarios\":{\"one\":" + one + ",\"many\":" + many + ",\"handoff\":" + ho + "}}");
        } finally {
            r.shutdown();
        }
    }
}
