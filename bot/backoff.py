"""Exponential backoff with jitter, for anything lorebot retries after a failure."""

from __future__ import annotations

import random


class Backoff:
    """The delays between attempts at something that keeps failing: `first_s`, doubling up
    to `max_s`, each scaled by a random factor in [1 - jitter, 1] so that retries spread
    out; `reset()` after a success starts over."""

    def __init__(
        self,
        first_s: float,
        max_s: float,
        *,
        jitter: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        if not 0 < first_s <= max_s or not 0 <= jitter < 1:
            raise ValueError("need 0 < first_s <= max_s and 0 <= jitter < 1")
        self.first_s = first_s
        self.max_s = max_s
        self.jitter = jitter
        self.rng = rng or random.Random()
        self.failures = 0

    def next_delay(self) -> float:
        """Count one more failure and return how long to wait before the next attempt."""
        base = min(self.max_s, self.first_s * 2.0 ** min(self.failures, 64))
        self.failures += 1
        return base * (1 - self.jitter * self.rng.random())

    def reset(self) -> None:
        """The last attempt worked: the next failure waits `first_s` again."""
        self.failures = 0
