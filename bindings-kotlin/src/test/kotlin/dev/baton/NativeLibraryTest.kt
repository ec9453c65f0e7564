package dev.baton

import com.sun.jna.Platform
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/** The library load: this platform's from the jar's resources, and the error on a platform with none. */
class NativeLibraryTest {
    @Test
    fun `this platform's library is in the jar's resources and loads`() {
        assertTrue(Platform.RESOURCE_PREFIX in NativeLibrary.platformsInJar(), NativeLibrary.platformsInJar().toString())
        NativeLibrary.load(Platform.RESOURCE_PREFIX)
        NativeLibrary.ensureLoaded()
        assertEquals(ErrorKind.entries.map { it.name }, Baton.errorKinds())
    }

    @Test
    fun `a platform with no library in the jar is Unsupported, naming it, the resource and how to build`() {
        // What the first use of Baton raises on, e.g., a RISC-V Linux: the same load, for a
        // platform whose resource directory the jar does not have.
        val e = assertThrows<BatonException.Unsupported> { NativeLibrary.load("linux-riscv64") }
        val m = e.message!!
        for (part in listOf(
            "no native library for this platform (linux-riscv64, as JNA names it)",
            "has no resource linux-riscv64/libbaton_ffi.so",
            "This jar carries: ${NativeLibrary.platformsInJar().joinToString(", ")}.",
            "musl (e.g. Alpine) is not covered",
            "cargo build --release -p baton-kotlin --lib",
            "-Duniffi.component.baton_ffi.libraryOverride=<checkout>/target/release/libbaton_ffi.so",
            "scripts/package jvm --target TRIPLE",
        )) {
            assertTrue(m.contains(part), "message lacks \"$part\": $m")
        }
        assertTrue(!m.contains("cannot open shared object"), m)
        assertEquals(ErrorKind.Unsupported, e.kind)
    }

    @Test
    fun `each platform's file name is the one JNA maps`() {
        assertEquals("win32-aarch64/baton_ffi.dll", NativeLibrary.resourcePath("win32-aarch64"))
        assertEquals("darwin-aarch64/libbaton_ffi.dylib", NativeLibrary.resourcePath("darwin-aarch64"))
        assertEquals("linux-x86-64/libbaton_ffi.so", NativeLibrary.resourcePath("linux-x86-64"))
        // The JVM's own mapping for this platform agrees.
        assertEquals(System.mapLibraryName("baton_ffi"), NativeLibrary.fileName(Platform.RESOURCE_PREFIX))
        val e = assertThrows<BatonException.Unsupported> { NativeLibrary.load("win32-aarch64") }
        assertTrue(e.message!!.contains("has no resource win32-aarch64/baton_ffi.dll"), e.message)
        assertTrue(!e.message!!.contains("musl"), e.message)
    }
}
