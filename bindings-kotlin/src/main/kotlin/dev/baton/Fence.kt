package dev.baton

/** A value written through a [Fence], with the token of the write that put it there. */
data class Fenced(val value: String, val token: Long)

/**
 * Fenced writes at the protected resource (from [Client.fence]): the store itself refuses a
 * write whose token is below one it has seen for the key, so a holder paused past its
 * lease (a GC pause, a stopped process) cannot overwrite its successor's work when it wakes.
 * A write with the same token as the last one is the same grant writing again, and is taken.
 *
 * ```kotlin
 * val fence = client.fence()
 * client.lock("stock").withLock { guard ->
 *     check(fence.write("stock", "4", guard.token))   // false: a later holder has written
 * }
 * ```
 *
 * Keys follow the rules of lock names. Stores: Redis, etcd, ZooKeeper, SQL, `memory://`
 * ([BatonException.Unsupported] on Redlock, whose nodes cannot compare and write as one).
 */
class Fence internal constructor(private val raw: dev.baton.ffi.Fence) {
    /** Writes [value] under [key] unless a larger token than [token] was written there; false when refused. */
    suspend fun write(key: String, value: String, token: Long): Boolean = native { raw.write(key, value, token) }

    /** [write], blocking the thread. */
    @Throws(InterruptedException::class)
    fun writeBlocking(key: String, value: String, token: Long): Boolean = blocking { write(key, value, token) }

    /** The value under [key] and the token of its writer, or null when nothing was written. */
    suspend fun read(key: String): Fenced? = native { raw.read(key) }?.let { Fenced(it.value, it.token.toLong()) }

    /** [read], blocking the thread. */
    @Throws(InterruptedException::class)
    fun readBlocking(key: String): Fenced? = blocking { read(key) }

    /**
     * Runs one SQL `UPDATE` with the fencing guard added (see [Baton.fencedUpdate]) on a SQL
     * store; the rows it changed, 0 when a row's `fence` column holds a larger token.
     */
    suspend fun execute(statement: String, token: Long): Long = native { raw.execute(statement, token) }.toLong()

    /** [execute], blocking the thread. */
    @Throws(InterruptedException::class)
    fun executeBlocking(statement: String, token: Long): Long = blocking { execute(statement, token) }
}
