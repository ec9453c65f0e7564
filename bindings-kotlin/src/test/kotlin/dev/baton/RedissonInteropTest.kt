package dev.baton

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertThrows
import org.redisson.Redisson
import org.redisson.api.RedissonClient
import org.redisson.config.Config
import java.util.concurrent.Callable
import java.util.concurrent.Executors
import java.util.concurrent.Future
import java.util.concurrent.TimeUnit
import kotlin.time.Duration.Companion.seconds

/**
 * Real Redisson and baton in one JVM on one Redis: each primitive contends both ways, and
 * the waiter is woken by the other side's release (within a second), not by a lease running
 * out (the leases here are Redisson's 30 s watchdog and baton's 30 s default).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedissonInteropTest {
    private lateinit var redisson: RedissonClient
    private val url = Stores.redis
    /** Redisson's lock, semaphore and latch objects are bound to the thread that took them. */
    private val redissonThread = Executors.newSingleThreadExecutor()

    @BeforeAll
    fun start() {
        assumeTrue(url != null, "BATON_TEST_REDIS_URL is not set")
        val config = Config()
        config.useSingleServer().setAddress(url!!.substringBefore('?').trimEnd('/'))
        redisson = Redisson.create(config)
    }

    @AfterAll
    fun stop() {
        if (this::redisson.isInitialized) redisson.shutdown()
        redissonThread.shutdownNow()
    }

    private fun <T> onRedisson(call: () -> T): T = redissonThread.submit(Callable(call)).get(30, TimeUnit.SECONDS)
    private fun <T> startOnRedisson(call: () -> T): Future<T> = redissonThread.submit(Callable(call))

    private fun baton(options: String = ""): Client = Baton.connectBlocking(url + (if (options.isEmpty()) "" else "?$options"))

    /** Asserts that [released] happened at most a second before [woken] (nanoTime). */
    private fun assertWokenByRelease(released: Long, woken: Long) {
        val ms = (woken - released) / 1_000_000
        assertTrue(ms in -50..1000, "the waiter was woken ${ms} ms after the release")
    }

    /** Runs [hold] on one side, waits on the other with [wait] started first, then [release]. */
    private fun contend(wait: () -> Long, hold: () -> Unit, release: () -> Unit) {
        hold()
        val waiter = Executors.newSingleThreadExecutor()
        try {
            val woken = waiter.submit(Callable(wait))
            Thread.sleep(500)
            assertFalse(woken.isDone, "the waiter got through while the other side held")
            val released = System.nanoTime()
            release()
            assertWokenByRelease(released, woken.get(20, TimeUnit.SECONDS))
        } finally {
            waiter.shutdownNow()
        }
    }

    @Test
    fun `RLock and baton Lock exclude each other both ways`() {
        val name = Stores.name("rlock")
        baton().use { client ->
            val rlock = redisson.getLock(name)
            // Redisson holds, baton waits.
            var guard: LockGuard? = null
            contend(
                wait = { guard = client.lock(name).acquireBlocking(java.time.Duration.ofSeconds(20)); System.nanoTime() },
                hold = { onRedisson { rlock.lock() } },
                release = { onRedisson { rlock.unlock() } },
            )
            // baton holds, Redisson waits.
            contend(
                wait = { onRedisson { assertTrue(rlock.tryLock(20, TimeUnit.SECONDS)); System.nanoTime() } },
                hold = {},
                release = { guard!!.close() },
            )
            assertTrue(client.lock(name).tryAcquireBlocking() == null, "baton got a lock Redisson holds")
            onRedisson { rlock.unlock() }
            client.lock(name).tryAcquireBlocking()!!.close()
        }
    }

    @Test
    fun `RReadWriteLock and baton RwLock`() {
        val name = Stores.name("rrw")
        baton("names=bare").use { client ->
            val rw = redisson.getReadWriteLock(name)
            var guard: LockGuard? = null
            contend(
                wait = { guard = client.rwLock(name).readLock.acquireBlocking(java.time.Duration.ofSeconds(20)); System.nanoTime() },
                hold = { onRedisson { rw.writeLock().lock() } },
                release = { onRedisson { rw.writeLock().unlock() } },
            )
            guard!!.close()
            contend(
                wait = { onRedisson { assertTrue(rw.readLock().tryLock(20, TimeUnit.SECONDS)); System.nanoTime() } },
                hold = { guard = client.rwLock(name).writeLock.acquireBlocking(java.time.Duration.ofSeconds(5)) },
                release = { guard!!.close() },
            )
            // Redisson reads; baton shares the read and cannot write.
            client.rwLock(name).readLock.tryAcquireBlocking()!!.close()
            assertTrue(client.rwLock(name).writeLock.tryAcquireBlocking() == null)
            onRedisson { rw.readLock().unlock() }
        }
    }

    @Test
    fun `RSemaphore and baton Semaphore share permits`() {
        val name = Stores.name("rsem")
        baton("semaphore=rsemaphore&names=bare").use { client ->
            val sem = redisson.getSemaphore(name)
            assertTrue(sem.trySetPermits(1))
            var permit: Permit? = null
            contend(
                wait = { permit = client.semaphore(name, 1).acquireBlocking(java.time.Duration.ofSeconds(20)); System.nanoTime() },
                hold = { onRedisson { sem.acquire() } },
                release = { onRedisson { sem.release() } },
            )
            contend(
                wait = { onRedisson { assertTrue(sem.tryAcquire(20, TimeUnit.SECONDS)); System.nanoTime() } },
                hold = {},
                release = { permit!!.close() },
            )
            onRedisson { sem.release() }
            assertTrue(sem.availablePermits() == 1)
        }
    }

    @Test
    fun `RPermitExpirableSemaphore and baton PermitSemaphore`() {
        val name = Stores.name("rpsem")
        baton("names=bare&clock=client").use { client ->
            val sem = redisson.getPermitExpirableSemaphore(name)
            assertTrue(sem.trySetPermits(1))
            var permit: Permit? = null
            var id: String? = null
            contend(
                wait = { permit = client.permitSemaphore(name, 1).acquireBlocking(java.time.Duration.ofSeconds(20)); System.nanoTime() },
                hold = { id = onRedisson { sem.acquire() } },
                release = { onRedisson { sem.release(id) } },
            )
            contend(
                wait = { id = onRedisson { sem.tryAcquire(20, TimeUnit.SECONDS) }; assertNotNull(id); System.nanoTime() },
                hold = {},
                release = { permit!!.close() },
            )
            // baton releases Redisson's permit by id.
            runBlocking { client.permitSemaphore(name, 1).release(id!!) }
            client.permitSemaphore(name, 1).tryAcquireBlocking()!!.close()
        }
    }

    @Test
    fun `RCountDownLatch and baton CountDownLatch`() {
        val name = Stores.name("rlatch")
        baton("names=bare").use { client ->
            val latch = redisson.getCountDownLatch(name)
            contend(
                wait = { client.countDownLatch(name).awaitBlocking(java.time.Duration.ofSeconds(20)); System.nanoTime() },
                hold = { assertTrue(latch.trySetCount(1)) },
                release = { latch.countDown() },
            )
            contend(
                wait = { assertTrue(latch.await(20, TimeUnit.SECONDS)); System.nanoTime() },
                hold = { assertTrue(client.countDownLatch(name).trySetCountBlocking(1)) },
                release = { client.countDownLatch(name).countDownBlocking() },
            )
        }
    }

    @Test
    fun `the lost signal fires when the hold is deleted behind the client`(): Unit = runBlocking(Dispatchers.Default) {
        val name = Stores.name("lost")
        Baton.connect("$url?lease=2s&renew=200ms").use { client ->
            val guard = client.lock(name).acquire()
            assertFalse(guard.isLost)
            val lost = async { guard.lost.await() }
            delay(300)
            assertTrue(redisson.keys.delete(name) == 1L, "the hold's key was not there")
            withTimeout(10.seconds) { lost.await() }
            assertTrue(guard.isLost)
            assertThrows<BatonException.LockLost> { runBlocking { guard.release() } }
            guard.close()
        }
    }
}
