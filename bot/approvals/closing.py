"""Who finishes the proposals that close without a person's decision (they expire)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from memory.stores.proposals import Proposal

Finish = Callable[[Proposal], Awaitable[object]]


class Closings:
    """Where the approval service hands a proposal nobody decided in time.

    In the daemon the router finishes it: it edits the card and resumes the turn that
    waited. The router is built after the approval service, and from it (its turns propose
    through the service), so this is made first and given to both, and the router
    subscribes as it is built. With nobody subscribed, as in a command, the service's own
    way (editing the card) finishes it."""

    def __init__(self) -> None:
        self._finish: Finish | None = None

    def subscribe(self, finish: Finish) -> None:
        """Finish every proposal that closes from now on with `finish`; one per process."""
        if self._finish is not None:
            raise RuntimeError("the closed proposals already have who finishes them")
        self._finish = finish

    async def finish(self, proposal: Proposal, otherwise: Finish) -> None:
        """Finish `proposal` as the subscriber does, or else with `otherwise`."""
        await (self._finish or otherwise)(proposal)
