package dev.baton

import dev.baton.ffi.FfiException
import dev.baton.ffi.InternalException

/** What went wrong: the core's error kinds, one to one (`BatonException.kind`). */
enum class ErrorKind { InvalidArgument, InvalidUrl, Timeout, NotHeld, LockLost, Connection, Backend, Closed, Unsupported }

/**
 * Every failure of baton: unchecked, sealed, one nested subclass per [ErrorKind], so Kotlin
 * `when` and Java `catch (BatonException.Timeout e)` both work. The message is the core's
 * (URL passwords never appear in it).
 */
sealed class BatonException(val kind: ErrorKind, message: String) : RuntimeException(message) {
    class InvalidArgument(message: String) : BatonException(ErrorKind.InvalidArgument, message)
    class InvalidUrl(message: String) : BatonException(ErrorKind.InvalidUrl, message)
    class Timeout(message: String) : BatonException(ErrorKind.Timeout, message)
    class NotHeld(message: String) : BatonException(ErrorKind.NotHeld, message)
    class LockLost(message: String) : BatonException(ErrorKind.LockLost, message)
    class Connection(message: String) : BatonException(ErrorKind.Connection, message)
    class Backend(message: String) : BatonException(ErrorKind.Backend, message)
    class Closed(message: String) : BatonException(ErrorKind.Closed, message)
    class Unsupported(message: String) : BatonException(ErrorKind.Unsupported, message)

    companion object {
        /** The exception of [kind] with [message]. */
        @JvmStatic
        fun of(kind: ErrorKind, message: String): BatonException = when (kind) {
            ErrorKind.InvalidArgument -> InvalidArgument(message)
            ErrorKind.InvalidUrl -> InvalidUrl(message)
            ErrorKind.Timeout -> Timeout(message)
            ErrorKind.NotHeld -> NotHeld(message)
            ErrorKind.LockLost -> LockLost(message)
            ErrorKind.Connection -> Connection(message)
            ErrorKind.Backend -> Backend(message)
            ErrorKind.Closed -> Closed(message)
            ErrorKind.Unsupported -> Unsupported(message)
        }
    }
}

/**
 * The generated error's variant is named after the core's kind (`FfiException.Timeout`),
 * so the kind is found by name; a panic in a native call (uniffi's `InternalException`)
 * is a `Backend` error.
 */
internal fun Throwable.toBaton(): Throwable = when (this) {
    is FfiException -> BatonException.of(
        ErrorKind.entries.firstOrNull { it.name == this::class.simpleName } ?: ErrorKind.Backend,
        message ?: "",
    )
    is InternalException -> BatonException.Backend("internal error: $message")
    else -> this
}

/** Runs a native call, rethrowing its error as the [BatonException] of its kind. */
internal inline fun <T> native(call: () -> T): T = try {
    call()
} catch (e: FfiException) {
    throw e.toBaton()
} catch (e: InternalException) {
    throw e.toBaton()
}
