// A JVM holder of Redisson (Maven Central), contending with baton's holders on Redis's
// default layout: takes one name `n` times and records every ask, grant and release in the
// shared history (History.java).
//
//   java RedissonHolder url=redis://… name=… kind=lock|fair|read|write|permit|pes id=jvm1 n=3 \
//       hold_ms=40 history=… [permits=2] [lease_ms=15000]
//   java RedissonHolder … kind=latch-down|latch-wait count=3   (RCountDownLatch)
//
// lock = RFencedLock (an RLock whose tokens come from the counter baton's locks use), fair =
// RFairLock, read/write = RReadWriteLock, permit = RSemaphore, pes =
// RPermitExpirableSemaphore.
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

public final class RedissonHolder {
    private static final long WAIT_S = History.WAIT_S;

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = History.args(argv);
        History h = new History(a, "redisson");
        Config cfg = new Config();
        cfg.useSingleServer().setAddress(a.get("url").split("\\?")[0]);
        RedissonClient r = Redisson.create(cfg);
        try {
            String kind = a.getOrDefault("kind", "lock");
            if (kind.startsWith("latch")) {
                RCountDownLatch l = r.getCountDownLatch(a.get("name"));
                if (kind.equals("latch-wait")) {
                    l.trySetCount(Long.parseLong(a.get("count")));
                }
                h.latch(kind, l::countDown, () -> l.await(WAIT_S, TimeUnit.SECONDS));
            } else {
                String mode = kind.equals("fair") ? "lock" : kind.equals("pes") ? "permit" : kind;
                h.holds(mode, taker(r, a, kind));
            }
        } finally {
            r.shutdown();
        }
    }

    static History.Taker taker(RedissonClient r, Map<String, String> a, String kind) {
        String name = a.get("name");
        String owner = r.getId() + ":" + Thread.currentThread().getId();
        return switch (kind) {
            case "lock" -> () -> {
                RFencedLock l = r.getFencedLock(name);
                Long token = l.tryLockAndGetToken(WAIT_S, TimeUnit.SECONDS);
                History.check(token != null, "RFencedLock");
                return new History.Granted(l::unlock, token, owner);
            };
            case "fair" -> () -> locked(r.getFairLock(name), "RFairLock", owner);
            case "read" -> () -> locked(r.getReadWriteLock(name).readLock(), "read lock", owner);
            case "write" -> () -> locked(r.getReadWriteLock(name).writeLock(), "write lock", owner);
            case "permit" -> () -> {
                RSemaphore s = r.getSemaphore(name);
                s.trySetPermits(Integer.parseInt(a.get("permits")));
                History.check(s.tryAcquire(1, WAIT_S, TimeUnit.SECONDS), "RSemaphore");
                return new History.Granted(s::release, null, null);
            };
            case "pes" -> () -> {
                RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(name);
                s.trySetPermits(Integer.parseInt(a.get("permits")));
                long lease = Long.parseLong(a.getOrDefault("lease_ms", "15000"));
                String id = s.tryAcquire(WAIT_S * 1000, lease, TimeUnit.MILLISECONDS);
                History.check(id != null, "RPermitExpirableSemaphore");
                return new History.Granted(() -> s.release(id), null, id);
            };
            default -> throw new IllegalArgumentException("unknown kind " + kind);
        };
    }

    static History.Granted locked(RLock l, String what, String owner) throws Exception {
        History.check(l.tryLock(WAIT_S, TimeUnit.SECONDS), what);
        return new History.Granted(l::unlock, null, owner);
    }
}
