"""How much of each prompt a real model server already holds in its cache, turn after turn.

A local model spends most of a turn reading the prompt; what the server has cached from
the previous request it does not read again. This runs lorebot's real `Bot` (SQLite store,
dispatcher, core, agent, the OpenAI-compatible client, a streaming adapter) against a real
model, SmolLM2-135M under llama.cpp's server (`tests/support/llama.py`), over conversations
of `--turns` turns in a channel with notes to recall. Per request, the server logs
`Llama.generate: N prefix-match hit, remaining M prompt tokens to eval`: N tokens came from
its cache, M were read anew. Conversations run one after another, since the server keeps
one cache.

It reports, for each conversation's second and later turns, the share of the turn's first
prompt that was cached (median and the lowest), the tokens read anew per turn, and the time
from the message to the first piece of the answer; then the same for every request.

    python benchmarks/prompt_cache.py                  # 3 conversations of 10 turns
    python benchmarks/prompt_cache.py --json /tmp/cache.json

Run by hand, not in CI (about a minute on 2 cores). The answers of a 135M model are not
sensible; only the prompts and the cache matter here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results import record  # noqa: E402  (benchmarks/results.py, beside this script)

from bot.config.settings import Settings  # noqa: E402
from bot.daemon.app import Bot  # noqa: E402
from memory import NoteDraft, Scope  # noqa: E402
from tests.fakes.adapter import StreamingAdapter  # noqa: E402
from tests.support.llama import MODEL, LlamaServer  # noqa: E402

HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
NOTES = [
    ("staging-db", "the staging database is pg-stage-2 on port 5432"),
    ("deploy-day", "deploys happen on Tuesdays after the 10:00 stand-up"),
    ("edge-proxy", "the edge proxy runs on host-7 behind the VPN"),
    ("on-call", "the on-call rota is in the #ops-rota channel, changed on Mondays"),
    ("backups", "database backups run nightly at 02:00 UTC to the s3 bucket ops-backups"),
    ("grafana", "dashboards are at grafana.internal, login with the SSO account"),
    ("certs", "TLS certificates renew automatically 30 days before they expire"),
    ("queue", "the job queue is redis on host-3, port 6380"),
]
QUESTIONS = [
    "where is the staging database?",
    "which port does it listen on?",
    "when do deploys happen?",
    "where does the edge proxy run?",
    "who is on call this week?",
    "when do backups run?",
    "where are the dashboards?",
    "when do certificates renew?",
    "where is the job queue?",
    "thanks, anything else I should know before a deploy?",
]


def settings_for(folder: Path, server: LlamaServer, n_ctx: int) -> Settings:
    return Settings(
        database={"path": folder / "bench.db"},
        model={"backend": "openai"},
        openai={
            "base_url": server.base_url,
            "model": MODEL,
            "context_tokens": n_ctx,
            "timeout_s": 120.0,
        },
        jobs={"enabled": False},
        skills={"home_root": folder / "none-home", "user_root": folder / "none-user"},
    )


def cache_lines(server: LlamaServer, start: int) -> tuple[list[tuple[int, int]], int]:
    """The (cached, read anew) counts the server logged after byte `start` of its log."""
    assert server.log is not None
    data = server.log.read_bytes()
    found = [(int(a), int(b)) for a, b in HIT.findall(data[start:].decode(errors="replace"))]
    return found, len(data)


async def converse(
    bot: Bot, adapter: StreamingAdapter, server: LlamaServer, channel: str, turns: int
) -> list[dict[str, Any]]:
    rows = []
    assert server.log is not None
    offset = server.log.stat().st_size
    for number, question in enumerate(QUESTIONS[:turns], start=1):
        streams = len(adapter.streams)
        message = adapter.message(question, channel=channel)
        started = time.perf_counter()
        await bot.dispatcher.submit(message)
        first: float | None = None
        while first is None:
            if len(adapter.streams) > streams and adapter.streams[streams].calls:
                first = time.perf_counter() - started
            else:
                await asyncio.sleep(0.002)
        await bot.dispatcher.wait_idle()
        await asyncio.sleep(0.3)  # the server writes its log line after it answered
        requests, offset = cache_lines(server, offset)
        reply = adapter.sent[-1].current if adapter.sent else ""
        rows.append({"turn": number, "requests": requests, "first_piece_s": first, "reply": reply})
    return rows


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        server = LlamaServer(n_ctx=args.n_ctx, chat_format=args.chat_format)
        server.start(folder / "llama.log")
        try:
            adapter = StreamingAdapter()
            bot = Bot(settings_for(folder, server, args.n_ctx), [adapter])
            await bot.start()
            try:
                conversations = []
                for c in range(args.conversations):
                    channel = f"C{c}"
                    for topic, summary in NOTES:
                        draft = NoteDraft(Scope.parse(f"channel:test/{channel}"), topic, summary)
                        await bot.notes.save(draft, actor="bench")
                    conversations.append(await converse(bot, adapter, server, channel, args.turns))
            finally:
                await bot.stop()
        finally:
            server.stop()
    return summarise(conversations)


def summarise(conversations: list[list[dict[str, Any]]]) -> dict[str, Any]:
    firsts, everything, fresh, pieces = [], [], [], []
    for rows in conversations:
        for row in rows[1:]:  # the first turn has nothing to reuse
            if not row["requests"]:
                continue
            cached, anew = row["requests"][0]
            firsts.append(cached / (cached + anew))
            fresh.append(anew)
            pieces.append(row["first_piece_s"])
            everything += [a / (a + b) for a, b in row["requests"]]
    return {
        "turns_measured": len(firsts),
        "first_prompt_cached_median": statistics.median(firsts),
        "first_prompt_cached_lowest": min(firsts),
        "all_prompts_cached_median": statistics.median(everything),
        "tokens_read_anew_median": statistics.median(fresh),
        "first_piece_s_median": statistics.median(pieces),
        "conversations": conversations,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--turns", type=int, default=10, choices=range(2, len(QUESTIONS) + 1))
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument(
        "--chat-format",
        default="chatml-function-calling",
        help="llama.cpp's chat format: chatml-function-calling (tools), or chatml, whose "
        "template writes a reply back as the model generated it",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(f"{result['turns_measured']} turns after a conversation's first, on {MODEL}:")
    print(
        f"  first prompt of a turn cached: median {result['first_prompt_cached_median']:.1%}, "
        f"lowest {result['first_prompt_cached_lowest']:.1%}"
    )
    print(f"  every prompt cached: median {result['all_prompts_cached_median']:.1%}")
    print(f"  tokens read anew per turn: median {result['tokens_read_anew_median']:.0f}")
    print(
        f"  message to first piece of the answer: median "
        f"{result['first_piece_s_median'] * 1000:.0f} ms"
    )
    for number, rows in enumerate(result["conversations"]):
        cells = [
            "-" if not r["requests"] else f"{r['requests'][0][0]}/{sum(r['requests'][0])}"
            for r in rows
        ]
        print(f"  conversation {number}: " + "  ".join(cells))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.chat_format == "chatml-function-calling":
        record_figures(result)


def record_figures(result: dict[str, Any]) -> None:
    """The medians over the turns after each conversation's first, into RESULTS.md."""
    what = "a turn's prompt already in the server's cache (median, turns after the first)"
    record("cache.share", what, f"{result['first_prompt_cached_median']:.1%}")
    what = "prompt tokens the server reads anew per turn (median)"
    record("cache.new_tokens", what, f"{result['tokens_read_anew_median']:.0f}")
    what = "message to the first piece of the answer (median)"
    record("cache.first_piece", what, f"{result['first_piece_s_median'] * 1000:,.0f} ms")


if __name__ == "__main__":
    main()
