//! The guard of a fenced SQL `UPDATE`: the caller's statement with `fence = TOKEN` added
//! to its `SET` list and `fence <= TOKEN` to its `WHERE` clause, so the database changes
//! a row only while no later holder has written it (and records the token when it does).
//! The table needs the column: `fence BIGINT NOT NULL DEFAULT 0`.

use crate::error::{Error, Result};
use crate::token::FencingToken;

/// The fence column every guarded statement reads and writes.
const COLUMN: &str = "fence";

/// `statement` (one SQL `UPDATE`) guarded by `token`:
/// `UPDATE t SET a = 1 WHERE id = 2` becomes
/// `UPDATE t SET a = 1, fence = 7 WHERE (id = 2) AND fence <= 7`. Placeholders (`?`,
/// `$1`) are left as they are: run the result with the caller's parameters on any driver.
/// A `FROM`, `RETURNING`, `ORDER BY` or `LIMIT` clause stays where SQL wants it.
///
/// ```
/// let sql = baton::fenced_update("UPDATE stock SET n = n - 1 WHERE item = ?", baton::FencingToken::new(7))?;
/// assert_eq!(sql, "UPDATE stock SET n = n - 1, fence = 7 WHERE (item = ?) AND fence <= 7");
/// # Ok::<(), baton::Error>(())
/// ```
///
/// # Errors
/// `InvalidArgument` when the statement is not one `UPDATE … SET …` (several statements,
/// another verb, unbalanced quotes or parentheses), or the token exceeds a SQL `BIGINT`.
pub fn fenced_update(statement: &str, token: FencingToken) -> Result<String> {
    let token = i64::try_from(token.get())
        .map_err(|_| Error::invalid_argument(format!("token {token} does not fit a SQL BIGINT")))?;
    let body = statement.trim().trim_end_matches(';').trim_end();
    let words = top_level_words(body)?;
    let bad = |why: &str| Error::invalid_argument(format!("cannot fence this statement ({why}): {body:?}"));
    let word = |w: &str, from: usize| words.iter().find(|(at, k)| *at >= from && k.eq_ignore_ascii_case(w));
    match words.first() {
        Some((0, w)) if w.eq_ignore_ascii_case("update") => {}
        _ => return Err(bad("not an UPDATE")),
    }
    let set = word("set", 0).ok_or_else(|| bad("no SET"))?.0;
    let ends_where = ["returning", "order", "limit"];
    let tail = words.iter().find(|(at, k)| *at > set && ends_where.iter().any(|e| k.eq_ignore_ascii_case(e)));
    let tail_at = tail.map_or(body.len(), |(at, _)| *at);
    let wher = word("where", set).filter(|(at, _)| *at < tail_at).map(|(at, _)| *at);
    let from = word("from", set).filter(|(at, _)| *at < wher.unwrap_or(tail_at)).map(|(at, _)| *at);
    let set_end = from.or(wher).unwrap_or(tail_at);
    let mut out = format!("{}, {COLUMN} = {token}", closed(&body[..set_end]));
    if let Some(from) = from {
        out = format!("{out} {}", closed(&body[from..wher.unwrap_or(tail_at)]));
    }
    match wher {
        Some(w) => out = format!("{out} WHERE ({}) AND {COLUMN} <= {token}", closed(&body[w + "where".len()..tail_at])),
        None => out = format!("{out} WHERE {COLUMN} <= {token}"),
    }
    if tail_at < body.len() {
        out = format!("{out} {}", &body[tail_at..]);
    }
    Ok(out)
}

/// `part` without its outer blanks, ending in a newline when its last line has a `--`
/// comment (so that what follows is not commented out).
fn closed(part: &str) -> String {
    let part = part.trim();
    if part.rsplit('\n').next().is_some_and(|l| l.contains("--")) { format!("{part}\n") } else { part.to_owned() }
}

/// The words outside quotes, comments and parentheses, with their byte offsets.
fn top_level_words(sql: &str) -> Result<Vec<(usize, &str)>> {
    let b = sql.as_bytes();
    let unbalanced = || {
        Error::invalid_argument(format!(
            "cannot fence this statement (unbalanced quote, comment or parenthesis): {sql:?}"
        ))
    };
    let (mut i, mut depth, mut words) = (0, 0usize, Vec::new());
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                // A doubled quote inside is an escaped one: the scan just re-enters.
                i = sql[i + 1..].find(q as char).map(|j| i + 1 + j + 1).ok_or_else(unbalanced)?;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => i = sql[i..].find('\n').map_or(b.len(), |j| i + j + 1),
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = sql[i + 2..].find("*/").map(|j| i + 2 + j + 2).ok_or_else(unbalanced)?;
            }
            b'(' => (depth, i) = (depth + 1, i + 1),
            b')' => (depth, i) = (depth.checked_sub(1).ok_or_else(unbalanced)?, i + 1),
            b';' if depth == 0 => {
                return Err(Error::invalid_argument(format!("cannot fence several statements at once: {sql:?}")));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.' || b[i] == b'$') {
                    i += 1;
                }
                if depth == 0 {
                    words.push((start, &sql[start..i]));
                }
            }
            _ => i += 1,
        }
    }
    if depth != 0 {
        return Err(unbalanced());
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn f(s: &str) -> String {
        fenced_update(s, FencingToken::new(7)).unwrap()
    }

    #[test]
    fn guards_the_set_list_and_the_where_clause() {
        assert_eq!(f("UPDATE t SET a = 1"), "UPDATE t SET a = 1, fence = 7 WHERE fence <= 7");
        assert_eq!(
            f("update t set a = 1 where id = 2;"),
            "update t set a = 1, fence = 7 WHERE (id = 2) AND fence <= 7"
        );
        assert_eq!(
            f("UPDATE t SET a = (SELECT max(x) FROM u WHERE y = 1) WHERE id = 2 OR id = 3"),
            "UPDATE t SET a = (SELECT max(x) FROM u WHERE y = 1), fence = 7 WHERE (id = 2 OR id = 3) AND fence <= 7"
        );
        assert_eq!(
            f("UPDATE t SET note = 'where; from' WHERE id = $1 RETURNING a"),
            "UPDATE t SET note = 'where; from', fence = 7 WHERE (id = $1) AND fence <= 7 RETURNING a"
        );
        assert_eq!(
            f("UPDATE t SET a = u.a FROM u WHERE t.id = u.id"),
            "UPDATE t SET a = u.a, fence = 7 FROM u WHERE (t.id = u.id) AND fence <= 7"
        );
        assert_eq!(f("UPDATE t SET a = 1 LIMIT 1"), "UPDATE t SET a = 1, fence = 7 WHERE fence <= 7 LIMIT 1");
        assert_eq!(
            f("UPDATE t SET a = 1 -- where\n WHERE b = 'it''s' ORDER BY id LIMIT 1"),
            "UPDATE t SET a = 1 -- where\n, fence = 7 WHERE (b = 'it''s') AND fence <= 7 ORDER BY id LIMIT 1"
        );
    }

    #[test]
    fn refuses_what_it_cannot_guard() {
        for bad in [
            "DELETE FROM t",
            "UPDATE t",
            "UPDATE t SET a = 1; DROP TABLE t",
            "UPDATE t SET a = 'x",
            "UPDATE t SET a = (1",
        ] {
            let e = fenced_update(bad, FencingToken::new(1)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        }
        let e = fenced_update("UPDATE t SET a = 1", FencingToken::new(u64::MAX)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
}
