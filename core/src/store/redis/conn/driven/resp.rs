//! RESP framing for the driven link: where one answer ends in the bytes read so far, and
//! its value (the driver's parser, with a shortcut for the scripts' usual integer).

use redis::Value;

/// The value of one whole answer; an integer (the lock scripts' usual answer) without the
/// general parser.
pub(super) fn parse(frame: &[u8]) -> std::result::Result<Value, String> {
    if let [b':', digits @ .., b'\r', b'\n'] = frame
        && let Some(n) = std::str::from_utf8(digits).ok().and_then(|s| s.parse().ok())
    {
        return Ok(Value::Int(n));
    }
    redis::parse_redis_value(frame).map_err(|e| e.to_string())
}

/// The length of the RESP answer at the start of `b`: `None` while it is incomplete.
pub(super) fn frame_len(b: &[u8]) -> std::result::Result<Option<usize>, String> {
    let Some(first) = b.first() else { return Ok(None) };
    let Some(cr) = b.windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
    let head = cr + 2;
    let n = || -> std::result::Result<i64, String> {
        std::str::from_utf8(&b[1..cr]).ok().and_then(|s| s.parse().ok()).ok_or_else(|| "a bad length".to_owned())
    };
    match first {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(head)),
        b'$' | b'!' | b'=' => match usize::try_from(n()?) {
            Err(_) => Ok(Some(head)), // `$-1`: nil
            Ok(len) => {
                let end = head + len + 2;
                Ok((b.len() >= end).then_some(end))
            }
        },
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let Ok(items) = usize::try_from(n()?) else { return Ok(Some(head)) };
            let items = if matches!(first, b'%' | b'|') { items * 2 } else { items };
            let mut at = head;
            for _ in 0..items {
                match frame_len(&b[at..])? {
                    Some(len) => at += len,
                    None => return Ok(None),
                }
            }
            Ok(Some(at))
        }
        other => Err(format!("an answer of unknown type {:?}", *other as char)),
    }
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use super::{frame_len, parse};

    #[test]
    fn frames_are_measured_whole_or_not_at_all() {
        assert_eq!(frame_len(b"+OK\r\n"), Ok(Some(5)));
        assert_eq!(frame_len(b"+OK\r"), Ok(None));
        assert_eq!(frame_len(b"$-1\r\n"), Ok(Some(5)));
        assert_eq!(frame_len(b"$3\r\nabc\r\n:1\r\n"), Ok(Some(9)));
        assert_eq!(frame_len(b"$3\r\nab"), Ok(None));
        assert_eq!(frame_len(b"*2\r\n:1\r\n$1\r\nx\r\n"), Ok(Some(15)));
        assert_eq!(frame_len(b"*2\r\n:1\r\n$1\r\n"), Ok(None));
        assert_eq!(frame_len(b"*-1\r\n"), Ok(Some(5)));
        assert!(frame_len(b"?x\r\n").is_err());
        assert!(frame_len(b"$x\r\n").is_err());
    }

    #[test]
    fn integers_parse_directly_and_the_rest_as_before() {
        assert_eq!(parse(b":42\r\n"), Ok(Value::Int(42)));
        assert_eq!(parse(b":-7\r\n"), Ok(Value::Int(-7)));
        assert_eq!(
            parse(b"*2\r\n:1\r\n$1\r\nx\r\n"),
            Ok(Value::Array(vec![Value::Int(1), Value::BulkString(b"x".to_vec())]))
        );
        assert_eq!(parse(b"$-1\r\n"), Ok(Value::Nil));
        assert!(parse(b":x\r\n").is_err());
    }
}
