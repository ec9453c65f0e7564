package dev.baton

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource
import kotlin.time.Duration.Companion.seconds

/**
 * Fenced writes at the resource (`client.fence()`, `Baton.fencedUpdate`): a holder paused
 * past its lease wakes up with an old token, and the store itself refuses its write.
 */
class FenceTest {
    companion object {
        @JvmStatic
        fun urls() = Stores.urls()
    }

    @ParameterizedTest
    @MethodSource("urls")
    fun `a paused holder's late write is refused by the store`(url: String): Unit = runBlocking {
        Baton.connect(url).use { a ->
            Baton.connect(url).use { b ->
                val (sale, stock) = Stores.name("sale") to Stores.name("stock")
                val old = a.lock(sale, ttl = 2.seconds).acquire(10.seconds)
                assertTrue(a.fence().write(stock, "9", old.token))
                // `a` stops here (a GC pause, a stopped process) until its lease is gone; `b` takes over.
                val new = b.lock(sale).acquire(30.seconds)
                assertTrue(new.token > old.token, "${new.token} > ${old.token}")
                assertTrue(b.fence().write(stock, "8", new.token))
                assertTrue(b.fence().write(stock, "7", new.token), "one grant writes many times")
                assertFalse(a.fence().write(stock, "8", old.token), "the late write is refused")
                assertEquals(Fenced("7", new.token), b.fence().read(stock))
                assertNull(b.fence().read(Stores.name("nothing-here")))
                new.release()
                assertThrows<BatonException.LockLost> { runBlocking { old.release() } }
            }
        }
    }

    @Test
    fun `the Java forms, the SQL guard, bad tokens and stores`() {
        Baton.connectBlocking("memory://${Stores.run}-fence").use { c ->
            val fence = c.fence()
            val name = Stores.name("java")
            val token = c.lock(name).acquireBlocking().use { g ->
                assertTrue(fence.writeBlocking(name, "1", g.token))
                g.token
            }
            assertFalse(fence.writeBlocking(name, "0", token - 1))
            assertEquals(Fenced("1", token), fence.readBlocking(name))
            val negative = assertThrows<BatonException.InvalidArgument> { fence.writeBlocking(name, "x", -1) }
            assertTrue(negative.message!!.contains("token"), negative.message)
            // A SQL statement needs a SQL store.
            assertThrows<BatonException.Unsupported> { fence.executeBlocking("UPDATE stock SET n = 1", token) }
        }
        assertEquals(
            "UPDATE stock SET n = n - 1, fence = 7 WHERE (item = ?) AND fence <= 7",
            Baton.fencedUpdate("UPDATE stock SET n = n - 1 WHERE item = ?", 7),
        )
        assertThrows<BatonException.InvalidArgument> { Baton.fencedUpdate("DELETE FROM stock", 1) }
        assertThrows<BatonException.InvalidArgument> { Baton.fencedUpdate("UPDATE stock SET n = 1", -5) }
    }
}
