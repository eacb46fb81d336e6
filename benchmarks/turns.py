"""Agent-turn benchmark: lorebot's own cost per turn, with the model taken out.

A real `Bot` (SQLite store, conversation log, dispatcher, core, agent) runs over an
in-memory adapter and the tests' fake Ollama (tests/fakes/ollama.py), which answers every
chat at once. The fake runs in a child process on 127.0.0.1, so its work is not counted
as lorebot's; the bot's real `Model` and Ollama client talk to it over HTTP, and the time
inside `Model.chat()` (client and fake) is measured and subtracted. Everything else is the
production path: dispatcher -> core -> agent (indexes, recall, history, prompt) -> adapter.

The store holds `--notes` notes (default 100k) of realistic length spread over many
scopes, among them the benchmark's own conversations' scopes (`channel:bench/C<n>`, the
speakers' `user:bench/U<n>`, `team:bench/T1`), so indexes and recall have real content.
Those conversations see about 200 notes each. One more conversation, `channel:bench/C0`
in `team:bench/T2`, sees `--wide` notes (default 10,000): 60% in its channel, 30% in its
team and 10% in each speaker's own scope.

It reports, in one run:

* turns per second through the whole bot for 1, 10 and 100 concurrent conversations
  (all turns of a level are submitted, then the wall time until `wait_idle()`);
* p50/p99 of lorebot's own time per turn (submit -> reply at the adapter, minus the time
  inside the model), and the model's time apart, measured one turn at a time in one
  conversation; then the same in the wide conversation; with how many notes each sees;
* how many times a turn goes to the database (the median and the most of the sequential
  turns): on SQLite each statement, commit and rollback sent through aiosqlite, on
  PostgreSQL each exchange with the server;
* the share of consecutive turns whose prompt prefix (the system message) is
  byte-identical, by the same speaker in the same conversation, with no note changes;
* memory bytes injected per turn (the system prompt from `# Memory indexes` on: the
  indexes and any daily conversation logs; plus the `<relevant-memories>` block of the
  last user message) against the bytes of every note the conversation may see.

The bot runs with the bundled skills only and with scheduled jobs off (they are not part
of a turn, and their catch-up would write notes during the measurement).

Run by hand, not in CI (~5 minutes for 100k notes on 2 cores, ~0.5 GB under $TMPDIR);
the exit status is 1 when a target is missed:

    . /work/venv/bin/activate
    python benchmarks/turns.py                       # 100k notes, 2000 turns per level
    python benchmarks/turns.py --notes 10000 --turns 500 --json /tmp/turns.json
    python benchmarks/turns.py --levels 1 --turns 200 --wide 20000   # the wide case mostly
    python -m cProfile -o /tmp/turns.prof benchmarks/turns.py --notes 100000

cProfile sees only the event-loop thread: time spent in SQLite (aiosqlite's thread) shows
up there as `select.epoll.poll`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
import weakref
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from results import record  # benchmarks/results.py, beside this script

import bot.daemon.app as app_module
from adapters.base import ConversationRef, EventSink, Message, PostedMessage, UserRef
from bot.config.settings import Settings
from bot.context.scopes import user_scope
from bot.daemon.app import Bot
from bot.model.client import DEFAULT_CONTEXT, ChatResult, Model
from bot.model.ollama import OnContent
from memory import Category, NoteDraft, Scope
from memory.sqlite import driver
from memory.stores.conversations import LogEntry

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = "bench"
TEAM_ID = "T1"
MODEL = "qwen3:8b"
REPLY = "Check the runbook note first; it covers this."
MEMORY_HEADING = "# Memory indexes"
MEMORIES_RE = re.compile(r"<relevant-memories>\n.*?</relevant-memories>\n", re.DOTALL)

# --- targets --------------------------------------------------------------------------

TARGET_OWN_P50_MS = 5.0
TARGET_OWN_P99_MS = 25.0
TARGET_TURNS_PER_S = 500.0
TARGET_PREFIX_STABLE = 1.0

# --- corpus shape ---------------------------------------------------------------------

OTHER_TEAMS = 4
NOTES_PER_CHANNEL = 50  # background scopes: ~50 notes per channel, ~20 per person
NOTES_PER_USER = 20
SCOPE_SHARES = (("channel", 0.60), ("user", 0.35), ("team", 0.05))
PRIVATE_USER_SHARE = 0.2
BENCH_TEAM_NOTES = 150  # more than an index shows, so `(N more: use memory_search)` appears
BENCH_CHANNEL_NOTES = (10, 50)  # per bench channel, uniform
BENCH_USER_NOTES = (0, 10)  # per bench speaker, uniform
WIDE = 0  # the conversation that sees `--wide` notes
WIDE_TEAM_ID = "T2"
WIDE_SHARES = (0.6, 0.3)  # of `--wide`: its channel, its team; each speaker has the rest
WIDE_SPEAKERS_AFTER = 900_000  # its speakers are U900001, U900002, ...
SUMMARY_CHARS = (60, 120)
BODY_BYTES = (200, 800)
IMPORT_BATCH = 5000

# --- vocabulary -----------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


SERVICES = _words("""postgres redis nginx kafka billing-api auth-service search-api gateway
    rabbitmq elasticsearch vault consul prometheus grafana loki etcd kubelet coredns
    payments-worker mailer ingest-pipeline scheduler frontend checkout inventory-api
    ledger notifications cdn haproxy memcached mysql clickhouse minio airflow spark
    jenkins gitlab-runner sentry statsd fluentd opensearch keycloak traefik envoy""")
ROLES = _words("db web api cache queue worker lb bastion build mon log batch edge vpn nfs")
ENVS = _words("prod staging dev qa canary sandbox perf eu-west-1 us-east-1 eu-central-1 dr")
TOOLS = _words("""terraform ansible kubectl helm argocd pagerduty datadog opsgenie jira
    confluence github gitlab docker packer nomad pulumi k9s stern pg_dump restic rclone jq""")
NOUNS = _words("""deploy rollback migration backup restore certificate disk memory cpu latency
    alert incident outage runbook dashboard quota replica failover snapshot volume
    queue consumer lag index schema cron job rotation config release hotfix branch
    pipeline build artifact image registry cluster node pod namespace ingress dns record
    tls firewall route subnet bucket retention log metric trace threshold oncall
    escalation handover postmortem ticket window freeze maintenance capacity budget cost
    tenant region zone shard partition leader follower vacuum bloat checkpoint wal
    connection pool timeout retry limit cache eviction heap thread socket port proxy
    upstream healthcheck probe sidecar daemon exporter webhook payload session account
    permission policy audit encryption lease lock batch stream offset checksum""")
VERBS = _words("""restart rotate drain cordon failover scale page deploy pin bump upgrade
    patch reboot resize expand purge flush rebuild reindex vacuum analyze tune throttle
    monitor escalate silence archive prune compact migrate promote review merge revert
    backport verify check trace profile renew revoke mount snapshot replicate""")
ADJECTIVES = _words("""slow flaky stale noisy broken healthy degraded primary secondary
    read-only hot cold idle busy saturated legacy deprecated temporary nightly weekly
    critical minor major expensive large small intermittent persistent transient""")
PEOPLE = _words("""alice bob carol dave erin frank grace heidi ivan judy niaj olivia peggy
    rupert sybil trent victor walter yusuf zoe amir bea chen dmitri emeka fatima goran
    hana ines jun kofi lena mateo noor oskar priya quinn rosa sven tariq uma vera wei""")
FILLER = _words("""always never usually before after during because unless until while
    first then next finally also only still already again instead otherwise every
    team week month night morning weekend sprint meeting thread doc reminder agreed
    decided prefer avoid keep use need try check make sure careful important known
    issue workaround fix cause reason result impact risk plan goal status update""")
CONSONANTS = [
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "kr",
    "st",
    "tr",
    "pl",
    "gr",
]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ou", "ea", "io"]

SENTENCES = (
    "{service} on {host} runs behind {service} and talks to {service} over port {num}.",
    "The {noun} for {service} lives in {env} and is owned by {person}.",
    "{host} has a {adj} {noun}; {tool} shows it under the {noun} dashboard.",
    "Backups of {service} go to the {noun} bucket in {env} every night.",
    "{person} prefers {tool} over {tool} for {noun} work on {service}.",
    "Always {verb} {service} with {tool} before you {verb} the {noun}.",
    "Every {noun} change to {service} needs a ticket and a second reviewer.",
    "We decided to move {service} from {host} to {env} because the {noun} was {adj}.",
    "When {service} reports {adj} {noun}, {verb} the {noun} on {host} first.",
    "Runbook: {verb} {service}, wait for the {noun} to drain, then {verb} {host}.",
    "The last {noun} on {service} took longer than planned because {host} was {adj}.",
)
FILLER_SENTENCES = (
    "{filler} {filler} the {noun} {filler} {verb} it on {host}.",
    "{filler} {filler}: {noun}, {noun} and {noun} on {service}.",
    "Ask {person} {filler} {filler} {noun} {filler}.",
)
QUESTIONS = (
    "how do we {verb} {service} when the {noun} on {host} is {adj}?",
    "who owns the {noun} for {service} in {env}?",
    "why is {service} {adj} after the {noun} {word}?",
    "can you remind me how to {verb} the {noun} on {host} {word}?",
    "is {tool} still the way to {verb} {service} {word}?",
    "any notes on the {adj} {noun} of {service} and {word} {word}?",
    "where does {service} keep its {noun} in {env}, and who is {word}?",
)
SLOT_RE = re.compile(r"\{(\w+)\}")
WORD_RE = re.compile(r"[a-z]+")
CATEGORY_WEIGHTS = {
    Category.FACT: 0.35,
    Category.PREFERENCE: 0.15,
    Category.CONVENTION: 0.15,
    Category.DECISION: 0.15,
    Category.PATTERN: 0.15,
    Category.REFLECTION: 0.05,
}


class Zipf:
    """Draws from a pool, most common first, with weight 1/(rank + q)^1.07 (buffered)."""

    def __init__(self, pool: Sequence[str], rng: random.Random) -> None:
        self.pool = list(pool)
        self.rng = rng
        q = min(10.0, len(self.pool) / 10)
        self.cum = list(
            itertools.accumulate(1.0 / (r + q) ** 1.07 for r in range(1, len(pool) + 1))
        )
        self.buffer: list[str] = []

    def __call__(self) -> str:
        if not self.buffer:
            self.buffer = self.rng.choices(self.pool, cum_weights=self.cum, k=4096)
        return self.buffer.pop()


class Text:
    """Ops-team sentences from Zipf-drawn words, plus made-up codenames as a long tail."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        codenames: dict[str, None] = {}
        while len(codenames) < 2500:
            word = "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(2))
            codenames[word + (rng.choice(CONSONANTS) if rng.random() < 0.4 else "")] = None
        names = list(codenames)
        numbers = Zipf([f"{n:02d}" for n in range(1, 100)], rng)
        pools: dict[str, Callable[[], str]] = {
            "service": Zipf(SERVICES + [n + "-api" for n in names[:600]], rng),
            "role": Zipf(ROLES, rng),
            "env": Zipf(ENVS, rng),
            "tool": Zipf(TOOLS, rng),
            "noun": Zipf(NOUNS + names[900:], rng),
            "verb": Zipf(VERBS, rng),
            "adj": Zipf(ADJECTIVES, rng),
            "person": Zipf(PEOPLE + names[600:900], rng),
            "filler": Zipf(FILLER, rng),
            "num": numbers,
        }
        pools["host"] = lambda: f"{pools['role']()}-{pools['env']()}-{numbers()}"
        self.pools = pools
        self._parsed: dict[str, list[str]] = {}

    def fill(self, template: str, extra: Mapping[str, Callable[[], str]] = {}) -> str:
        parts = self._parsed.get(template)
        if parts is None:
            parts = self._parsed[template] = SLOT_RE.split(template)
        return "".join(
            p if i % 2 == 0 else (extra.get(p) or self.pools[p])() for i, p in enumerate(parts)
        )

    def sentence(self, template: str) -> str:
        text = self.fill(template)
        return text[0].upper() + text[1:]

    def summary(self) -> str:
        text = self.sentence(self.rng.choice(SENTENCES))
        while len(text) < SUMMARY_CHARS[0]:
            text += " " + self.sentence(self.rng.choice(FILLER_SENTENCES))
        return _cut(text, SUMMARY_CHARS[1])

    def body(self) -> str:
        target = self.rng.randint(*BODY_BYTES)
        sentences: list[str] = []
        size = -1
        while size < target:
            pool = SENTENCES if self.rng.random() < 0.6 else FILLER_SENTENCES
            sentences.append(self.sentence(self.rng.choice(pool)))
            size += len(sentences[-1]) + 1
        return _cut(" ".join(sentences), BODY_BYTES[1])

    def topic(self, counter: int) -> str:
        words = re.findall(r"[a-z0-9]+", f"{self.pools['service']()} {self.pools['noun']()}")
        return "-".join([*words, str(counter)])[:64].strip("-")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: text.rfind(" ", 0, limit)]


# --- the benchmark's conversations ------------------------------------------------------


def channel_id(n: int) -> str:
    return f"C{n}"


def user_id(n: int) -> str:
    return f"U{n}"


def team_of(conversation: int) -> str:
    return WIDE_TEAM_ID if conversation == WIDE else TEAM_ID


def speakers_of(conversation: int, per_conversation: int) -> list[int]:
    """Conversation n (1-based) has its own speakers, numbered on from the previous ones;
    the wide conversation's are numbered apart."""
    first = (conversation - 1) * per_conversation + 1
    if conversation == WIDE:
        first = WIDE_SPEAKERS_AFTER + 1
    return list(range(first, first + per_conversation))


def conversation_ref(n: int) -> ConversationRef:
    return ConversationRef(PLATFORM, channel_id(n), is_dm=False, thread_id=None, team_id=team_of(n))


def scopes_of(conversation: int, speaker: int) -> tuple[str, str, str]:
    """The channel, team and person scopes a speaker's turn in a conversation reads."""
    return (
        f"channel:{PLATFORM}/{channel_id(conversation)}",
        f"team:{PLATFORM}/{team_of(conversation)}",
        f"user:{PLATFORM}/{user_id(speaker)}",
    )


@dataclass
class Corpus:
    drafts: list[NoteDraft]
    bench_notes: int
    # Content words of each bench scope's notes, for questions that hit real notes.
    words_by_scope: dict[str, list[str]] = field(default_factory=dict)


def generate_corpus(
    total: int, conversations: int, speakers: int, text: Text, rng: random.Random, wide: int = 0
) -> Corpus:
    """The bench scopes' notes first (the wide conversation's `wide` among them), then
    background notes up to `total`."""
    drafts: list[NoteDraft] = []
    words: dict[str, list[str]] = {}
    kinds, weights = list(CATEGORY_WEIGHTS), list(CATEGORY_WEIGHTS.values())

    def category() -> Category:
        return rng.choices(kinds, weights)[0]

    def add(scope: Scope, count: int, private_share: float = 0.0) -> None:
        for i in range(count):
            summary, body = text.summary(), text.body()
            drafts.append(
                NoteDraft(
                    scope,
                    text.topic(i + 1),
                    summary,
                    body,
                    category=category(),
                    private=rng.random() < private_share,
                    author="user:bench/import",
                )
            )
            content = [w for w in WORD_RE.findall(f"{summary} {body}".lower()) if len(w) > 3]
            words.setdefault(str(scope), []).extend(content[:40])

    add(Scope.parse(f"team:{PLATFORM}/{TEAM_ID}"), BENCH_TEAM_NOTES)
    if wide:
        in_channel, in_team = (round(wide * share) for share in WIDE_SHARES)
        channel, team, _ = scopes_of(WIDE, 0)
        add(Scope.parse(channel), in_channel)
        add(Scope.parse(team), in_team)
        for u in speakers_of(WIDE, speakers):  # public: each speaker sees exactly `wide`
            add(Scope.parse(scopes_of(WIDE, u)[2]), wide - in_channel - in_team)
    for c in range(1, conversations + 1):
        add(Scope.parse(f"channel:{PLATFORM}/{channel_id(c)}"), rng.randint(*BENCH_CHANNEL_NOTES))
        for u in speakers_of(c, speakers):
            count = rng.randint(*BENCH_USER_NOTES)
            add(Scope.parse(f"user:{PLATFORM}/{user_id(u)}"), count, PRIVATE_USER_SHARE)
    bench = len(drafts)
    background = max(0, total - bench)
    channels = max(OTHER_TEAMS, background // NOTES_PER_CHANNEL)
    users = max(OTHER_TEAMS, background // NOTES_PER_USER)
    counters: dict[str, int] = defaultdict(int)
    for _ in range(background):
        roll = rng.random()
        private = False
        if roll < SCOPE_SHARES[0][1]:
            scope = f"channel:slack/C{rng.randrange(channels):07d}"
        elif roll < SCOPE_SHARES[0][1] + SCOPE_SHARES[1][1]:
            scope = f"user:slack/U{rng.randrange(users):07d}"
            private = rng.random() < PRIVATE_USER_SHARE
        else:
            scope = f"team:slack/T{rng.randrange(OTHER_TEAMS):03d}"
        counters[scope] += 1
        drafts.append(
            NoteDraft(
                Scope.parse(scope),
                text.topic(counters[scope]),
                text.summary(),
                text.body(),
                category=category(),
                private=private,
                author="user:slack/import",
            )
        )
    return Corpus(drafts, bench, words)


class Questions:
    """Questions a speaker asks in a conversation: ops phrasing plus words of notes the
    conversation can see, so recall finds real notes."""

    def __init__(self, text: Text, corpus: Corpus, rng: random.Random) -> None:
        self.text = text
        self.corpus = corpus
        self.rng = rng

    def ask(self, conversation: int, speaker: int) -> str:
        scopes = scopes_of(conversation, speaker)
        pool = [w for s in scopes for w in self.corpus.words_by_scope.get(s, ())[:2000]]
        pick = (lambda: self.rng.choice(pool)) if pool else self.text.pools["noun"]
        return self.text.fill(self.rng.choice(QUESTIONS), {"word": pick})


# --- the model, the fake Ollama it talks to, and the counting adapter --------------------

# tests/fakes/ollama.py's fake, answering every chat with REPLY at once (argv: model name,
# context length, reply). It keeps no request bodies: the benchmark sends thousands.
FAKE_OLLAMA = """
import asyncio, sys
from tests.fakes.ollama import FakeOllama

async def serve():
    fake = FakeOllama(models=[sys.argv[1]], capabilities=["completion", "tools"],
                      context_length=int(sys.argv[2]), default_reply=lambda body: sys.argv[3])
    for _ in range(100_000 if float(sys.argv[4]) else 0):  # each answer waits this long
        fake.delay(float(sys.argv[4]))
    await fake.start()
    print(fake.url, flush=True)
    while True:
        await asyncio.sleep(0.5)
        fake.requests.clear()

asyncio.run(serve())
"""


class FakeOllamaProcess:
    """The tests' fake Ollama in a child process on 127.0.0.1, so its work is not counted
    as lorebot's time or CPU."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.process: asyncio.subprocess.Process | None = None
        self.delay_s = delay_s  # before each chat answer

    async def start(self) -> str:
        """Start the fake; returns its base URL."""
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            FAKE_OLLAMA,
            MODEL,
            str(DEFAULT_CONTEXT),
            REPLY,
            str(self.delay_s),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        assert self.process.stdout is not None
        async with asyncio.timeout(60):
            line = await self.process.stdout.readline()
        if not line.startswith(b"http://127.0.0.1:"):
            await self.stop()
            raise RuntimeError("the fake Ollama did not start")
        return line.decode().strip()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


@dataclass(slots=True)
class ChatCall:
    """What the model saw on one agent turn (summarisation calls are counted apart)."""

    task: str
    prefix: str
    last_user: str
    index_bytes: int
    memories_bytes: int


class RecordingModel(Model):
    """`bot.model.client.Model`, unchanged, recording what each chat call sent and how long the
    call took (the Ollama client and the fake Ollama's answer over HTTP)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[ChatCall] = []
        self.summaries = 0
        self.other_calls = 0
        self.chat_seconds = 0.0  # total time inside chat()
        self.chat_durations: list[float] = []

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        format: Mapping[str, Any] | None = None,
        on_content: OnContent | None = None,
    ) -> ChatResult:
        started = time.perf_counter()
        result = await super().chat(messages, tools=tools, format=format, on_content=on_content)
        elapsed = time.perf_counter() - started
        self.chat_seconds += elapsed
        self.chat_durations.append(elapsed)
        self.record(messages, format)
        return result

    def record(self, messages: Sequence[Mapping[str, Any]], format: Any) -> None:
        if messages and messages[0].get("role") == "system" and format is None:
            prefix = messages[0]["content"]
            last_user = messages[-1]["content"]
            indexes = prefix.split(MEMORY_HEADING, 1)
            memories = MEMORIES_RE.match(last_user)
            task = asyncio.current_task()
            self.calls.append(
                ChatCall(
                    task.get_name() if task else "",
                    prefix,
                    last_user,
                    len(indexes[1].encode()) if len(indexes) == 2 else 0,
                    len(memories.group(0).encode()) if memories else 0,
                )
            )
        elif messages and str(messages[0].get("content", "")).startswith("Summarise"):
            self.summaries += 1
        else:
            self.other_calls += 1


class BenchAdapter:
    """The adapter contract in memory: counts what the bot posts and when."""

    platform = PLATFORM
    connected = True

    def __init__(self) -> None:
        self.max_message_chars = 4000
        self.sink: EventSink | None = None
        self.sends = 0
        self.edits = 0
        self.reactions = 0
        self.unexpected: list[str] = []
        self.last_send: dict[str, float] = {}
        self._ids = itertools.count(1)

    async def start(self, sink: EventSink) -> None:
        self.sink = sink

    async def close(self) -> None:
        pass

    async def send(self, conversation: ConversationRef, text: str) -> PostedMessage:
        self.last_send[conversation.key] = time.perf_counter()
        self.sends += 1
        if text != REPLY and len(self.unexpected) < 20:
            self.unexpected.append(text)
        return PostedMessage(conversation, f"m{next(self._ids)}")

    async def edit(self, posted: PostedMessage, text: str) -> None:
        self.edits += 1

    async def add_reaction(self, posted: PostedMessage, emoji: str) -> None:
        self.reactions += 1


# --- measurement ------------------------------------------------------------------------


@dataclass
class Turn:
    """One submitted message and what is known about it after the run."""

    conversation: int
    speaker: int
    message: Message
    phase: str


@dataclass
class LevelResult:
    conversations: int
    turns: int
    seconds: float
    turns_per_s: float
    cpu_ms_per_turn: float
    model_ms_total: float
    replies: int


@dataclass
class Results:
    started: str
    machine: dict[str, Any]
    args: dict[str, Any]
    corpus: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, Any] = field(default_factory=dict)
    wide: dict[str, Any] = field(default_factory=dict)
    levels: list[LevelResult] = field(default_factory=list)
    prefix: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    targets: dict[str, bool] = field(default_factory=dict)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path, ollama_url: str) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.text = Text(self.rng)
        self.adapter = BenchAdapter()
        settings = Settings(
            # `--database-url`: the same bot on PostgreSQL (an empty database of its own).
            database={"path": workdir / "turns.db", "url": args.database_url},
            ollama={"host": ollama_url, "model": MODEL, "timeout_s": 5.0},
            bot={"queue_size": 100_000},
            # Only the bundled skills: nothing from this machine's ~/.agents or ~/.config.
            skills={"home_root": workdir / "home-skills", "user_root": workdir / "user-skills"},
            # Scheduled jobs (reflection, patterns, digests, maintenance) are not part of a
            # turn; their catch-up at start would also write notes during the measurement.
            jobs={"enabled": False},
            log_level="WARNING",
        )
        self.bot = Bot(settings, [self.adapter])
        self.turns: list[Turn] = []
        self.per_conversation: dict[int, list[Turn]] = defaultdict(list)
        self.speaker_now: dict[int, int] = {}
        self.events = itertools.count(1)
        self.run_id = os.urandom(4).hex()  # event ids stay unique if a database is reused

    async def start(self) -> RecordingModel:
        # Bot.start() builds its Model: for the duration of start() the class is the
        # recording subclass, which leaves every call as it is.
        names = vars(app_module)
        real = names["Model"]
        names["Model"] = RecordingModel
        try:
            await self.bot.start()
        finally:
            names["Model"] = real
        model = self.bot.model
        assert isinstance(model, RecordingModel)
        assert self.bot.agent.model is model
        return model

    # --- setup ------------------------------------------------------------------------

    async def load(self, results: Results) -> Corpus:
        args = self.args
        conversations = max(args.levels)
        t = time.perf_counter()
        corpus = generate_corpus(
            args.notes, conversations, args.speakers, self.text, self.rng, args.wide
        )
        generated = time.perf_counter() - t
        t = time.perf_counter()
        for start in range(0, len(corpus.drafts), IMPORT_BATCH):
            batch = corpus.drafts[start : start + IMPORT_BATCH]
            await self.bot.notes.import_drafts(batch, actor="user:bench/import")
        imported = time.perf_counter() - t
        self.questions = Questions(self.text, corpus, self.rng)
        notes = len(corpus.drafts)
        scopes = len({str(d.scope) for d in corpus.drafts})
        summary_bytes = sum(len(d.topic) + len(d.summary.encode()) for d in corpus.drafts)
        body_bytes = sum(len(d.body.encode()) for d in corpus.drafts)
        results.corpus = {
            "notes": notes,
            "scopes": scopes,
            "bench_scope_notes": corpus.bench_notes,
            "mean_note_bytes": round((summary_bytes + body_bytes) / max(1, notes)),
            "generate_s": round(generated, 2),
            "import_s": round(imported, 2),
            "import_per_s": round(notes / imported),
            "db_mb": round(await _db_bytes(self.bot) / 1e6, 1),
        }
        await self.seed_history(conversations)
        return corpus

    async def seed_history(self, conversations: int) -> None:
        """Earlier exchanges in every bench conversation, so all levels run with a history
        of the same length as in a channel the bot has been in for a while."""
        for c in [*([WIDE] if self.args.wide else []), *range(1, conversations + 1)]:
            for _ in range(self.args.history // 2):
                speaker = self.rng.choice(speakers_of(c, self.args.speakers))
                author = UserRef(PLATFORM, user_id(speaker), f"person{speaker}")
                question = self.questions.ask(c, speaker)
                message = Message(conversation_ref(c), author, question, "seed", "seed")
                key = self.bot.router.context(message).history_key
                entries = [
                    LogEntry("user", question, user_scope(author)),
                    LogEntry("assistant", REPLY),
                ]
                await self.bot.log.append(key, entries)

    def message(self, conversation: int, phase: str) -> Turn:
        """The next message in `conversation`: mostly the same speaker as last time."""
        speakers = speakers_of(conversation, self.args.speakers)
        speaker = self.speaker_now.get(conversation)
        if speaker is None or self.rng.random() >= self.args.stay:
            speaker = self.rng.choice(speakers)
        self.speaker_now[conversation] = speaker
        event_id = f"ev-{self.run_id}-{next(self.events)}"
        author = UserRef(PLATFORM, user_id(speaker), f"person{speaker}")
        text = self.questions.ask(conversation, speaker)
        message = Message(
            conversation_ref(conversation), author, text, event_id, event_id, mentions_bot=True
        )
        turn = Turn(conversation, speaker, message, phase)
        self.turns.append(turn)
        self.per_conversation[conversation].append(turn)
        return turn

    # --- phases -----------------------------------------------------------------------

    async def sequential(self, model: RecordingModel, conversation: int) -> dict[str, Any]:
        """One turn at a time in `conversation`: own time = submit -> reply, minus the time
        inside the model (the Ollama client and the fake's answer)."""
        dispatcher = self.bot.dispatcher
        own: list[float] = []
        idle: list[float] = []
        in_models: list[float] = []
        trips: list[int] = []
        total = self.args.warmup + self.args.latency_turns
        phase = "latency" if conversation != WIDE else "wide"
        for number in range(total):
            turn = self.message(conversation, "warmup" if number < self.args.warmup else phase)
            key = turn.message.conversation.key
            self.adapter.last_send.pop(key, None)
            model_before = model.chat_seconds
            trips_before = ROUND_TRIPS.count
            t0 = time.perf_counter()
            await dispatcher.submit(turn.message)
            await dispatcher.wait_idle()
            t_idle = time.perf_counter()
            turn_trips = ROUND_TRIPS.count - trips_before
            t_reply = self.adapter.last_send.get(key)
            if t_reply is None:
                raise RuntimeError(f"no reply to {turn.message.event_id}")
            in_model = model.chat_seconds - model_before
            if number >= self.args.warmup:
                own.append((t_reply - t0 - in_model) * 1000)
                idle.append((t_idle - t0 - in_model) * 1000)
                in_models.append(in_model * 1000)
                trips.append(turn_trips)
        visible = await self.visible_notes(conversation)
        return {
            "conversation": conversation_ref(conversation).key,
            "visible_notes": visible,
            "visible_notes_median": statistics.median(visible.values()),
            "turns": len(own),
            "warmup": self.args.warmup,
            "own_p50_ms": round(percentile(own, 50), 3),
            "own_p90_ms": round(percentile(own, 90), 3),
            "own_p99_ms": round(percentile(own, 99), 3),
            "own_max_ms": round(max(own), 3),
            "own_mean_ms": round(statistics.fmean(own), 3),
            "model_p50_ms": round(percentile(in_models, 50), 3),
            "model_p99_ms": round(percentile(in_models, 99), 3),
            "total_p50_ms": round(
                percentile([o + m for o, m in zip(own, in_models, strict=True)], 50), 3
            ),
            "to_idle_p50_ms": round(percentile(idle, 50), 3),
            "to_idle_p99_ms": round(percentile(idle, 99), 3),
            "round_trips_median": statistics.median(trips),
            "round_trips_max": max(trips),
        }

    async def visible_notes(self, conversation: int) -> dict[str, int]:
        """How many notes each speaker's turn in `conversation` may read, by speaker."""
        counts = {}
        for speaker in speakers_of(conversation, self.args.speakers):
            author = UserRef(PLATFORM, user_id(speaker), f"person{speaker}")
            message = Message(conversation_ref(conversation), author, "?", "count", "count")
            visibility = self.bot.router.context(message).visibility
            counts[user_scope(author)] = len(await self.bot.notes.list_visible(visibility))
        return counts

    async def concurrent(self, model: RecordingModel, conversations: int) -> LevelResult:
        """All turns of the level submitted round-robin, then wait until the bot is idle."""
        per = max(1, self.args.turns // conversations)
        batch = [
            self.message(c, f"level-{conversations}")
            for _ in range(per)
            for c in range(1, conversations + 1)
        ]
        dispatcher = self.bot.dispatcher
        sends_before = self.adapter.sends
        model_before = model.chat_seconds
        cpu = time.process_time()
        t0 = time.perf_counter()
        for turn in batch:
            await dispatcher.submit(turn.message)
        await dispatcher.wait_idle()
        seconds = time.perf_counter() - t0
        cpu = time.process_time() - cpu
        return LevelResult(
            conversations=conversations,
            turns=len(batch),
            seconds=round(seconds, 3),
            turns_per_s=round(len(batch) / seconds, 1),
            cpu_ms_per_turn=round(cpu * 1000 / len(batch), 3),
            model_ms_total=round((model.chat_seconds - model_before) * 1000, 3),
            replies=self.adapter.sends - sends_before,
        )

    # --- analysis ---------------------------------------------------------------------

    async def analyse(self, model: RecordingModel, results: Results) -> None:
        """Pair each agent chat call with its turn (per conversation, calls come in the
        order the turns were submitted), then compare prefixes and memory sizes."""
        by_task: dict[str, list[ChatCall]] = defaultdict(list)
        for call in model.calls:
            by_task[call.task].append(call)
        paired: list[tuple[Turn, ChatCall]] = []
        mismatched = 0
        for conversation, turns in self.per_conversation.items():
            calls = by_task.get(f"conversation {conversation_ref(conversation).key}", [])
            if len(calls) != len(turns):
                mismatched += abs(len(calls) - len(turns))
            for turn, call in zip(turns, calls, strict=False):
                if not call.last_user.endswith(turn.message.text):
                    mismatched += 1
                paired.append((turn, call))

        same_speaker = [0, 0]  # identical, compared
        any_speaker = [0, 0]
        shared_on_change: list[float] = []  # common leading share when the prefix changed
        last_by_conv: dict[int, ChatCall] = {}
        last_by_speaker: dict[tuple[int, int], ChatCall] = {}
        for turn, call in paired:
            previous = last_by_conv.get(turn.conversation)
            if previous is not None:
                any_speaker[1] += 1
                any_speaker[0] += previous.prefix == call.prefix
                if previous.prefix != call.prefix:
                    common = os.path.commonprefix([previous.prefix, call.prefix])
                    shared_on_change.append(len(common) / len(call.prefix))
            key = (turn.conversation, turn.speaker)
            previous = last_by_speaker.get(key)
            if previous is not None:
                same_speaker[1] += 1
                same_speaker[0] += previous.prefix == call.prefix
            last_by_conv[turn.conversation] = call
            last_by_speaker[key] = call
        results.prefix = {
            "same_speaker_identical": same_speaker[0],
            "same_speaker_pairs": same_speaker[1],
            "same_speaker_share": same_speaker[0] / max(1, same_speaker[1]),
            "any_speaker_identical": any_speaker[0],
            "any_speaker_pairs": any_speaker[1],
            "any_speaker_share": any_speaker[0] / max(1, any_speaker[1]),
            "changed_prefix_common_share_median": (
                statistics.median(shared_on_change) if shared_on_change else 1.0
            ),
            "prefix_bytes_median": statistics.median(len(c.prefix.encode()) for _, c in paired),
        }

        results.memory = await self.memory_use(
            [(t, c) for t, c in paired if t.conversation != WIDE]
        )
        wide = [(t, c) for t, c in paired if t.conversation == WIDE]
        if wide:
            results.wide["memory"] = await self.memory_use(wide)
        results.checks.update(
            {
                "agent_chat_calls": len(model.calls),
                "turns_submitted": len(self.turns),
                "unpaired_or_mismatched_calls": mismatched,
                "summarisation_calls": model.summaries,
                "other_model_calls": model.other_calls,
                "model_chat_p50_us": round(percentile(model.chat_durations, 50) * 1e6, 1),
                "model_chat_total_ms": round(model.chat_seconds * 1000, 1),
                "adapter_sends": self.adapter.sends,
                "unexpected_replies": self.adapter.unexpected,
            }
        )

    async def memory_use(self, paired: Sequence[tuple[Turn, ChatCall]]) -> dict[str, Any]:
        """Bytes of memory injected per turn against the bytes of every note it may see."""
        visible: dict[tuple[int, int], int] = {}
        injected, visible_per_turn, index_bytes, memories_bytes = [], [], [], []
        hits = 0
        for turn, call in paired:
            key = (turn.conversation, turn.speaker)
            if key not in visible:
                ctx = self.bot.router.context(turn.message)
                notes = await self.bot.notes.list_visible(ctx.visibility)
                visible[key] = sum(
                    len(n.topic.encode()) + len(n.summary.encode()) + len(n.body.encode())
                    for n in notes
                )
            injected.append(call.index_bytes + call.memories_bytes)
            index_bytes.append(call.index_bytes)
            memories_bytes.append(call.memories_bytes)
            visible_per_turn.append(visible[key])
            hits += call.memories_bytes > 0
        med_injected = statistics.median(injected)
        med_visible = statistics.median(visible_per_turn)
        return {
            "turns": len(paired),
            "injected_median_bytes": med_injected,
            "index_median_bytes": statistics.median(index_bytes),
            "memories_median_bytes": statistics.median(memories_bytes),
            "injected_p99_bytes": round(percentile(injected, 99)),
            "visible_median_bytes": med_visible,
            "ratio_of_medians": med_injected / med_visible if med_visible else float("nan"),
            "turn_ratio_median": statistics.median(
                i / v for i, v in zip(injected, visible_per_turn, strict=True) if v
            ),
            "turns_with_recall": hits / max(1, len(paired)),
        }


async def _db_bytes(bot: Bot) -> int:
    path = getattr(bot.db, "path", None)
    if path is None:  # PostgreSQL
        return int(await bot.db.scalar("SELECT pg_database_size(current_database())"))
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def note_changes(bench: Bench) -> int:
    return int(await bench.bot.db.scalar("SELECT count(*) FROM note_changes"))


class RoundTrips:
    """How many times lorebot waits on the database: on SQLite each hop to aiosqlite's
    thread (a statement, a fetch, a commit, or a batch of them: `aiosqlite.Connection.
    _execute`, which every aiosqlite call goes through); on PostgreSQL each exchange in
    which psycopg blocks for the server's answer (`psycopg.waiting.wait_async` watching the
    socket for reading), counted once however many pieces the answer comes in, so
    statements sent together in pipeline mode count once."""

    def __init__(self) -> None:
        self.count = 0

    def install(self) -> None:
        import aiosqlite

        aiosqlite.Connection._execute = self._counting(aiosqlite.Connection._execute)

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Count psycopg's waits for the server on `loop` (PostgreSQL runs only)."""
        add_reader = loop.add_reader
        counter = self

        # One wait's callback, registered again for each piece of the answer it reads.
        waits: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()

        def counted(fd: Any, callback: Callable[..., Any], *args: Any) -> None:
            if "wait_async" in getattr(callback, "__qualname__", "") and callback not in waits:
                waits.add(callback)
                counter.count += 1
            add_reader(fd, callback, *args)

        loop.add_reader = counted  # type: ignore[method-assign]

    def _counting(self, method: Callable[..., Any]) -> Callable[..., Any]:
        counter = self

        def counted(*args: Any, **kwargs: Any) -> Any:
            counter.count += 1
            return method(*args, **kwargs)

        return counted


ROUND_TRIPS = RoundTrips()


async def run(args: argparse.Namespace) -> Results:
    results = Results(
        started=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine={
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "sqlite": driver.driver_name(),
        },
        args=vars(args).copy(),
    )
    ROUND_TRIPS.install()
    ROUND_TRIPS.watch(asyncio.get_running_loop())
    fake = FakeOllamaProcess()
    with tempfile.TemporaryDirectory(prefix="lorebot-turns-") as tmp:
        bench = Bench(args, Path(tmp), await fake.start())
        try:
            model = await bench.start()
            log(f"importing {args.notes} notes ...")
            await bench.load(results)
            log(f"imported in {results.corpus['import_s']} s; measuring latency ...")
            # The import holds the event loop for seconds, so a probe made meanwhile may have
            # timed out: ask again, so the turns find the model up.
            if await model.probe() is None:
                raise RuntimeError("the fake Ollama does not answer")
            changes_before = await note_changes(bench)
            results.latency = await bench.sequential(model, 1)
            if args.wide:
                log(f"the conversation that sees {args.wide:,} notes ...")
                results.wide = {"latency": await bench.sequential(model, WIDE)}
            for level in args.levels:
                log(f"level {level}: {args.turns} turns ...")
                results.levels.append(await bench.concurrent(model, level))
            results.checks["note_changes_during_turns"] = await note_changes(bench) - changes_before
            await bench.analyse(model, results)
        finally:
            await bench.bot.stop()
            await fake.stop()
    latency = results.latency
    same_speaker = results.prefix["same_speaker_share"]
    results.targets = {
        f"own time p50 < {TARGET_OWN_P50_MS:g} ms": latency["own_p50_ms"] < TARGET_OWN_P50_MS,
        f"own time p99 < {TARGET_OWN_P99_MS:g} ms": latency["own_p99_ms"] < TARGET_OWN_P99_MS,
        **{
            f">= {TARGET_TURNS_PER_S:g} turns/s at {lv.conversations} conversation(s)": (
                lv.turns_per_s >= TARGET_TURNS_PER_S
            )
            for lv in results.levels
        },
        "100% prefix stability (same speaker, same conversation)": (
            same_speaker >= TARGET_PREFIX_STABLE
        ),
    }
    return results


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def report(results: Results) -> str:
    lat, mem, pre, cor = results.latency, results.memory, results.prefix, results.corpus
    lines = [
        f"Agent turns, {cor['notes']:,} notes in {cor['scopes']:,} scopes "
        f"({cor['bench_scope_notes']:,} in the benchmark conversations' scopes), "
        f"{results.machine['cpus']} CPUs, Python {results.machine['python']}, "
        f"{results.machine['sqlite']}",
        "",
        "| measure | value |",
        "|---|---|",
        f"| import | {cor['import_per_s']:,} notes/s ({cor['import_s']} s), db {cor['db_mb']} MB |",
        *sequential_rows(lat),
        *(sequential_rows(results.wide["latency"]) if results.wide else []),
    ]
    for lv in results.levels:
        lines.append(
            f"| throughput, {lv.conversations} concurrent conversation(s), {lv.turns} turns | "
            f"{lv.turns_per_s:,.0f} turns/s ({lv.seconds:.2f} s, "
            f"CPU {lv.cpu_ms_per_turn:.2f} ms/turn) |"
        )
    lines += [
        f"| prefix byte-identical, consecutive turns of the same speaker in a conversation | "
        f"{pre['same_speaker_share']:.1%} ({pre['same_speaker_identical']}/"
        f"{pre['same_speaker_pairs']}) |",
        f"| prefix byte-identical, consecutive turns of a conversation, any speaker | "
        f"{pre['any_speaker_share']:.1%} ({pre['any_speaker_identical']}/"
        f"{pre['any_speaker_pairs']}); when it changed, the first "
        f"{pre['changed_prefix_common_share_median']:.0%} still matched (median) |",
        f"| memory injected per turn (median: indexes + recalled) | "
        f"{mem['injected_median_bytes']:,.0f} B ({mem['index_median_bytes']:,.0f} + "
        f"{mem['memories_median_bytes']:,.0f}); p99 {mem['injected_p99_bytes']:,} B |",
        f"| notes visible to the conversation (median) | {mem['visible_median_bytes']:,.0f} B |",
        f"| injected / visible | {mem['ratio_of_medians']:.1%} (ratio of medians); "
        f"per-turn median {mem['turn_ratio_median']:.1%} |",
        f"| turns with recalled notes | {mem['turns_with_recall']:.1%} |",
        *wide_memory_rows(results.wide.get("memory")),
        f"| time inside the model (Ollama client + fake Ollama over HTTP) | "
        f"{results.checks['model_chat_total_ms']:,.1f} ms in "
        f"{results.checks['agent_chat_calls']} calls (p50 "
        f"{results.checks['model_chat_p50_us']:,} µs) |",
        "",
        "Targets:",
    ]
    lines += [f"- [{'PASS' if ok else 'FAIL'}] {name}" for name, ok in results.targets.items()]
    checks = results.checks
    problems = []
    if checks["unpaired_or_mismatched_calls"]:
        problems.append(f"{checks['unpaired_or_mismatched_calls']} chat calls not matched to turns")
    if checks["unexpected_replies"]:
        problems.append(f"unexpected replies: {checks['unexpected_replies'][:3]}")
    if checks["note_changes_during_turns"]:
        problems.append(f"{checks['note_changes_during_turns']} note changes during the turns")
    if checks["adapter_sends"] != checks["turns_submitted"]:
        problems.append(f"{checks['adapter_sends']} replies for {checks['turns_submitted']} turns")
    if checks["other_model_calls"] or checks["summarisation_calls"]:
        problems.append(
            f"{checks['summarisation_calls']} summarisation and "
            f"{checks['other_model_calls']} other model calls"
        )
    lines += ["", "Checks: " + ("; ".join(problems) if problems else "all consistent")]
    return "\n".join(lines)


def sequential_rows(lat: Mapping[str, Any]) -> list[str]:
    """Rows of one sequential measurement: what the conversation sees, lorebot's own time,
    the model's time."""
    seen = ", ".join(f"{n:,}" for n in lat["visible_notes"].values())
    return [
        f"| notes visible in {lat['conversation']} (by speaker) | {seen} |",
        f"| own time per turn there, sequential ({lat['turns']} turns) | "
        f"p50 {lat['own_p50_ms']:.2f} ms, p90 {lat['own_p90_ms']:.2f} ms, "
        f"p99 {lat['own_p99_ms']:.2f} ms, max {lat['own_max_ms']:.1f} ms |",
        f"| model time per turn there (client + fake Ollama) | p50 {lat['model_p50_ms']:.2f} ms, "
        f"p99 {lat['model_p99_ms']:.2f} ms; own + model p50 {lat['total_p50_ms']:.2f} ms |",
        f"| database round trips per turn | {lat['round_trips_median']:g} |",
        f"| database round trips per turn, most in one turn | {lat['round_trips_max']} |",
    ]


def wide_memory_rows(mem: Mapping[str, Any] | None) -> list[str]:
    if not mem:
        return []
    return [
        f"| memory injected per turn in the wide conversation (median) | "
        f"{mem['injected_median_bytes']:,.0f} B ({mem['index_median_bytes']:,.0f} + "
        f"{mem['memories_median_bytes']:,.0f}) of {mem['visible_median_bytes']:,.0f} B "
        f"visible ({mem['ratio_of_medians']:.2%}) |",
    ]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=100_000, help="notes in the store")
    parser.add_argument("--turns", type=int, default=2000, help="turns per concurrency level")
    parser.add_argument(
        "--levels",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[1, 10, 100],
        help="concurrent conversations per level, comma-separated",
    )
    parser.add_argument("--latency-turns", type=int, default=1000, help="sequential turns timed")
    parser.add_argument("--warmup", type=int, default=50, help="sequential turns not timed")
    parser.add_argument("--speakers", type=int, default=3, help="speakers per conversation")
    parser.add_argument(
        "--stay", type=float, default=0.7, help="chance the next turn has the same speaker"
    )
    parser.add_argument(
        "--history", type=int, default=100, help="messages already in each conversation"
    )
    parser.add_argument(
        "--wide",
        type=int,
        default=10_000,
        help="notes one more conversation sees (channel, team, person); 0: no such case",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--database-url", help="run on this PostgreSQL database (empty) instead of SQLite"
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument(
        "--no-record",
        dest="record",
        action="store_false",
        help="leave RESULTS.md's current table as it is",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    results = asyncio.run(run(args))
    print(report(results))
    if args.json:
        data = asdict(results)
        data["args"]["json"] = str(args.json)
        args.json.write_text(json.dumps(data, indent=2, default=str))
    if args.record and args.notes == 100_000 and not args.database_url:
        record_figures(results, wide=args.wide == 10_000)
    return 0 if all(results.targets.values()) else 1


def record_figures(results: Results, *, wide: bool) -> None:
    """The summary's figures of a SQLite run at 100k notes, into RESULTS.md's current table."""
    pre, own = results.prefix, results.latency["own_p50_ms"]
    what = "prompt prefix byte-identical between a speaker's turns, no note changed"
    record("turns.prefix", what, f"{pre['same_speaker_share']:.1%}")
    what = "lorebot's own time per turn p50, 100k notes, 200 of them visible"
    record("turns.own.p50", what, f"{own:.1f} ms")
    if wide and results.wide:
        own_wide = results.wide["latency"]["own_p50_ms"]
        what = "own time p50 of a turn that sees 10,000 notes / one that sees 200"
        record("turns.wide.ratio", what, f"{own_wide / own:.1f}× ({own_wide:.1f} / {own:.1f} ms)")


if __name__ == "__main__":
    sys.exit(main())
