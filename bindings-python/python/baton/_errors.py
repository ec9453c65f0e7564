"""The exceptions baton raises: ``BatonError`` and one subclass per core error kind.

Each subclass also derives from the matching builtin where there is one (``ValueError``,
``TimeoutError``, ``ConnectionError``), so existing ``except`` clauses keep working.
This module must not import the native module (the native module imports it).
"""

import builtins

__all__ = [
    "BatonError",
    "InvalidArgument",
    "InvalidUrl",
    "Timeout",
    "NotHeld",
    "LockLost",
    "ConnectionError",
    "BackendError",
    "Closed",
    "Unsupported",
]


class BatonError(Exception):
    """Base class of every error baton raises."""


class InvalidArgument(BatonError, ValueError):
    """A name, duration, permit count or option was out of range."""


class InvalidUrl(BatonError):
    """The store URL could not be parsed or names an unknown scheme or option."""


class Timeout(BatonError, TimeoutError):
    """Waiting for a grant took longer than the timeout."""


class NotHeld(BatonError):
    """Released or extended something that is not held (e.g. a guard released twice)."""


class LockLost(BatonError):
    """The lease behind a guard expired or was taken over before the release: whatever
    the guard protected is suspect."""


class ConnectionError(BatonError, builtins.ConnectionError):
    """The store could not be reached or the connection broke."""


class BackendError(BatonError):
    """The store answered with an error, or an internal step failed."""


class Closed(BatonError):
    """The client was closed."""


class Unsupported(BatonError):
    """The store (or this build) cannot do what was asked."""


# Shown (and pickled) as `baton.Timeout` etc., where users import them from.
for _cls in (
    BatonError,
    InvalidArgument,
    InvalidUrl,
    Timeout,
    NotHeld,
    LockLost,
    ConnectionError,
    BackendError,
    Closed,
    Unsupported,
):
    _cls.__module__ = "baton"
del _cls
