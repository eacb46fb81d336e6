"""The actions page: the audit of actions, filtered by server, tool, outcome, person and
time, a page at a time. An admin sees every action; a member those they asked for and
those asked in the channels they are in. Arguments are shown as the audit keeps them:
redacted, every invisible character spelled out, as on the card."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from aiohttp import web

from bot.approvals.card_text import visible
from bot.console.context import CONSOLE, PAGES
from bot.console.guard import signed_in
from bot.console.rendering import Refused, page_number
from memory.stores.actions import OUTCOMES, PENDING, RUNNING, Action, AuditFilter

PAGE_SIZE = 50
MAX_PAGE = 100_000
FILTERS = ("server", "tool", "outcome", "person", "since", "until")


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/actions")(actions_page)


def _day(text: str, name: str, *, after: bool = False) -> datetime:
    """The day `text` names (the next one `after`), or a 400 page saying how to write one."""
    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        return day + timedelta(days=1) if after else day
    except (ValueError, OverflowError):
        raise Refused(400, "Not a day", f"{name} is a day written YYYY-MM-DD.") from None


def audit_filter(query: dict[str, str]) -> AuditFilter:
    """The filter the page's form asks for; a day written otherwise is refused."""
    given = {k: query.get(k, "").strip()[:200] or None for k in FILTERS}
    since = _day(given["since"], "since") if given["since"] else None
    until = _day(given["until"], "until", after=True) if given["until"] else None
    return AuditFilter(
        server=given["server"],
        tool=given["tool"],
        outcome=given["outcome"],
        person=given["person"],
        since=since,
        until=until,
    )


def shown_arguments(action: Action) -> str:
    return visible(json.dumps(action.arguments, indent=2, ensure_ascii=False, sort_keys=True))


async def actions_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    query = dict(request.query)
    shown = audit_filter(query)
    if not person.admin:
        shown = dataclasses.replace(shown, readers=(person.user_id, person.scopes))
    page = page_number(query.get("page", "1"), MAX_PAGE)
    actions = request.app[CONSOLE].stores.actions
    found, total = await actions.fetch_audit(shown, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    pages = max(1, -(-total // PAGE_SIZE))
    if page > pages:
        raise Refused(404, "No such page", f"There are {pages} pages of actions here.")
    return request.app[PAGES].render(
        request,
        "actions.html",
        actions=[(a, shown_arguments(a)) for a in found],
        total=total,
        page=page,
        pages=pages,
        filters={k: query.get(k, "") for k in FILTERS},
        outcomes=(PENDING, RUNNING, *OUTCOMES),
        more=urlencode({k: query[k] for k in FILTERS if query.get(k)}),
    )
