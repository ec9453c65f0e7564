//! Validated names of locks, semaphores and latches.

use crate::error::{Error, Result};

/// Longest name accepted, in bytes of UTF-8.
pub const MAX_NAME_BYTES: usize = 255;

/// Checks a name the way every handle does: 1..=255 bytes of UTF-8, no NUL byte.
/// Handles report a bad name on their first call; this checks one up front.
///
/// ```
/// assert!(baton::validate_name("orders/42").is_ok());
/// assert_eq!(baton::validate_name("").unwrap_err().kind(), baton::ErrorKind::InvalidArgument);
/// ```
pub fn validate(name: &str) -> Result<()> {
    validate_text("name", name, MAX_NAME_BYTES)
}

/// The rule of names, for any text stored beside them (an election's proposal): 1..=`max`
/// bytes of UTF-8, no NUL byte; `what` names it in the message.
pub(crate) fn validate_text(what: &str, text: &str, max: usize) -> Result<()> {
    if text.is_empty() {
        return Err(Error::invalid_argument(format!("{what} must not be empty")));
    }
    if text.len() > max {
        return Err(Error::invalid_argument(format!(
            "{what} is {} bytes long; the limit is {max} ({what} starts with {:?})",
            text.len(),
            prefix(text, 32)
        )));
    }
    if let Some(i) = text.find('\0') {
        return Err(Error::invalid_argument(format!(
            "{what} contains a NUL byte at offset {i}: {:?}",
            prefix(text, 64)
        )));
    }
    Ok(())
}

/// At most `max` bytes of `s`, cut on a character boundary (for messages).
fn prefix(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn accepts_and_rejects() {
        assert!(validate("orders/42").is_ok());
        assert!(validate("ключ/🔒").is_ok());
        assert!(validate(&"a".repeat(255)).is_ok());
        for bad in ["", "a\0b"] {
            assert_eq!(validate(bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
        let long = "é".repeat(200);
        let e = validate(&long).unwrap_err();
        assert!(e.message().contains("400 bytes"), "{e}");
    }
}
