// baton's Kotlin binding (dev.baton:baton), the JVM side of baton in `benches/peers/bench-peers`,
// timed in the three scenarios of `baton bench` and printed as one JSON object, the shape
// every side of the bench prints:
//
//   java -cp … PeersBatonKt URL DURATION_MS ITERATIONS HANDOFF_MAX [coroutines|threads]
//
// `coroutines` (default): the suspending API, 64 coroutines on Dispatchers.Default for the
// 64-task scenario. `threads`: the Java surface (`acquireBlocking`), 64 platform threads, as
// Redisson's side runs. The JIT is warmed by a first, unreported 1-task round, as on
// Redisson's side. A cycle is acquire + release + close (the guard's native object freed).

import dev.baton.Baton
import dev.baton.Client
import dev.baton.Lock
import dev.baton.LockGuard
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import java.util.Locale
import java.util.concurrent.atomic.AtomicLong
import kotlin.time.Duration.Companion.seconds

private const val MANY = 64
private const val SETTLE_MS = 10L // the holder lets the waiter park before releasing, as `baton bench` does

private fun summary(samples: MutableList<Long>, elapsedSec: Double): String {
    samples.sort()
    val n = samples.size
    fun q(p: Double) = if (n == 0) 0.0 else samples[(p * (n - 1)).toInt()] / 1000.0
    val rate = if (elapsedSec > 0) String.format(Locale.ROOT, "%.1f", n / elapsedSec) else "null"
    // A timed loop ends just now: its wall-clock window, for bench-peers --cpu.
    val t1 = System.currentTimeMillis() / 1000.0
    val window = if (elapsedSec > 0) String.format(Locale.ROOT, ",\"t0_unix\":%.3f,\"t1_unix\":%.3f", t1 - elapsedSec, t1) else ""
    return String.format(
        Locale.ROOT,
        "{\"ops\":%d,\"ops_per_sec\":%s,\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f%s}",
        n, rate, q(0.5), q(0.99), q(1.0), window,
    )
}

private suspend fun cycle(lock: Lock) {
    val g = lock.acquire()
    g.release()
    g.close()
}

private class Run(val client: Client, val durationMs: Long, val iterations: Long) {
    private fun locks(tasks: Int): List<Lock> {
        val base = "bench/peer-kotlin/$tasks-${System.nanoTime()}"
        return List(tasks) { client.lock("$base/$it") }
    }

    /** Cycles until the deadline or until `iterations` were claimed in all; each one's time (inline: `cycle` may suspend). */
    private inline fun timed(deadline: Long, claimed: AtomicLong, cycle: () -> Unit): ArrayList<Long> {
        val mine = ArrayList<Long>()
        while (System.nanoTime() < deadline && claimed.incrementAndGet() <= iterations) {
            val t0 = System.nanoTime()
            cycle()
            mine.add(System.nanoTime() - t0)
        }
        return mine
    }

    /** `tasks` coroutines at once, a name each, until `iterations` cycles in all or the duration. */
    suspend fun coroutines(tasks: Int): String = withContext(Dispatchers.Default) {
        val locks = locks(tasks)
        locks.map { async { cycle(it) } }.awaitAll() // warm-up: connections, scripts
        val claimed = AtomicLong()
        val start = System.nanoTime()
        val deadline = start + durationMs * 1_000_000L
        val all = locks.map { lock ->
            async { timed(deadline, claimed) { cycle(lock) } }
        }.awaitAll().flatten()
        summary(all.toMutableList(), (System.nanoTime() - start) / 1e9)
    }

    /** The same with platform threads and the Java surface's blocking calls. */
    fun threads(tasks: Int): String {
        val locks = locks(tasks)
        for (l in locks) l.acquireBlocking().use { } // warm-up
        val claimed = AtomicLong()
        val all = java.util.Collections.synchronizedList(ArrayList<Long>())
        val start = System.nanoTime()
        val deadline = start + durationMs * 1_000_000L
        val threads = locks.map { lock ->
            Thread { all.addAll(timed(deadline, claimed) { lock.acquireBlocking().use { } }) }.also { it.start() }
        }
        threads.forEach { it.join() }
        return summary(ArrayList(all), (System.nanoTime() - start) / 1e9)
    }

    /** Two handles on one name: from the holder's release call to the waiter's grant. */
    suspend fun handoff(most: Int): String = withContext(Dispatchers.Default) {
        val name = "bench/peer-kotlin/handoff-${System.nanoTime()}"
        val handles = listOf(client.lock(name), client.lock(name))
        var held: LockGuard = handles[0].acquire()
        var turn = 1
        val samples = ArrayList<Long>()
        val deadline = System.nanoTime() + durationMs * 1_000_000L
        while (samples.size < most && System.nanoTime() < deadline) {
            val waiter = handles[turn]
            val granted = async {
                val g = waiter.acquire(30.seconds)
                g to System.nanoTime()
            }
            delay(SETTLE_MS)
            val t0 = System.nanoTime()
            held.release()
            held.close()
            val (g, at) = granted.await()
            samples.add(at - t0)
            held = g
            turn = 1 - turn
        }
        held.release()
        held.close()
        summary(samples, 0.0)
    }
}

fun main(args: Array<String>) {
    require(args.size >= 4) { "usage: PeersBatonKt URL DURATION_MS ITERATIONS HANDOFF_MAX [coroutines|threads]" }
    val (url, durationMs, iterations, most) = args
    val mode = args.getOrElse(4) { "coroutines" }
    require(mode == "coroutines" || mode == "threads") { "mode is coroutines or threads, not $mode" }
    Baton.connectBlocking(url).use { client ->
        val run = Run(client, durationMs.toLong(), iterations.toLong())
        val warm = Run(client, minOf(durationMs.toLong(), 2000), iterations.toLong())
        val json = runBlocking {
            if (mode == "threads") {
                warm.threads(1) // JIT warm-up, not reported
                val one = run.threads(1)
                val many = run.threads(MANY)
                Triple(one, many, run.handoff(most.toInt()))
            } else {
                warm.coroutines(1) // JIT warm-up, not reported
                Triple(run.coroutines(1), run.coroutines(MANY), run.handoff(most.toInt()))
            }
        }
        println("{\"scenarios\":{\"one\":${json.first},\"many\":${json.second},\"handoff\":${json.third}}}")
    }
}
