package baton.curator;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Takes and releases one of Curator's recipes on command, for baton's interop tests.
 *
 * <p>Usage: {@code Harness CONNECT KIND PATH} with KIND {@code mutex}, {@code read},
 * {@code write} or {@code semaphore:N}. Reads commands from stdin, one per line:
 * {@code acquire [timeout_ms]}, {@code release}, {@code quit}; answers one line each:
 * {@code ACQUIRED <epoch ms>}, {@code TIMEOUT}, {@code RELEASED <epoch ms>}, {@code ERROR <msg>}.
 * Prints {@code READY} once connected.
 */
public final class Harness {
    private interface Recipe {
        boolean acquire(long timeoutMs) throws Exception;

        void release() throws Exception;
    }

    private static Recipe recipe(CuratorFramework client, String kind, String path) {
        if (kind.startsWith("semaphore:")) {
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, Integer.parseInt(kind.substring(10)));
            Lease[] held = new Lease[1];
            return new Recipe() {
                public boolean acquire(long ms) throws Exception {
                    held[0] = sem.acquire(ms, TimeUnit.MILLISECONDS);
                    return held[0] != null;
                }

                public void release() throws Exception {
                    sem.returnLease(held[0]);
                    held[0] = null;
                }
            };
        }
        InterProcessMutex m;
        switch (kind) {
            case "mutex": m = new InterProcessMutex(client, path); break;
            case "read": m = new InterProcessReadWriteLock(client, path).readLock(); break;
            case "write": m = new InterProcessReadWriteLock(client, path).writeLock(); break;
            default: throw new IllegalArgumentException("unknown kind " + kind);
        }
        return new Recipe() {
            public boolean acquire(long ms) throws Exception {
                return m.acquire(ms, TimeUnit.MILLISECONDS);
            }

            public void release() throws Exception {
                m.release();
            }
        };
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(args[0])
            .sessionTimeoutMs(10_000)
            .connectionTimeoutMs(5_000)
            .retryPolicy(new ExponentialBackoffRetry(100, 3))
            .build();
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        Recipe r = recipe(client, args[1], args[2]);
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            try {
                switch (cmd[0]) {
                    case "acquire":
                        long ms = cmd.length > 1 ? Long.parseLong(cmd[1]) : 30_000;
                        System.out.println(r.acquire(ms) ? "ACQUIRED " + System.currentTimeMillis() : "TIMEOUT");
                        break;
                    case "release":
                        long at = System.currentTimeMillis();
                        r.release();
                        System.out.println("RELEASED " + at);
                        break;
                    case "quit":
                        client.close();
                        return;
                    default:
                        System.out.println("ERROR unknown command " + cmd[0]);
                }
            } catch (Exception e) {
                System.out.println("ERROR " + e);
            }
            System.out.flush();
        }
        client.close();
    }
}
