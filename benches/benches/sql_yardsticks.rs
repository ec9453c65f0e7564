//! The SQL lock schemes (`$BATON_TEST_POSTGRES_URL`, `$BATON_TEST_MYSQL_URL` with
//! `?scheme=table` and `?scheme=advisory`): baton's lock against the statements one
//! uncontended cycle of the scheme sends, each timed raw on the scheme's own connections
//! (`baton_benches::yardstick_group_at`). `table`: read, insert, the counter, the token
//! into the row, the count read, delete; `advisory`: a pool checkout, the session's lease
//! and `pg_try_advisory_lock` / `GET_LOCK`, the counter, the unlock.

use criterion::Criterion;

fn main() {
    let mut c = Criterion::default().configure_from_args();
    for (var, db) in [("BATON_TEST_POSTGRES_URL", "postgres"), ("BATON_TEST_MYSQL_URL", "mysql")] {
        let Some(url) = baton_benches::store_url(var) else { continue };
        for scheme in ["table", "advisory"] {
            let sep = if url.contains('?') { '&' } else { '?' };
            baton_benches::yardstick_group_at(&mut c, &format!("{url}{sep}scheme={scheme}"), &format!("{db}_{scheme}"));
        }
    }
    c.final_summary();
}
