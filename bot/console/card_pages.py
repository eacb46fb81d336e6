"""The cards pages: the cards a person may decide, with Approve and Decline, and those
decided. A decision here takes the path of a button: checked as it arrives (the same hash,
the same rules), then kept in the inbox as the reaction it asks for and decided once,
across replicas, in its conversation's order; the page waits a moment for its outcome."""

from __future__ import annotations

import asyncio
import json
import secrets

from aiohttp import web

from bot.approvals.buttons import card_hash
from bot.approvals.clicks import Refusal, closed_line, may_decide
from bot.approvals.kinds.registry import get_kind
from bot.console.context import CONSOLE, PAGES
from bot.console.guard import signed_in
from bot.console.people import Person
from bot.console.rendering import Refused, not_found
from bot.core.replies import NOT_ALLOWED_REPLY
from memory.errors import StoreError
from memory.policy.redaction import redact_value
from memory.stores.proposals import Proposal

UNAVAILABLE = "lorebot cannot reach its database right now: nothing was decided. Try again."
# How long a decision's page waits for it to be handled before saying it is queued.
DECISION_WAIT_S = 10.0
# The status of each reason a decision is refused: what the person may not decide is not
# there for them; a card decided or changed meanwhile is a conflict.
REFUSED_STATUS = {"no such card": 404, "not allowed": 404}


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/cards")(cards_page)
    routes.get("/cards/{id:[0-9]{1,18}}")(card_page)
    routes.post("/cards/{id:[0-9]{1,18}}/decide")(decide_card)


def shown_payload(proposal: Proposal) -> str:
    """What a card will do, as the console shows it: its payload, redacted as the card's
    arguments are, without the waiting turn it resumes."""
    payload = {k: v for k, v in proposal.payload.items() if k != "turn"}
    return json.dumps(redact_value(payload), indent=2, ensure_ascii=False, sort_keys=True)


# What an admin sees of a card asked for in someone's direct messages: chat shows it to the
# requester alone, so the console does too.
IN_A_DM = "(asked in a direct message: what it holds is shown to the requester alone)"


def _card(proposal: Proposal, person: Person, admins: frozenset[str]) -> dict[str, object]:
    kind = get_kind(proposal.kind)
    theirs = proposal.conversation.get("is_dm") and proposal.requester != person.user_id
    return {
        "proposal": proposal,
        "label": kind.label,
        "subject": "" if theirs else kind.subject(proposal.payload),
        "payload": IN_A_DM if theirs else shown_payload(proposal),
        "hash": card_hash(proposal),
        "decidable": proposal.pending and may_decide(proposal, person.user_id, admins),
        "where": proposal.conversation.get("channel_id", ""),
    }


async def cards_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    console = request.app[CONSOLE]
    mine = None if person.admin else person.user_id
    proposals = console.stores.proposals
    waiting = await proposals.fetch_for(mine, waiting=True, limit=100)
    decided = await proposals.fetch_for(mine, waiting=False, limit=50)
    return request.app[PAGES].render(
        request,
        "cards.html",
        waiting=[_card(p, person, console.admins) for p in waiting],
        decided=[_card(p, person, console.admins) for p in decided],
    )


async def _visible(request: web.Request, person: Person) -> Proposal:
    """The card of the address, if the person asked for it (an admin: any): else 404."""
    proposals = request.app[CONSOLE].stores.proposals
    mine = None if person.admin else person.user_id
    proposal = await proposals.fetch_asked_by(int(request.match_info["id"]), mine)
    if proposal is None:
        raise not_found()
    return proposal


async def card_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    proposal = await _visible(request, person)
    card = _card(proposal, person, request.app[CONSOLE].admins)
    return request.app[PAGES].render(request, "card.html", card=card)


async def decide_card(request: web.Request) -> web.StreamResponse:
    person = signed_in(request)
    console = request.app[CONSOLE]
    form = await request.post()
    card_id = int(request.match_info["id"])
    decision = form.get("decision")
    if decision not in ("approve", "decline"):
        raise Refused(400, "No decision", "Choose Approve or Decline.")
    shown = form.get("hash")
    found = await console.dispatcher.decisions.check.in_console(
        card_id,
        decision == "approve",
        person.user,
        shown if isinstance(shown, str) else "",
        f"console-{secrets.token_hex(8)}",
    )
    if isinstance(found, Refusal):
        raise Refused(REFUSED_STATUS.get(found.reason, 409), "Not decided", found.text)
    told: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def answer(text: str) -> None:
        if not told.done():
            told.set_result(text)

    dispatcher = console.dispatcher
    try:
        key = await dispatcher.take_checked_decision(found, answer)
    except StoreError:
        raise Refused(503, "Not decided", UNAVAILABLE) from None
    if key is None:
        text = told.result() if told.done() else "Try again in a minute."
        status = 404 if text == NOT_ALLOWED_REPLY else 503
        raise Refused(status, "Not decided", text)
    try:
        said: str | None = await asyncio.wait_for(asyncio.shield(told), DECISION_WAIT_S)
    except TimeoutError:  # another replica handles it, or the conversation is busy
        said = None
    finally:
        dispatcher.decisions.forget(key)  # answered, or to be read from the card
    proposal = await console.stores.proposals.fetch(card_id)
    if proposal.pending:
        if said is not None:  # handled, and it decided nothing (the card expired meanwhile)
            raise Refused(409, "Not decided", said)
        raise Refused(
            202,
            "Decision queued",
            f"Your decision on card #{card_id} waits behind the conversation's other events; "
            "the card will show it.",
        )
    # The card was waiting when the decision was checked: decided by this person now, it
    # was this decision (or another of theirs at the same moment).
    if proposal.decided_by != person.user_id:
        raise Refused(409, "Already decided", closed_line(proposal))
    raise web.HTTPSeeOther(request.app[PAGES].url(f"/cards/{card_id}"))
