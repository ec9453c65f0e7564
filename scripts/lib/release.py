"""The release procedure's checks (docs/releasing.md), called by scripts/release.

    release.py check ROOT                      every version-bearing file carries the workspace's
    release.py set ROOT VERSION                write VERSION into all of them
    release.py plan ROOT DIST TRIPLE…          the artefacts of those targets are all in DIST and
                                               in its SHA256SUMS; the Maven Central bundle is
                                               staged; the upload commands are printed

The version lives in one place, `[workspace.package] version` in Cargo.toml; every other file
that names baton's version (the npm and wasm manifests, the pom, the consumers' pins, the
install lines of the package READMEs) is listed in VERSION_SITES with the pattern that finds
it, so one table serves both the check and the bump.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

SEMVER = r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?"


@dataclass(frozen=True)
class Site:
    """Where a file names baton's version: PATTERN's group `v` is the version."""

    path: str
    pattern: str
    first_only: bool = False  # the manifest's own version, not its dependencies'

    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern.replace("{V}", f"(?P<v>{SEMVER})"), re.MULTILINE)


MANIFESTS = [
    Site("Cargo.toml", r'^version = "{V}"$', first_only=True),
    Site("bindings-node/package.json", r'^  "version": "{V}"', first_only=True),
    Site("wasm/js/node/package.json", r'^  "version": "{V}"', first_only=True),
    Site("wasm/js/web/package.json", r'^  "version": "{V}"', first_only=True),
    Site("bindings-kotlin/pom.xml", r"<artifactId>baton</artifactId>\s*(?:<!--.*?-->\s*)?<version>{V}</version>", first_only=True),
]
# Projects that depend on the released artefacts by version.
PINS = [
    Site("tests/jvm-consumer/pom.xml", r"<baton\.version>{V}</baton\.version>"),
    Site("tests/xlang/holders/java/baton.pom.xml", r"<baton\.version>{V}</baton\.version>"),
    Site("benches/peers/peers.d/kotlin/pom.xml", r"<baton\.version>{V}</baton\.version>"),
    Site("tests/gradle-consumer/build.gradle", r"findProperty\('batonVersion'\) \?: '{V}'"),
]
# Install lines in the docs: artefact file names and coordinates that carry the version.
DOC_PATTERNS = [
    r"dev\.baton:baton:{V}",
    r"<artifactId>baton</artifactId>\s*<version>{V}</version>",
    r"baton_lock-{V}-cp",
    r"baton-lock-(?:[a-z0-9]+-)*{V}\.tgz",
    r"baton-lock {V}\b",
    # A CLI archive: the triple's first word tells the version's end from a pre-release's.
    r"baton-{V}(?=-(?:x86_64|aarch64)-)",
    r"baton-{V}(?:\.jar|-sources\.jar|-javadoc\.jar|\.pom|\.crate)",
]
DOC_GLOBS = ["README.md", "*/README.md", "docs/*.md", "CONTRIBUTING.md"]


def sites(root: Path) -> list[Site]:
    out = list(MANIFESTS) + list(PINS)
    seen: set[str] = set()
    for glob in DOC_GLOBS:
        for doc in sorted(root.glob(glob)):
            rel = doc.relative_to(root).as_posix()
            if rel in seen or rel.startswith(("target/", "third_party/")):
                continue
            seen.add(rel)
            out += [Site(rel, p) for p in DOC_PATTERNS]
    return out


def workspace_version(root: Path) -> str:
    found = MANIFESTS[0].regex().search((root / MANIFESTS[0].path).read_text())
    if not found:
        raise SystemExit("Cargo.toml: no [workspace.package] version")
    return found["v"]


def find(root: Path, site: Site) -> list[re.Match[str]]:
    text = (root / site.path).read_text()
    matches = list(site.regex().finditer(text))
    return matches[:1] if site.first_only else matches


def check(root: Path) -> list[str]:
    """The places whose version is not the workspace's (empty: all agree)."""
    want = workspace_version(root)
    wrong = []
    for site in sites(root):
        if not (root / site.path).exists():
            wrong.append(f"{site.path}: missing (it should carry version {want})")
            continue
        matches = find(root, site)
        if not matches and (site in MANIFESTS or site in PINS):
            wrong.append(f"{site.path}: no version found by /{site.pattern}/")
        for m in matches:
            if m["v"] != want:
                line = (root / site.path).read_text().count("\n", 0, m.start()) + 1
                wrong.append(f"{site.path}:{line}: {m['v']} (the workspace is {want})")
    return wrong


def set_version(root: Path, version: str) -> list[str]:
    """Writes VERSION into every site; returns the files changed."""
    if not re.fullmatch(SEMVER, version):
        raise SystemExit(f"'{version}' is not a version (MAJOR.MINOR.PATCH[-PRE])")
    changed: dict[str, str] = {}
    for site in sites(root):
        path = root / site.path
        if not path.exists():
            continue
        text = changed.get(site.path, path.read_text())
        count = 1 if site.first_only else 0

        def put(m: re.Match[str]) -> str:
            s, e = m.span("v")
            return m.group(0)[: s - m.start()] + version + m.group(0)[e - m.start() :]

        new = site.regex().sub(put, text, count=count)
        if new != text:
            changed[site.path] = new
    for rel, text in changed.items():
        (root / rel).write_text(text)
    return sorted(changed)


@dataclass(frozen=True)
class Target:
    triple: str
    wheel: str
    napi: str
    jna: str
    ext: str


def targets(root: Path) -> dict[str, Target]:
    """The platform matrix, read from scripts/lib/targets.sh (its one table)."""
    text = (root / "scripts/lib/targets.sh").read_text()
    table = re.search(r"_BATON_TARGET_TABLE='\n(.*?)'", text, re.DOTALL)
    if not table:
        raise SystemExit("scripts/lib/targets.sh: no _BATON_TARGET_TABLE")
    rows = [line.split() for line in table[1].splitlines() if line.strip()]
    return {r[0]: Target(*r[:5]) for r in rows}


def expected(dist: Path, version: str, chosen: list[Target]) -> tuple[list[str], list[str]]:
    """(present, missing): the artefacts a release of CHOSEN targets consists of."""
    present, missing = [], []

    def want(name: str, glob: bool = False) -> None:
        hits = sorted(p.name for p in dist.glob(name)) if glob else ([name] if (dist / name).exists() else [])
        (present.extend(hits) if hits else missing.append(name))

    for t in chosen:
        want(f"baton-{version}-{t.triple}{t.ext}")
        want(f"baton_lock-{version}-*{t.wheel}*.whl", glob=True)
        want(f"baton-lock-{t.napi}-{version}.tgz")
    want(f"baton-lock-{version}.tgz")
    for suffix in (".jar", "-sources.jar", "-javadoc.jar", ".pom"):
        want(f"baton-{version}{suffix}")
    want(f"baton-{version}.crate")
    for pkg in ("wasm/package.json", "wasm-node/package.json"):
        want(pkg)
    jar = dist / f"baton-{version}.jar"
    if jar.exists():
        with zipfile.ZipFile(jar) as z:
            dirs = {n.split("/", 1)[0] for n in z.namelist() if "/" in n}
        for t in chosen:
            # musl rows share the glibc JNA dir (targets.sh): the glibc library serves them.
            if "musl" not in t.triple and t.jna not in dirs:
                missing.append(f"{jar.name}!/{t.jna}/ (the JVM library of {t.triple})")
    return present, missing


def sums_problems(dist: Path) -> list[str]:
    sums = dist / "SHA256SUMS"
    if not sums.exists():
        return ["SHA256SUMS is missing"]
    listed = {}
    for line in sums.read_text().splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    problems = []
    for f in sorted(p for p in dist.rglob("*") if p.is_file() and p.name != "SHA256SUMS"):
        rel = f.relative_to(dist).as_posix()
        if rel not in listed:
            problems.append(f"SHA256SUMS does not list {rel}")
        elif hashlib.sha256(f.read_bytes()).hexdigest() != listed[rel]:
            problems.append(f"SHA256SUMS: {rel} does not match")
    return problems


def stage_maven(dist: Path, stage: Path, version: str) -> Path:
    """The Central Portal bundle's layout (dev/baton/baton/VERSION/), with .md5 and .sha1 of
    each file; the .asc signatures are made by the printed gpg command."""
    folder = stage / "dev/baton/baton" / version
    if stage.exists():
        shutil.rmtree(stage)
    folder.mkdir(parents=True)
    for suffix in (".jar", "-sources.jar", "-javadoc.jar", ".pom"):
        src = dist / f"baton-{version}{suffix}"
        dst = folder / src.name
        shutil.copyfile(src, dst)
        data = dst.read_bytes()
        for algo in ("md5", "sha1"):
            (folder / f"{dst.name}.{algo}").write_text(hashlib.new(algo, data).hexdigest())
    return folder


def upload_commands(root: Path, dist: Path, stage: Path, version: str, chosen: list[Target]) -> list[str]:
    d = dist.relative_to(root).as_posix() if dist.is_relative_to(root) else str(dist)
    s = stage.relative_to(root).as_posix() if stage.is_relative_to(root) else str(stage)
    lines = [
        "# 1. the tag",
        f"git tag -s v{version} -m 'baton {version}' && git push origin v{version}",
        "# 2. crates.io (scripts/package.d/crate.sh: the name baton-lock and the vendored etcd-client)",
        "cargo publish -p baton",
        "# 3. PyPI: every wheel at once",
        f"python3 -m twine upload {d}/baton_lock-{version}-*.whl",
        "# 4. npm: the platform packages first, then the main one that names them as optionalDependencies",
    ]
    lines += [f"npm publish --access public {d}/baton-lock-{t.napi}-{version}.tgz" for t in chosen]
    lines += [
        f"npm publish {d}/baton-lock-{version}.tgz",
        f"npm publish {d}/wasm",
        f"npm publish {d}/wasm-node",
        "# 5. Maven Central (Central Portal): sign, bundle, upload, then publish in the portal",
        f"(cd {s} && for f in dev/baton/baton/{version}/*.jar dev/baton/baton/{version}/*.pom; "
        'do gpg --armor --detach-sign "$f"; done '
        f"&& zip -qr ../baton-{version}-central.zip dev)",
        'curl --fail -H "Authorization: Bearer $CENTRAL_TOKEN" '
        f"-F bundle=@{Path(s).parent.as_posix()}/baton-{version}-central.zip "
        "'https://central.sonatype.com/api/v1/publisher/upload?publishingType=USER_MANAGED'",
        "# 6. the CLI archives and SHA256SUMS go to the release page of tag v" + version,
    ]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("check", "set", "plan"):
        print(__doc__, file=sys.stderr)
        return 2
    cmd, root = argv[0], Path(argv[1]).resolve()
    if cmd == "check":
        wrong = check(root)
        for w in wrong:
            print(f"version mismatch: {w}", file=sys.stderr)
        if not wrong:
            print(workspace_version(root))
        return 1 if wrong else 0
    if cmd == "set":
        if len(argv) != 3:
            print("usage: release.py set ROOT VERSION", file=sys.stderr)
            return 2
        for rel in set_version(root, argv[2]):
            print(rel)
        wrong = check(root)
        for w in wrong:
            print(f"version mismatch after the bump: {w}", file=sys.stderr)
        return 1 if wrong else 0
    dist, triples = Path(argv[2]).resolve(), argv[3:]
    table = targets(root)
    unknown = [t for t in triples if t not in table]
    if unknown or not triples:
        print(f"targets: unknown {unknown} (known: {' '.join(table)})", file=sys.stderr)
        return 2
    version = workspace_version(root)
    chosen = [table[t] for t in triples]
    present, missing = expected(dist, version, chosen)
    problems = [f"missing: {m}" for m in missing] + sums_problems(dist)
    for p in problems:
        print(f"release: {p}", file=sys.stderr)
    if problems:
        return 1
    for name in present:
        path = dist / name
        size = sum(f.stat().st_size for f in path.rglob("*")) if path.is_dir() else path.stat().st_size
        print(f"{size:>12}  {name}")
    stage = root / "target/maven-central"
    stage_maven(dist, stage, version)
    print("\n# the upload commands (not run: they need each registry's credentials)")
    print("\n".join(upload_commands(root, dist, stage, version, chosen)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
