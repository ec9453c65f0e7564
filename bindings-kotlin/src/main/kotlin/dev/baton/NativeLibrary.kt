package dev.baton

import com.sun.jna.Platform

/**
 * The native library (`libbaton_ffi.so`, `libbaton_ffi.dylib`, `baton_ffi.dll`) behind the
 * generated layer, loaded on the first use of [Baton]. JNA finds it in the jar at its
 * resource directory for this platform (`Platform.RESOURCE_PREFIX`: `linux-x86-64`,
 * `darwin-aarch64`, `win32-x86-64`, …), unless the user points at one
 * (`-Duniffi.component.baton_ffi.libraryOverride=/abs/path`, or `-Djna.library.path=DIR`).
 * A platform the jar has no library for, or a library that does not load, is a
 * [BatonException.Unsupported] naming the platform, the resource looked for, the platforms
 * the jar carries and how to build the library from source — not JNA's bare
 * "cannot open shared object" (or the generated layer's `NoClassDefFoundError` after it).
 */
internal object NativeLibrary {
    /** The system property of uniffi's generated loader that names a library file. */
    const val OVERRIDE = "uniffi.component.baton_ffi.libraryOverride"

    /** The JNA resource directories a full jar carries (scripts/package jvm --all-targets). */
    val PLATFORMS = listOf("linux-x86-64", "linux-aarch64", "darwin-x86-64", "darwin-aarch64", "win32-x86-64")

    /** The library's file name on [platform] (a JNA resource directory name). */
    fun fileName(platform: String): String = when {
        platform.startsWith("win32-") -> "baton_ffi.dll"
        platform.startsWith("darwin-") -> "libbaton_ffi.dylib"
        else -> "libbaton_ffi.so"
    }

    /** Where in the jar the library of [platform] is. */
    fun resourcePath(platform: String): String = "$platform/${fileName(platform)}"

    /** The platforms whose library this class path carries. */
    fun platformsInJar(): List<String> = PLATFORMS.filter { resource(resourcePath(it)) }

    @Volatile private var loaded = false

    /** Loads the library for this platform once; the first failure is raised on every call. */
    fun ensureLoaded() {
        if (loaded) return
        synchronized(this) {
            if (loaded) return
            failure?.let { throw it.copy() }
            try {
                load(Platform.RESOURCE_PREFIX)
            } catch (e: BatonException) {
                failure = e
                throw e.copy()
            }
            keepCallbackThreadsAttached()
            loaded = true
        }
    }

    private var failure: BatonException? = null

    /**
     * Loads the library as JNA resolves it for [platform]: unless the user points at a
     * library, the jar must hold `platform/<file>`; then the generated layer registers it.
     */
    internal fun load(platform: String) {
        val path = resourcePath(platform)
        val pointed = System.getProperty(OVERRIDE) != null || System.getProperty("jna.library.path") != null
        if (!pointed && !resource(path)) throw missing(platform, path, null)
        try {
            dev.baton.ffi.uniffiEnsureInitialized()
        } catch (e: LinkageError) {
            // UnsatisfiedLinkError from JNA, or the generated objects' failed initialisation.
            throw missing(platform, path, e)
        }
    }

    /** The error of a library that is not there for [platform] ([cause]: JNA's, when it tried). */
    internal fun missing(platform: String, path: String, cause: Throwable?): BatonException {
        val carried = platformsInJar()
        val where = System.getProperty(OVERRIDE)?.let { "the library named by -D$OVERRIDE=$it" }
            ?: if (resource(path)) "the jar's $path" else null
        val what = if (where != null && cause != null) {
            "baton's native library for this platform ($platform, as JNA names it) did not load from $where: " +
                reason(cause)
        } else {
            "baton has no native library for this platform ($platform, as JNA names it): the jar dev.baton:baton " +
                "has no resource $path" + (cause?.let { ", and none was found elsewhere (${reason(it)})" } ?: "")
        }
        val musl = if (platform.startsWith("linux-")) {
            " The linux-* libraries are glibc builds (glibc 2.17 or later); musl (e.g. Alpine) is not covered."
        } else {
            ""
        }
        val message = "$what. This jar carries: ${carried.ifEmpty { listOf("none") }.joinToString(", ")}.$musl" +
            " To build it from source (Rust ≥ 1.85): in a checkout of baton, `cargo build --release -p baton-kotlin --lib`" +
            " and run with -D$OVERRIDE=<checkout>/target/release/${fileName(platform)}" +
            " (or `scripts/package jvm` on this platform to install a jar with it inside;" +
            " `scripts/package jvm --target TRIPLE` cross-builds one)."
        return BatonException.Unsupported(message).also { e -> cause?.let { e.initCause(it) } }
    }

    /** JNA's words in [cause]'s chain (a later call's NoClassDefFoundError carries the first one's). */
    private fun reason(cause: Throwable): String {
        val chain = generateSequence(cause) { it.cause }.take(8).toList()
        val link = chain.firstOrNull { it is UnsatisfiedLinkError }
        return (link ?: chain.last()).message ?: cause.toString()
    }

    private fun resource(path: String): Boolean =
        (NativeLibrary::class.java.classLoader ?: ClassLoader.getSystemClassLoader()).getResource(path) != null

    /** A fresh exception with the same message and cause, thrown from here (the stack of this call). */
    private fun BatonException.copy(): BatonException =
        BatonException.Unsupported(message ?: "").also { e -> cause?.let { e.initCause(it) } }
}
