# shellcheck shell=bash
# `scripts/package crate`: the Rust crate as crates.io would get it — `cargo package -p baton`
# (the .crate file, then a build of exactly what it holds, default features, offline of
# any registry upload) into target/dist/baton-VERSION.crate. Nothing is published.
#
# Names on crates.io (the plan, core/README.md's Install section): `baton` belongs to an
# unrelated crate there, so the core is to be published as `baton-lock` with its library
# still named `baton` (`[lib] name = "baton"`; users write
# `baton = { package = "baton-lock", version = "0.1" }` and keep `use baton::…`). The
# workspace keeps the package name `baton` until that first upload. The vendored
# third_party/etcd-client (committed gRPC code: no `protoc`) is a `[patch]` that only this
# workspace sees: the .crate depends on crates.io's `etcd-client`, whose build script needs
# `protoc` when a user turns on feature `etcd`; the plan is to publish the vendored copy
# under its own name and depend on it by `package =` rename. Every other feature builds
# from the .crate with Rust and a C compiler only.

package_crate() {
    command -v cargo >/dev/null || die "cargo not found: install Rust with rustup (https://rustup.rs)"
    rm -f "$DIST"/baton-*.crate
    # --allow-dirty: package the working tree as it is (CI's clone is clean anyway).
    timeout 3600 cargo package -p baton --allow-dirty
    local version crate
    version=$(workspace_version)
    crate="$ROOT/target/package/baton-$version.crate"
    [[ -f $crate ]] || die "cargo package left no $crate"
    cp "$crate" "$DIST/"
    log "   $(basename "$crate") ($(du -h "$crate" | cut -f1), $(tar tzf "$crate" | wc -l) files)"
}
