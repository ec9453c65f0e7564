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
    /** Collects garbage until the count of native objects stops falling (bounded); the count. */
    private fun settled(): Long {
        var last = Long.MAX_VALUE
        repeat(20) {
            System.gc()
            Thread.sleep(100)
            val now = Baton.liveNativeObjects()
            if (now == last) return now
            last = now
        }
        return last
    }

    /** Runs [work] (whose objects are unreachable once it returns), then checks that every native object it made was freed. */
    private fun assertNoLeak(work: () -> Unit) {
        val baseline = settled()
        work()
        val deadline = System.nanoTime() + 30_000_000_000
        while (Baton.liveNativeObjects() > baseline && System.nanoTime() < deadline) {
            System.gc()
            Thread.sleep(50)
        }
        assertTrue(Baton.liveNativeObjects() <= baseline, "native objects leaked: ${Baton.liveNativeObjects()} > $baseline")
    }

    private fun stores() = listOfNotNull("memory://${Stores.run}-conc", Stores.redis)

    @Test
    fun `64 coroutines and 64 threads on distinct names`() {
        for (url in stores()) assertNoLeak {
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
        }
    }

    @Test
    fun `1000 coroutines on one name take turns`() = assertNoLeak {
        Baton.connectBlocking("memory://${Stores.run}-thousand").use { client ->
            val inside = AtomicInteger()
            val most = AtomicInteger()
            val done = AtomicInteger()
            runBlocking(Dispatchers.Default) {
                withTimeout(120.seconds) {
                    (0 until 1000).map {
                        async {
                            // A handle each: one handle's grants are re-entrant (one owner).
                            client.lock("one").withLock(60.seconds) {
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
    }
}
