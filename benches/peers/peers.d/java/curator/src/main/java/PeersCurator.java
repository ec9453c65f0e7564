// Apache Curator's InterProcessMutex on ZooKeeper, the JVM side of `benches/peers/bench-peers`,
// timed in the three scenarios of `baton bench` and printed as one JSON object, the shape
// every side of the bench prints (as PeersRedisson):
//
//   java -cp … PeersCurator 127.0.0.1:31030 DURATION_MS ITERATIONS HANDOFF_MAX
//
// Lock paths under /bench-curator/, apart from baton's bench/… names on the same server.

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class PeersCurator {
    static final int MANY = 64;
    // baton's zk:// defaults (core/src/store/zk/config.rs): 30 s session, 5 s connect.
    static final int SESSION_MS = 30_000;
    static final int CONNECT_MS = 5_000;
    // No wait here is unbounded: an acquire that takes this long is a failure, not a sample.
    static final long BOUND_S = 30;
    // As baton bench's SETTLE: the waiter is parked on its predecessor's watch, not still
    // creating its node, when the holder releases.
    static final long SETTLE_MS = 10;

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

    static CuratorFramework connect(String endpoints) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(endpoints, SESSION_MS, CONNECT_MS,
                new ExponentialBackoffRetry(100, 3));
        c.start();
        if (!c.blockUntilConnected((int) BOUND_S, TimeUnit.SECONDS)) {
            c.close();
            throw new IllegalStateException("no ZooKeeper session on " + endpoints + " within " + BOUND_S + " s");
        }
        return c;
    }

    static void acquire(InterProcessMutex m) throws Exception {
        if (!m.acquire(BOUND_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("acquire took over " + BOUND_S + " s");
        }
    }

    static String uncontended(CuratorFramework c, int tasks, long durationMs, long iterations) throws Exception {
        List<InterProcessMutex> locks = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            InterProcessMutex l = new InterProcessMutex(c, "/bench-curator/" + tasks + "-" + System.nanoTime() + "/" + i);
            acquire(l);
            l.release(); // warm-up: the parent container node, the code paths
            locks.add(l);
        }
        AtomicLong claimed = new AtomicLong();
        AtomicReference<Exception> failed = new AtomicReference<>();
        List<Long> all = Collections.synchronizedList(new ArrayList<>());
        long start = System.nanoTime();
        long deadline = start + durationMs * 1_000_000L;
        List<Thread> threads = new ArrayList<>();
        for (InterProcessMutex l : locks) {
            Thread t = new Thread(() -> {
                List<Long> mine = new ArrayList<>();
                try {
                    while (System.nanoTime() < deadline && claimed.incrementAndGet() <= iterations) {
                        long t0 = System.nanoTime();
                        acquire(l);
                        l.release();
                        mine.add(System.nanoTime() - t0);
                    }
                } catch (Exception e) {
                    failed.compareAndSet(null, e);
                }
                all.addAll(mine);
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
        if (failed.get() != null) throw failed.get();
        return summary(new ArrayList<>(all), (System.nanoTime() - start) / 1e9);
    }

    // Two handles as two processes would hold them: a CuratorFramework (a session) each, an
    // InterProcessMutex each on the one path. A mutex belongs to the thread that took it, so
    // each handle is a thread of its own. Each round: the waiter starts acquiring, the holder
    // lets it park, stamps the time and releases; the waiter stamps its grant.
    static String handoff(CuratorFramework[] clients, long durationMs, int most) throws Exception {
        String path = "/bench-curator/handoff-" + System.nanoTime();
        InterProcessMutex[] mutex = {new InterProcessMutex(clients[0], path), new InterProcessMutex(clients[1], path)};
        ExecutorService[] owners = {Executors.newSingleThreadExecutor(), Executors.newSingleThreadExecutor()};
        try {
            owners[0].submit(() -> { acquire(mutex[0]); return null; }).get(BOUND_S, TimeUnit.SECONDS);
            int holder = 0;
            List<Long> samples = new ArrayList<>();
            long deadline = System.nanoTime() + durationMs * 1_000_000L;
            while (samples.size() < most && System.nanoTime() < deadline) {
                int waiter = 1 - holder;
                CountDownLatch ready = new CountDownLatch(1);
                Future<Long> granted = owners[waiter].submit(() -> {
                    ready.countDown();
                    acquire(mutex[waiter]);
                    return System.nanoTime();
                });
                if (!ready.await(BOUND_S, TimeUnit.SECONDS)) throw new IllegalStateException("waiter did not start");
                Thread.sleep(SETTLE_MS);
                long t0 = System.nanoTime();
                int h = holder;
                owners[h].submit(() -> { mutex[h].release(); return null; }).get(BOUND_S, TimeUnit.SECONDS);
                samples.add(granted.get(BOUND_S, TimeUnit.SECONDS) - t0);
                holder = waiter;
            }
            int h = holder;
            owners[h].submit(() -> { mutex[h].release(); return null; }).get(BOUND_S, TimeUnit.SECONDS);
            return summary(samples, 0);
        } finally {
            for (ExecutorService e : owners) e.shutdownNow();
        }
    }

    public static void main(String[] args) throws Exception {
        String endpoints = args[0];
        long durationMs = Long.parseLong(args[1]);
        long iterations = Long.parseLong(args[2]);
        int most = Integer.parseInt(args[3]);
        CuratorFramework[] clients = new CuratorFramework[2];
        try {
            clients[0] = connect(endpoints);
            clients[1] = connect(endpoints);
            uncontended(clients[0], 1, Math.min(durationMs, 2000), iterations); // JIT warm-up, not reported
            String one = uncontended(clients[0], 1, durationMs, iterations);
            String many = uncontended(clients[0], MANY, durationMs, iterations);
            String ho = handoff(clients, durationMs, most);
            System.out.println("{\"scenarios\":{\"one\":" + one + ",\"many\":" + many + ",\"handoff\":" + ho + "}}");
        } finally {
            for (CuratorFramework c : clients) if (c != null) c.close();
        }
    }
}
