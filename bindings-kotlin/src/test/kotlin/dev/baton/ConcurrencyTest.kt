package dev.baton

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration.Companion.seconds

/** Many coroutines and threads at once, and no native object left behind afterwards. */
class ConcurrencyTest {
    /** Waits (bounded) until the collected Kotlin objects have freed their native side. */
    private fun assertNoLeak(baseline: Long) {
        val deadline = System.nanoTime() + 30_000_000_000
        while (Baton.liveNativeObjects() > baseline && System.nanoTime() < deadline) {
            System.gc()
            Thread.sleep(50)
        }
        assertEquals(baseline, Baton.liveNativeObjects(), "native objects leaked")
    }

    private fun stores() = listOfNotNull("memory://${Stores.run}-conc", Stores.redis)

    @Test
    fun `64 coroutines and 64 threads on distinct names`() {
        for (url in stores()) {
            val baseline = Baton.liveNativeObjects()
            Baton.connectBlocking(url).use { client ->
                val cycles = AtomicInteger()
                val threads = (0 until 64).map { i ->
                    Thread {
                        repeat(5) {
                            client.lock(Stores.run + "/t$i").acquireBlocking(java.time.Duration.ofSeconds(30)).use { cycles.incrementAndGet() }
                        }
                    }.also { it.start() }
                }
                runBlocking(Dispatchers.Default) {
                    withTimeout(120.seconds) {
                        (0 until 64).map { i ->
                            async { repeat(5) { client.lock(Stores.run + "/c$i").acquire(30.seconds).use { cycles.incrementAndGet() } } }
                        }.awaitAll()
                    }
                }
                threads.forEach { it.join(120_000); assertTrue(!it.isAlive) }
                assertEquals(64 * 5 * 2, cycles.get(), url)
            }
            assertNoLeak(baseline)
        }
    }

    @Test
    fun `1000 coroutines on one name take turns`() {
        val baseline = Baton.liveNativeObjects()
        Baton.connectBlocking("memory://${Stores.run}-thousand").use { client ->
            val inside = AtomicInteger()
            val most = AtomicInteger()
            val done = AtomicInteger()
            val lock = client.lock("one")
            runBlocking(Dispatchers.Default) {
                withTimeout(120.seconds) {
                    (0 until 1000).map {
                        async {
                            lock.withLock(60.seconds) {
                                most.accumulateAndGet(inside.incrementAndGet(), ::maxOf)
                                inside.decrementAndGet()
                                done.incrementAndGet()
                            }
                        }
                    }.awaitAll()
                }
            }
            assertEquals(1000, done.get())
            assertEquals(1, most.get(), "two holders at once")
        }
        assertNoLeak(baseline)
    }
}
