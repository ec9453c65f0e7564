"""Checks that each binding, built with its `workspace-features` feature, asks cargo for
dependency units the workspace's test build already compiled (see
tests/workspace-hack/Cargo.toml). A unit is a package built with a set of features,
either for the target or for the build machine (proc macros, build scripts and what they
use). When the test build has a package's unit of one kind, the binding's unit of that kind
must be one of them, or the binding's suite compiles that package, and every package above
it, a second time. (Units the test build does not have at all, pyo3 or uniffi's build-time
crates, are compiled once either way.)

    python3 scripts/lib/workspace_features.py PACKAGE… -- TEST_BUILD_ARGS…
        exit 1 and a list when a binding's build differs from `cargo test TEST_BUILD_ARGS`'s

scripts/test runs it with CARGO_BUILD_TARGET set, as its builds are.
"""
import subprocess
import sys

GLYPHS = ("│   ", "    ", "├── ", "└── ")
Units = dict[tuple[str, str], set[str]]   # (package, "target"|"host") → feature lists


def parse(tree: str) -> Units:
    """The units of a `cargo tree -f '{p}|{f}'` (indented) print-out."""
    found: Units = {}
    host_at: list[bool] = []    # host_at[d]: the node at depth d is built for the build machine
    build_section: dict[int, bool] = {}   # depth → under a "[build-dependencies]" label
    for line in tree.splitlines():
        depth, rest = 0, line
        while rest.startswith(GLYPHS):
            depth, rest = depth + 1, rest[4:]
        if not rest:
            continue
        if rest.startswith("["):
            build_section[depth] = rest == "[build-dependencies]"
            continue
        if "|" not in rest:
            continue
        # Labels belong to the children of one node: a node at this depth or above ends them.
        for d in [d for d in build_section if d >= depth]:
            del build_section[d]
        pkg, feats = rest.split("|", 1)
        parent_host = host_at[depth - 1] if depth else False
        host = parent_host or build_section.get(depth - 1, False) or "(proc-macro)" in pkg
        del host_at[depth:]
        host_at.append(host)
        name = " ".join(pkg.split()[:2])   # "tokio v1.54.1" (drops "(path)", "(proc-macro)")
        found.setdefault((name, "host" if host else "target"), set()).add(feats.removesuffix(" (*)"))
    return found


def units(*args: str) -> Units:
    run = subprocess.run(
        ["cargo", "tree", "--locked", "-e", "normal,build", "-f", "{p}|{f}", *args],
        capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"cargo tree {' '.join(args)} failed:\n{run.stderr}")
    return parse(run.stdout)


def differences(workspace: Units, binding: Units) -> list[str]:
    return [f"{pkg} ({kind}): [{f}] (the test build has: {' / '.join(sorted(workspace[pkg, kind]))})"
            for (pkg, kind), feats in sorted(binding.items()) for f in sorted(feats)
            if (pkg, kind) in workspace and f not in workspace[pkg, kind]]


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    packages, build_args = argv[:split], argv[split + 1:]
    workspace = units(*build_args)
    bad = 0
    for p in packages:
        for d in differences(workspace, units("-p", p, "--features", f"{p}/workspace-features")):
            print(f"{p}: {d}")
            bad += 1
    if bad:
        print("add these features to tests/workspace-hack/Cargo.toml", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
