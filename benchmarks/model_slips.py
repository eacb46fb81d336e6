"""How often a real small model slips in lorebot's turns, and what the slips cost.

This runs lorebot's real `Bot` (SQLite store, dispatcher, core, agent, the OpenAI-compatible
client, a streaming adapter, every tool offered) against SmolLM2-135M under llama.cpp's
server (`tests/support/llama.py`): 50 questions over a small channel's notes, each in a
channel of its own with the same notes, so no turn reads another's history. Every model
call of a turn is timed and its answer classified.

"Before" is what the model's first answer was, which lorebot used to post as it was: empty
("(no answer)"), an action announced without its call, or calls; and the turns in which
the model called the same tool with the same arguments again (a second run, before). "After"
is what the person got: the model's answer, the answer from memory with its notice, or the
plain "could not finish" of a turn that gave up. The extra model calls are those after a
nudge: their count, and the time they added to their turns (median and p95 of the turns
that had one).

    python benchmarks/model_slips.py
    python benchmarks/model_slips.py --json /tmp/slips.json
    python benchmarks/model_slips.py --empty-first

`--empty-first` takes the model's first answer of every turn as empty (no words, no call:
the answer the issue saw through a stand-in for Ollama's API, which this server's
function-calling format never gives), so every turn is nudged and the nudge's cost on the
real model is measured: the extra call and the time it adds.

Run by hand, not in CI (a few minutes on 2 cores). The answers of a 135M model are not
sensible; only how they fail matters here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prompt_cache import NOTES, settings_for  # noqa: E402  (the same channel and Bot)
from results import record  # noqa: E402  (benchmarks/results.py, beside this script)

from bot.core.fallback import (  # noqa: E402
    EMPTY_NOTICE,
    OFFLINE_NOTICE,
    TOO_LONG_NOTICE,
    UNREADABLE_NOTICE,
)
from bot.core.slips import EMPTY_NUDGE, announced_intent  # noqa: E402
from bot.daemon.app import Bot  # noqa: E402
from bot.model.client import ChatResult, ModelUnavailable  # noqa: E402
from memory import NoteDraft, Scope  # noqa: E402
from tests.fakes.adapter import StreamingAdapter  # noqa: E402
from tests.support.llama import MODEL, LlamaServer  # noqa: E402

SUBJECTS = [
    "the staging database",
    "deploys",
    "the edge proxy",
    "the on-call rota",
    "backups",
    "the dashboards",
    "TLS certificates",
    "the job queue",
    "the VPN",
    "redis",
]
FORMS = [
    "where is {}?",
    "search your notes for {}",
    "what do we know about {}?",
    "check the status of {} please",
    "when was {} last changed?",
]
NOTICES = {
    EMPTY_NOTICE: "empty twice",
    UNREADABLE_NOTICE: "unreadable",
    TOO_LONG_NOTICE: "too long",
    OFFLINE_NOTICE: "unreachable",
}
QUESTIONS = [form.format(subject) for form in FORMS for subject in SUBJECTS]  # 50


def first_kind(call: dict[str, Any]) -> str:
    """What the model's first answer of a turn was."""
    result: ChatResult | None = call["result"]
    if result is None:
        return call["failed"].split(":")[0]  # unreadable, too long, …
    if result.tool_calls:
        return "calls"
    if not result.content.strip():
        return "empty"
    return "intent" if announced_intent(result.content) else "words"


def after_nudge(messages: list[dict[str, Any]]) -> bool:
    last = str(messages[-1].get("content", "")) if messages else ""
    return last == EMPTY_NUDGE or last.startswith('You said "')


def final_kind(reply: str) -> str:
    """What the person got."""
    if not reply.strip() or reply == "(no answer)":
        return "empty"
    for notice, why in NOTICES.items():
        if reply.startswith(notice):
            return f"from memory: {why}"
    if reply.startswith("⚠️ I could not finish this answer"):
        return "gave up"
    return "intent only" if announced_intent(reply) else "answer"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        server = LlamaServer(n_ctx=args.n_ctx)
        server.start(folder / "llama.log")
        try:
            adapter = StreamingAdapter()
            bot = Bot(settings_for(folder, server, args.n_ctx), [adapter])
            await bot.start()
            calls: list[dict[str, Any]] = []
            chat = bot.agent.model.chat

            async def timed(messages: list[dict[str, Any]], **kw: Any) -> ChatResult:
                started = time.perf_counter()
                call: dict[str, Any] = {"nudged": after_nudge(messages), "result": None}
                calls.append(call)
                if args.empty_first and len(calls) == 1:
                    call["result"], call["s"] = ChatResult(""), 0.0  # as if it came back empty
                    return call["result"]
                try:
                    call["result"] = await chat(messages, **kw)
                except ModelUnavailable as exc:
                    call["failed"] = f"{exc.kind}: {exc}"
                    raise
                finally:
                    call["s"] = time.perf_counter() - started
                return call["result"]

            bot.agent.model.chat = timed  # type: ignore[method-assign]
            try:
                for number, question in enumerate(QUESTIONS[: args.questions]):
                    channel = f"C{number}"  # the same notes, and no history of other turns
                    for topic, summary in NOTES:
                        draft = NoteDraft(Scope.parse(f"channel:test/{channel}"), topic, summary)
                        await bot.notes.save(draft, actor="bench")
                    calls.clear()
                    sent = len(adapter.sent)
                    repeated = repeats(bot)
                    message = adapter.message(question, channel=channel)
                    started = time.perf_counter()
                    await bot.dispatcher.submit(message)
                    await bot.dispatcher.wait_idle()
                    took = time.perf_counter() - started
                    reply = adapter.sent[-1].current if len(adapter.sent) > sent else ""
                    turns.append(
                        {
                            "question": question,
                            "s": took,
                            "calls": len(calls),
                            "first": first_kind(calls[0]) if calls else "none",
                            "failures": [c["failed"] for c in calls if "failed" in c],
                            "looped": repeats(bot) > repeated,
                            "final": final_kind(reply),
                            "nudge_calls": sum(c["nudged"] for c in calls),
                            "nudge_s": sum(c["s"] for c in calls if c["nudged"]),
                            "reply": reply[:200],
                        }
                    )
            finally:
                await bot.stop()
        finally:
            server.stop()
    return summarise(turns)


def repeats(bot: Bot) -> float:
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value("lorebot_model_slips_total", {"kind": "repeated call"})
    return value or 0.0


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def summarise(turns: list[dict[str, Any]]) -> dict[str, Any]:
    nudged = [t for t in turns if t["nudge_calls"]]
    added = [t["nudge_s"] for t in nudged]
    plain = [t["s"] for t in turns if not t["nudge_calls"]]
    return {
        "turns": len(turns),
        "before": dict(Counter(t["first"] for t in turns)),
        "looped": sum(t["looped"] for t in turns),
        "after": dict(Counter(t["final"] for t in turns)),
        "model_calls": sum(t["calls"] for t in turns),
        "nudge_calls": sum(t["nudge_calls"] for t in turns),
        "turns_nudged": len(nudged),
        "added_s_median": statistics.median(added) if added else 0.0,
        "added_s_p95": p95(added) if added else 0.0,
        "turn_s_median_without_nudge": statistics.median(plain) if plain else 0.0,
        "detail": turns,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=50, choices=range(1, 51))
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--empty-first", action="store_true", help="take each turn's first answer as empty"
    )
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(f"{result['turns']} turns on {MODEL}, every tool offered:")
    print(
        f"  before (the model's first answer): {result['before']}; "
        f"turns with the same call again: {result['looped']}"
    )
    print(f"  after (what the person got): {result['after']}")
    print(
        f"  model calls: {result['model_calls']}, of which after a nudge: "
        f"{result['nudge_calls']} in {result['turns_nudged']} turns"
    )
    print(
        f"  time a nudge added to its turn: median {result['added_s_median'] * 1000:.0f} ms, "
        f"p95 {result['added_s_p95'] * 1000:.0f} ms (a turn without one: median "
        f"{result['turn_s_median_without_nudge'] * 1000:.0f} ms)"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    if args.questions == 50:
        record_figures(result, empty_first=args.empty_first)


def record_figures(result: dict[str, Any], *, empty_first: bool) -> None:
    """What the person got of the 50 turns, into the current table of RESULTS.md."""
    before, after = result["before"], result["after"]
    if empty_first:
        what = "of 50 turns with the first answer taken as empty: the nudge got an answer"
        record("slips.nudge", what, str(after.get("answer", 0)))
        added = f"{result['added_s_median']:.1f} s / {result['added_s_p95']:.1f} s"
        record("slips.nudge.cost", "what a nudge adds to its turn, median / p95", added)
        return
    what = "of 50 turns on SmolLM2-135M with every tool offered: answered in words"
    record("slips.words", what, str(before.get("words", 0)))
    what = "of those 50: answers the server cut off, answered from memory"
    record("slips.unreadable", what, str(before.get("unreadable", 0)))


if __name__ == "__main__":
    main()
