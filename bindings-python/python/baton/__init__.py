"""baton: distributed locks, semaphores and latches with a fencing token on every grant,
over the store you already run, chosen by URL (``memory://``, ``sqlite:///path/file.db``,
…).

Blocking API::

    client = baton.connect("sqlite:///tmp/app.db")
    with client.lock("orders/42", timeout=5.0) as guard:
        write(guard.token)

asyncio API, same names::

    client = await baton.connect_async("sqlite:///tmp/app.db")
    async with client.lock("orders/42", timeout=5.0) as guard:
        ...

Durations are float seconds; tokens are ints; errors are ``baton.BatonError`` subclasses.
"""

from baton._errors import (
    BackendError,
    BatonError,
    Closed,
    ConnectionError,
    InvalidArgument,
    InvalidUrl,
    LockLost,
    NotHeld,
    Timeout,
    Unsupported,
)

try:
    from baton._baton import (
        Acquiring,
        AsyncClient,
        AsyncCountDownLatch,
        AsyncFence,
        AsyncFairLock,
        AsyncLock,
        AsyncLockGuard,
        AsyncLostEvent,
        AsyncMultiGuard,
        AsyncMultiLock,
        AsyncPermit,
        AsyncPermitSemaphore,
        AsyncRwLock,
        AsyncSemaphore,
        Client,
        CountDownLatch,
        FairLock,
        Fence,
        Holder,
        Inspection,
        Lock,
        LockGuard,
        LostEvent,
        MultiGuard,
        MultiLock,
        Permit,
        PermitSemaphore,
        RwLock,
        Semaphore,
        __version__,
        connect,
        connect_async,
        fenced_update,
    )
except ImportError as _e:  # no compiled extension for this platform: say which, and what to do
    from baton._platform import missing_extension_message as _message

    raise ImportError(_message(_e), name="baton._baton") from _e

__all__ = [
    "__version__",
    "connect",
    "connect_async",
    "fenced_update",
    # blocking API
    "Client",
    "Lock",
    "FairLock",
    "LockGuard",
    "LostEvent",
    "RwLock",
    "Semaphore",
    "Permit",
    "PermitSemaphore",
    "CountDownLatch",
    "Fence",
    "MultiLock",
    "MultiGuard",
    "Inspection",
    "Holder",
    # asyncio API
    "AsyncClient",
    "AsyncLock",
    "AsyncFairLock",
    "AsyncLockGuard",
    "AsyncLostEvent",
    "AsyncRwLock",
    "AsyncSemaphore",
    "AsyncPermit",
    "AsyncPermitSemaphore",
    "AsyncCountDownLatch",
    "AsyncFence",
    "AsyncMultiLock",
    "AsyncMultiGuard",
    "Acquiring",
    # errors
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
