// A JVM holder of baton, from the installed jar dev.baton:baton (its Java surface: blocking
// calls on a thread), contending with the other languages' holders on one name: takes it
// `n` times and records every ask, grant and release in the shared history (History.java).
//
//   java BatonHolder url=… name=… kind=lock|fair|read|write|permit|pes id=jvm1 n=3 \
//       hold_ms=40 history=… [permits=2]
//   java BatonHolder … kind=latch-down|latch-wait count=3
import dev.baton.Baton;
import dev.baton.Client;
import dev.baton.CountDownLatch;
import dev.baton.LockGuard;
import dev.baton.Permit;
import java.time.Duration;
import java.util.Map;

public final class BatonHolder {
    private static final Duration WAIT = Duration.ofSeconds(History.WAIT_S);

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = History.args(argv);
        History h = new History(a, "baton");
        try (Client client = Baton.connectBlocking(a.get("url"))) {
            String kind = a.getOrDefault("kind", "lock");
            String name = a.get("name");
            if (kind.startsWith("latch")) {
                CountDownLatch l = client.countDownLatch(name);
                if (kind.equals("latch-wait")) {
                    l.trySetCountBlocking(Long.parseLong(a.get("count")));
                }
                h.latch(kind, l::countDownBlocking, () -> {
                    l.awaitBlocking(WAIT);
                    return true;
                });
                return;
            }
            History.Taker taker = switch (kind) {
                case "lock" -> () -> granted(client.lock(name).acquireBlocking(WAIT));
                case "fair" -> () -> granted(client.fairLock(name).acquireBlocking(WAIT));
                case "read" -> () -> granted(client.rwLock(name).getReadLock().acquireBlocking(WAIT));
                case "write" -> () -> granted(client.rwLock(name).getWriteLock().acquireBlocking(WAIT));
                case "permit" -> () -> permit(client.semaphore(name, Integer.parseInt(a.get("permits"))).acquireBlocking(WAIT));
                case "pes" -> () -> permit(client.permitSemaphore(name, Integer.parseInt(a.get("permits"))).acquireBlocking(WAIT));
                default -> throw new IllegalArgumentException("unknown kind " + kind);
            };
            h.holds(kind.equals("fair") ? "lock" : kind.equals("pes") ? "permit" : kind, taker);
        }
    }

    static History.Granted granted(LockGuard g) {
        return new History.Granted(g::releaseBlocking, g.getToken(), g.getOwner());
    }

    static History.Granted permit(Permit p) {
        return new History.Granted(p::releaseBlocking, p.getToken(), p.getId());
    }
}
