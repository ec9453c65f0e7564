"""asyncio helpers of the native module (internal)."""

from typing import Awaitable, List, TypeVar

_G = TypeVar("_G")


async def enter(acquiring: Awaitable[_G], blocks: List[_G]) -> _G:
    """``__aenter__`` of handles and pending acquires: awaits the guard and records it
    for the matching ``__aexit__``. Nothing is awaited between the grant and the record,
    so a cancelled task either got no grant or has it recorded; a grant that never
    reached this coroutine is dropped, which releases it."""
    guard = await acquiring
    blocks.append(guard)
    return guard
