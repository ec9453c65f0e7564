"""Checks that each binding, built with its `workspace-features` feature, asks cargo for
dependency features the workspace's test build already compiled (see
tests/workspace-features/Cargo.toml): every (package, features) unit of the binding's
build whose package the workspace build has must be one of that build's units, or the
binding's suite compiles that package, and every package above it, a second time.
(Packages only the binding uses, pyo3 or napi, are compiled once either way.)

    python3 scripts/lib/workspace_features.py PACKAGE… -- TEST_BUILD_ARGS…
        exit 1 and a list when a binding's build differs from `cargo test TEST_BUILD_ARGS`'s
"""
import subprocess
import sys


def units(edges: str, *args: str) -> dict[str, set[str]]:
    """package name+version → the feature lists it is built with (one per build unit)."""
    run = subprocess.run(
        ["cargo", "tree", "--locked", "-e", edges, "--prefix", "none",
         "-f", "{p}|{f}", *args],
        capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"cargo tree {' '.join(args)} failed:\n{run.stderr}")
    out = run.stdout
    found: dict[str, set[str]] = {}
    for line in out.splitlines():
        if "|" not in line:
            continue
        pkg, feats = line.split("|", 1)
        name = " ".join(pkg.split()[:2])   # "tokio v1.54.1" (drops "(path)", "(proc-macro)")
        found.setdefault(name, set()).add(feats.removesuffix(" (*)"))
    return found


def differences(workspace: dict[str, set[str]], binding: dict[str, set[str]]) -> list[str]:
    return [f"{pkg}: [{f}] (the workspace build has: {' / '.join(sorted(workspace.get(pkg, ()))) or 'none'})"
            for pkg, feats in sorted(binding.items()) for f in sorted(feats)
            if pkg in workspace and f not in workspace[pkg]]


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    packages, build_args = argv[:split], argv[split + 1:]
    bad = 0
    # `normal,no-proc-macro`: the units built for the target alone (cargo tree does not say
    # which of a package's units is the build machine's); `normal,build`: every unit.
    for edges in ("normal,no-proc-macro", "normal,build"):
        workspace = units(edges, *build_args)
        for p in packages:
            diff = differences(workspace, units(edges, "-p", p, "--features", f"{p}/workspace-features"))
            for d in diff:
                print(f"{p}: {d}")
            bad += len(diff)
    if bad:
        print("add these features to tests/workspace-features/Cargo.toml", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
