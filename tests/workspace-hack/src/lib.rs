//! Empty: the crate exists for its `[dependencies]` (see Cargo.toml).
