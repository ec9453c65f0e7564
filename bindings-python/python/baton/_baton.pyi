"""Stubs of the native module ``baton._baton`` (hand-written; checked by mypy.stubtest)."""

from types import TracebackType
from typing import Any, Awaitable, Generator, Generic, List, Optional, Sequence, Tuple, Type, TypeVar, Union, final

from typing_extensions import Self

__all__ = [
    "__version__",
    "connect",
    "connect_async",
    "fenced_update",
    "_raise",
    "_error_kinds",
    "Client",
    "AsyncClient",
    "Lock",
    "AsyncLock",
    "FairLock",
    "AsyncFairLock",
    "RwLock",
    "AsyncRwLock",
    "Semaphore",
    "AsyncSemaphore",
    "Permit",
    "AsyncPermit",
    "PermitSemaphore",
    "AsyncPermitSemaphore",
    "CountDownLatch",
    "AsyncCountDownLatch",
    "Fence",
    "AsyncFence",
    "MultiLock",
    "AsyncMultiLock",
    "MultiGuard",
    "AsyncMultiGuard",
    "LockGuard",
    "AsyncLockGuard",
    "LostEvent",
    "AsyncLostEvent",
    "Acquiring",
    "Inspection",
    "Holder",
]

__version__: str

_G = TypeVar("_G")
# Durations are float seconds (ints are accepted).
_Seconds = Union[float, int]

def connect(url: str) -> Client:
    """Connects to the store ``url`` names and returns a blocking ``Client``."""

def connect_async(url: str) -> Awaitable[AsyncClient]:
    """Connects to the store ``url`` names; resolves to an ``AsyncClient``."""

def fenced_update(statement: str, token: int) -> str:
    """``statement`` (one SQL UPDATE) guarded by ``token``: ``fence = token`` in its SET list,
    ``fence <= token`` in its WHERE clause."""

def _raise(kind: str) -> None:
    """Raises the exception of the error kind named ``kind`` (test hook)."""

def _error_kinds() -> List[str]:
    """The names of every error kind of the core."""

# ── inspection ────────────────────────────────────────────────────────────────

@final
class Holder:
    """One holder of a name."""

    @property
    def owner(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def token(self) -> int: ...
    @property
    def lease_left(self) -> Optional[float]: ...

@final
class Inspection:
    """A snapshot of one name on a store."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def holders(self) -> List[Holder]: ...
    @property
    def waiters(self) -> List[str]: ...
    @property
    def last_token(self) -> Optional[int]: ...
    @property
    def count(self) -> int: ...
    @property
    def permits(self) -> Optional[int]: ...
    @property
    def is_held(self) -> bool: ...

# ── lost events ───────────────────────────────────────────────────────────────

@final
class LostEvent:
    """Set when the guard's lease is lost (``threading.Event``-like)."""

    def is_set(self) -> bool: ...
    def wait(self, timeout: Optional[_Seconds] = None) -> bool: ...

@final
class AsyncLostEvent:
    """Set when the guard's lease is lost (``asyncio.Event``-like)."""

    def is_set(self) -> bool: ...
    def wait(self, timeout: Optional[_Seconds] = None) -> Awaitable[bool]: ...

# ── guards ────────────────────────────────────────────────────────────────────

class _Guard:
    @property
    def lost(self) -> LostEvent: ...
    @property
    def released(self) -> bool: ...
    def release(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class _AsyncGuard:
    @property
    def lost(self) -> AsyncLostEvent: ...
    @property
    def released(self) -> bool: ...
    def release(self) -> Awaitable[None]: ...
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[None]: ...

@final
class LockGuard(_Guard):
    """A held lock (or read/write hold) with its fencing token."""

    @property
    def token(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> str: ...
    def extend(self, seconds: _Seconds) -> None: ...

@final
class AsyncLockGuard(_AsyncGuard):
    """The asyncio form of ``LockGuard``."""

    @property
    def token(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> str: ...
    def extend(self, seconds: _Seconds) -> Awaitable[None]: ...

@final
class Permit(_Guard):
    """Permits held from a semaphore."""

    @property
    def id(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def token(self) -> int: ...
    @property
    def name(self) -> str: ...
    def extend(self, seconds: _Seconds) -> None: ...

@final
class AsyncPermit(_AsyncGuard):
    """The asyncio form of ``Permit``."""

    @property
    def id(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def token(self) -> int: ...
    @property
    def name(self) -> str: ...
    def extend(self, seconds: _Seconds) -> Awaitable[None]: ...

@final
class MultiGuard(_Guard):
    """Every lock of a ``MultiLock``, held."""

    @property
    def names(self) -> List[str]: ...
    @property
    def tokens(self) -> List[int]: ...

@final
class AsyncMultiGuard(_AsyncGuard):
    """The asyncio form of ``MultiGuard``."""

    @property
    def names(self) -> List[str]: ...
    @property
    def tokens(self) -> List[int]: ...

@final
class Acquiring(Generic[_G]):
    """A pending acquire: ``await`` it for the guard, or ``async with`` it."""

    def __await__(self) -> Generator[Any, None, _G]: ...
    def __aenter__(self) -> Awaitable[_G]: ...
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[None]: ...

# ── locks ─────────────────────────────────────────────────────────────────────

class _Lock:
    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> Optional[str]: ...
    def acquire(self, timeout: Optional[_Seconds] = None) -> LockGuard: ...
    def try_acquire(self) -> Optional[LockGuard]: ...
    def inspect(self) -> Inspection: ...
    def __enter__(self) -> LockGuard: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class _AsyncLock:
    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> Optional[str]: ...
    def acquire(self, timeout: Optional[_Seconds] = None) -> Acquiring[AsyncLockGuard]: ...
    def try_acquire(self) -> Awaitable[Optional[AsyncLockGuard]]: ...
    def inspect(self) -> Awaitable[Inspection]: ...
    def __aenter__(self) -> Awaitable[AsyncLockGuard]: ...
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[None]: ...

@final
class Lock(_Lock):
    """A re-entrant exclusive lock handle."""

@final
class FairLock(_Lock):
    """A lock granted in request order."""

@final
class AsyncLock(_AsyncLock):
    """The asyncio form of ``Lock``."""

@final
class AsyncFairLock(_AsyncLock):
    """The asyncio form of ``FairLock``."""

@final
class RwLock:
    """A read-write lock handle."""

    @property
    def name(self) -> str: ...
    def read(self, timeout: Optional[_Seconds] = None) -> LockGuard: ...
    def try_read(self) -> Optional[LockGuard]: ...
    def write(self, timeout: Optional[_Seconds] = None) -> LockGuard: ...
    def try_write(self) -> Optional[LockGuard]: ...
    def inspect(self) -> Inspection: ...

@final
class AsyncRwLock:
    """The asyncio form of ``RwLock``."""

    @property
    def name(self) -> str: ...
    def read(self, timeout: Optional[_Seconds] = None) -> Acquiring[AsyncLockGuard]: ...
    def try_read(self) -> Awaitable[Optional[AsyncLockGuard]]: ...
    def write(self, timeout: Optional[_Seconds] = None) -> Acquiring[AsyncLockGuard]: ...
    def try_write(self) -> Awaitable[Optional[AsyncLockGuard]]: ...
    def inspect(self) -> Awaitable[Inspection]: ...

# ── semaphores ────────────────────────────────────────────────────────────────

@final
class Semaphore:
    """A semaphore of N permits."""

    @property
    def name(self) -> str: ...
    @property
    def permits(self) -> int: ...
    def acquire(self, count: int = 1, timeout: Optional[_Seconds] = None) -> Permit: ...
    def try_acquire(self, count: int = 1) -> Optional[Permit]: ...
    def available(self) -> int: ...
    def inspect(self) -> Inspection: ...

@final
class AsyncSemaphore:
    """The asyncio form of ``Semaphore``."""

    @property
    def name(self) -> str: ...
    @property
    def permits(self) -> int: ...
    def acquire(self, count: int = 1, timeout: Optional[_Seconds] = None) -> Acquiring[AsyncPermit]: ...
    def try_acquire(self, count: int = 1) -> Awaitable[Optional[AsyncPermit]]: ...
    def available(self) -> Awaitable[int]: ...
    def inspect(self) -> Awaitable[Inspection]: ...

@final
class PermitSemaphore:
    """A semaphore whose permits have ids and leases of their own."""

    @property
    def name(self) -> str: ...
    def acquire(self, timeout: Optional[_Seconds] = None, lease: Optional[_Seconds] = None) -> Permit: ...
    def try_acquire(self) -> Optional[Permit]: ...
    def release(self, id: str) -> None: ...
    def update_lease(self, id: str, seconds: _Seconds) -> None: ...
    def available(self) -> int: ...
    def inspect(self) -> Inspection: ...

@final
class AsyncPermitSemaphore:
    """The asyncio form of ``PermitSemaphore``."""

    @property
    def name(self) -> str: ...
    def acquire(
        self, timeout: Optional[_Seconds] = None, lease: Optional[_Seconds] = None
    ) -> Acquiring[AsyncPermit]: ...
    def try_acquire(self) -> Awaitable[Optional[AsyncPermit]]: ...
    def release(self, id: str) -> Awaitable[None]: ...
    def update_lease(self, id: str, seconds: _Seconds) -> Awaitable[None]: ...
    def available(self) -> Awaitable[int]: ...
    def inspect(self) -> Awaitable[Inspection]: ...

# ── fenced writes ─────────────────────────────────────────────────────────────

@final
class Fence:
    """Fenced writes on the client's store: a write with a token below one the store has
    seen for the key is refused."""

    def write(self, key: str, value: str, token: int) -> bool: ...
    def read(self, key: str) -> Optional[Tuple[str, int]]: ...
    def execute(self, statement: str, token: int) -> int: ...

@final
class AsyncFence:
    """The asyncio form of ``Fence``."""

    def write(self, key: str, value: str, token: int) -> Awaitable[bool]: ...
    def read(self, key: str) -> Awaitable[Optional[Tuple[str, int]]]: ...
    def execute(self, statement: str, token: int) -> Awaitable[int]: ...

# ── latch, multi-lock ─────────────────────────────────────────────────────────

@final
class CountDownLatch:
    """A count-down latch."""

    @property
    def name(self) -> str: ...
    def try_set_count(self, count: int) -> bool: ...
    def count_down(self) -> int: ...
    def count(self) -> int: ...
    def wait(self, timeout: Optional[_Seconds] = None) -> None: ...

@final
class AsyncCountDownLatch:
    """The asyncio form of ``CountDownLatch``."""

    @property
    def name(self) -> str: ...
    def try_set_count(self, count: int) -> Awaitable[bool]: ...
    def count_down(self) -> Awaitable[int]: ...
    def count(self) -> Awaitable[int]: ...
    def wait(self, timeout: Optional[_Seconds] = None) -> Awaitable[None]: ...

@final
class MultiLock:
    """Several locks taken all or nothing."""

    @property
    def names(self) -> List[str]: ...
    def acquire(self, timeout: Optional[_Seconds] = None) -> MultiGuard: ...
    def try_acquire(self) -> Optional[MultiGuard]: ...
    def __enter__(self) -> MultiGuard: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

@final
class AsyncMultiLock:
    """The asyncio form of ``MultiLock``."""

    @property
    def names(self) -> List[str]: ...
    def acquire(self, timeout: Optional[_Seconds] = None) -> Acquiring[AsyncMultiGuard]: ...
    def try_acquire(self) -> Awaitable[Optional[AsyncMultiGuard]]: ...
    def __aenter__(self) -> Awaitable[AsyncMultiGuard]: ...
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[None]: ...

# ── clients ───────────────────────────────────────────────────────────────────

@final
class Client:
    """A connection to one store (blocking API)."""

    @property
    def id(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def lock(
        self,
        name: str,
        *,
        ttl: Optional[_Seconds] = None,
        lease: Optional[_Seconds] = None,
        owner: Optional[str] = None,
        timeout: Optional[_Seconds] = None,
    ) -> Lock: ...
    def fair_lock(
        self,
        name: str,
        *,
        ttl: Optional[_Seconds] = None,
        lease: Optional[_Seconds] = None,
        owner: Optional[str] = None,
        timeout: Optional[_Seconds] = None,
    ) -> FairLock: ...
    def rw_lock(
        self, name: str, *, ttl: Optional[_Seconds] = None, lease: Optional[_Seconds] = None, owner: Optional[str] = None
    ) -> RwLock: ...
    def semaphore(
        self, name: str, permits: int, *, ttl: Optional[_Seconds] = None, lease: Optional[_Seconds] = None
    ) -> Semaphore: ...
    def permit_semaphore(
        self, name: str, permits: int, *, ttl: Optional[_Seconds] = None, lease: Optional[_Seconds] = None
    ) -> PermitSemaphore: ...
    def count_down_latch(self, name: str) -> CountDownLatch: ...
    def fence(self) -> Fence: ...
    def multi_lock(
        self,
        names: Sequence[str],
        *,
        ttl: Optional[_Seconds] = None,
        lease: Optional[_Seconds] = None,
        timeout: Optional[_Seconds] = None,
    ) -> MultiLock: ...
    def inspect(self, name: str) -> Inspection: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

@final
class AsyncClient:
    """A connection to one store (asyncio API)."""

    @property
    def id(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def lock(
        self,
        name: str,
        *,
        ttl: Optional[_Seconds] = None,
        lease: Optional[_Seconds] = None,
        owner: Optional[str] = None,
        timeout: Optional[_Seconds] = None,
    ) -> AsyncLock: ...
    def fair_lock(
        self,
        name: str,
        *,
        ttl: Optional[_Seconds] = None,
        lease: Optional[_Seconds] = None,
        owner: Optional[str] = None,
        timeout: Optional[_Seconds] = None,
    ) -> AsyncFairLock: ...
    def rw_lock(
        self, name: str, *, ttl: Optional[_Seconds] = None, lease: Optional[_Seconds] = None, owner: Optional[str] = None
    ) -> AsyncRwLock: ...
    def semaphore(
        self, name: str, permits: int, *, ttl: Optional[_Seconds] = None, lease: Optional[_Seconds] = None
    ) -> AsyncSemaphore: ...
    def permit_semaphore(
        self, name: str, permits: int, *, ttl: Optional[_Seconds] = None, lease: Optional[_Seconds] = None
    ) -> AsyncPermitSemaphore: ...
    def count_down_latch(self, name: str) -> AsyncCountDownLatch: ...
    def fence(self) -> AsyncFence: ...
    def multi_lock(
        self,
        names: Sequence[str],
        *,
        ttl: Optional[_Seconds] = None,
        lease: Optional[_Seconds] = None,
        timeout: Optional[_Seconds] = None,
    ) -> AsyncMultiLock: ...
    def inspect(self, name: str) -> Awaitable[Inspection]: ...
    def close(self) -> Awaitable[None]: ...
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Awaitable[None]: ...
