"""The package README's quick start runs, and every public name has a docstring."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import baton

# The package's own README: what PyPI shows (pyproject.toml `readme`).
README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the quick start has one python block"
    return str(blocks[0])


def test_readme_quick_start_runs() -> None:
    # In a fresh interpreter, as a reader would run it; 60 s bounds a hang.
    out = subprocess.run([sys.executable, "-c", quick_start()], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "holding orders/42 with token" in out.stdout


def test_every_public_name_is_documented() -> None:
    missing = []
    assert baton.__doc__
    for name in baton.__all__:
        obj = getattr(baton, name)
        if name == "__version__":
            assert isinstance(obj, str)
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if not (getattr(member, "__doc__", None) or "").strip():
                    missing.append(f"{name}.{attr}")
    assert not missing, f"undocumented: {missing}"
