"""What the console keeps in the browser and per address: its cookies, and how many
sign-in attempts an address made lately."""

from __future__ import annotations

import hmac
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable
from urllib.parse import urlsplit

from aiohttp import web

from bot.console.rendering import Refused

_log = logging.getLogger(__name__)

# Addresses whose sign-in attempts are counted at once, at most.
MAX_ADDRESSES = 10_000


def same_text(given: str, expected: str) -> bool:
    """Whether two secrets are equal, in a time that does not tell how much of them is; any
    text compares (`hmac.compare_digest` takes ASCII text only)."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


class Cookies:
    """How the console's cookies are set: HttpOnly, SameSite=Lax, on its base path, and
    Secure when people open it over https."""

    def __init__(self, public_url: str, path: str) -> None:
        self.secure = urlsplit(public_url).scheme == "https"
        self.path = path or "/"

    def set(self, response: web.StreamResponse, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=self.path,
            secure=self.secure,
            httponly=True,
            samesite="Lax",
        )

    def clear(self, response: web.StreamResponse, name: str) -> None:
        response.del_cookie(name, path=self.path, secure=self.secure, samesite="Lax")


def client_address(request: web.Request) -> str:
    """Who sent a request: its peer's address, or, from a reverse proxy on this machine,
    the address that proxy added last to X-Forwarded-For (one the client cannot forge)."""
    remote = request.remote or "?"
    forwarded = request.headers.get("X-Forwarded-For", "")
    if forwarded and (remote == "::1" or remote.startswith("127.")):
        return forwarded.rsplit(",", 1)[-1].strip()[:64] or remote
    return remote


class Attempts:
    """Sign-in attempts per address, at most `limit` in `window_s`: more are refused."""

    def __init__(
        self,
        limit: int = 10,
        window_s: float = 300.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.window_s, self.monotonic = limit, window_s, monotonic
        self._seen: defaultdict[str, deque[float]] = defaultdict(deque)

    def check(self, request: web.Request) -> None:
        """Count one attempt from the request's address; refuse it past the limit."""
        now, seen = self.monotonic(), self._seen[client_address(request)]
        while seen and now - seen[0] > self.window_s:
            seen.popleft()
        if len(self._seen) > MAX_ADDRESSES:  # forget the addresses quiet the longest
            for address in [a for a, times in self._seen.items() if times is not seen][
                : len(self._seen) // 2
            ]:
                del self._seen[address]
        if len(seen) >= self.limit:
            _log.warning(
                "sign-in attempts from %s refused: over %d", client_address(request), self.limit
            )
            raise Refused(
                429,
                "Too many attempts",
                f"Too many sign-in attempts from your address; try again in "
                f"{round(self.window_s / 60)} minutes.",
            )
        seen.append(now)
