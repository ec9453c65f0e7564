package dev.baton

import java.nio.file.Files
import java.util.UUID

/**
 * The stores the suite runs against: memory:// and sqlite:// always, and the servers of
 * scripts/services through the same BATON_TEST_*_URL variables every suite reads.
 */
object Stores {
    /** A fresh prefix for this run's names (the servers are shared). */
    val run: String = "kt-" + UUID.randomUUID().toString().take(8)

    private val sqliteFile = Files.createTempDirectory("baton-kt").resolve("locks.db")

    val redis: String? = System.getenv("BATON_TEST_REDIS_URL")?.takeIf { it.isNotBlank() }
    val etcd: String? = System.getenv("BATON_TEST_ETCD_URL")?.takeIf { it.isNotBlank() }

    /** Every store URL to run the behaviour tests on. */
    fun urls(): List<String> = listOfNotNull("memory://$run", "sqlite://$sqliteFile", redis, etcd)

    /** A unique name for one test. */
    fun name(what: String): String = "$run/$what/" + UUID.randomUUID().toString().take(6)
}
