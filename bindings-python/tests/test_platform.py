"""A platform with no compiled extension: ``import baton`` raises an ImportError naming the
platform, saying no prebuilt wheel was installed for it and how to build from source, with
the original error chained — checked in a fresh interpreter whose PYTHONPATH holds a copy
of the pure-Python package without ``_baton`` (a source checkout never built), or with a
``_baton`` that is not this platform's (a wheel of another platform forced in)."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import baton

SOURCE = Path(__file__).resolve().parents[1] / "python" / "baton"

PROBE = """
import importlib.util, json, sys
origin = importlib.util.find_spec("baton").origin
try:
    import baton
except ImportError as e:
    print(json.dumps({
        "message": str(e),
        "name": e.name,
        "cause": type(e.__cause__).__name__ if e.__cause__ else None,
        "cause_message": str(e.__cause__),
        "file": origin,
    }))
else:
    print(json.dumps({"imported": baton.__file__}))
"""


def pure_copy(tmp_path: Path) -> Path:
    """tmp_path/baton: the package's Python files, no compiled extension."""
    dest = tmp_path / "baton"
    shutil.copytree(SOURCE, dest, ignore=shutil.ignore_patterns("_baton*.so", "_baton*.pyd", "__pycache__"))
    assert not list(dest.glob("_baton*.so"))
    return dest


def import_from(path: Path) -> Dict[str, Any]:
    """What ``import baton`` does in a fresh interpreter with PYTHONPATH=path (first on
    sys.path, before the installed wheel)."""
    out = subprocess.run(
        [sys.executable, "-s", "-c", PROBE],
        env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"},
        cwd=path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    result: Dict[str, Any] = json.loads(out.stdout)
    return result


def assert_names_platform(message: str) -> None:
    assert sys.platform in message
    assert platform.machine() in message
    if sys.platform.startswith("linux"):
        name, version = platform.libc_ver()
        assert (f"glibc {version}" if name == "glibc" else "musl") in message, message
    assert "No prebuilt wheel of baton-lock was installed for this platform" in message
    assert "https://rustup.rs" in message
    assert "`pip install /path/to/baton/bindings-python`" in message
    assert "`maturin develop` in bindings-python/" in message


def test_a_checkout_without_the_extension(tmp_path: Path) -> None:
    pkg = pure_copy(tmp_path)
    got = import_from(tmp_path)
    assert got.get("file") == str(pkg / "__init__.py"), got  # the copy, not the installed wheel
    assert got["name"] == "baton._baton"
    assert_names_platform(got["message"])
    assert "No module named 'baton._baton'" in got["message"]
    assert got["cause"] == "ModuleNotFoundError"
    assert got["cause_message"] == "No module named 'baton._baton'"


def test_an_extension_of_another_platform(tmp_path: Path) -> None:
    pkg = pure_copy(tmp_path)
    # What the import system finds for an abi3 extension here, holding no code for this machine.
    (pkg / "_baton.abi3.so").write_bytes(b"\x7fELF not for this machine\n")
    got = import_from(tmp_path)
    assert_names_platform(got["message"])
    assert got["cause"] == "ImportError"
    assert "_baton.abi3.so" in got["cause_message"]
    assert got["cause_message"] in got["message"]


def test_the_installed_wheel_imports() -> None:
    # The working path, for contrast: the package under test has its extension.
    client = baton.connect("memory://platform")
    guard = client.lock("x").try_acquire()
    assert guard is not None
    guard.release()
    client.close()
