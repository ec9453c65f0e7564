package dev.baton

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import java.util.concurrent.CompletableFuture
import kotlin.time.Duration
import kotlin.time.DurationUnit

/** Where the Java futures and loss watchers of baton run (daemon threads of Dispatchers.Default). */
internal val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

/**
 * The blocking form of a suspending call. `runBlocking` cancels the call and throws
 * `InterruptedException` when the waiting thread is interrupted; a cancelled acquire
 * holds nothing (the native future is dropped, and the core's acquire is cancel-safe).
 */
internal fun <T> blocking(call: suspend () -> T): T = runBlocking { call() }

/**
 * The future form of a suspending call that yields a closeable grant: cancelling the
 * future cancels the wait, and a grant that arrives after the cancellation is closed
 * (released) instead of being lost.
 */
internal fun <T : AutoCloseable?> futureOf(call: suspend () -> T): CompletableFuture<T> {
    val future = CompletableFuture<T>()
    val job = scope.launch {
        try {
            val got = call()
            if (!future.complete(got)) got?.close()
        } catch (e: Throwable) {
            future.completeExceptionally(e)
        }
    }
    future.whenComplete { _, _ -> if (future.isCancelled) job.cancel() }
    return future
}

/** A Kotlin duration as the native layer's milliseconds (the core validates the value). */
internal fun Duration.ms(): Double = toDouble(DurationUnit.MILLISECONDS)

/** A wait limit: none (+∞ at the native layer) for null and `Duration.INFINITE`. */
internal fun Duration?.limit(): Double = this?.takeIf { it.isFinite() }?.ms() ?: Double.POSITIVE_INFINITY

/** A Java duration as milliseconds (negative stays negative, so the core reports it). */
internal fun java.time.Duration.ms(): Double = seconds * 1000.0 + nano / 1_000_000.0

/** A Java wait limit: none (+∞ at the native layer) for null. */
internal fun java.time.Duration?.limit(): Double = this?.ms() ?: Double.POSITIVE_INFINITY

/**
 * The core wakes a suspended call's continuation from one of its runtime threads, through a
 * JNA callback. Unless told otherwise JNA attaches that thread to the JVM for each callback
 * and detaches it afterwards; attached once and kept (as daemon threads, so they never
 * hold the JVM open) they cost nothing more per call. Done once, when the library is loaded
 * ([NativeLibrary.ensureLoaded], on the first use of [Baton]).
 */
internal fun keepCallbackThreadsAttached() {
    com.sun.jna.Native.setCallbackThreadInitializer(
        dev.baton.ffi.uniffiRustFutureContinuationCallbackImpl,
        com.sun.jna.CallbackThreadInitializer(true, false, "baton-native"),
    )
}
