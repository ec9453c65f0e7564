package dev.baton

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/** Errors by kind, panics, and bad input raising the right subclass. */
class ErrorsTest {
    @Test
    fun `every kind of the core maps to the subclass of its name`(): Unit = runBlocking {
        val kinds = Baton.errorKinds()
        assertEquals(ErrorKind.entries.map { it.name }, kinds, "ErrorKind mirrors the core's list")
        for (name in kinds) {
            val e = assertThrows<BatonException> { runBlocking { native { dev.baton.ffi.testRaise(name) } } }
            assertEquals(name, e.kind.name)
            assertEquals(name, e::class.simpleName)
            assertTrue(e is RuntimeException, "unchecked")
            assertEquals("raised by _raise(\"$name\")", e.message)
            assertEquals(e::class, BatonException.of(e.kind, "x")::class)
        }
    }

    @Test
    fun `a panic in native code is a Backend error, and the JVM goes on`(): Unit = runBlocking {
        val e = assertThrows<BatonException.Backend> { runBlocking { native { dev.baton.ffi.testPanic() } } }
        assertTrue(e.message!!.contains("deliberate panic"), e.message)
        Baton.connect("memory://${Stores.run}-after-panic").use { c -> c.lock("x").acquire().close() }
    }

    @Test
    fun `bad urls are InvalidUrl and never show the password`() {
        assertThrows<BatonException.InvalidUrl> { Baton.connectBlocking("nope://x") }
        assertThrows<BatonException.InvalidUrl> { Baton.connectBlocking("") }
        val e = assertThrows<BatonException> { Baton.connectBlocking("redis://user:s3cret-pw@127.0.0.1:1/?bogus=1") }
        assertFalse(e.message!!.contains("s3cret-pw"), e.message)
    }

    @Test
    fun `bad names, durations and counts are InvalidArgument`(): Unit = runBlocking {
        Baton.connect("memory://${Stores.run}-bad").use { c ->
            for (name in listOf("", "x".repeat(10_000), "a\u0000b")) {
                assertThrows<BatonException.InvalidArgument>(name.take(10)) { runBlocking { c.lock(name).acquire() } }
                assertThrows<BatonException.InvalidArgument> { runBlocking { c.lock(name).tryAcquire() } }
            }
            for (d in listOf(Duration.ZERO, (-1).seconds)) {
                assertThrows<BatonException.InvalidArgument>("$d") { runBlocking { c.lock("ok").acquire(d) } }
            }
            for (d in listOf(Duration.ZERO, (-1).seconds, Duration.INFINITE)) {
                assertThrows<BatonException.InvalidArgument>("$d") { runBlocking { c.lock("ok", ttl = d).acquire() } }
            }
            assertThrows<BatonException.InvalidArgument> { c.lock("ok").acquireBlocking(java.time.Duration.ofMillis(-5)) }
            for (permits in listOf(0, -1)) {
                assertThrows<BatonException.InvalidArgument>("$permits") { runBlocking { c.semaphore("s", permits).acquire() } }
                assertThrows<BatonException.InvalidArgument>("$permits") { runBlocking { c.permitSemaphore("p", permits).acquire() } }
            }
            assertThrows<BatonException.InvalidArgument> { runBlocking { c.semaphore("s", 2).acquire(-1) } }
            assertThrows<BatonException.InvalidArgument> { runBlocking { c.semaphore("s", 2).acquire(3, 100.milliseconds) } }
            assertThrows<BatonException.InvalidArgument> { runBlocking { c.countDownLatch("l").trySetCount(-1) } }
            val g = c.lock("ok").acquire()
            assertThrows<BatonException.InvalidArgument> { runBlocking { g.extend(Duration.ZERO) } }
            g.release()
            assertThrows<BatonException.NotHeld> { runBlocking { g.extend(1.seconds) } }
        }
    }

    @Test
    fun `a closed client is Closed`(): Unit = runBlocking {
        val c = Baton.connect("memory://${Stores.run}-closed")
        val lock = c.lock("x")
        c.shutdown()
        assertTrue(c.isClosed)
        val e = assertThrows<BatonException.Closed> { runBlocking { lock.acquire() } }
        assertEquals(ErrorKind.Closed, e.kind)
        c.close()
    }
}
