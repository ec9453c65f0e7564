"""The ImportError of a platform with no compiled extension.

``baton/__init__.py`` imports the compiled module ``baton._baton`` (the Rust core, built by
maturin into the wheel). Where it is missing — a platform no prebuilt wheel of
``baton-lock`` was installed for, a wheel of another platform forced in, a source checkout
that was never built — the bare ``ModuleNotFoundError`` (or the loader's ``cannot open
shared object``) is replaced by one naming this platform and how to build from source; the
original error is chained as ``__cause__``.

This module must not import the native module.
"""

from __future__ import annotations

import glob
import platform
import sys


def libc() -> str:
    """This Linux's C library and its version (``glibc 2.36``, ``musl``); "" elsewhere."""
    if not sys.platform.startswith("linux"):
        return ""
    name, version = platform.libc_ver()
    if name == "glibc":
        return f"glibc {version}" if version else "glibc"
    if glob.glob("/lib/ld-musl-*.so.1"):
        return "musl"
    return name or "unknown libc"


def describe() -> str:
    """This platform as a wheel's tag sees it: OS, machine, libc, Python implementation."""
    parts = [sys.platform, platform.machine() or "unknown machine"]
    if libc():
        parts.append(libc())
    impl = sys.implementation.name
    parts.append(f"{'CPython' if impl == 'cpython' else impl} {platform.python_version()}")
    return ", ".join(parts)


def missing_extension_message(error: ImportError) -> str:
    """The text of the ImportError raised in place of ``error`` (the failed import of baton._baton)."""
    lines = [f"baton: the compiled extension baton._baton is not available on this platform ({describe()}): {error}"]
    loaded = sys.modules.get("baton._baton")
    if loaded is not None:
        lines.append(
            f"The extension {getattr(loaded, '__file__', '?')} loaded but is from another build of baton; "
            "reinstall baton-lock."
        )
    else:
        lines.append(
            "No prebuilt wheel of baton-lock was installed for this platform (or this is a source checkout "
            "that was never built). The wheels are abi3, for CPython >= 3.9; the package's README "
            "(bindings-python/README.md) lists the platforms they are built for."
        )
    lines.append(
        "To build from source (Rust from https://rustup.rs): `pip install /path/to/baton/bindings-python` "
        "from a checkout of baton, or `maturin develop` in bindings-python/ for a development install."
    )
    return "\n".join(lines)
