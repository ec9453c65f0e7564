package dev.baton

import dev.baton.ffi.LockOptions
import java.util.concurrent.CompletableFuture
import kotlin.time.Duration

/**
 * The entry point: `Baton.connect(url)` (Kotlin, suspending) or `Baton.connectBlocking(url)`
 * (Java). URLs: `memory://`, `sqlite:///path.db`, `redis://host:6379`, `etcd://host:2379`, …
 *
 * The first call loads the native library ([NativeLibrary]); on a platform the jar has no
 * library for, every call raises [BatonException.Unsupported] naming the platform, the
 * resource looked for and how to build the library from source.
 */
object Baton {
    /** Connects to the store [url] names. */
    suspend fun connect(url: String): Client {
        NativeLibrary.ensureLoaded()
        return native { Client(dev.baton.ffi.connect(url)) }
    }

    /** [connect], blocking the calling thread. */
    @JvmStatic
    @Throws(InterruptedException::class)
    fun connectBlocking(url: String): Client = blocking { connect(url) }

    /** [connect] as a future. */
    @JvmStatic
    fun connectAsync(url: String): CompletableFuture<Client> = futureOf { connect(url) }

    /**
     * [statement] (one SQL `UPDATE`) with the fencing guard added, for the caller's own
     * driver: it sets the row's `fence` column to [token] and changes only rows whose fence
     * is not above it. A statement it cannot guard is [BatonException.InvalidArgument].
     */
    @JvmStatic
    fun fencedUpdate(statement: String, token: Long): String {
        NativeLibrary.ensureLoaded()
        return native { dev.baton.ffi.fencedUpdate(statement, token) }
    }

    /** The names of the core's error kinds, in order (what [ErrorKind] mirrors). */
    @JvmStatic
    fun errorKinds(): List<String> {
        NativeLibrary.ensureLoaded()
        return dev.baton.ffi.errorKinds()
    }

    /** How many native objects (clients, handles, guards) are alive: a test hook for leaks. */
    @JvmStatic
    fun liveNativeObjects(): Long {
        NativeLibrary.ensureLoaded()
        return dev.baton.ffi.liveObjects()
    }
}

/**
 * A connection to one store, and the factory of handles. Handles are cheap; the calls on
 * them do the work. `close()` releases everything this client holds.
 */
class Client internal constructor(private val raw: dev.baton.ffi.Client) : AutoCloseable {
    /** A lock handle; [ttl] gives grants an explicit lease instead of the watchdog's. */
    fun lock(name: String, ttl: Duration? = null): Lock = Lock(raw.lock(name, options(ttl)))

    /** A lock handle (Java). */
    fun lock(name: String): Lock = Lock(raw.lock(name, LockOptions()))

    /** A lock handle with an explicit lease (Java). */
    fun lock(name: String, ttl: java.time.Duration): Lock = Lock(raw.lock(name, LockOptions(ttlMs = ttl.ms())))

    /** A fair lock handle (grants in request order). */
    fun fairLock(name: String, ttl: Duration? = null): FairLock = FairLock(raw.fairLock(name, options(ttl)))

    /** A fair lock handle (Java). */
    fun fairLock(name: String): FairLock = FairLock(raw.fairLock(name, LockOptions()))

    /** A read-write lock handle. */
    fun rwLock(name: String, ttl: Duration? = null): RwLock = RwLock(raw.rwLock(name, options(ttl)))

    /** A read-write lock handle (Java). */
    fun rwLock(name: String): RwLock = RwLock(raw.rwLock(name, LockOptions()))

    /** A semaphore of [permits] permits. */
    fun semaphore(name: String, permits: Int): Semaphore =
        Semaphore(raw.semaphore(name, permits.toLong(), LockOptions()))

    /** A semaphore whose permits have ids and leases of their own. */
    fun permitSemaphore(name: String, permits: Int): PermitSemaphore =
        PermitSemaphore(raw.permitSemaphore(name, permits.toLong(), LockOptions()))

    /** A count-down latch handle. */
    fun countDownLatch(name: String): CountDownLatch = CountDownLatch(raw.countDownLatch(name))

    /** A multi-lock over [names] (all or nothing). */
    fun multiLock(names: List<String>): MultiLock = MultiLock(raw.multiLock(names))

    /** A multi-lock over [names] (all or nothing). */
    fun multiLock(vararg names: String): MultiLock = multiLock(names.toList())

    /** Fenced writes on this client's store: see [Fence]. */
    fun fence(): Fence = Fence(raw.fence())

    /** Holder, hold count, lease left and last token of the lock [name]. */
    suspend fun inspect(name: String): Inspection = native { raw.inspect(name) }

    /** [inspect], blocking the thread. */
    fun inspectBlocking(name: String): Inspection = blocking { inspect(name) }

    /** This client's id. */
    val id: String get() = raw.id()

    /** The store URL, password redacted. */
    val url: String get() = raw.url()

    /** Whether the client was closed. */
    val isClosed: Boolean get() = raw.isClosed()

    /** Releases everything this client holds and closes the store connection (suspending). */
    suspend fun shutdown() = native { raw.shutdown() }

    /** Releases everything this client holds, closes the connection and frees the native client. */
    override fun close() {
        try {
            blocking { shutdown() }
        } finally {
            raw.destroy()
        }
    }

    override fun toString() = "Client($url)"

    private fun options(ttl: Duration?) = LockOptions(ttlMs = ttl?.ms())
}
