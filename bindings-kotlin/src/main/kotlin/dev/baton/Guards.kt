package dev.baton

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.launch
import kotlin.time.Duration

/**
 * A grant held: a lock hold ([LockGuard]), permits ([Permit]) or every lock of a
 * multi-lock ([MultiGuard]). `close()` (try-with-resources, Kotlin's `use {}`) releases
 * unless released already and frees the native object; a guard that is only collected
 * is released in the background.
 */
abstract class Guard internal constructor() : AutoCloseable {
    internal abstract val raw: dev.baton.ffi.Disposable
    internal abstract suspend fun rawRelease()
    internal abstract suspend fun rawDispose()
    internal abstract fun rawReleaseBlocking()
    internal abstract fun rawDisposeBlocking()
    internal abstract fun rawIsLost(): Boolean
    internal abstract fun rawIsReleased(): Boolean
    internal abstract suspend fun rawLost(): Boolean

    /** Set once a release or dispose call came back (either way the grant is given back):
     *  [close] then skips asking the native object. */
    @Volatile
    private var releasedHere = false

    /** Gives the grant back; `LockLost` if the lease had been lost, `NotHeld` if released already. */
    suspend fun release() = answered { rawRelease() }

    /**
     * [release], blocking the calling thread for the store's answer (one request, bounded
     * by the store's response timeout; not interruptible, as a release half done would
     * help no one).
     */
    fun releaseBlocking() = answered { rawReleaseBlocking() }

    /** Runs a release call, noting that it came back either way (not when cancelled). */
    private inline fun answered(call: () -> Unit) {
        try {
            native(call)
        } catch (e: BatonException) {
            releasedHere = true
            throw e
        }
        releasedHere = true
    }

    /** Whether the lease is known to be lost. */
    val isLost: Boolean get() = native { rawIsLost() }

    /** Whether [release] or [close] was called. */
    val isReleased: Boolean get() = native { rawIsReleased() }

    /**
     * Completes when the lease is lost (the work under it must stop); cancelled once the
     * grant is released first.
     */
    val lost: Deferred<Unit> by lazy {
        val signal = CompletableDeferred<Unit>()
        scope.launch { if (native { rawLost() }) signal.complete(Unit) else signal.cancel() }
        signal
    }

    /**
     * Releases unless released already (`LockLost` if the lease had been lost), then frees
     * the native object. After [release] it only frees: no native call waits, so `use {}`
     * in a coroutine does not block its thread then.
     */
    override fun close() {
        try {
            if (!releasedHere && !native { rawIsReleased() }) native { rawDisposeBlocking() }
        } finally {
            raw.destroy()
        }
    }

    /** [close] without blocking: the release (if still due) suspends instead. */
    internal suspend fun closeSuspending() {
        try {
            if (!releasedHere && !native { rawIsReleased() }) native { rawDispose() }
        } finally {
            raw.destroy()
        }
    }
}

/** A held lock, read or write hold. */
class LockGuard internal constructor(
    override val raw: dev.baton.ffi.LockGuard,
    /** The name held (the handle's: no native call per grant). */
    val name: String,
) : Guard() {
    /** The fencing token of this grant: pass it to the resource, which rejects smaller ones. */
    val token: Long = raw.token().toLong()

    /** The owner id the grant is held under (read once, on first use, until [close]). */
    val owner: String by lazy { native { raw.owner() } }

    /** Sets the lease to [lease] from now. */
    suspend fun extend(lease: Duration) = native { raw.extend(lease.ms()) }

    /** [extend], blocking the calling thread. */
    fun extendBlocking(lease: java.time.Duration) = blocking { native { raw.extend(lease.ms()) } }

    override suspend fun rawRelease() = raw.release()
    override suspend fun rawDispose() = raw.dispose()
    override fun rawReleaseBlocking() = raw.releaseBlocking()
    override fun rawDisposeBlocking() = raw.disposeBlocking()
    override fun rawIsLost() = raw.isLost()
    override fun rawIsReleased() = raw.isReleased()
    override suspend fun rawLost() = raw.lost()
    override fun toString() = "LockGuard($name, token=$token)"
}

/** Permits held from a [Semaphore] or a [PermitSemaphore]. */
class Permit internal constructor(override val raw: dev.baton.ffi.Permit) : Guard() {
    /** The fencing token of this grant. */
    val token: Long = raw.token().toLong()

    /** The permit id (what [PermitSemaphore.release] takes). */
    val id: String = raw.id()

    /** The semaphore's name. */
    val name: String = raw.name()

    /** How many permits this still holds. */
    val count: Int get() = native { raw.count().toInt() }

    /** Gives [n] permits back and keeps the rest. */
    suspend fun releaseMany(n: Int) = native { raw.releaseMany(n.toLong()) }

    /** Sets the lease to [lease] from now. */
    suspend fun extend(lease: Duration) = native { raw.extend(lease.ms()) }

    override suspend fun rawRelease() = raw.release()
    override suspend fun rawDispose() = raw.dispose()
    override fun rawReleaseBlocking() = raw.releaseBlocking()
    override fun rawDisposeBlocking() = raw.disposeBlocking()
    override fun rawIsLost() = raw.isLost()
    override fun rawIsReleased() = raw.isReleased()
    override suspend fun rawLost() = raw.lost()
    override fun toString() = "Permit($name, id=$id, token=$token)"
}

/** Every lock of a [MultiLock], held. */
class MultiGuard internal constructor(override val raw: dev.baton.ffi.MultiGuard) : Guard() {
    /** One fencing token per lock, in acquisition order. */
    val tokens: List<Long> = raw.tokens().map { it.toLong() }

    /** The names held, in acquisition order. */
    val names: List<String> = raw.names()

    override suspend fun rawRelease() = raw.release()
    override suspend fun rawDispose() = raw.dispose()
    override fun rawReleaseBlocking() = raw.releaseBlocking()
    override fun rawDisposeBlocking() = raw.disposeBlocking()
    override fun rawIsLost() = raw.isLost()
    override fun rawIsReleased() = raw.isReleased()
    override suspend fun rawLost() = raw.lost()
    override fun toString() = "MultiGuard($names)"
}
