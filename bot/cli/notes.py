"""`lorebot notes …`: list, show, search, add, forget, history, revert, import, export."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.common import cli_actor, iso_z, open_store, print_json
from bot.cli.notes_history import cmd_history, cmd_revert, cmd_undo
from bot.cli.notes_search import cmd_search
from bot.errors import UserError
from memory.errors import InvalidInput

# What only some commands use is imported in them: `--help` and `notes search` start fast.
if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.storage import StoreSettings
    from memory import Note
    from memory.types import Category, Scope

# The note categories `notes add` takes, as memory.types.Category names them (a test keeps
# the two in step); listed here so that `--help` does not load memory.
CATEGORIES = ("fact", "preference", "convention", "decision", "pattern", "reflection")


def add_parser(commands: Any) -> None:
    notes = commands.add_parser("notes", help="read and change the notes lorebot remembers")
    sub = notes.add_subparsers(title="notes commands", metavar="ACTION", required=True)

    p = sub.add_parser("list", help="list notes, grouped by scope")
    p.add_argument("--scope", type=_scope, help="only this scope, e.g. channel:slack/C0123")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array, one object per note: id, scope, topic, summary, category, "
        "private, pinned, in_index, author, source, created_at, updated_at, expires_at "
        "(times ISO 8601 UTC ending in Z, or null)",
    )
    p.set_defaults(command=cmd_list)

    p = sub.add_parser("show", help="show one note in full")
    p.add_argument("scope", type=_scope, help="e.g. channel:slack/C0123 or user:slack/U0123")
    p.add_argument("topic", help="the note's topic, e.g. staging-db")
    p.set_defaults(command=cmd_show)

    p = sub.add_parser(
        "search",
        help="search notes as recall does",
        description="Search explicit scopes (--scope), or what a person sees in a "
        "conversation (--as USER [--in CHANNEL] [--team TEAM]; without --in it is a DM).",
    )
    p.add_argument("query", help="words or a question, e.g. 'where is the staging database'")
    p.add_argument(
        "--scope",
        type=_scope,
        action="append",
        default=[],
        dest="scopes",
        help="search this scope (repeatable)",
    )
    p.add_argument(
        "--as", type=_scope, dest="speaker", metavar="USER_SCOPE", help="what this person sees"
    )
    p.add_argument(
        "--in", type=_scope, dest="channel", metavar="CHANNEL_SCOPE", help="in this channel"
    )
    p.add_argument("--team", type=_scope, metavar="TEAM_SCOPE", help="of this team")
    p.add_argument("-k", type=int, default=10, help="how many results (default 10)")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument("--history", action="store_true", help="search past messages instead of notes")
    p.set_defaults(command=cmd_search)

    p = sub.add_parser(
        "reembed",
        help="embed every note and message with ollama.embed_model (resumable)",
        description="Move the stored vectors to the configured embedding model. The old "
        "vectors stay in use until every note and message has a new one; an interrupted "
        "run continues where it stopped when started again.",
    )
    p.add_argument("--batch", type=int, default=32, help="texts per embedding call")
    p.set_defaults(command=cmd_reembed)

    p = sub.add_parser("add", help="save a note (or update the note of that topic)")
    p.add_argument("scope", type=_scope, help="e.g. channel:slack/C0123 or user:slack/U0123")
    p.add_argument("topic", help="the note's topic, e.g. staging-db")
    p.add_argument("summary", help="one line shown in the index")
    p.add_argument("--body", default="", help="the details; '-' reads them from stdin")
    p.add_argument(
        "--category",
        default="fact",
        type=_category,
        help="one of " + ", ".join(CATEGORIES) + " (default fact)",
    )
    p.add_argument("--private", action="store_true", help="never shown in channels")
    p.add_argument("--pinned", action="store_true", help="always first in the index")
    p.set_defaults(command=cmd_add)

    p = sub.add_parser("forget", help="delete a note (revertible)")
    p.add_argument("scope", type=_scope, help="e.g. channel:slack/C0123 or user:slack/U0123")
    p.add_argument("topic", help="the note's topic, e.g. staging-db")
    p.set_defaults(command=cmd_forget)

    p = sub.add_parser("history", help="list change sets, newest first")
    p.add_argument("--scope", type=_scope, help="only changes in this scope")
    p.add_argument("--topic", help="only changes of this topic")
    p.add_argument("-n", type=int, default=20, help="how many (default 20)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array, one object per change: id, scope, topic, action, notes "
        "(of an import: how many; else null), by, at, reason, proposal_id, reverted_by, "
        "summary_before, summary_after",
    )
    p.set_defaults(command=cmd_history)

    p = sub.add_parser(
        "revert", help="restore a note (or an import's notes) to its state before a change"
    )
    p.add_argument("change_id", type=int, help="the change's number, as `notes history` shows")
    p.set_defaults(command=cmd_revert)

    p = sub.add_parser("undo", help="revert your latest change")
    p.set_defaults(command=cmd_undo)

    p = sub.add_parser(
        "import", help="import JSON Lines or an export folder (all or nothing, one change)"
    )
    p.add_argument(
        "source", type=Path, metavar="FILE|DIR", help="a JSON Lines file, or a folder from export"
    )
    p.set_defaults(command=cmd_import)

    p = sub.add_parser("export", help="write notes as Markdown: KIND/PLATFORM/ID/TOPIC.md")
    p.add_argument(
        "target",
        type=Path,
        metavar="DIR",
        help="the folder to write; files an earlier export wrote for notes since forgotten "
        "are removed",
    )
    p.add_argument("--scope", type=_scope, help="only this scope")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a folder that holds other files too (they are left as they are)",
    )
    p.set_defaults(command=cmd_export)


def _scope(text: str) -> Scope:
    from memory.types import Scope

    try:
        return Scope.parse(text)
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _category(text: str) -> Category:
    from memory.types import parse_category

    try:
        return parse_category(text)
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _flags(note: Note) -> str:
    flags = [note.category.value]
    if note.private:
        flags.append("private")
    if note.pinned:
        flags.append("pinned")
    return ", ".join(flags)


def _note_json(note: Note, in_index: bool) -> dict[str, Any]:
    return {
        "id": note.id,
        "scope": str(note.scope),
        "topic": note.topic,
        "summary": note.summary,
        "category": note.category.value,
        "private": note.private,
        "pinned": note.pinned,
        "in_index": in_index,
        "author": note.author,
        "source": note.source,
        "created_at": iso_z(note.created_at),
        "updated_at": iso_z(note.updated_at),
        "expires_at": iso_z(note.expires_at),
    }


async def cmd_list(args: argparse.Namespace, settings: StoreSettings) -> int:
    async with open_store(settings) as store:
        notes = await store.list_notes(args.scope)
        by_scope: dict[Scope, list[Note]] = {}
        for note in notes:
            by_scope.setdefault(note.scope, []).append(note)
        indexed = {scope: set((await store.index(scope)).lines) for scope in by_scope}
    if args.json:
        print_json([_note_json(n, n.index_line in indexed[n.scope]) for n in notes])
        return 0
    if not notes:
        print("no notes" + (f" in {args.scope}" if args.scope else ""))
        return 0
    for scope, scope_notes in by_scope.items():
        print(f"{scope} ({len(scope_notes)} note{'' if len(scope_notes) == 1 else 's'})")
        for note in scope_notes:
            outside = "" if note.index_line in indexed[scope] else " — not in the index"
            print(f"  {note.index_line}  [{_flags(note)}]{outside}")
    return 0


async def cmd_show(args: argparse.Namespace, settings: StoreSettings) -> int:
    async with open_store(settings) as store:
        note = await store.fetch(args.scope, args.topic)
    if note is None:
        raise UserError(f"there is no note {args.topic!r} in {args.scope}")
    print(f"{note.scope} / {note.topic}  [{_flags(note)}]")
    print(f"summary: {note.summary}")
    print(f"author: {note.author or '-'}   source: {note.source or '-'}")
    print(
        f"created: {note.created_at:%Y-%m-%d %H:%M}Z   updated: {note.updated_at:%Y-%m-%d %H:%M}Z"
    )
    print(
        f"read {note.access_count} times"
        + (f", expires {note.expires_at:%Y-%m-%d}" if note.expires_at else "")
    )
    if note.body:
        print()
        print(note.body)
    return 0


async def cmd_reembed(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from bot.daemon.lockfile import DatabaseLock
    from bot.storage import embedder_for, open_memory, reembed_store
    from memory.errors import EmbedderUnavailable

    embedder = embedder_for(settings)
    if embedder is None:
        raise UserError("set ollama.embed_model (LOREBOT_OLLAMA__EMBED_MODEL) first")
    if DatabaseLock(settings.database.path).held_elsewhere():
        raise UserError(f"lorebot is running on {settings.database.path}: stop it first")
    memory = await open_memory(settings, embedder=embedder, prepare=False)
    bars: dict[str, tqdm[Any]] = {}

    def progress(kind: str, done: int, total: int) -> None:
        bar = bars.get(kind)
        if bar is None:
            bar = bars[kind] = tqdm(total=total, desc=f"{kind}s", unit=kind, file=sys.stderr)
        bar.update(done - bar.n)

    try:
        result = await reembed_store(memory, embedder, batch_size=args.batch, progress=progress)
    except EmbedderUnavailable as exc:
        raise UserError(f"{exc}; run `lorebot notes reembed` again to resume") from None
    finally:
        for bar in bars.values():
            bar.close()
        await memory.close()
    counts = ", ".join(f"{n} {kind}s" for kind, n in result.embedded.items())
    how = "resumed and finished" if result.resumed else "finished"
    print(f"re-embedding {how}: {counts} now use {result.state.describe()}")
    return 0


async def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    from adapters.base import valid_text
    from memory.types import NoteDraft

    body = sys.stdin.read() if args.body == "-" else args.body
    draft = NoteDraft(  # arguments and stdin may hold bytes that are not UTF-8
        scope=args.scope,
        topic=valid_text(args.topic),
        summary=valid_text(args.summary),
        body=valid_text(body),
        category=args.category,
        private=args.private,
        pinned=args.pinned,
        source="cli",
    )
    async with open_store(settings) as store:
        result = await store.save(draft, actor=cli_actor())
    if result.change_id is None:
        print(f"{args.scope} / {args.topic} already says that: nothing changed")
        return 0
    verb = "saved" if result.created else "updated"
    print(f"{verb} {args.scope} / {args.topic} (change {result.change_id})")
    if not result.in_index:
        print("note: the index is full, so this note is not in it; recall still finds it")
    if result.left_index:
        print(
            "note: these notes left the index (recall still finds them): "
            + ", ".join(result.left_index)
        )
    return 0


async def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:
        change = await store.forget(args.scope, args.topic, actor=cli_actor())
    print(
        f"forgot {args.scope} / {args.topic} (change {change.id}; "
        f"`lorebot notes revert {change.id}` restores it)"
    )
    return 0


async def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from bot.cli.progress import progress_bar
    from memory.transfer.note_import import import_notes

    async with open_store(settings) as store:
        with progress_bar("note") as progress:  # a large file takes seconds to write
            result = await import_notes(store, args.source, actor=cli_actor(), progress=progress)
    change = "" if result.change_id is None else f" (change {result.change_id})"
    print(
        f"imported {args.source}: {result.created} new, {result.updated} updated, "
        f"{result.unchanged} unchanged{change}"
    )
    return 0


async def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from memory.transfer.note_export import export_folder

    _check_export_folder(args.target)
    async with open_store(settings) as store:
        notes = await store.list_notes(args.scope)
    try:
        result = export_folder(notes, args.target, only=args.scope, force=args.force)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        where = f" ({exc.filename})" if exc.filename and exc.filename != str(args.target) else ""
        raise UserError(f"cannot write the export to {args.target}: {reason}{where}") from None
    print(f"exported {result.written} notes to {args.target}")
    if result.removed:
        files = "file" if result.removed == 1 else "files"
        print(f"removed {result.removed} {files} of forgotten notes")
    return 0


def _check_export_folder(target: Path) -> None:
    """A UserError when `target` or the nearest existing folder above it is not a folder."""
    existing = next(p for p in (target, *target.absolute().parents) if p.exists())
    if not existing.is_dir():
        what = "it is a file" if existing == target else f"{existing} is not a folder"
        raise UserError(f"cannot write the export to {target}: {what}")
