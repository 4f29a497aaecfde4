"""A pool of servers of one model (--api-base given more than once): which server a call
goes to, and which are left out for a while or for good."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fbi.providers._errors import ErrorKind, ProviderError


@dataclass
class ServerPool:
    """Several servers of one model (--api-base given more than once): each call goes to
    a healthy one at random; a server whose call fails is left out for
    ``cooldown_s`` while the others answer, and one that serves another model is left
    out for good. The first server names the pool in requests and cache keys."""

    servers: tuple[str, ...]
    """The servers' URLs; the first names the pool."""
    cooldown_s: float = 10.0
    """How long a server whose call failed is left out."""
    clock: Any = time.monotonic
    """The time source (injected in tests)."""
    rng: Any = None
    """The random source that picks a server (seeded in tests)."""
    _until: dict[str, float] = field(default_factory=dict)
    _excluded: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import random

        self.rng = self.rng or random.Random()

    @property
    def name(self) -> str:
        return self.servers[0]

    def healthy(self) -> list[str]:
        now = self.clock()
        return [s for s in self.servers
                if s not in self._excluded and self._until.get(s, 0.0) <= now]

    def pick(self, tried: set[str] = frozenset()) -> str | None:
        """A healthy server not yet tried for this call, or None."""
        choices = [s for s in self.healthy() if s not in tried]
        return self.rng.choice(choices) if choices else None

    def failed(self, server: str) -> None:
        self._until[server] = self.clock() + self.cooldown_s

    def exclude(self, server: str, why: str) -> None:
        self._excluded[server] = why

    @property
    def excluded(self) -> dict[str, str]:
        return dict(self._excluded)


class PoolExhausted(ProviderError):
    """Every server of a pool failed within its cooldown, or was left out."""

    kind: ErrorKind = "unreachable"  # every server of the pool failed just now

    def __init__(self, pool: ServerPool, last: BaseException | None):
        self.pool, self.last = pool, last
        left_out = "; ".join(f"{server}: {why}" for server, why in pool.excluded.items())
        reason = f" (left out: {left_out})" if left_out else ""
        super().__init__(f"every server of the pool failed within the last "
                         f"{pool.cooldown_s:g} s{reason}")
