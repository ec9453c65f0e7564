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
    if name.is_empty() {
        return Err(Error::invalid_argument("name must not be empty"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(Error::invalid_argument(format!(
            "name is {} bytes long; the limit is {MAX_NAME_BYTES} (name starts with {:?})",
            name.len(),
            prefix(name, 32)
        )));
    }
    if let Some(i) = name.find('\0') {
        return Err(Error::invalid_argument(format!("name contains a NUL byte at offset {i}: {:?}", prefix(name, 64))));
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
