package dev.baton

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource
import java.util.concurrent.CancellationException
import java.util.concurrent.TimeUnit
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/** Every primitive on every store of [Stores.urls]. */
class BehaviourTest {
    companion object {
        @JvmStatic
        fun urls() = Stores.urls()
    }

    private fun <T> on(url: String, body: suspend CoroutineScope.(Client, Client) -> T): T = runBlocking {
        Baton.connect(url).use { a -> Baton.connect(url).use { b -> body(a, b) } }
    }

    @ParameterizedTest
    @MethodSource("urls")
    fun `lock excludes, tokens grow, release twice is NotHeld`(url: String): Unit = on(url) { a, b ->
        val name = Stores.name("lock")
        val g1 = a.lock(name).acquire(10.seconds)
        assertNull(b.lock(name).tryAcquire(), "a second client must not get a held lock")
        assertThrows<BatonException.Timeout> { runBlocking { b.lock(name).acquire(200.milliseconds) } }
        assertEquals(name, g1.name)
        val inspection = a.inspect(name)
        assertEquals(g1.token, inspection.holders.single().token.toLong())
        g1.release()
        assertTrue(g1.isReleased)
        val e = assertThrows<BatonException.NotHeld> { runBlocking { g1.release() } }
        assertEquals(ErrorKind.NotHeld, e.kind)
        val g2 = b.lock(name).tryAcquire()
        assertNotNull(g2)
        assertTrue(g2!!.token > g1.token, "tokens grow: ${g2.token} > ${g1.token}")
        g2.close()
        g1.close() // closing a released guard is a no-op
        a.lock(name).tryAcquire()!!.use { }
    }

    @ParameterizedTest
    @MethodSource("urls")
    fun `withLock releases, fair lock, multi lock`(url: String): Unit = on(url) { a, b ->
        val name = Stores.name("with")
        val token = a.lock(name).withLock(5.seconds) { g ->
            assertNull(b.lock(name).tryAcquire())
            g.token
        }
        assertTrue(token > 0)
        b.lock(name).tryAcquire()!!.close()

        val fair = Stores.name("fair")
        a.fairLock(fair).acquire().use { assertNull(b.fairLock(fair).tryAcquire()) }
        b.fairLock(fair).tryAcquire()!!.close()

        val (m1, m2) = Stores.name("m1") to Stores.name("m2")
        a.multiLock(m1, m2).acquire(5.seconds).use { g ->
            assertEquals(2, g.tokens.size)
            assertNull(b.lock(m2).tryAcquire())
            assertNull(b.multiLock(listOf(m2, m1)).tryAcquire())
        }
        b.lock(m1).tryAcquire()!!.close()
    }

    @ParameterizedTest
    @MethodSource("urls")
    fun `rw lock shares reads and excludes writes`(url: String): Unit = on(url) { a, b ->
        val name = Stores.name("rw")
        val r1 = a.rwLock(name).read()
        val r2 = b.rwLock(name).tryRead()
        assertNotNull(r2, "two readers share")
        assertNull(b.rwLock(name).tryWrite())
        r1.close(); r2!!.close()
        a.rwLock(name).write(5.seconds).use {
            assertNull(b.rwLock(name).tryRead())
        }
        b.rwLock(name).tryWrite()!!.close()
    }

    @ParameterizedTest
    @MethodSource("urls")
    fun `semaphores count permits, latch counts down`(url: String): Unit = on(url) { a, b ->
        val name = Stores.name("sem")
        val p1 = a.semaphore(name, 3).acquire(2)
        assertEquals(2, p1.count)
        assertEquals(1, b.semaphore(name, 3).available())
        assertNull(b.semaphore(name, 3).tryAcquire(2))
        val p2 = b.semaphore(name, 3).acquire()
        assertNull(b.semaphore(name, 3).tryAcquire())
        p1.releaseMany(1)
        assertEquals(1, p1.count)
        b.semaphore(name, 3).tryAcquire()!!.close()
        p1.close(); p2.close()
        assertEquals(3, a.semaphore(name, 3).available())

        val ps = Stores.name("psem")
        val permit = a.permitSemaphore(ps, 1).acquire(5.seconds)
        assertNull(b.permitSemaphore(ps, 1).tryAcquire())
        b.permitSemaphore(ps, 1).release(permit.id) // anyone may release by id
        b.permitSemaphore(ps, 1).tryAcquire()!!.close()
        // Its holder learns it on release: the grant is gone.
        assertThrows<BatonException.LockLost> { permit.close() }

        val latch = Stores.name("latch")
        assertTrue(a.countDownLatch(latch).trySetCount(2))
        assertFalse(b.countDownLatch(latch).trySetCount(5))
        val waiting = async { b.countDownLatch(latch).await(10.seconds); true }
        assertEquals(1, a.countDownLatch(latch).countDown())
        assertEquals(0, a.countDownLatch(latch).countDown())
        assertTrue(withTimeout(10.seconds) { waiting.await() })
        a.semaphore(name, 3).acquire().use {
            assertThrows<BatonException.Timeout> { runBlocking { b.semaphore(name, 3).acquire(3, 100.milliseconds) } }
        }
    }

    @ParameterizedTest
    @MethodSource("urls")
    fun `a cancelled or interrupted wait leaves nothing held`(url: String): Unit = on(url) { a, b ->
        val name = Stores.name("cancel")
        val held = a.lock(name).acquire()
        // Coroutine cancellation (withTimeout) of a waiting acquire.
        assertNull(withTimeoutOrNull(300.milliseconds) { b.lock(name).acquire() })
        val waiter = launch { b.lock(name).acquire().close() }
        delay(100)
        waiter.cancel()
        waiter.join()
        // Java: an interrupted acquireBlocking.
        val thread = Thread {
            assertThrows<InterruptedException> { b.lock(name).acquireBlocking(java.time.Duration.ofSeconds(30)) }
        }
        thread.start()
        Thread.sleep(200)
        thread.interrupt()
        thread.join(10_000)
        assertFalse(thread.isAlive)
        // Java: a cancelled future.
        val future = b.lock(name).acquireAsync(java.time.Duration.ofSeconds(30))
        Thread.sleep(100)
        assertTrue(future.cancel(true))
        assertThrows<CancellationException> { future.get(1, TimeUnit.SECONDS) }
        held.release()
        // None of the abandoned waiters holds the lock (or takes it later).
        delay(200)
        val again = a.lock(name).tryAcquire()
        assertNotNull(again, "a cancelled waiter kept the lock")
        assertTrue(a.inspect(name).holders.size == 1)
        again!!.close()
    }

    @ParameterizedTest
    @MethodSource("urls")
    fun `the Java surface blocks and completes futures`(url: String) {
        Baton.connectBlocking(url).use { client ->
            val name = Stores.name("java")
            client.lock(name).acquireBlocking(java.time.Duration.ofSeconds(5)).use { g ->
                assertTrue(g.token > 0)
                Baton.connectBlocking(url).use { other -> assertNull(other.lock(name).tryAcquireBlocking()) }
            }
            val g = client.lock(name).acquireAsync(java.time.Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS)
            assertThrows<java.util.concurrent.ExecutionException> {
                Baton.connectBlocking(url).use { other ->
                    other.lock(name).acquireAsync(java.time.Duration.ofMillis(100)).get(10, TimeUnit.SECONDS)
                }
            }.also { assertTrue(it.cause is BatonException.Timeout, "${it.cause}") }
            g.close()
            val sem = client.semaphore(Stores.name("jsem"), 2)
            sem.acquireBlocking(2, null).use { assertEquals(0, sem.availableBlocking()) }
            val rw = client.rwLock(Stores.name("jrw"))
            rw.writeLock.acquireBlocking().use {
                Baton.connectBlocking(url).use { other -> assertNull(other.rwLock(rw.name).readLock.tryAcquireBlocking()) }
            }
            // Each handle kind's blocking attempt (made on the calling thread) grants, and a
            // released or closed grant is free again for the suspending form.
            val grants = listOf(
                client.lock(Stores.name("ja")), client.fairLock(Stores.name("jf")), rw.readLock, rw.writeLock,
                client.semaphore(Stores.name("js"), 1), client.permitSemaphore(Stores.name("jp"), 1),
                client.multiLock(listOf(Stores.name("jm1"), Stores.name("jm2"))),
            )
            for ((i, handle) in grants.withIndex()) {
                val first = handle.tryAcquireBlocking() ?: error("handle $i: not granted")
                if (i % 2 == 0) {
                    first.releaseBlocking()
                    assertThrows<BatonException.NotHeld> { first.releaseBlocking() }
                }
                first.close()
                val again = runBlocking { handle.tryAcquire() } ?: error("handle $i: not free after the release")
                again.close()
            }
            // A thread interrupted already takes nothing, even a free lock, and its status is cleared.
            val free = client.lock(Stores.name("jint"))
            Thread.currentThread().interrupt()
            assertThrows<InterruptedException> { free.acquireBlocking() }
            Thread.currentThread().interrupt()
            assertThrows<InterruptedException> { free.tryAcquireBlocking() }
            assertFalse(Thread.interrupted())
            assertTrue(client.inspectBlocking(free.name).holders.isEmpty())
        }
    }
}
