//! `cargo run -p baton-kotlin --bin uniffi-bindgen -- generate --library … --language kotlin`:
//! the generator shipped with the uniffi version the library was built with, plus one
//! change to what it writes for Kotlin (below).
//!
//! Every synchronous FFI call of uniffi's Kotlin layer allocates a `UniffiRustCallStatus`,
//! a JNA `Structure` (two, with its `RustBuffer` field), and JNA frees a structure's native
//! memory only from its cleaner thread, after a GC: at thousands of calls a second that
//! memory's bookkeeping (a map of every live block, then the cleaner's queue) was most of a
//! call's cost and grew the heap by ~15 KB a lock cycle. The status is only used for the
//! length of the call, so each thread reuses its own (a small stack: a call made while
//! another is in progress on the same thread takes a second one). The rewrite fails the
//! build if uniffi's text changes, rather than leaving the allocation in silently.

use std::path::PathBuf;

/// uniffi's allocation of a call status, and what replaces it.
const STATUS_FROM: &str = "    var status = UniffiRustCallStatus()
    val return_value = callback(status)
    uniffiCheckCallStatus(errorHandler, status)
    return return_value
";
const STATUS_TO: &str = "    val status = uniffiTakeCallStatus()
    try {
        val return_value = callback(status)
        uniffiCheckCallStatus(errorHandler, status)
        return return_value
    } finally {
        uniffiGiveCallStatus(status)
    }
";
/// Placed before uniffi's `uniffiRustCallWithError`.
const POOL_BEFORE: &str = "// Call a rust function that returns a Result<>.";
const POOL: &str = "// baton: each thread's call statuses, reused (see bindings-kotlin/uniffi-bindgen.rs).
private val uniffiCallStatuses = ThreadLocal.withInitial { ArrayList<UniffiRustCallStatus>(2) }

internal fun uniffiTakeCallStatus(): UniffiRustCallStatus {
    val free = uniffiCallStatuses.get()
    val status = if (free.isEmpty()) UniffiRustCallStatus() else free.removeAt(free.size - 1)
    status.code = UNIFFI_CALL_SUCCESS
    status.error_buf.capacity = 0
    status.error_buf.len = 0
    status.error_buf.data = null
    return status
}

internal fun uniffiGiveCallStatus(status: UniffiRustCallStatus) {
    uniffiCallStatuses.get().add(status)
}

";

fn main() {
    let out_dir = out_dir();
    uniffi::uniffi_bindgen_main();
    let Some(dir) = out_dir else { return };
    for file in kotlin_files(&dir) {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| fail(&format!("{}: {e}", file.display())));
        if !text.contains("fun <U, E: kotlin.Exception> uniffiRustCallWithError") {
            continue;
        }
        let patched = rewrite(&text).unwrap_or_else(|what| fail(&format!("{}: {what}", file.display())));
        std::fs::write(&file, patched).unwrap_or_else(|e| fail(&format!("{}: {e}", file.display())));
    }
}

/// The generated text with the call statuses pooled; an error names what was not found.
fn rewrite(text: &str) -> Result<String, String> {
    if text.matches(STATUS_FROM).count() != 1 || text.matches(POOL_BEFORE).count() != 1 {
        return Err("uniffi's call-status helper is not the text this rewrite expects (uniffi upgraded?)".into());
    }
    Ok(text.replace(STATUS_FROM, STATUS_TO).replace(POOL_BEFORE, &format!("{POOL}{POOL_BEFORE}")))
}

/// `--out-dir DIR` of a `generate` call.
fn out_dir() -> Option<PathBuf> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == "--out-dir" || a == "-o")?;
    args.get(i + 1).map(PathBuf::from)
}

fn kotlin_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|e| e == "kt") {
                out.push(p);
            }
        }
    }
    out
}

fn fail(msg: &str) -> ! {
    eprintln!("uniffi-bindgen (baton): {msg}");
    std::process::exit(1)
}
