//! `cargo run -p baton-kotlin --bin uniffi-bindgen -- generate --library … --language kotlin`:
//! the generator shipped with the uniffi version the library was built with.

fn main() {
    uniffi::uniffi_bindgen_main()
}
