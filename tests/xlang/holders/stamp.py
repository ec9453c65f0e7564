"""The command a lock-running CLI runs while it holds: `baton run NAME -- python stamp.py …`
and `etcdctl lock NAME -- python stamp.py …`. Records the grant (with the CLI's token:
BATON_FENCING_TOKEN from baton, ETCD_LOCK_KEY's create revision is not given by etcdctl, so
none), holds hold_ms, records the release; the CLI releases when this exits.

    python stamp.py history=… id=rust1 lang=rust via=baton-cli hold_ms=40
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from xlang.history import record  # noqa: E402


def main() -> None:
    a = dict(arg.split("=", 1) for arg in sys.argv[1:])
    ev = {"id": a["id"], "lang": a["lang"], "via": a["via"], "mode": "lock"}
    token = os.environ.get("BATON_FENCING_TOKEN")
    owner = os.environ.get("ETCD_LOCK_KEY")
    record(a["history"], ev="grant", token=int(token) if token else None, owner=owner, **ev)
    time.sleep(int(a.get("hold_ms", "40")) / 1000)
    record(a["history"], ev="release", **ev)


if __name__ == "__main__":
    main()
