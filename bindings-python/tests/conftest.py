"""Store URLs for the behaviour suite, and small bounded helpers.

The stores, by URL:

* ``memory://`` (a fresh in-process store per test) and ``sqlite://`` (a fresh file per
  test), always;
* every URL of ``BATON_TEST_URLS`` (comma-separated), always — asking for a URL this build
  cannot open fails the run;
* every ``BATON_TEST_<NAME>_URL`` variable (what ``scripts/services`` exports: Redis,
  PostgreSQL, …) whose scheme this build of the core knows; a scheme the build lacks
  (``Unsupported``) is listed in the report header and left out, so a store joins the
  suite by URL as soon as the core gains it.

Every test that takes the ``url`` fixture runs on each of them but the variants that
``BATON_TEST_VARIANTS`` names (``scripts/services``: a Redis Cluster or Sentinel, etcd's
gateway, an etcd cluster, TLS, a ZooKeeper ensemble): a variant reaches a store another URL
reaches already, through another topology or transport below the store interface that the
binding calls, where the core's behaviour suite runs every check on each
(``core/tests/<store>.rs``). The variants run the tests marked ``every_store``: a round of
every primitive, waits and wakes across clients, tokens.
``BATON_TEST_EVERY_STORE=1`` runs every test on every URL.

Shared servers are isolated per test with the ``prefix`` URL option.
"""

from __future__ import annotations

import inspect
import os
import re
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import baton

ENV_URL = re.compile(r"^BATON_TEST_([A-Z0-9_]+)_URL$")


def _env_stores() -> Tuple[Dict[str, str], List[str]]:
    """(id → URL of the stores to test, notes on the ones left out)."""
    stores: Dict[str, str] = {}
    notes: List[str] = []
    for i, url in enumerate(u.strip() for u in os.environ.get("BATON_TEST_URLS", "").split(",")):
        if url:
            stores[f"{url.split(':', 1)[0]}-{i}"] = url
    for var in sorted(os.environ):
        m = ENV_URL.match(var)
        if not m or not os.environ[var].strip():
            continue
        url = os.environ[var].strip()
        try:
            baton.connect(url).close()
        except baton.Unsupported as e:
            notes.append(f"{var}: not in this build ({e})")
            continue
        except baton.BatonError:
            pass  # kept: the tests then fail with the store's error, as they should
        stores[m.group(1).lower()] = url
    return stores, notes


ENV_STORES, ENV_NOTES = _env_stores()
STORE_IDS = ["memory", "sqlite", *ENV_STORES]
CROSS_PROCESS_IDS = [s for s in STORE_IDS if s != "memory"]

#: The ``BATON_TEST_<NAME>_URL`` stores (by lowercased NAME) that reach a store another URL
#: already reaches, through another topology, transport or TLS (``BATON_TEST_VARIANTS``,
#: from ``scripts/services``).
VARIANTS = {v.lower() for v in os.environ.get("BATON_TEST_VARIANTS", "").split()}
EVERY_STORE = os.environ.get("BATON_TEST_EVERY_STORE", "") not in ("", "0")

#: The stores every test runs on (the rest run the tests marked ``every_store``).
SUITE_STORE_IDS = [s for s in STORE_IDS if EVERY_STORE or s not in VARIANTS]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "every_store: runs on the variants of BATON_TEST_VARIANTS too")


def pytest_report_header(config: pytest.Config) -> List[str]:
    lines = [f"baton {baton.__version__} from {Path(baton.__file__).parent}; stores: {', '.join(STORE_IDS)}"]
    others = [s for s in STORE_IDS if s not in SUITE_STORE_IDS]
    if others:
        lines.append(f"  only the every_store tests (BATON_TEST_EVERY_STORE=1: all): {', '.join(others)}")
    lines += [f"  {s}: {u}" for s, u in ENV_STORES.items()]
    lines += [f"  left out: {n}" for n in ENV_NOTES]
    return lines


#: What a scheme does not offer (``Unsupported``, checked by the core's own suite in
#: ``core/tests/<scheme>.rs``): a test calling one of these is skipped on that scheme.
NOT_OFFERED: Dict[str, Tuple[str, ...]] = {"redlock": ("fair_lock", "count_down_latch")}


def _source_used_by(function: Any) -> str:
    """The test's source and that of the sample modules it calls (``typing_check``)."""
    parts = [inspect.getsource(function)]
    for name in function.__code__.co_names:
        module = function.__globals__.get(name)
        if inspect.ismodule(module) and getattr(module, "__file__", "").startswith(str(Path(__file__).parent)):
            parts.append(inspect.getsource(module))
    return "\n".join(parts)


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        store = str(params.get("store") or params.get("shared_url") or "")
        scheme = ENV_STORES.get(store, "").split("://", 1)[0]
        missing = NOT_OFFERED.get(scheme)
        function = getattr(item, "function", None)
        if not missing or function is None:
            continue
        used = [m for m in missing if m in _source_used_by(function)]
        if used:
            reason = f"{scheme}:// has no {' or '.join(used)} (Unsupported; see core/tests/{scheme}.rs)"
            item.add_marker(pytest.mark.skip(reason=reason))


def store_url(store: str, tmp_path: Path) -> str:
    """A URL on `store` that no other test shares."""
    tag = uuid.uuid4().hex[:12]
    if store == "memory":
        return f"memory://t{tag}"
    if store == "sqlite":
        return f"sqlite://{tmp_path / 'baton.db'}"
    url = ENV_STORES[store]
    return f"{url}{'&' if '?' in url else '?'}prefix=t{tag}/"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    every = metafunc.definition.get_closest_marker("every_store") is not None
    ids = STORE_IDS if every else SUITE_STORE_IDS
    if "store" in metafunc.fixturenames:
        metafunc.parametrize("store", ids, indirect=True)
    if "shared_url" in metafunc.fixturenames:
        metafunc.parametrize("shared_url", [s for s in ids if s in CROSS_PROCESS_IDS], indirect=True)


@pytest.fixture
def store(request: pytest.FixtureRequest) -> str:
    """The id of the store under test (``memory``, ``sqlite``, ``redis``, …)."""
    return str(request.param)


@pytest.fixture
def url(store: str, tmp_path: Path) -> str:
    return store_url(store, tmp_path)


@pytest.fixture
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL several processes can share (every store but ``memory://``)."""
    return store_url(str(request.param), tmp_path)


@pytest.fixture
def client(url: str) -> Iterator[baton.Client]:
    c = baton.connect(url)
    yield c
    c.close()
