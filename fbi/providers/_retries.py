"""How often and how fast the model client asks: a request-rate limit (``--rpm``) and
the retry policy (exponential backoff with full jitter, a server's Retry-After first)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field


class RequestRateLimiter:
    """At most ``rpm`` requests a minute, as a token bucket holding one request: starts
    are spaced 60/rpm seconds apart, whatever the concurrency."""

    def __init__(self, rpm: float, clock=time.monotonic, sleep=asyncio.sleep):
        self.interval = 60.0 / rpm
        self._clock = clock
        self._sleep = sleep
        self._next = 0.0

    async def wait(self) -> None:
        now = self._clock()
        start = max(now, self._next)
        self._next = start + self.interval  # reserved before sleeping: no two share a slot
        if start > now:
            await self._sleep(start - now)


@dataclass
class RetryPolicy:
    """Exponential backoff with full jitter; a server's Retry-After wins when given."""

    max_retries: int = 6
    """Tries after the first, for what another try can fix."""
    base_delay_s: float = 0.5
    """The first backoff's cap, doubled each try."""
    max_delay_s: float = 30.0
    """The largest backoff (a server's Retry-After may ask for up to four times it)."""
    rng: random.Random = field(default_factory=random.Random)
    """The jitter's random source (seeded in tests)."""

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_delay_s * 4)
        return self.rng.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** attempt))
