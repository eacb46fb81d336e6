"""History import benchmark: how many messages per second `lorebot history import` brings in.

It writes a generated export of the chosen size to a temporary folder, in each format
lorebot reads (a Slack workspace export as a ZIP, DiscordChatExporter JSON files, JSON
Lines), then imports it into a fresh database exactly as the command does: one
transaction that reads and validates the files (`iter_history`) while it redacts, stores
and indexes what was read (`ConversationLog.import_messages`). It reports the import in
messages per second of the export (skipped bot and join messages count: the command reads
them too) and per second of CPU (the machine's other load left out: reading and writing
run on two threads, so an idle 2-core machine gets up to about that), with the CPU split
into the reading thread's (reading, validating, redacting) and SQLite's, reading alone for
comparison, and checks that a second import adds nothing. `--repeat 3` runs each format
three times and adds a row of the medians.

The Slack export looks like a real one: ~40 channels, 60 people, a few bots; messages with
blocks and author profiles as Slack writes them; 1 in 8 starts a thread of 1 to 6 replies;
1 in 40 is a bot's, 1 in 100 a join; some share a file or mention someone.

Run by hand, not in CI:

    . /work/venv/bin/activate
    python benchmarks/history_import.py                      # 100k messages, every format
    python benchmarks/history_import.py --messages 20k --formats slack
    python benchmarks/history_import.py --repeat 3 --json /tmp/history-import.json

`--compare DIR` measures another checkout too (e.g. `git worktree add /tmp/base HEAD`): each
run of its code and of this one is a fresh process on the same generated export, the two
taking turns (before, after, after, before, …), so both see the same load; it prints the
median of each side. notes_import.py takes the same option.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import record  # noqa: E402

from bot.cli.history_readers import iter_history, read_history  # noqa: E402
from memory.sql.conversations import SqlConversationLog  # noqa: E402
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.message_search import SqliteMessageSearch  # noqa: E402
from memory.transfer.history_import import Collector, ImportOptions  # noqa: E402

CHANNELS = 40
PEOPLE = 60
THREAD_SHARE = 1 / 8
BOT_SHARE = 1 / 40
JOIN_SHARE = 1 / 100
START = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
_WORD_TEXT = """deploy staging prod rollback canary release build pipeline flaky test cluster
    node pod ingress dns cert tls vpn gateway firewall rule database replica backup restore
    index migration schema query latency p99 alert pager oncall incident postmortem runbook
    ticket sprint review merge branch hotfix config secret vault token rotate quota budget
    invoice vendor contract meeting friday monday tomorrow later today lunch coffee thanks
    sure ok yes no maybe looks good ship it blocked waiting on approve please check again"""
WORDS = tuple(_WORD_TEXT.split())


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 22)))


@dataclass
class Result:
    format: str
    messages: int  # in the export, skipped ones included
    imported: int
    files: int
    bytes: int
    read_s: float  # reading and validating alone
    import_s: float  # the whole import as the command runs it: reading while writing
    import_cpu_s: float  # CPU time of both its threads (reading, and SQLite writing)
    reader_cpu_s: float  # of those, the reading thread's: reading, validating, redacting
    again_added: int
    load: float

    def rate(self, seconds: float) -> float:
        return self.messages / seconds if seconds else float("inf")

    def row(self, label: str = "") -> str:
        return (
            f"{label or self.format:8} {self.files:5}  {self.bytes / 1e6:5.1f}  {self.read_s:6.2f}"
            f"  {self.import_s:8.2f}  {self.import_cpu_s:5.2f}  {self.reader_cpu_s:6.2f}"
            f"  {self.rate(self.read_s):10,.0f}  {self.rate(self.import_s):12,.0f}"
            f"  {self.rate(self.import_cpu_s):9,.0f}"
            f"   (imported {self.imported}, again +{self.again_added}, load {self.load:.2f})"
        )


class Measured(Protocol):
    """One run's result (a dataclass): printed as a row, its rates from its seconds."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    import_s: float
    import_cpu_s: float

    def rate(self, seconds: float) -> float: ...

    def row(self, label: str = "") -> str: ...


M = TypeVar("M", bound=Measured)


def median_of(results: Sequence[M], measured: Sequence[str]) -> M:
    """The first run with each of the `measured` figures replaced by its median."""
    figures = {name: statistics.median(getattr(r, name) for r in results) for name in measured}
    return type(results[0])(**{**asdict(results[0]), **figures})


def run_each(
    kinds: Sequence[str],
    repeat: int,
    prefix: str,
    run: Callable[[str, Path], M],
    changed_again: Callable[[M], str | None],
    median: Callable[[Sequence[M]], M],
) -> list[M] | None:
    """Run each kind `repeat` times, each in a fresh folder, printing every run's row and
    (when repeated) the median row; None, after saying so, when a second import of the
    same input changed something."""
    results = []
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        for kind in kinds:
            runs = []
            for n in range(repeat):
                workdir = Path(tmp) / f"run{n}"
                workdir.mkdir(exist_ok=True)
                runs.append(result := run(kind, workdir))
                print(result.row())
                if (problem := changed_again(result)) is not None:
                    print(f"error: a second import of {kind} {problem}")
                    return None
            results.append(median(runs))
            if repeat > 1:
                print(results[-1].row("median"))
    return results


def write_json(path: Path, repeat: int, results: Sequence[M], rates: tuple[str, str]) -> None:
    """The machine, and each kind's result with its rates per wall and per CPU second."""
    machine = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
    }
    rows = [
        {**asdict(r), rates[0]: r.rate(r.import_s), rates[1]: r.rate(r.import_cpu_s)}
        for r in results
    ]
    path.write_text(json.dumps({"machine": machine, "repeat": repeat, "results": rows}, indent=2))


def median(results: Sequence[Result]) -> Result:
    """Each measured figure's median over runs of one format."""
    return median_of(results, ("read_s", "import_s", "import_cpu_s", "reader_cpu_s", "load"))


# --- generated exports ----------------------------------------------------------------


def slack_messages(
    rng: random.Random, total: int
) -> Iterator[tuple[str, datetime, dict[str, Any]]]:
    """(channel name, when, message) in time order, threads and replies included."""
    when = START
    made = 0
    while made < total:
        when += timedelta(seconds=rng.randint(5, 400))
        channel = f"chan-{rng.randrange(CHANNELS):02d}"
        person = f"U{rng.randrange(PEOPLE):08d}"
        ts = f"{int(when.timestamp())}.{rng.randrange(10**6):06d}"
        roll = rng.random()
        if roll < BOT_SHARE:
            bot = {"subtype": "bot_message", "bot_id": "B0CI", "username": "ci"}
            yield channel, when, {"type": "message", "ts": ts, "text": sentence(rng), **bot}
            made += 1
            continue
        if roll < BOT_SHARE + JOIN_SHARE:
            text = f"<@{person}> has joined the channel"
            join = {"subtype": "channel_join", "user": person, "text": text}
            yield channel, when, {"type": "message", "ts": ts, **join}
            made += 1
            continue
        message = slack_said(rng, person, ts)
        replies = rng.randint(1, 6) if rng.random() < THREAD_SHARE else 0
        if replies:
            message.update(thread_ts=ts, reply_count=replies, reply_users_count=1)
        yield channel, when, message
        made += 1
        reply_when = when
        for _ in range(min(replies, total - made)):
            reply_when += timedelta(seconds=rng.randint(10, 3000))
            reply_ts = f"{int(reply_when.timestamp())}.{rng.randrange(10**6):06d}"
            reply = slack_said(rng, f"U{rng.randrange(PEOPLE):08d}", reply_ts)
            reply.update(thread_ts=ts, parent_user_id=person)
            yield channel, reply_when, reply
            made += 1


def slack_said(rng: random.Random, person: str, ts: str) -> dict[str, Any]:
    text = sentence(rng)
    if rng.random() < 0.1:
        text += f" cc <@U{rng.randrange(PEOPLE):08d}>"
    message: dict[str, Any] = {
        "client_msg_id": f"{rng.getrandbits(64):016x}",
        "type": "message",
        "text": text,
        "user": person,
        "ts": ts,
        "team": "T0BENCH",
        "user_team": "T0BENCH",
        "source_team": "T0BENCH",
        "user_profile": {
            "avatar_hash": "g0",
            "image_72": "https://a.slack-edge.com/x.png",
            "first_name": "Pat",
            "real_name": "Pat Doe",
            "display_name": "pat",
            "team": "T0BENCH",
            "name": "pat",
            "is_restricted": False,
            "is_ultra_restricted": False,
        },
        "blocks": [
            {
                "type": "rich_text",
                "block_id": "b0",
                "elements": [
                    {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
                ],
            }
        ],
    }
    if rng.random() < 0.03:
        message["files"] = [
            {
                "id": "F0",
                "name": "notes.txt",
                "title": "notes",
                "mimetype": "text/plain",
                "size": 100,
            }
        ]
    return message


def write_slack(root: Path, rng: random.Random, total: int) -> tuple[Path, int]:
    folder = root / "slack"
    days: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for channel, when, message in slack_messages(rng, total):
        days.setdefault((channel, when.date().isoformat()), []).append(message)
    users = [
        {
            "id": f"U{i:08d}",
            "name": f"person{i}",
            "real_name": f"Person {i}",
            "profile": {"display_name": f"p{i}", "real_name": f"Person {i}"},
            "is_bot": False,
        }
        for i in range(PEOPLE)
    ]
    channels = [
        {"id": f"C{i:08d}", "name": f"chan-{i:02d}", "created": 1700000000, "members": []}
        for i in range(CHANNELS)
    ]
    target = root / "slack-export.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("users.json", json.dumps(users))
        archive.writestr("channels.json", json.dumps(channels))
        for (channel, day), messages in sorted(days.items()):
            archive.writestr(f"{channel}/{day}.json", json.dumps(messages, indent=4))
    del folder
    return target, len(days) + 2


def write_discord(root: Path, rng: random.Random, total: int) -> tuple[Path, int]:
    folder = root / "discord"
    folder.mkdir()
    per_channel: dict[int, list[dict[str, Any]]] = {}
    when = START
    for n in range(total):
        when += timedelta(seconds=rng.randint(5, 400))
        person = rng.randrange(PEOPLE)
        is_bot = rng.random() < BOT_SHARE
        per_channel.setdefault(rng.randrange(CHANNELS), []).append(
            {
                "id": str(1_200_000_000_000_000_000 + n),
                "type": "Default",
                "timestamp": when.isoformat(),
                "timestampEdited": None,
                "callEndedTimestamp": None,
                "isPinned": False,
                "content": sentence(rng),
                "author": {
                    "id": str(900_000 + person),
                    "name": f"person{person}",
                    "discriminator": "0000",
                    "nickname": f"P{person}",
                    "color": None,
                    "isBot": is_bot,
                    "avatarUrl": "https://cdn.discordapp.com/a.png",
                },
                "attachments": [],
                "embeds": [],
                "stickers": [],
                "reactions": [],
                "mentions": [],
            }
        )
    for channel, messages in per_channel.items():
        data = {
            "guild": {"id": "42", "name": "Bench", "iconUrl": ""},
            "channel": {
                "id": str(800_000 + channel),
                "type": "GuildTextChat",
                "categoryId": "1",
                "category": "General",
                "name": f"c{channel}",
                "topic": None,
            },
            "dateRange": {"after": None, "before": None},
            "messages": messages,
            "messageCount": len(messages),
        }
        (folder / f"Bench - c{channel} [{800_000 + channel}].json").write_text(
            json.dumps(data, indent=2)
        )
    return folder, len(per_channel)


def write_jsonl(root: Path, rng: random.Random, total: int) -> tuple[Path, int]:
    path = root / "history.jsonl"
    when = START
    with path.open("w", encoding="utf-8") as out:
        for n in range(total):
            when += timedelta(seconds=rng.randint(5, 400))
            line = {
                "conversation": f"channel:slack/C{rng.randrange(CHANNELS):08d}",
                "author": f"Person {rng.randrange(PEOPLE)}",
                "timestamp": when.isoformat(),
                "text": sentence(rng),
                "id": str(n),
            }
            out.write(json.dumps(line) + "\n")
    return path, 1


WRITERS = {"slack": write_slack, "discord": write_discord, "jsonl": write_jsonl}


# --- running --------------------------------------------------------------------------


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def run_format(name: str, total: int, seed: int, workdir: Path) -> Result:
    folder = workdir / name
    folder.mkdir()
    export, files = WRITERS[name](folder, random.Random(seed), total)
    started = time.perf_counter()
    read_history(export, ImportOptions())  # reading alone, for the breakdown
    read_s = time.perf_counter() - started
    db = await SqliteDatabase.open(folder / "bench.db")
    try:
        log = SqlConversationLog(
            db, SqliteMessageSearch(db), secrets=("xoxb-bench-token-not-in-text",)
        )
        started, cpu, reader = time.perf_counter(), time.process_time(), time.thread_time()
        imported = await log.import_messages(iter_history(export, Collector(ImportOptions())))
        import_s = time.perf_counter() - started
        import_cpu_s = time.process_time() - cpu
        reader_cpu_s = time.thread_time() - reader
        again = await log.import_messages(iter_history(export, Collector(ImportOptions())))
    finally:
        await db.close()
    return Result(
        format=name,
        messages=total,
        imported=imported,
        files=files,
        bytes=size_of(export),
        read_s=read_s,
        import_s=import_s,
        import_cpu_s=import_cpu_s,
        reader_cpu_s=reader_cpu_s,
        again_added=again,
        load=os.getloadavg()[0],
    )


def parse_count(text: str) -> int:
    text = text.strip().lower()
    factor = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    try:
        return int(float(text.rstrip("km")) * factor)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad count {text!r}: use e.g. 20000, 100k or 1M"
        ) from None


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=parse_count, default=100_000)
    parser.add_argument("--formats", default="slack,discord,jsonl")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1, help="runs per format (median row)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--compare", type=Path, metavar="DIR", help=COMPARE_HELP)
    return parser.parse_args(argv)


COMPARE_HELP = "also run the code of the checkout DIR, in turn with this one (see above)"


def compare(
    script: str,
    baseline: Path,
    kinds: tuple[str, Sequence[str]],
    options: Sequence[str],
    repeat: int,
    rates: tuple[str, str],
    json_path: Path | None = None,
) -> list[dict[str, Any]]:
    """Run `script` of `baseline` and of this checkout in turn, one fresh process per run
    and kind (`kinds`: the option naming one, and the kinds), and return each side's
    medians per kind: items per second of wall time and of CPU time, and the load (also
    written to `json_path`, when given)."""
    flag, names = kinds
    this = Path(__file__).resolve().parent.parent
    rows = []
    for name in names:
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for n in range(repeat):
            sides = [("before", baseline), ("after", this)]
            for side, root in sides if n % 2 == 0 else sides[::-1]:
                with tempfile.TemporaryDirectory(prefix="lorebot-compare-") as tmp:
                    out = Path(tmp) / "result.json"
                    command = [
                        sys.executable,
                        str(root / "benchmarks" / script),
                        flag,
                        name,
                        *options,
                        "--json",
                        str(out),
                    ]
                    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                    found = json.loads(out.read_text())["results"][0]
                runs[side].append(found)
                print(
                    f"{name:8} {side:6} {found[rates[0]]:10,.0f}/s wall"
                    f"  {found[rates[1]]:10,.0f}/CPU-s  load {found['load']:.2f}"
                )
        for side, found in runs.items():
            rows.append(
                {
                    "kind": name,
                    "side": side,
                    "runs": len(found),
                    "wall": statistics.median(r[rates[0]] for r in found),
                    "cpu": statistics.median(r[rates[1]] for r in found),
                    "load": statistics.median(r["load"] for r in found),
                }
            )
    print("\nmedians            items/s wall   per CPU-s   load")
    for row in rows:
        print(
            f"{row['kind']:8} {row['side']:6} {row['wall']:14,.0f} {row['cpu']:11,.0f}"
            f"   {row['load']:.2f}"
        )
    if json_path is not None:
        json_path.write_text(json.dumps({"compare": rows}, indent=2))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if args.compare is not None:
        options = ["--messages", str(args.messages), "--seed", str(args.seed)]
        compare(
            "history_import.py",
            args.compare,
            ("--formats", formats),
            options,
            args.repeat,
            ("msg_per_s", "msg_per_cpu_s"),
            args.json,
        )
        return 0
    print(f"{args.messages} messages per format; load before: {os.getloadavg()[0]:.2f}")
    print(
        "format   files  MB     read s  import s  CPU s  reader  msg/s read  msg/s import"
        "  per CPU s"
    )

    def run(name: str, workdir: Path) -> Result:
        return asyncio.run(run_format(name, args.messages, args.seed, workdir))

    def changed_again(r: Result) -> str | None:
        return f"added {r.again_added} messages" if r.again_added else None

    results = run_each(formats, args.repeat, "lorebot-history-bench-", run, changed_again, median)
    if results is None:
        return 1
    if args.json:
        write_json(args.json, args.repeat, results, ("msg_per_s", "msg_per_cpu_s"))
    if args.messages == 100_000:
        record_figures(results, args.repeat)
    return 0


FORMAT_NAMES = {
    "slack": "Slack export (ZIP)",
    "discord": "DiscordChatExporter",
    "jsonl": "JSON Lines",
}


def record_figures(results: Sequence[Result], repeat: int) -> None:
    """Each format's messages per second (wall), into the current table of RESULTS.md."""
    runs = f"median of {repeat}" if repeat > 1 else "one run"
    for r in results:
        what = f"history import, {FORMAT_NAMES[r.format]}, messages/s ({runs})"
        record(f"import.{r.format}", what, f"{r.rate(r.import_s):,.0f}")


if __name__ == "__main__":
    sys.exit(main())
