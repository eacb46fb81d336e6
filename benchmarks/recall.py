"""Recall benchmark: lorebot's SQLite/FTS5 note store against LanceDB full-text search.

For each corpus size it builds a fresh store from generated ops-team notes, then reports
import throughput (`NoteStore.import_drafts` in batches of 10k), database bytes per note
(file plus WAL after a checkpoint) and recall latency: p50/p99 of `NoteStore.search` as
the bot calls it (k=10, including its access-count bump), each query from a random
channel viewer, and overlap@10: the share of an exact bm25 ranking's top 10 (every word of
the query, lorebot's column weights, the same visible notes, no shortcut) that lorebot's
top 10 holds, so a faster ranking that drops results shows. The same notes and queries
then go through a LanceDB table with an FTS index on topic+summary+body, a BTree index on
scope and a prefilter admitting the same scopes; its import time covers building the
Arrow table and both indexes.

Run by hand, not in CI (1M notes take several minutes and ~4 GB of disk under $TMPDIR):

    . /work/venv/bin/activate
    pip install -e '.[bench]'          # LanceDB, only for the comparison
    python benchmarks/recall.py                        # 1k, 10k, 100k and 1M notes
    python benchmarks/recall.py --sizes 1k,10k --queries 100 --skip-lancedb
    python benchmarks/recall.py --json /tmp/recall.json
    python benchmarks/recall.py --sizes 100k --phrased  # queries asked as questions

LanceDB runs in a forked child process with a per-size time limit (`--lancedb-timeout`),
so a size it cannot handle is reported as timed out instead of hanging the run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import json
import multiprocessing as mp
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from results import record  # benchmarks/results.py, beside this script

from memory import Category, NoteDraft, Scope, Viewer, visibility_for
from memory.policy.visibility import scope_match
from memory.ranking import STOPWORDS
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.fts import match_terms
from memory.sqlite.note_search import _BM25 as BM25_WEIGHTS
from memory.sqlite.notes import SqliteNoteStore

# --- corpus shape ---------------------------------------------------------------------

TEAMS = 4
NOTES_PER_CHANNEL = 50
NOTES_PER_USER = 20
# Where notes live: most in channels, many in people's own memory, few team-wide.
SCOPE_SHARES = (("channel", 0.60), ("user", 0.35), ("team", 0.05))
PRIVATE_USER_SHARE = 0.2
SUMMARY_CHARS = (60, 120)
BODY_BYTES = (200, 800)
ZIPF_EXPONENT = 1.07
ZIPF_MAX_OFFSET = 10.0
SYNTHETIC_WORDS = 3000
IMPORT_BATCH = 10_000
RECALL_K = 10
WARMUP_QUERIES = 20

# --- targets --------------------------------------------------------------------------

TARGET_P50_MS = {100_000: 5.0, 1_000_000: 20.0}
TARGET_IMPORT_PER_S = 20_000.0

# --- vocabulary -----------------------------------------------------------------------
# Each pool is ordered most common first; draws follow a Zipf law over that order.


def _words(text: str) -> list[str]:
    return text.split()


SERVICES = _words("""postgres redis nginx kafka billing-api auth-service search-api gateway
    rabbitmq elasticsearch vault consul prometheus grafana loki etcd kubelet coredns
    payments-worker mailer ingest-pipeline scheduler frontend checkout inventory-api
    ledger notifications cdn haproxy memcached mysql clickhouse minio airflow spark
    jenkins gitlab-runner sentry statsd fluentd opensearch keycloak traefik envoy
    zookeeper cassandra mongodb pgbouncer celery sidekiq webhooks reporting-api""")
ROLES = _words("db web api cache queue worker lb bastion build mon log batch edge vpn nfs")
ENVS = _words("""prod staging dev qa canary sandbox perf eu-west-1 us-east-1 ap-south-1
    eu-central-1 us-west-2 dr""")
TOOLS = _words("""terraform ansible kubectl helm argocd pagerduty datadog opsgenie jira confluence
    github gitlab bazel docker podman packer nomad salt chef pulumi k9s stern
    pgbadger pg_dump restic borg rclone jq curl dig tcpdump strace perf htop iotop""")
NOUNS = _words("""deploy rollback migration backup restore certificate disk memory cpu latency
    alert incident outage runbook dashboard quota replica failover snapshot volume
    queue consumer lag index schema cron job secret rotation token key config
    release hotfix branch pipeline build artifact image registry cluster node pod
    namespace ingress dns record tls load balancer firewall rule route subnet vpc
    bucket retention log metric trace span threshold oncall escalation handover
    postmortem ticket change window freeze maintenance capacity budget cost invoice
    customer tenant region zone shard partition leader follower vacuum bloat
    checkpoint wal connection pool timeout retry limit throttle cache hit miss
    eviction heap gc thread socket port proxy upstream healthcheck probe readiness
    liveness sidecar daemon agent exporter collector scraper webhook callback
    payload request response header cookie session user account permission role
    group policy audit compliance encryption password mfa sso ldap saml oauth
    scope channel team owner reviewer approver runner worker executor lease lock
    mutex semaphore batch stream topic offset watermark checksum hash signature""")
VERBS = _words("""restart rotate drain cordon failover scale page deploy roll back pin bump
    upgrade downgrade patch reboot resize expand shrink purge flush rebuild reindex
    vacuum analyze tune throttle rate-limit block allow whitelist monitor alert
    escalate ack silence mute snooze archive prune compact migrate promote demote
    tag label annotate review approve merge revert cherry-pick backport verify check
    probe ping trace profile benchmark warm cool freeze thaw lock unlock renew
    revoke issue sign verify mount unmount attach detach snapshot replicate""")
ADJECTIVES = _words("""slow flaky stale noisy broken healthy degraded primary secondary read-only
    hot cold warm idle busy saturated overloaded underused legacy deprecated new
    temporary permanent manual automatic nightly weekly hourly critical minor major
    expensive cheap large small quiet loud intermittent persistent transient""")
PEOPLE = _words("""alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia
    peggy rupert sybil trent victor walter yusuf zoe amir bea chen dmitri emeka fatima
    goran hana ines jun kofi lena mateo noor oskar priya quinn rosa sven tariq uma
    vera wei xena yara zane""")
FILLER = _words("""always never usually before after during because unless until while
    first then next finally also only still already again instead otherwise
    every each some most many few none both either neither other same different
    team week month quarter night morning weekend sprint meeting call thread doc
    note reminder agreed decided prefer avoid keep use need want try ask tell
    check make sure remember careful important known issue workaround fix cause
    reason result impact risk plan goal owner status update progress blocked done
    open closed pending waiting ready old new good bad fast slow safe unsafe
    people folks someone everyone nobody customer support sales finance legal""")
CONSONANTS = "b c d f g h k l m n p r s t v z br dr kr st tr pl gr"
VOWELS = "a e i o u ai ou ea io"


class Zipf:
    """Draws from a word pool, most common first, with a Zipf-Mandelbrot law: weight
    1/(rank + q)^s, where q flattens the head so the top words of a big pool are common
    without being in every note. Draws are buffered for speed."""

    def __init__(self, pool: Sequence[str], rng: random.Random, s: float = ZIPF_EXPONENT):
        self.pool = list(pool)
        self.rng = rng
        q = min(ZIPF_MAX_OFFSET, len(self.pool) / 10)
        weights = (1.0 / (rank + q) ** s for rank in range(1, len(self.pool) + 1))
        self.cum = list(itertools.accumulate(weights))
        self.buffer: list[str] = []

    def __call__(self) -> str:
        if not self.buffer:
            self.buffer = self.rng.choices(self.pool, cum_weights=self.cum, k=4096)
        return self.buffer.pop()


def synthetic_words(rng: random.Random, count: int) -> list[str]:
    """Pronounceable made-up words: project codenames, internal jargon, people's handles."""
    consonants, vowels = CONSONANTS.split(), VOWELS.split()
    words: dict[str, None] = {}
    while len(words) < count:
        syllables = rng.choice((2, 2, 3))
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables))
        if rng.random() < 0.4:
            word += rng.choice(consonants)
        if word not in STOPWORDS:
            words[word] = None
    return list(words)


Vocabulary = dict[str, Callable[[], str]]


def build_vocabulary(rng: random.Random) -> Vocabulary:
    """The word pools the sentence templates draw from."""
    codenames = synthetic_words(rng, SYNTHETIC_WORDS)
    # Codenames become the long tail of services, people and jargon nouns.
    suffixes = ("-api", "-worker", "-db", "-ui", "", "", "", "")
    services = SERVICES + [c + rng.choice(suffixes) for c in codenames[:800]]
    pools: dict[str, Zipf] = {
        "service": Zipf(services, rng),
        "role": Zipf(ROLES, rng),
        "env": Zipf(ENVS, rng),
        "tool": Zipf(TOOLS, rng),
        "noun": Zipf(NOUNS + codenames[1200:], rng),
        "verb": Zipf(VERBS, rng),
        "adj": Zipf(ADJECTIVES, rng),
        "person": Zipf(PEOPLE + codenames[800:1200], rng),
        "filler": Zipf(FILLER, rng),
    }
    numbers = Zipf([f"{n:02d}" for n in range(1, 100)], rng)
    vocab: Vocabulary = dict(pools)
    vocab["host"] = lambda: f"{pools['role']()}-{pools['env']()}-{numbers()}"
    vocab["num"] = numbers
    vocab["hour"] = Zipf([f"{h:02d}:00" for h in range(24)], rng)
    return vocab


# --- note text ------------------------------------------------------------------------

SENTENCES: dict[Category, tuple[str, ...]] = {
    Category.FACT: (
        "{service} on {host} runs behind {service} and talks to {service} over port {num}.",
        "The {noun} for {service} lives in {env} and is owned by {person}.",
        "{host} has a {adj} {noun}; {tool} shows it under the {noun} dashboard.",
        "{service} keeps {num} days of {noun} before the {adj} {noun} job prunes them.",
        "Backups of {service} go to the {noun} bucket in {env} every night at {hour}.",
    ),
    Category.PREFERENCE: (
        "{person} prefers {tool} over {tool} for {noun} work on {service}.",
        "Ping {person} in the thread, not by DM, for anything about {service}.",
        "{person} wants {noun} changes to {service} reviewed before {hour} on weekdays.",
        "Keep replies about the {noun} short; {person} reads them on the phone.",
    ),
    Category.CONVENTION: (
        "Always {verb} {service} with {tool} before you {verb} the {noun}.",
        "Name every {noun} after the {service} it belongs to and the {env} it runs in.",
        "Every {noun} change to {service} needs a ticket and a second reviewer.",
        "Never {verb} {host} during the {noun} freeze; ask {person} first.",
    ),
    Category.DECISION: (
        "We decided to move {service} from {host} to {env} because the {noun} was {adj}.",
        "{person} and {person} agreed to {verb} the {noun} weekly instead of daily.",
        "The team chose {tool} for {noun} after the {adj} {noun} incident on {service}.",
        "{service} stays on {env} until the {noun} migration is done.",
    ),
    Category.PATTERN: (
        "When {service} reports {adj} {noun}, {verb} the {noun} on {host} first.",
        "Runbook: {verb} {service}, wait for the {noun} to drain, then {verb} {host}.",
        "If {tool} alerts on {noun} for {service}, check the {noun} of {host} before paging.",
        "After a {noun} on {service}, {verb} the {noun} and tell {person}.",
    ),
    Category.REFLECTION: (
        "The last {noun} on {service} took longer than planned because {host} was {adj}.",
        "We keep forgetting to {verb} the {noun}; a {tool} check would catch it.",
        "Paging {person} at {hour} for a {adj} {noun} was not worth it.",
    ),
}
FILLER_SENTENCES = (
    "{filler} {filler} the {noun} {filler} {verb} it on {host}.",
    "{filler} {filler}: {noun}, {noun} and {noun} on {service}.",
    "Ask {person} {filler} {filler} {noun} {filler}.",
)
SLOT_RE = re.compile(r"\{(\w+)\}")
WORD_RE = re.compile(r"[a-z]+")
CATEGORY_WEIGHTS = (
    (Category.FACT, 0.35),
    (Category.PREFERENCE, 0.15),
    (Category.CONVENTION, 0.15),
    (Category.DECISION, 0.15),
    (Category.PATTERN, 0.15),
    (Category.REFLECTION, 0.05),
)


class TextGenerator:
    """Fills sentence templates with Zipf-drawn words."""

    def __init__(self, vocab: Vocabulary, rng: random.Random) -> None:
        self.pools = vocab
        self.rng = rng
        self._parsed: dict[str, list[str]] = {}

    def sentence(self, template: str) -> str:
        parts = self._parsed.get(template)
        if parts is None:
            parts = self._parsed[template] = SLOT_RE.split(template)
        out = [p if i % 2 == 0 else self.pools[p]() for i, p in enumerate(parts)]
        text = "".join(out)
        return text[0].upper() + text[1:]

    def summary(self, category: Category) -> str:
        text = self.sentence(self.rng.choice(SENTENCES[category]))
        while len(text) < SUMMARY_CHARS[0]:
            text += " " + self.sentence(self.rng.choice(FILLER_SENTENCES))
        return _cut(text, SUMMARY_CHARS[1])

    def body(self, category: Category) -> str:
        target = self.rng.randint(*BODY_BYTES)
        sentences: list[str] = []
        size = -1
        while size < target:
            pool = SENTENCES[category] if self.rng.random() < 0.6 else FILLER_SENTENCES
            sentences.append(self.sentence(self.rng.choice(pool)))
            size += len(sentences[-1]) + 1
        return _cut(" ".join(sentences), BODY_BYTES[1])


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: text.rfind(" ", 0, limit)]


# --- corpus ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GenNote:
    scope: str
    private: bool
    topic: str
    summary: str
    body: str
    category: Category


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    team: int
    channel: int
    user: int


@dataclass
class Corpus:
    notes: list[GenNote]
    channels: int
    users: int
    # Indices into `notes` of each scope's notes.
    by_scope: dict[str, list[int]] = field(default_factory=dict)


def channel_scope(i: int) -> str:
    return f"channel:slack/C{i:07d}"


def user_scope(i: int) -> str:
    return f"user:slack/U{i:07d}"


def team_scope(i: int) -> str:
    return f"team:slack/T{i:03d}"


def pick_scope(rng: random.Random, channels: int, users: int) -> tuple[str, bool]:
    roll = rng.random()
    if roll < SCOPE_SHARES[0][1]:
        return channel_scope(rng.randrange(channels)), False
    if roll < SCOPE_SHARES[0][1] + SCOPE_SHARES[1][1]:
        return user_scope(rng.randrange(users)), rng.random() < PRIVATE_USER_SHARE
    return team_scope(rng.randrange(TEAMS)), False


def make_topic(gen: TextGenerator, counter: int) -> str:
    words = re.findall(r"[a-z0-9]+", f"{gen.pools['service']()} {gen.pools['noun']()}")
    return "-".join([*words, str(counter)])[:64].strip("-")


def generate_corpus(size: int, seed: int) -> Corpus:
    rng = random.Random(seed)
    vocab = build_vocabulary(rng)
    gen = TextGenerator(vocab, rng)
    channels = max(TEAMS, size // NOTES_PER_CHANNEL)
    users = max(TEAMS, size // NOTES_PER_USER)
    corpus = Corpus([], channels, users)
    categories, weights = zip(*CATEGORY_WEIGHTS, strict=True)
    for category in rng.choices(categories, weights=weights, k=size):
        scope, private = pick_scope(rng, channels, users)
        indices = corpus.by_scope.setdefault(scope, [])
        topic = make_topic(gen, len(indices) + 1)
        indices.append(len(corpus.notes))
        note = GenNote(scope, private, topic, gen.summary(category), gen.body(category), category)
        corpus.notes.append(note)
    return corpus


def words_of(text: str) -> list[str]:
    return [w for w in WORD_RE.findall(text.lower()) if w not in STOPWORDS]


def query_vocabulary(corpus: Corpus, rng: random.Random) -> Zipf:
    """Every word of the notes, ranked by how many of (a sample of) them use it."""
    sample = rng.sample(corpus.notes, min(len(corpus.notes), 5000))
    counts = Counter(w for n in sample for w in set(words_of(f"{n.summary} {n.body}")))
    return Zipf([w for w, _ in counts.most_common()], rng)


QUESTION_FRAMES = (
    "what is the",
    "how do we",
    "where is the",
    "who owns the",
    "when did we",
    "why is the",
    "is there a",
    "what did we decide about the",
)


def generate_queries(
    corpus: Corpus, count: int, seed: int, *, phrased: bool = False
) -> list[Query]:
    """2-6 words each: 1-3 from a note the viewer may read, 0-3 from the vocabulary;
    `phrased` puts each in a question's frame ("how do we …"), stopwords and all."""
    rng = random.Random(seed + 1)
    vocabulary = query_vocabulary(corpus, rng)
    queries: list[Query] = []
    while len(queries) < count:
        team = rng.randrange(TEAMS)
        # Channel i and user i belong to team i % TEAMS.
        channel = rng.randrange(team, corpus.channels, TEAMS)
        user = rng.randrange(team, corpus.users, TEAMS)
        visible = [
            i
            for s in (channel_scope(channel), team_scope(team), user_scope(user))
            for i in corpus.by_scope.get(s, [])
        ]
        words = [vocabulary() for _ in range(rng.randint(0, 3))]
        if visible:
            note = corpus.notes[rng.choice(visible)]
            content = words_of(f"{note.summary} {note.body}")
            words += rng.sample(content, min(len(content), rng.randint(1, 3)))
        words = list(dict.fromkeys(words))[:6]
        if len(words) >= 2:
            rng.shuffle(words)
            frame = f"{rng.choice(QUESTION_FRAMES)} " if phrased else ""
            queries.append(
                Query(frame + " ".join(words) + ("?" if phrased else ""), team, channel, user)
            )
    return queries


# --- measurements ---------------------------------------------------------------------


@dataclass
class EngineResult:
    engine: str
    import_s: float = 0.0
    notes_per_s: float = 0.0
    bytes_per_note: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    mean_hits: float = 0.0
    exact_overlap: float | None = None  # mean share of the exact bm25 top 10 returned
    error: str = ""
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    hit_keys: list[list[str]] = field(default_factory=list, repr=False)


def summarize(result: EngineResult, count: int) -> None:
    lat = result.latencies_ms
    result.notes_per_s = count / result.import_s if result.import_s else 0.0
    result.p50_ms = statistics.median(lat)
    result.p99_ms = statistics.quantiles(lat, n=100, method="inclusive")[98]
    result.max_ms = max(lat)
    result.mean_hits = statistics.fmean(len(keys) for keys in result.hit_keys)


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def draft_of(note: GenNote, scopes: dict[str, Scope]) -> NoteDraft:
    scope = scopes.get(note.scope) or scopes.setdefault(note.scope, Scope.parse(note.scope))
    return NoteDraft(
        scope=scope,
        topic=note.topic,
        summary=note.summary,
        body=note.body,
        category=note.category,
        private=note.private,
    )


def viewer_of(query: Query) -> Viewer:
    return Viewer(
        speaker=Scope.parse(user_scope(query.user)),
        channel=Scope.parse(channel_scope(query.channel)),
        team=Scope.parse(team_scope(query.team)),
    )


async def import_lorebot(store: SqliteNoteStore, notes: Sequence[GenNote]) -> float:
    scopes: dict[str, Scope] = {}
    start = time.perf_counter()
    for offset in range(0, len(notes), IMPORT_BATCH):
        drafts = [draft_of(n, scopes) for n in notes[offset : offset + IMPORT_BATCH]]
        await store.import_drafts(drafts, actor="bench")
    return time.perf_counter() - start


async def db_bytes(db: SqliteDatabase, path: Path) -> int:
    await db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return file_bytes(path, path.with_name(path.name + "-wal"))


def file_bytes(*paths: Path) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


async def bench_lorebot(
    corpus: Corpus, warmup: Sequence[Query], queries: Sequence[Query], workdir: Path
) -> EngineResult:
    path = workdir / "lorebot.sqlite3"
    db = await SqliteDatabase.open(path)
    try:
        store = SqliteNoteStore(db)
        result = EngineResult("lorebot", import_s=await import_lorebot(store, corpus.notes))
        result.bytes_per_note = await db_bytes(db, path) / len(corpus.notes)
        for query in warmup:
            await store.search(query.text, visibility_for(viewer_of(query)), k=RECALL_K)
        for query in queries:
            visibility = visibility_for(viewer_of(query))
            start = time.perf_counter()
            hits = await store.search(query.text, visibility, k=RECALL_K)
            result.latencies_ms.append((time.perf_counter() - start) * 1000)
            result.hit_keys.append([f"{h.note.scope}/{h.note.topic}" for h in hits])
        exact = [await exact_bm25(db, q) for q in queries]
        result.exact_overlap = exact_agreement(result.hit_keys, exact)
    finally:
        await db.close()
    summarize(result, len(corpus.notes))
    return result


async def exact_bm25(
    db: SqliteDatabase, query: Query, k: int = RECALL_K
) -> list[tuple[str, float]]:
    """The top of an exhaustive bm25 ranking, with scores (the k best and some after them,
    for ties): every word of the query ORed, lorebot's column weights, every visible live
    note considered, no limit before the filter."""
    words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", query.text)))
    if not words:
        return []
    visibility = visibility_for(viewer_of(query))
    match = f"{scope_match(visibility)} AND {match_terms(words)}"
    full = [str(s) for s in visibility.full]
    public = [str(s) for s in visibility.public_only]
    # The MATCH runs once, first (MATERIALIZED): joined row by row it would run per note.
    sql = (
        f"WITH m AS MATERIALIZED (SELECT rowid AS id, {BM25_WEIGHTS} AS score FROM notes_fts "
        "WHERE notes_fts MATCH ?) SELECT n.scope, n.topic, m.score FROM m JOIN notes AS n "
        "ON n.id = m.id "
        f"WHERE (n.scope IN ({', '.join('?' for _ in full)}) OR "
        f"(n.scope IN ({', '.join('?' for _ in public)}) AND n.private = 0)) "
        "AND (n.expires_at IS NULL OR n.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
        "ORDER BY m.score LIMIT ?"
    )
    async with db.conn.execute(sql, (match, *full, *public, k + 20)) as cursor:
        return [(f"{r[0]}/{r[1]}", float(r[2])) for r in await cursor.fetchall()]


TIE = 1e-5


def exact_agreement(
    found: Sequence[Sequence[str]], exact: Sequence[Sequence[tuple[str, float]]], k: int = RECALL_K
) -> float:
    """Mean share of each exact top k that the ranking measured also returned; a note tied
    with the exact k-th counts as agreeing (ties may come in either order), and so does one
    within TIE of it: words held by half the notes or more add millionths to a score."""
    shares = []
    for got, best in zip(found, exact, strict=True):
        if not best:
            continue
        top = best[:k]
        last = top[-1][1]
        allowed = {key for key, score in best if score <= last + TIE}
        shares.append(len(set(got[:k]) & allowed) / len(top))
    return statistics.fmean(shares) if shares else 1.0


# --- LanceDB (runs in a forked child) -------------------------------------------------


def lancedb_filter(query: Query) -> str:
    """The same notes `visibility_for` admits: channel and team fully, the user's public."""
    full = ", ".join(f"'{s}'" for s in (channel_scope(query.channel), team_scope(query.team)))
    return f"scope IN ({full}) OR (scope = '{user_scope(query.user)}' AND NOT private)"


def bench_lancedb(
    corpus: Corpus, warmup: Sequence[Query], queries: Sequence[Query], workdir: Path
) -> EngineResult:
    import lancedb
    import pyarrow as pa  # type: ignore[import-untyped]
    from lancedb.index import FTS, BTree

    notes = corpus.notes
    start = time.perf_counter()
    data = pa.table(
        {
            "scope": [n.scope for n in notes],
            "private": [n.private for n in notes],
            "topic": [n.topic for n in notes],
            "summary": [n.summary for n in notes],
            "body": [n.body for n in notes],
            "text": [f"{n.topic} {n.summary} {n.body}" for n in notes],
        }
    )
    table = lancedb.connect(workdir / "lancedb").create_table("notes", data=data)
    table.create_index("text", config=FTS())
    table.create_index("scope", config=BTree())
    result = EngineResult("lancedb", import_s=time.perf_counter() - start)
    result.bytes_per_note = directory_bytes(workdir / "lancedb") / len(notes)

    def search(query: Query) -> list[dict[str, Any]]:
        builder = table.search(query.text, query_type="fts")
        rows: list[dict[str, Any]] = (
            builder.where(lancedb_filter(query), prefilter=True).limit(RECALL_K).to_list()
        )
        return rows

    for query in warmup:
        search(query)
    for query in queries:
        start = time.perf_counter()
        rows = search(query)
        result.latencies_ms.append((time.perf_counter() - start) * 1000)
        result.hit_keys.append([f"{r['scope']}/{r['topic']}" for r in rows])
    summarize(result, len(notes))
    return result


def _lancedb_child(conn: Connection, *args: Any) -> None:
    try:
        conn.send(bench_lancedb(*args))
    except BaseException as exc:  # report anything, the parent decides
        conn.send(EngineResult("lancedb", error=f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_lancedb(
    corpus: Corpus,
    warmup: Sequence[Query],
    queries: Sequence[Query],
    workdir: Path,
    timeout_s: float,
) -> EngineResult:
    """LanceDB in a forked process (it inherits the corpus), killed after `timeout_s`."""
    ctx = mp.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_lancedb_child, args=(sender, corpus, warmup, queries, workdir))
    child.start()
    sender.close()
    try:
        if receiver.poll(timeout_s):
            result: EngineResult = receiver.recv()
            return result
        return EngineResult("lancedb", error=f"timed out after {timeout_s:.0f} s")
    except EOFError:
        return EngineResult("lancedb", error=f"child died (exit code {child.exitcode})")
    finally:
        if child.is_alive():
            child.kill()
        child.join()


# --- report ---------------------------------------------------------------------------


@dataclass
class SizeResult:
    size: int
    generate_s: float
    lorebot: EngineResult
    lancedb: EngineResult | None
    overlap: float | None  # mean share of lorebot's top-10 that LanceDB also returned
    load: float  # 1-minute load average when the size finished: above ~1.5, others ran too

    def targets(self) -> dict[str, bool]:
        checks = {"import >= 20k notes/s": self.lorebot.notes_per_s >= TARGET_IMPORT_PER_S}
        if self.size in TARGET_P50_MS:
            limit = TARGET_P50_MS[self.size]
            checks[f"p50 < {limit:g} ms"] = self.lorebot.p50_ms < limit
        return checks


def top_overlap(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]]) -> float:
    shares = [len(set(x) & set(y)) / len(x) for x, y in zip(a, b, strict=True) if x]
    return statistics.fmean(shares) if shares else 0.0


def size_label(size: int) -> str:
    for unit, factor in (("M", 1_000_000), ("k", 1_000)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def parse_size(text: str) -> int:
    match = re.fullmatch(r"(\d+)([kKmM]?)", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: use e.g. 1000, 10k or 1M")
    factor = {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
    return int(match.group(1)) * factor


def print_row(cells: Sequence[str], widths: Sequence[int]) -> None:
    print("| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + " |")


def print_table(results: Sequence[SizeResult]) -> None:
    header = [
        "notes",
        "engine",
        "import s",
        "notes/s",
        "bytes/note",
        "p50 ms",
        "p99 ms",
        "max ms",
        "hits",
        "exact@10",
        "p50 ratio",
        "p99 ratio",
        "overlap",
        "targets",
    ]
    rows: list[list[str]] = []
    for r in results:
        targets = ", ".join(f"{k}: {'PASS' if ok else 'FAIL'}" for k, ok in r.targets().items())
        rows.append([size_label(r.size), *engine_cells(r.lorebot), "", "", "", targets])
        if r.lancedb is None:
            continue
        if r.lancedb.error:
            rows.append([size_label(r.size), "lancedb", r.lancedb.error, *[""] * 11])
            continue
        ratio50 = f"{r.lorebot.p50_ms / r.lancedb.p50_ms:.2f}"
        ratio99 = f"{r.lorebot.p99_ms / r.lancedb.p99_ms:.2f}"
        overlap = f"{r.overlap:.2f}" if r.overlap is not None else ""
        rows.append([size_label(r.size), *engine_cells(r.lancedb), ratio50, ratio99, overlap, ""])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print_row(header, widths)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print_row(row, widths)
    print(
        "exact@10: share of an exhaustive bm25 ranking's top 10 (every query word, the "
        "same visible notes) that the engine returned; ratios are lorebot / LanceDB "
        "(below 1: lorebot faster); overlap: share of lorebot's top-10 that LanceDB also "
        "returned"
    )


def engine_cells(e: EngineResult) -> list[str]:
    return [
        e.engine,
        f"{e.import_s:.1f}",
        f"{e.notes_per_s:,.0f}",
        f"{e.bytes_per_note:,.0f}",
        f"{e.p50_ms:.2f}",
        f"{e.p99_ms:.2f}",
        f"{e.max_ms:.1f}",
        f"{e.mean_hits:.1f}",
        "" if e.exact_overlap is None else f"{e.exact_overlap:.1%}",
    ]


def write_json(path: Path, args: argparse.Namespace, results: Sequence[SizeResult]) -> None:
    def engine(e: EngineResult | None) -> dict[str, Any] | None:
        if e is None:
            return None
        data = asdict(e)
        data.pop("hit_keys")
        data["latencies_ms"] = [round(x, 3) for x in e.latencies_ms]
        return data

    document = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "platform": platform.platform()},
        "python": sys.version.split()[0],
        "command": " ".join(sys.argv),
        "queries": args.queries,
        "phrased": args.phrased,
        "seed": args.seed,
        "results": [
            {
                "size": r.size,
                "generate_s": r.generate_s,
                "overlap": r.overlap,
                "load_1min": r.load,
                "targets": r.targets(),
                "lorebot": engine(r.lorebot),
                "lancedb": engine(r.lancedb),
            }
            for r in results
        ],
    }
    path.write_text(json.dumps(document, indent=2) + "\n")


# --- main -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="1k,10k,100k,1M",
        type=lambda text: [parse_size(s) for s in text.split(",") if s.strip()],
        help="comma-separated note counts (default: 1k,10k,100k,1M)",
    )
    parser.add_argument("--queries", type=int, default=300, help="measured queries per size")
    parser.add_argument("--seed", type=int, default=1, help="seed of notes and queries")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--skip-lancedb", action="store_true", help="measure lorebot only")
    parser.add_argument(
        "--phrased",
        action="store_true",
        help='ask each query as a question ("how do we …?"), stopwords included',
    )
    parser.add_argument(
        "--lancedb-timeout",
        type=float,
        default=900.0,
        help="seconds LanceDB may take per size, import and queries (default: 900)",
    )
    return parser.parse_args(argv)


def run_size(size: int, args: argparse.Namespace, with_lancedb: bool) -> SizeResult:
    label = size_label(size)
    log(f"{label}: generating notes and queries")
    start = time.perf_counter()
    corpus = generate_corpus(size, args.seed)
    all_queries = generate_queries(
        corpus, WARMUP_QUERIES + args.queries, args.seed, phrased=args.phrased
    )
    warmup, queries = all_queries[:WARMUP_QUERIES], all_queries[WARMUP_QUERIES:]
    generate_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="lorebot-recall-") as tmp:
        log(f"{label}: lorebot import and {len(queries)} queries")
        lore = asyncio.run(bench_lorebot(corpus, warmup, queries, Path(tmp)))
        lance = None
        if with_lancedb:
            log(f"{label}: LanceDB import and {len(queries)} queries")
            lance = run_lancedb(corpus, warmup, queries, Path(tmp), args.lancedb_timeout)
    overlap = None
    if lance is not None and not lance.error:
        overlap = top_overlap(lore.hit_keys, lance.hit_keys)
    return SizeResult(size, generate_s, lore, lance, overlap, os.getloadavg()[0])


def log(message: str) -> None:
    """Progress on stderr, with the load average: the machine has 2 cores, so a load well
    above what this run uses (~1.3) means another process competed for them."""
    stamp = f"{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f}"
    print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with_lancedb = not args.skip_lancedb
    if with_lancedb and importlib.util.find_spec("lancedb") is None:
        log("lancedb is not installed (pip install -e '.[bench]'); measuring lorebot only")
        with_lancedb = False
    results = [run_size(size, args, with_lancedb) for size in args.sizes]
    python = f"{platform.python_implementation()} {sys.version.split()[0]}"
    print(
        f"\nrecall k={RECALL_K}, {args.queries} queries per size, seed {args.seed}, "
        f"{os.cpu_count()} cores, {python}"
    )
    print_table(results)
    loads = ", ".join(f"{size_label(r.size)} {r.load:.2f}" for r in results)
    print(f"1-minute load average after each size (2 cores; ~1.3 is this run alone): {loads}")
    if args.json is not None:
        write_json(args.json, args, results)
        log(f"wrote {args.json}")
    if not args.phrased:
        record_figures(results)
    return 0


def record_figures(results: Sequence[SizeResult]) -> None:
    """Each size's p50, and at 100k LanceDB's ratio, into RESULTS.md's current table.
    (exact@10 is left out: its reference ranks every word of a query, while note search
    leaves common English words out, so it stays below 100% without any shortcut.)"""
    for r in results:
        label = size_label(r.size)
        what = f"note search p50 at {label} notes"
        if r.size in TARGET_P50_MS:
            what += f" (target: under {TARGET_P50_MS[r.size]:g} ms)"
        record(f"recall.p50.{label}", what, f"{r.lorebot.p50_ms:.2f} ms")
        if r.size == 100_000 and r.lancedb is not None and not r.lancedb.error:
            what = "note search p50 at 100k notes, lorebot / LanceDB's full-text search"
            record("recall.lancedb.100k", what, f"{r.lorebot.p50_ms / r.lancedb.p50_ms:.2f}×")


if __name__ == "__main__":
    sys.exit(main())
