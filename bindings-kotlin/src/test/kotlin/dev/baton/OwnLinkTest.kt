package dev.baton

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Test
import java.io.BufferedInputStream
import java.net.Socket
import java.net.URI
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit

/**
 * The Java surface's blocking calls on a plain redis:// server do their I/O on the calling
 * thread, over a connection of that thread's own (named `baton-own` on the server), and the
 * connection ends with the thread. Checked against the server's own CLIENT LIST.
 */
class OwnLinkTest {
    /** id → last command of every `baton-own` connection, asked on a plain socket. */
    private fun own(url: String): Map<String, String> {
        val uri = URI(url.substringBefore('?'))
        Socket(uri.host, if (uri.port > 0) uri.port else 6379).use { s ->
            s.soTimeout = 10_000
            val out = s.getOutputStream()
            val input = BufferedInputStream(s.getInputStream())
            fun line(): String {
                val b = StringBuilder()
                while (true) {
                    val c = input.read()
                    check(c >= 0) { "the server closed the connection" }
                    if (c == '\r'.code) { input.read(); return b.toString() }
                    b.append(c.toChar())
                }
            }
            uri.userInfo?.let { info ->
                val (user, pass) = if (':' in info) info.split(':', limit = 2) else listOf("", info)
                val args = if (user.isEmpty()) listOf("AUTH", pass) else listOf("AUTH", user, pass)
                out.write(("*${args.size}\r\n" + args.joinToString("") { "$${it.length}\r\n$it\r\n" }).toByteArray())
                check(line().startsWith("+")) { "AUTH refused" }
            }
            out.write("*4\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n$4\r\nTYPE\r\n$6\r\nnormal\r\n".toByteArray())
            val head = line()
            check(head.startsWith("$")) { "CLIENT LIST answered $head" }
            val body = ByteArray(head.drop(1).toInt() + 2)
            var got = 0
            while (got < body.size) got += input.read(body, got, body.size - got).also { check(it > 0) }
            return String(body).lines().mapNotNull { l ->
                val f = l.split(' ').associate { kv -> kv.substringBefore('=') to kv.substringAfter('=', "") }
                if (f["name"] == "baton-own") f.getValue("id") to f["cmd"].orEmpty() else null
            }.toMap()
        }
    }

    @Test
    fun `blocking calls on redis run over the calling thread's own connection`() {
        val url = Stores.redis
        assumeTrue(url != null, "BATON_TEST_REDIS_URL is not set")
        val before = own(url!!)
        fun fresh() = own(url).filterKeys { it !in before }
        Baton.connectBlocking(url).use { client ->
            val lock = client.lock(Stores.name("own"))
            val pool = Executors.newSingleThreadExecutor()
            try {
                val tokens = pool.submit<List<Long>> {
                    (1..3).map { lock.acquireBlocking(java.time.Duration.ofSeconds(5)).use { g -> g.token } }
                }.get(30, TimeUnit.SECONDS)
                assertTrue(tokens.zipWithNext().all { (a, b) -> a < b }, "tokens grow: $tokens")
                val mine = fresh()
                assertEquals(1, mine.size, "one own connection for the pool's thread: $mine")
                assertEquals("evalsha", mine.values.single(), "the release's script went over it")
                // The suspending forms open none (`close()` would: it blocks).
                kotlinx.coroutines.runBlocking { lock.acquire().release() }
                assertEquals(mine, fresh(), "the suspending calls left it alone")
            } finally {
                pool.shutdown()
                assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS))
            }
            // Its thread has ended: the connection closes (the server notices at once; 10 s
            // is far beyond that on a loaded host).
            val until = System.nanoTime() + 10_000_000_000
            while (fresh().isNotEmpty()) {
                assertTrue(System.nanoTime() < until, "the own connection outlived its thread: ${fresh()}")
                Thread.sleep(20)
            }
        }
    }
}
