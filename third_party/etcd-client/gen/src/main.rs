//! Writes etcd-client's gRPC code into `src/rpc/generated/`, as upstream's build script
//! did into `OUT_DIR` (same protos, same generator), so the crate builds without `protoc`.
//! Usage: etcd-client-gen CRATE_DIR (scripts/gen-etcd-proto passes it).

use std::{env, fs, io, path::PathBuf, process};

/// The protos upstream's build.rs compiled; each yields `<package>.rs`.
const PROTOS: [&str; 5] = [
    "proto/etcd/api/authpb/auth.proto",
    "proto/etcd/api/etcdserverpb/rpc.proto",
    "proto/etcd/api/mvccpb/kv.proto",
    "proto/etcd/server/etcdserver/api/v3election/v3electionpb/v3election.proto",
    "proto/etcd/server/etcdserver/api/v3lock/v3lockpb/v3lock.proto",
];

/// The generated files src/rpc/pb.rs includes (google.api and openapiv2 come from
/// option annotations only and are not used).
const KEEP: [&str; 5] = ["authpb.rs", "etcdserverpb.rs", "mvccpb.rs", "v3electionpb.rs", "v3lockpb.rs"];

fn main() -> io::Result<()> {
    let Some(krate) = env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: etcd-client-gen CRATE_DIR");
        process::exit(2);
    };
    let scratch = env::temp_dir().join(format!("etcd-client-gen-{}", process::id()));
    fs::create_dir_all(&scratch)?;
    let protos = PROTOS.map(|p| krate.join(p));
    // Upstream builds the servers only under its `build-server` feature; the committed
    // code keeps them behind the same feature instead of dropping them.
    tonic_prost_build::configure()
        .build_server(true)
        .server_mod_attribute(".", r#"#[cfg(feature = "build-server")]"#)
        .emit_rerun_if_changed(false)
        .out_dir(&scratch)
        .compile_protos(&protos, &[krate.join("proto")])?;
    let dest = krate.join("src/rpc/generated");
    fs::create_dir_all(&dest)?;
    for name in KEEP {
        fs::copy(scratch.join(name), dest.join(name))?;
    }
    fs::remove_dir_all(&scratch)
}
