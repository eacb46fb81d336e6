"""The memory pages: the scopes a person may read, their notes a page at a time, search
with chat's ranking, a note with its change history, and forget, edit and undo as change
sets the person authors, by chat's rules."""

from __future__ import annotations

from aiohttp import web

from bot.console.context import CONSOLE, PAGES
from bot.console.guard import signed_in
from bot.console.note_rules import change_refused, undo_refused
from bot.console.people import Person
from bot.console.rendering import Refused, not_found, page_number
from memory import InvalidInput, NotFound
from memory.policy.visibility import explicit
from memory.types import Category, Change, Note, NoteDraft, Scope

PAGE_SIZE = 50
MAX_PAGE = 100_000
SEARCH_RESULTS = 50
# What the audit calls an admin's reading of another person's private note.
READ_PRIVATE = "console: read a private note"


def add_routes(routes: web.RouteTableDef) -> None:
    routes.get("/memory")(memory_page)
    routes.get("/memory/notes")(scope_page)
    routes.get("/notes/{id:[0-9]{1,18}}")(note_page)
    routes.post("/notes/{id:[0-9]{1,18}}/forget")(forget_note)
    routes.post("/notes/{id:[0-9]{1,18}}/edit")(edit_note)
    routes.get("/changes/{id:[0-9]{1,18}}")(change_page)
    routes.post("/changes/{id:[0-9]{1,18}}/undo")(undo_change)


async def memory_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    console = request.app[CONSOLE]
    scopes = await console.stores.note_pages.scope_counts(person.visibility())
    query = request.query.get("q", "").strip()[:500]
    hits = []
    if query:
        readable = person.visibility() or explicit(tuple(scope for scope, _ in scopes))
        if readable.scopes:
            hits = await console.stores.notes.search(
                query, readable, k=SEARCH_RESULTS, bump=False, snippets=True
            )
    unopened = _unopened(person, [hit.note for hit in hits])
    return request.app[PAGES].render(
        request, "memory.html", scopes=scopes, query=query, hits=hits, unopened=unopened
    )


async def scope_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    try:
        scope = Scope.parse(request.query.get("scope", ""))
    except InvalidInput:
        raise not_found() from None
    page = page_number(request.query.get("page", "1"), MAX_PAGE)
    console = request.app[CONSOLE]
    found = await console.stores.note_pages.page(
        person.visibility_of(scope), scope, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE
    )
    if not found.total:
        raise not_found()
    pages = -(-found.total // PAGE_SIZE)
    if page > pages:
        raise Refused(404, "No such page", f"There are {pages} pages of notes here.")
    return request.app[PAGES].render(
        request,
        "scope.html",
        scope=scope,
        notes=found.notes,
        unopened=_unopened(person, found.notes),
        total=found.total,
        page=page,
        pages=pages,
        changeable=change_refused(person, scope, console.settings.bot) is None,
    )


async def _note(request: web.Request, person: Person) -> Note:
    """The note of the address, if the person may read it: else 404, as for none."""
    note_pages = request.app[CONSOLE].stores.note_pages
    note = await note_pages.note(person.visibility(), int(request.match_info["id"]))
    if note is None:
        raise not_found()
    return note


async def note_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    note = await _note(request, person)
    console = request.app[CONSOLE]
    if note.private and person.reads_private_of_another(note.scope):
        await _audit_reading(request, person, note.scope, note.topic)
    history = await console.stores.notes.fetch_history(note.scope, note.topic, limit=50)
    return request.app[PAGES].render(
        request,
        "note.html",
        note=note,
        fingerprint=await console.stores.notes.content_fingerprint(note.scope, note.topic),
        own=note.scope == person.scope,
        history=history,
        categories=[c.value for c in Category],
        refused=change_refused(person, note.scope, console.settings.bot),
    )


def _unopened(person: Person, notes: list[Note]) -> set[int]:
    """The notes a list shows by topic alone: other people's private notes, which an admin
    reads by opening them (the audit records that)."""
    return {n.id for n in notes if n.private and person.reads_private_of_another(n.scope)}


async def _audit_reading(request: web.Request, person: Person, scope: Scope, topic: str) -> None:
    actions = request.app[CONSOLE].stores.actions
    action = await actions.record(
        READ_PRIVATE,
        {"note": f"{scope} {topic}"},
        requester=person.user_id,
        channel_scope=None,
        conversation={},
        approval="admin",
    )
    await actions.start(action.id, decided_by=person.user_id)
    await actions.finish(action.id, "ok", "", 0)


async def _unchanged(request: web.Request, note: Note) -> None:
    """Refuse (409) a form made from a note that changed since its page was shown."""
    shown = (await request.post()).get("fingerprint", "")
    now = await request.app[CONSOLE].stores.notes.content_fingerprint(note.scope, note.topic)
    if shown != now:
        raise Refused(
            409,
            "Changed meanwhile",
            f"The note {note.topic} changed since you opened it: nothing was changed. "
            "Open it again to see it as it is now.",
        )


async def forget_note(request: web.Request) -> web.StreamResponse:
    person = signed_in(request)
    note = await _note(request, person)
    _may_change(request, person, note.scope)
    await _unchanged(request, note)
    change = await request.app[CONSOLE].stores.notes.forget(
        note.scope, note.topic, actor=person.user_id, reason="forgotten in the console"
    )
    raise web.HTTPSeeOther(request.app[PAGES].url(f"/changes/{change.id}"))


async def edit_note(request: web.Request) -> web.StreamResponse:
    person = signed_in(request)
    note = await _note(request, person)
    _may_change(request, person, note.scope)
    await _unchanged(request, note)
    form = await request.post()
    notes = request.app[CONSOLE].stores.notes
    # Who keeps the notes decides what is private; anyone else's change keeps it as it is.
    private = form.get("private") == "on" if note.scope == person.scope else note.private
    try:
        draft = notes.validate(
            NoteDraft(
                scope=note.scope,
                topic=note.topic,
                summary=str(form.get("summary", "")),
                body=str(form.get("body", "")),
                category=Category(str(form.get("category", note.category.value))),
                private=private,
                pinned=note.pinned,
                author=person.user_id,
                source=note.source,
                confidence=note.confidence,
                expires_at=note.expires_at,
            )
        )
    except (InvalidInput, ValueError) as exc:
        raise Refused(400, "Not saved", f"The note was not changed: {exc}") from None
    saved = await notes.save(draft, actor=person.user_id, reason="edited in the console")
    target = f"/changes/{saved.change_id}" if saved.change_id else f"/notes/{note.id}"
    raise web.HTTPSeeOther(request.app[PAGES].url(target))


def _may_change(request: web.Request, person: Person, scope: Scope) -> None:
    refused = change_refused(person, scope, request.app[CONSOLE].settings.bot)
    if refused is not None:
        raise Refused(403, "Not yours to change", refused)


async def change_page(request: web.Request) -> web.Response:
    person = signed_in(request)
    change = await _change(request, person)
    console = request.app[CONSOLE]
    private = any(state and state.get("private") for state in (change.before, change.after))
    if change.scope is not None and private and person.reads_private_of_another(change.scope):
        await _audit_reading(request, person, change.scope, change.topic or "")
    undoable = undo_refused(person, change, console.settings.bot) is None
    return request.app[PAGES].render(request, "change.html", change=change, undoable=undoable)


async def _change(request: web.Request, person: Person) -> Change:
    """The change set of the address, if the person may read its note's scope: else 404."""
    note_pages = request.app[CONSOLE].stores.note_pages
    change = await note_pages.change(person.visibility(), int(request.match_info["id"]))
    if change is None:
        raise not_found()
    return change


async def undo_change(request: web.Request) -> web.StreamResponse:
    person = signed_in(request)
    change = await _change(request, person)
    if change.reverted_by is not None:
        raise Refused(409, "Already undone", f"Change #{change.id} was undone already.")
    refused = undo_refused(person, change, request.app[CONSOLE].settings.bot)
    if refused is not None:
        raise Refused(403, "Not yours to undo", refused)
    notes = request.app[CONSOLE].stores.notes
    try:
        undone = await notes.revert(change.id, actor=person.user_id, reason="undone in the console")
    except (InvalidInput, NotFound) as exc:
        raise Refused(409, "Not undone", f"Change #{change.id} was not undone: {exc}") from None
    raise web.HTTPSeeOther(request.app[PAGES].url(f"/changes/{undone.id}"))
