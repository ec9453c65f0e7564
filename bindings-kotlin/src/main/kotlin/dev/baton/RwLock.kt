package dev.baton

import kotlin.time.Duration

/** Many readers or one writer (Redisson's `RReadWriteLock` layout on Redis). */
class RwLock internal constructor(private val raw: dev.baton.ffi.RwLock) {
    /** The name. */
    val name: String = raw.name()

    /** The read side as a handle (its blocking and future forms serve Java). */
    val readLock: Acquirable<LockGuard> = object : Acquirable<LockGuard>() {
        override suspend fun rawAcquire(timeoutMs: Double) = LockGuard(raw.read(timeoutMs), name)
        override suspend fun rawTryAcquire() = raw.tryRead()?.let { LockGuard(it, name) }
        override fun rawAttempt(timeoutMs: Double) = raw.attemptRead(timeoutMs)?.let { LockGuard(it, name) }
    }

    /** The write side as a handle. */
    val writeLock: Acquirable<LockGuard> = object : Acquirable<LockGuard>() {
        override suspend fun rawAcquire(timeoutMs: Double) = LockGuard(raw.write(timeoutMs), name)
        override suspend fun rawTryAcquire() = raw.tryWrite()?.let { LockGuard(it, name) }
        override fun rawAttempt(timeoutMs: Double) = raw.attemptWrite(timeoutMs)?.let { LockGuard(it, name) }
    }

    /** Waits for a shared hold. */
    suspend fun read(timeout: Duration? = null): LockGuard = readLock.acquire(timeout)

    /** Waits for the exclusive hold. */
    suspend fun write(timeout: Duration? = null): LockGuard = writeLock.acquire(timeout)

    /** One attempt at a shared hold. */
    suspend fun tryRead(): LockGuard? = readLock.tryAcquire()

    /** One attempt at the exclusive hold. */
    suspend fun tryWrite(): LockGuard? = writeLock.tryAcquire()

    /** Holders (readers and writer), waiting writers and the last token. */
    suspend fun inspect(): Inspection = native { raw.inspect() }
}
