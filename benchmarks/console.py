"""Console benchmark: the server's time per page of the web console with 100,000 notes, on
SQLite and on PostgreSQL, and each page's weight.

For each engine: a fresh database (a file; a database on a private PostgreSQL server,
Debian's, started for the run) gets `--notes` notes in one import, spread over 200 people,
100 channels and a team (a quarter of them private); then a lorebot with its console on
(the tests' recording adapter and fake Ollama) serves each page `--rounds` times, to an
admin (who reads every scope) and to a member (their own notes, their channels' and the
team's). Reported per page: the server's time as the page's `Server-Timing` header says
it (from the request reaching the console to the page written, p50 and p95), and the
weight a browser fetches for it (the HTML, the stylesheet and HTMX, uncompressed).

Run by hand, not in CI (a few minutes: most of it the imports):

    PYTHONPATH=. python benchmarks/console.py                   # 100,000 notes, 30 rounds
    PYTHONPATH=. python benchmarks/console.py --notes 10000 --json c.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import secrets
import statistics
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
from yarl import URL

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results import record  # noqa: E402

from bot.console.guard import SESSION_COOKIE  # noqa: E402
from bot.daemon.app import Bot  # noqa: E402
from memory import NoteDraft, Scope  # noqa: E402
from memory.policy.visibility import explicit  # noqa: E402
from tests.fakes.adapter import ButtonsAdapter  # noqa: E402
from tests.fakes.ollama import FakeOllama  # noqa: E402
from tests.support.harness import make_settings  # noqa: E402
from tests.support.postgres import PostgresServer, server_programs  # noqa: E402

MEMBER = "user:test/U3"
ADMIN = "user:test/UADMIN"
# A vocabulary of 5,000 words, drawn with a skew (a few common, most rare), as notes'
# words are: a query of two words then matches about 2% of the notes.
VOCABULARY = [
    f"{stem}{n}"
    for n in range(500)
    for stem in ("dep", "stag", "back", "vpn", "kube", "bill", "rel", "inc", "ldap", "cert")
]
_TIMING = re.compile(r"app;dur=([0-9.]+)")


def words_of(n: int, count: int) -> str:
    """`count` words of note `n`, the same on every run."""
    seed, picked = n * 2654435761 % 2**32, []
    for _ in range(count):
        seed = (seed * 1103515245 + 12345) % 2**31
        picked.append(VOCABULARY[int(len(VOCABULARY) * (seed / 2**31) ** 2)])
    return " ".join(picked)


def drafts(count: int) -> list[NoteDraft]:
    """`count` notes: people, channels and a team, a quarter of them private."""
    found = []
    for n in range(count):
        if n % 10 < 6:
            scope = f"user:test/U{n % 200}"
        elif n % 10 < 9:
            scope = f"channel:test/C{n % 100}"
        else:
            scope = "team:test/T1"
        found.append(
            NoteDraft(
                Scope.parse(scope),
                f"note-{n}",
                f"{words_of(n, 6)} number {n}",
                body=f"{words_of(n + count, 20)} details of note {n}",
                private=n % 4 == 0 and scope.startswith("user:"),
            )
        )
    return found


async def session(bot: Bot, user: str, scopes: tuple[str, ...]) -> str:
    token = secrets.token_urlsafe(32)
    await bot.services.stores.console.open_session(
        token, user, via="bench", csrf="x", scopes=scopes, ttl=timedelta(hours=1)
    )
    return token


def pages(note_id: int, last_page: int) -> dict[str, str]:
    return {
        "overview": "/",
        "memory": "/memory",
        "search": f"/memory?q={VOCABULARY[120]}+{VOCABULARY[900]}",
        "scope": "/memory/notes?scope=user:test/U3",
        "scope, last page": f"/memory/notes?scope=user:test/U3&page={last_page}",
        "note": f"/notes/{note_id}",
        "cards": "/cards",
        "actions": "/actions",
        "jobs": "/jobs",
        "skills": "/skills",
    }


async def measure(base: str, token: str, path: str, rounds: int) -> tuple[list[float], int]:
    """Server times (ms) of `rounds` requests of `path`, and the page's HTML bytes."""
    jar = aiohttp.CookieJar(unsafe=True)
    jar.update_cookies({SESSION_COOKIE: token}, URL(base))
    times, size = [], 0
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        for _ in range(rounds + 2):  # two to warm up
            async with http.get(base + path) as response:
                body = await response.read()
                assert response.status == 200, (path, response.status, body[:300])
                found = _TIMING.search(response.headers["Server-Timing"])
                assert found
                times.append(float(found.group(1)))
                size = len(body)
    return times[2:], size


async def run_engine(engine: str, url: str | None, workdir: Path, args: argparse.Namespace) -> Any:
    ollama = FakeOllama()
    await ollama.start()
    database: dict[str, Any] = {"url": url} if url else {}
    settings = make_settings(
        workdir / f"{engine}.db",
        ollama.url,
        database=database,
        console={"enabled": True, "listen": "127.0.0.1:0"},
    )
    bot = Bot(settings, [ButtonsAdapter()])
    await bot.start()
    try:
        notes = bot.services.stores.notes
        print(f"{engine}: importing {args.notes} notes …", file=sys.stderr)
        await notes.import_drafts(drafts(args.notes), actor="bench")
        member = Scope.parse(MEMBER)
        own = await bot.services.stores.note_pages.page(
            explicit((member,)), member, offset=0, limit=1
        )
        note_id = own.notes[0].id
        assert bot.console is not None
        base = f"http://127.0.0.1:{bot.console.port}"
        people = {
            "admin": await session(bot, ADMIN, ()),
            "member": await session(bot, MEMBER, ("channel:test/C7", "team:test/T1")),
        }
        static = 0
        async with aiohttp.ClientSession() as http:
            for asset in ("/static/console.css", "/static/htmx-2.0.11.min.js"):
                async with http.get(base + asset) as response:
                    static += len(await response.read())
        found: dict[str, Any] = {}
        for who, token in people.items():
            for name, path in pages(note_id, -(-own.total // 50)).items():
                times, size = await measure(base, token, path, args.rounds)
                found[f"{who} {name}"] = {
                    "p50_ms": round(statistics.median(times), 1),
                    "p95_ms": round(statistics.quantiles(times, n=20)[-1], 1),
                    "html_bytes": size,
                    "weight_bytes": size + static,
                }
        return found
    finally:
        await bot.stop()
        await ollama.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lorebot-console-") as folder:
        workdir = Path(folder)
        for engine in args.engines.split(","):
            if engine == "sqlite":
                results[engine] = asyncio.run(run_engine(engine, None, workdir, args))
                continue
            programs = server_programs()
            if programs is None:
                sys.exit("PostgreSQL is not installed here (apt-get install postgresql)")
            server = PostgresServer(Path(tempfile.mkdtemp(prefix="lorebot-pg-"))).start(programs)
            try:
                url = server.new_database()
                results[engine] = asyncio.run(run_engine(engine, url, workdir, args))
            finally:
                server.stop()
    for engine, found in results.items():
        print(f"\n{engine}, {args.notes} notes: page  p50 ms  p95 ms  HTML KB  weight KB")
        for page, row in found.items():
            print(
                f"  {page:<22} {row['p50_ms']:>6} {row['p95_ms']:>7} "
                f"{row['html_bytes'] / 1024:>8.1f} {row['weight_bytes'] / 1024:>9.1f}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if args.notes >= 100_000:
        for engine, found in results.items():
            worst = max(found.items(), key=lambda item: item[1]["p50_ms"])
            heaviest = max(row["weight_bytes"] for row in found.values())
            record(
                f"console.{engine}",
                f"console page server time p50, slowest page, {args.notes:,} notes ({engine})",
                f"{worst[1]['p50_ms']} ms ({worst[0]})",
            )
            record(
                f"console.weight.{engine}",
                "console page weight, heaviest page (HTML + CSS + JS, uncompressed)",
                f"{heaviest / 1024:.1f} KB",
            )


if __name__ == "__main__":
    main()
