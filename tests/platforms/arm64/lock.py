"""Inside the arm64 root (tests/platforms, scripts/suites/70-platforms.sh): the installed
baton-lock wheel takes a lock on each store URL given, twice, under emulation.

    python lock.py URL…

For each URL: the process is aarch64, a held lock is busy for a second handle, and the next
grant's fencing token is above the first. Prints one line per URL; any failure raises."""

import platform
import sys

import baton

assert platform.machine() == "aarch64", f"not aarch64: {platform.machine()}"
ext = baton.__file__
for url in sys.argv[1:]:
    client = baton.connect(url)
    name = f"platforms/arm64-python/{platform.node()}"
    with client.lock(name, timeout=30.0) as guard:
        first = guard.token
        assert client.lock(name).try_acquire() is None, "a held lock was granted to a second handle"
    second = client.lock(name).acquire(timeout=30.0)
    assert second.token > first, f"tokens did not rise: {first} then {second.token}"
    second.release()
    client.close()
    print(f"python {platform.python_version()} {platform.machine()}: {url.split(':')[0]} lock: tokens {first}, {second.token}")
print(f"python: baton from {ext}")
