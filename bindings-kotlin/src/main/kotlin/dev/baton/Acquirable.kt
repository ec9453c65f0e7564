package dev.baton

import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import java.util.concurrent.CompletableFuture
import kotlin.time.Duration

/**
 * What every handle that grants a [Guard] offers, in the Kotlin form (suspending), the Java
 * blocking form (`acquireBlocking`, which honours `Thread.interrupt()`) and the Java future
 * form (`acquireAsync`). A cancelled or interrupted wait leaves nothing held.
 */
abstract class Acquirable<G : Guard> internal constructor() {
    internal abstract suspend fun rawAcquire(timeoutMs: Double): G
    internal abstract suspend fun rawTryAcquire(): G?

    /** One attempt, blocking the calling thread, after checking [timeoutMs] as [rawAcquire] would. */
    internal abstract fun rawAttempt(timeoutMs: Double): G?

    /**
     * The first step of a blocking acquire: one attempt made on this thread, which the
     * store's answer wakes directly (no suspension, no coroutine dispatch: the Java
     * surface's uncontended cycle). A thread interrupted already gets
     * `InterruptedException` (its status cleared) and takes nothing, as
     * `java.util.concurrent.locks.Lock.lockInterruptibly` does.
     */
    private fun attemptHere(timeoutMs: Double): G? {
        if (Thread.interrupted()) throw InterruptedException()
        return native { rawAttempt(timeoutMs) }
    }

    /**
     * Waits for the grant, at most [timeout] (then [BatonException.Timeout]); null or
     * `Duration.INFINITE` waits as long as it takes.
     */
    suspend fun acquire(timeout: Duration? = null): G = native { rawAcquire(timeout.limit()) }

    /** One attempt: null when it is not free. */
    suspend fun tryAcquire(): G? = native { rawTryAcquire() }

    /** Runs [block] while holding the grant and releases it afterwards; [block] is cancelled if the lease is lost. */
    suspend fun <T> withLock(timeout: Duration? = null, block: suspend (G) -> T): T {
        val guard = acquire(timeout)
        try {
            return coroutineScope {
                val watcher = launch {
                    try {
                        guard.lost.await()
                    } catch (_: kotlinx.coroutines.CancellationException) {
                        return@launch
                    }
                    throw BatonException.LockLost("the lease was lost while the block ran")
                }
                try {
                    block(guard)
                } finally {
                    watcher.cancel()
                }
            }
        } finally {
            withContext(NonCancellable) { guard.closeSuspending() }
        }
    }

    /**
     * Waits for the grant, blocking the thread (interruptible: then nothing is held). A
     * free grant is taken by one attempt on this thread; a busy one is waited for as
     * [acquire] waits.
     */
    @Throws(InterruptedException::class)
    fun acquireBlocking(): G = acquireBlocking(null)

    /** Waits at most [timeout] for the grant, blocking the thread (interruptible). */
    @Throws(InterruptedException::class)
    fun acquireBlocking(timeout: java.time.Duration?): G {
        val limit = timeout.limit()
        return attemptHere(limit) ?: blocking { native { rawAcquire(limit) } }
    }

    /** One attempt, blocking the thread: null when it is not free. */
    @Throws(InterruptedException::class)
    fun tryAcquireBlocking(): G? = attemptHere(Double.POSITIVE_INFINITY)

    /** The grant as a future; cancelling the future cancels the wait. */
    @JvmOverloads
    fun acquireAsync(timeout: java.time.Duration? = null): CompletableFuture<G> =
        futureOf { native { rawAcquire(timeout.limit()) } }
}

/** A re-entrant exclusive lock (Redisson's `RLock` layout on Redis). */
class Lock internal constructor(private val raw: dev.baton.ffi.Lock) : Acquirable<LockGuard>() {
    /** The name this handle locks. */
    val name: String = raw.name()

    override suspend fun rawAcquire(timeoutMs: Double) = LockGuard(raw.acquire(timeoutMs), name)
    override suspend fun rawTryAcquire() = raw.tryAcquire()?.let { LockGuard(it, name) }
    override fun rawAttempt(timeoutMs: Double) = raw.attempt(timeoutMs)?.let { LockGuard(it, name) }

    /** Holders, waiters and the last token of this lock. */
    suspend fun inspect(): Inspection = native { raw.inspect() }
}

/** A lock granted in request order (Redisson's `RFairLock` layout on Redis). */
class FairLock internal constructor(private val raw: dev.baton.ffi.FairLock) : Acquirable<LockGuard>() {
    /** The name this handle locks. */
    val name: String = raw.name()

    override suspend fun rawAcquire(timeoutMs: Double) = LockGuard(raw.acquire(timeoutMs), name)
    override suspend fun rawTryAcquire() = raw.tryAcquire()?.let { LockGuard(it, name) }
    override fun rawAttempt(timeoutMs: Double) = raw.attempt(timeoutMs)?.let { LockGuard(it, name) }

    /** Holders, waiters and the last token of this lock. */
    suspend fun inspect(): Inspection = native { raw.inspect() }
}

/** Several locks taken together, all or nothing. */
class MultiLock internal constructor(private val raw: dev.baton.ffi.MultiLock) : Acquirable<MultiGuard>() {
    /** The names, in acquisition order. */
    val names: List<String> get() = raw.names()

    override suspend fun rawAcquire(timeoutMs: Double) = MultiGuard(raw.acquire(timeoutMs))
    override suspend fun rawTryAcquire() = raw.tryAcquire()?.let(::MultiGuard)
    override fun rawAttempt(timeoutMs: Double) = raw.attempt(timeoutMs)?.let(::MultiGuard)
}

/** A snapshot of one name on a store (holders, waiters, last fencing token). */
typealias Inspection = dev.baton.ffi.Inspection

/** One holder in an [Inspection]. */
typealias Holder = dev.baton.ffi.Holder
