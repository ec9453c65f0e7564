package dev.baton

import java.util.concurrent.CompletableFuture
import kotlin.time.Duration

/** A semaphore of N permits; `acquire()` takes one, `acquire(count)` several at once. */
class Semaphore internal constructor(private val raw: dev.baton.ffi.Semaphore) : Acquirable<Permit>() {
    /** The name. */
    val name: String get() = raw.name()

    /** The total number of permits. */
    val permits: Int get() = raw.permits().toInt()

    override suspend fun rawAcquire(timeoutMs: Double) = Permit(raw.acquire(1, timeoutMs))
    override suspend fun rawTryAcquire() = raw.tryAcquire(1)?.let(::Permit)
    override fun rawAttempt(timeoutMs: Double) = raw.attempt(1, timeoutMs)?.let(::Permit)

    /** Waits for [count] permits at once, at most [timeout]. */
    suspend fun acquire(count: Int, timeout: Duration? = null): Permit =
        native { Permit(raw.acquire(count.toLong(), timeout.limit())) }

    /** One attempt at [count] permits: null when not enough are free. */
    suspend fun tryAcquire(count: Int): Permit? = native { raw.tryAcquire(count.toLong())?.let(::Permit) }

    /** [acquire] of [count] permits, blocking the thread (interruptible). */
    @Throws(InterruptedException::class)
    fun acquireBlocking(count: Int, timeout: java.time.Duration?): Permit =
        blocking { native { Permit(raw.acquire(count.toLong(), timeout.limit())) } }

    /** [acquire] of [count] permits as a future. */
    fun acquireAsync(count: Int, timeout: java.time.Duration?): CompletableFuture<Permit> =
        futureOf { native { Permit(raw.acquire(count.toLong(), timeout.limit())) } }

    /** Permits free right now. */
    suspend fun available(): Int = native { raw.available().toInt() }

    /** [available], blocking the thread. */
    fun availableBlocking(): Int = blocking { available() }

    /** Current permit holders and the last token. */
    suspend fun inspect(): Inspection = native { raw.inspect() }
}

/** A semaphore whose permits carry ids and leases; anyone may release a permit by id. */
class PermitSemaphore internal constructor(private val raw: dev.baton.ffi.PermitSemaphore) : Acquirable<Permit>() {
    /** The name. */
    val name: String get() = raw.name()

    override suspend fun rawAcquire(timeoutMs: Double) = Permit(raw.acquire(timeoutMs, null))
    override suspend fun rawTryAcquire() = raw.tryAcquire()?.let(::Permit)
    override fun rawAttempt(timeoutMs: Double) = raw.attempt(timeoutMs)?.let(::Permit)

    /** Waits for a permit that expires [lease] after the grant unless extended. */
    suspend fun acquireLease(lease: Duration): Permit = native { Permit(raw.acquire(Double.POSITIVE_INFINITY, lease.ms())) }

    /** Releases the permit [id], whoever acquired it (`NotHeld` if no live permit has it). */
    suspend fun release(id: String) = native { raw.release(id) }

    /** Sets permit [id]'s lease to [lease] from now. */
    suspend fun updateLease(id: String, lease: Duration) = native { raw.updateLease(id, lease.ms()) }

    /** Permits free right now. */
    suspend fun available(): Int = native { raw.available().toInt() }

    /** Live permits (ids, lease left) and the last token. */
    suspend fun inspect(): Inspection = native { raw.inspect() }
}

/** A count-down latch: [await] returns once the count reaches zero. */
class CountDownLatch internal constructor(private val raw: dev.baton.ffi.CountDownLatch) {
    /** The name. */
    val name: String get() = raw.name()

    /** Sets the count if it is zero; false while it is still counting. */
    suspend fun trySetCount(count: Long): Boolean = native { raw.trySetCount(count) }

    /** Decrements the count (never below zero); the new count. */
    suspend fun countDown(): Long = native { raw.countDown().toLong() }

    /** The current count. */
    suspend fun count(): Long = native { raw.count().toLong() }

    /** Waits until the count is zero, at most [timeout]. */
    suspend fun await(timeout: Duration? = null) = native { raw.wait(timeout.limit()) }

    /** [trySetCount], blocking the thread. */
    fun trySetCountBlocking(count: Long): Boolean = blocking { trySetCount(count) }

    /** [countDown], blocking the thread. */
    fun countDownBlocking(): Long = blocking { countDown() }

    /** [await], blocking the thread (interruptible). */
    @Throws(InterruptedException::class)
    fun awaitBlocking(timeout: java.time.Duration?) = blocking { native { raw.wait(timeout.limit()) } }
}
