// A JVM holder of Apache Curator (curator-recipes from Maven Central, the classpath of
// tests/curator/), contending with baton's holders on one ZooKeeper name: takes it `n`
// times and records every ask, grant and release in the shared history (History.java).
// baton's name `a/b` is Curator's path `/a/b`.
//
//   java CuratorHolder url=zk://h:p,… name=… kind=lock|read|write|permit id=cur1 n=3 \
//       hold_ms=40 history=… [permits=2]
//
// lock = InterProcessMutex, read/write = InterProcessReadWriteLock, permit =
// InterProcessSemaphoreV2.
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorHolder {
    public static void main(String[] argv) throws Exception {
        Map<String, String> a = History.args(argv);
        History h = new History(a, "curator");
        String connect = a.get("url").replaceFirst("^zk://", "").split("[?/]")[0];
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(connect)
            .sessionTimeoutMs(15_000)
            .connectionTimeoutMs(5_000)
            .retryPolicy(new ExponentialBackoffRetry(100, 3))
            .build();
        client.start();
        try {
            History.check(client.blockUntilConnected(30, TimeUnit.SECONDS), "a ZooKeeper connection");
            String path = "/" + a.get("name");
            String kind = a.getOrDefault("kind", "lock");
            History.Taker taker = switch (kind) {
                case "lock" -> () -> mutex(new InterProcessMutex(client, path));
                case "read" -> () -> locked(new InterProcessReadWriteLock(client, path).readLock());
                case "write" -> () -> locked(new InterProcessReadWriteLock(client, path).writeLock());
                case "permit" -> () -> {
                    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(client, path, Integer.parseInt(a.get("permits")));
                    Lease l = s.acquire(History.WAIT_S, TimeUnit.SECONDS);
                    History.check(l != null, "InterProcessSemaphoreV2");
                    return new History.Granted(() -> s.returnLease(l), null, null);
                };
                default -> throw new IllegalArgumentException("unknown kind " + kind);
            };
            h.holds(kind, taker);
        } finally {
            client.close();
        }
    }

    static History.Granted locked(InterProcessMutex m) throws Exception {
        History.check(m.acquire(History.WAIT_S, TimeUnit.SECONDS), "Curator's lock");
        return new History.Granted(m::release, null, null);
    }

    /** A mutex's grant with its owner: the holder's node, first in the sorted contenders
     * (baton's `inspect` names a Curator holder `zk:<node>`). */
    static History.Granted mutex(InterProcessMutex m) throws Exception {
        History.Granted g = locked(m);
        String first = m.getParticipantNodes().iterator().next();
        return new History.Granted(g.hold(), null, first.substring(first.lastIndexOf('/') + 1));
    }
}
