"""Unit tests of release.py on a copy of this repository's version-bearing files."""

import hashlib
import io
import re
import shutil
import sys
import tempfile
import unittest
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import release  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def copy_sites(dst: Path) -> None:
    for site in release.sites(REPO):
        src = REPO / site.path
        if src.exists() and not (dst / site.path).exists():
            (dst / site.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst / site.path)
    (dst / "scripts/lib").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "scripts/lib/targets.sh", dst / "scripts/lib/targets.sh")


class Versions(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        copy_sites(self.tmp)

    def test_the_repository_agrees_with_itself(self) -> None:
        self.assertEqual(release.check(REPO), [])

    def test_bump_reaches_every_site_and_nothing_else(self) -> None:
        cargo_before = (self.tmp / "Cargo.toml").read_text()
        pom_before = (self.tmp / "bindings-kotlin/pom.xml").read_text()
        changed = release.set_version(self.tmp, "7.8.9-rc.1")
        self.assertIn("Cargo.toml", changed)
        self.assertIn("bindings-node/package.json", changed)
        self.assertIn("tests/jvm-consumer/pom.xml", changed)
        self.assertEqual(release.check(self.tmp), [])
        self.assertEqual(release.workspace_version(self.tmp), "7.8.9-rc.1")
        cargo_after = (self.tmp / "Cargo.toml").read_text()
        # Only the workspace's own version line moved: dependency versions stay.
        diff = [(a, b) for a, b in zip(cargo_before.splitlines(), cargo_after.splitlines()) if a != b]
        self.assertEqual(diff, [(f'version = "{release.workspace_version(REPO)}"', 'version = "7.8.9-rc.1"')])
        pom_after = (self.tmp / "bindings-kotlin/pom.xml").read_text()
        self.assertEqual(pom_before.count("<version>") , pom_after.count("<version>"))
        self.assertEqual(len(re.findall(r"7\.8\.9-rc\.1", pom_after)), 1)

    def test_a_cli_archive_name_keeps_its_triple(self) -> None:
        doc = self.tmp / "docs/example.md"
        doc.write_text("unpack `baton-0.0.9-aarch64-unknown-linux-gnu.tar.gz` and `baton-0.0.9.jar`\n")
        wrong = release.check(self.tmp)
        self.assertEqual([w.split(": ", 1)[1] for w in wrong if "example" in w], [
            f"0.0.9 (the workspace is {release.workspace_version(REPO)})"] * 2)
        release.set_version(self.tmp, "7.8.9-rc.1")
        self.assertEqual(doc.read_text(),
                         "unpack `baton-7.8.9-rc.1-aarch64-unknown-linux-gnu.tar.gz` and `baton-7.8.9-rc.1.jar`\n")

    def test_a_stale_pin_is_named(self) -> None:
        pin = self.tmp / "tests/jvm-consumer/pom.xml"
        pin.write_text(re.sub(r"<baton\.version>[^<]+<", "<baton.version>0.0.1<", pin.read_text()))
        wrong = release.check(self.tmp)
        self.assertEqual(len(wrong), 1)
        self.assertIn("tests/jvm-consumer/pom.xml", wrong[0])
        self.assertIn("0.0.1", wrong[0])

    def test_bad_versions_are_refused(self) -> None:
        for bad in ("", "1.2", "v1.2.3", "1.2.3\n"):
            with self.assertRaises(SystemExit):
                release.set_version(self.tmp, bad)


class Plan(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        copy_sites(self.tmp)
        self.dist = self.tmp / "target/dist"
        self.dist.mkdir(parents=True)
        self.version = release.workspace_version(self.tmp)
        table = release.targets(self.tmp)
        self.chosen = [table["x86_64-unknown-linux-gnu"], table["aarch64-unknown-linux-musl"]]
        v = self.version
        names = [f"baton-lock-{v}.tgz", f"baton-{v}.crate", f"baton-{v}-sources.jar",
                 f"baton-{v}-javadoc.jar", f"baton-{v}.pom", "wasm/package.json", "wasm-node/package.json"]
        for t in self.chosen:
            names += [f"baton-{v}-{t.triple}{t.ext}", f"baton_lock-{v}-cp39-abi3-{t.wheel}.whl",
                      f"baton-lock-{t.napi}-{v}.tgz"]
        for n in names:
            (self.dist / n).parent.mkdir(parents=True, exist_ok=True)
            (self.dist / n).write_text(n)
        with zipfile.ZipFile(self.dist / f"baton-{v}.jar", "w") as z:
            z.writestr("linux-x86-64/libbaton_ffi.so", "x")
            z.writestr("linux-aarch64/libbaton_ffi.so", "a")
        self.write_sums()

    def write_sums(self) -> None:
        files = sorted(p for p in self.dist.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
        (self.dist / "SHA256SUMS").write_text("".join(
            f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.relative_to(self.dist).as_posix()}\n" for f in files))

    def plan(self) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = release.main(["plan", str(self.tmp), str(self.dist)] + [t.triple for t in self.chosen])
        return rc, out.getvalue(), err.getvalue()

    def test_a_complete_dist_prints_every_upload(self) -> None:
        rc, out, err = self.plan()
        self.assertEqual(rc, 0, err)
        v = self.version
        self.assertIn(f"npm publish --access public target/dist/baton-lock-linux-arm64-musl-{v}.tgz", out)
        self.assertIn(f"twine upload target/dist/baton_lock-{v}-*.whl", out)
        # The platform packages are published before the main package that names them.
        self.assertLess(out.index("linux-x64-gnu-"), out.index(f"npm publish target/dist/baton-lock-{v}.tgz"))
        staged = self.tmp / f"target/maven-central/dev/baton/baton/{v}"
        jar = (staged / f"baton-{v}.jar").read_bytes()
        self.assertEqual((staged / f"baton-{v}.jar.sha1").read_text(), hashlib.sha1(jar).hexdigest())

    def test_a_missing_artefact_is_named(self) -> None:
        (self.dist / f"baton-lock-linux-arm64-musl-{self.version}.tgz").unlink()
        self.write_sums()
        rc, _, err = self.plan()
        self.assertEqual(rc, 1)
        self.assertIn(f"missing: baton-lock-linux-arm64-musl-{self.version}.tgz", err)

    def test_a_jar_without_a_targets_library_is_named(self) -> None:
        table = release.targets(self.tmp)
        self.chosen.append(table["aarch64-apple-darwin"])
        rc, _, err = self.plan()
        self.assertEqual(rc, 1)
        self.assertIn("darwin-aarch64/ (the JVM library of aarch64-apple-darwin)", err)

    def test_a_changed_file_fails_the_checksums(self) -> None:
        (self.dist / f"baton-{self.version}.crate").write_text("changed")
        rc, _, err = self.plan()
        self.assertEqual(rc, 1)
        self.assertIn(f"SHA256SUMS: baton-{self.version}.crate does not match", err)


if __name__ == "__main__":
    unittest.main()
