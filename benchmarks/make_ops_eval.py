"""Write the ops-chat evaluation set in `benchmarks/data/ops_eval/`, deterministically.

Six team channels of a fictional company, each a long conversation between four named
people over nine months: deploys, incidents, on-call handovers, decisions, migrations,
time off and small talk, one thread per day's session. Questions are asked about them
afterwards, each with the ids of the turns that answer it, in four kinds:

- single: a fact said once ("which port is the ledger-api admin endpoint on?")
- multi: facts from two or more turns combined ("who was on call for X, and which
  ticket tracks its postmortem?")
- temporal: when something happened ("when did ledger-api 4.2.1 reach prod?")
- paraphrase: worded so it shares at most one content word with its evidence

It is made to be hard: every service is deployed and breaks many times, the same causes
and tools come back in other channels, first names are reused across teams, answers are
often a short reply whose subject is in the message before, and a tenth of the turns are
acknowledgements. Conversations c1-c3 are the first half (tune on it), c4-c6 the second
(report on it).

    python benchmarks/make_ops_eval.py        # rewrites turns.jsonl and questions.jsonl
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

SEED = 15
OUT = Path(__file__).resolve().parent / "data" / "ops_eval"
TEAM = "T0ACME"
QUESTIONS_PER_KIND = 20  # per conversation
DAYS = 190  # working days of each conversation, about nine months
KINDS = ("single", "multi", "temporal", "paraphrase")
PARAPHRASE_MAX_SHARED = 1


@dataclass(frozen=True)
class Person:
    first: str
    last: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"

    @property
    def user_id(self) -> str:
        return f"user:slack/U0{self.first.upper()}{self.last[:3].upper()}"


@dataclass(frozen=True)
class Service:
    name: str
    descs: tuple[str, ...]  # wordings that share no word with the name
    version: tuple[int, int]


@dataclass
class Team:
    key: str
    channel: str
    channel_id: str
    half: str
    people: list[Person]
    services: list[Service]
    start: date


P = Person
TEAMS = [
    Team(
        "c1",
        "payments-oncall",
        "C0PAYOPS",
        "dev",
        [P("Priya", "Nair"), P("Marco", "Bianchi"), P("Sam", "Rivera"), P("Lena", "Hoffmann")],
        [
            Service("ledger-api", ("the bookkeeping backend", "our accounting service"), (4, 1)),
            Service(
                "payout-worker",
                ("the job that sends merchants their money", "the settlement sender"),
                (2, 7),
            ),
            Service(
                "checkout-gw",
                ("the front door for card payments", "the purchase entry point"),
                (7, 3),
            ),
            Service(
                "fraud-scorer",
                ("the risk model that flags bad transactions", "the scam detector"),
                (1, 12),
            ),
            Service(
                "refund-svc", ("the money-back service", "the thing that reverses charges"), (3, 0)
            ),
        ],
        date(2026, 1, 5),
    ),
    Team(
        "c2",
        "platform-infra",
        "C0PLATFORM",
        "dev",
        [P("Sam", "Okafor"), P("Aisha", "Khan"), P("Tom", "Becker"), P("Priya", "Shah")],
        [
            Service(
                "ingress-nginx",
                ("the edge proxy in the clusters", "the HTTP router at the cluster boundary"),
                (1, 9),
            ),
            Service(
                "argocd",
                ("the GitOps sync tool", "the thing that applies manifests from git"),
                (2, 10),
            ),
            Service("vault", ("the secrets store", "where credentials are kept"), (1, 15)),
            Service(
                "cert-manager", ("the TLS certificate robot", "what renews certificates"), (1, 14)
            ),
            Service("coredns", ("cluster name resolution", "in-cluster DNS"), (1, 11)),
        ],
        date(2026, 2, 2),
    ),
    Team(
        "c3",
        "search-team",
        "C0SEARCH",
        "dev",
        [P("Marco", "Rossi"), P("Yuki", "Tanaka"), P("Dev", "Patel"), P("Lena", "Park")],
        [
            Service("query-api", ("the service answering searches", "the lookup endpoint"), (5, 2)),
            Service(
                "indexer",
                ("the document ingestion job", "what feeds documents into the cluster"),
                (3, 8),
            ),
            Service("ranker", ("the relevance model", "the ordering model for results"), (2, 4)),
            Service("opensearch", ("the search cluster", "our Elastic fork nodes"), (2, 13)),
            Service("synonyms-svc", ("the thesaurus service", "the word-expansion lookup"), (1, 3)),
        ],
        date(2026, 3, 2),
    ),
    Team(
        "c4",
        "data-pipeline",
        "C0DATA",
        "test",
        [P("Aisha", "Rahman"), P("Tom", "Nguyen"), P("Chen", "Wei"), P("Sara", "Lopez")],
        [
            Service("airflow", ("the DAG scheduler", "the workflow orchestrator"), (2, 9)),
            Service("spark-etl", ("the nightly batch transforms", "the big batch jobs"), (3, 5)),
            Service("kafka-connect", ("the CDC connectors", "the change-capture bridge"), (7, 6)),
            Service(
                "clickhouse",
                ("the analytics warehouse", "the columnar store for reporting"),
                (24, 3),
            ),
            Service("dbt-runner", ("the SQL models build", "the warehouse model compiler"), (1, 8)),
        ],
        date(2026, 1, 12),
    ),
    Team(
        "c5",
        "mobile-backend",
        "C0MOBILE",
        "test",
        [P("Dev", "Sharma"), P("Yuki", "Sato"), P("Omar", "Farouk"), P("Marco", "Bianchi")],
        [
            Service("push-svc", ("the notification sender", "what pings people's phones"), (3, 3)),
            Service(
                "api-gateway", ("the app's front door", "the entry point for app traffic"), (6, 1)
            ),
            Service("auth-svc", ("the login service", "sign-in and tokens"), (4, 4)),
            Service(
                "feature-flags", ("the toggle service", "runtime switches for the app"), (2, 2)
            ),
            Service("media-resizer", ("the image thumbnail job", "the photo shrinker"), (1, 6)),
        ],
        date(2026, 2, 9),
    ),
    Team(
        "c6",
        "sre-core",
        "C0SRE",
        "test",
        [P("Sara", "Ivanova"), P("Chen", "Li"), P("Priya", "Nair"), P("Omar", "Haddad")],
        [
            Service("prometheus", ("the metrics scraper", "the time-series collector"), (2, 51)),
            Service(
                "alertmanager", ("the paging router", "what decides who gets woken up"), (0, 27)
            ),
            Service("grafana", ("the dashboards", "the charts site"), (11, 2)),
            Service("loki", ("the log store", "where container output is kept"), (3, 1)),
            Service("thanos", ("long-term metric storage", "the metrics archive"), (0, 35)),
        ],
        date(2026, 3, 9),
    ),
]

ENVS = (("prod", "production"), ("staging", "pre-production"), ("canary", "the canary pool"))
COMPONENTS = (
    ("admin endpoint", "management interface"),
    ("metrics port", "stats scraping socket"),
    ("grpc listener", "RPC socket"),
    ("health check", "liveness probe"),
    ("debug server", "profiling hook"),
)
SYMPTOMS = (
    ("p99 latency above 2s", "responses got really sluggish"),
    ("5xx rate at 8%", "it kept throwing server errors"),
    ("pods OOMKilled in a loop", "containers kept running out of RAM"),
    ("disk at 95% on the data volume", "storage nearly filled up"),
    ("consumer lag over 200k", "the backlog of unprocessed events kept growing"),
    ("TLS handshake failures", "clients could not establish secure sessions"),
    ("crashloop after start", "it kept restarting right after boot"),
    ("connection timeouts to postgres", "it could not reach its database in time"),
)
CAUSES = (  # (what was wrong, a wording sharing no word with it, plausible symptoms)
    (
        "pgbouncer pool_size was left at 20 after the upgrade",
        "a connection limit someone forgot to raise",
        (0, 1, 7),
    ),
    (
        "a missing index on payments.created_at made the nightly query scan everything",
        "a table lookup without a proper key did a full read",
        (0, 7),
    ),
    (
        "the JVM heap was capped at 512m by an old values file",
        "a memory ceiling from stale config",
        (2, 6),
    ),
    (
        "log rotation was disabled so /var/log filled up",
        "nobody was trimming old output files",
        (3, 6),
    ),
    (
        "a retry storm from the mobile clients after the token change",
        "phones hammering us again and again after a credential tweak",
        (0, 1),
    ),
    (
        "an expired intermediate certificate in the bundle",
        "a chain file with an out-of-date link",
        (5,),
    ),
    (
        "a bad feature flag turned on the new serializer for everyone",
        "a toggle flipped for all users by mistake",
        (1, 6),
    ),
    (
        "the node pool autoscaler hit the max of 40 nodes",
        "cluster growth ran into its ceiling",
        (0, 1),
    ),
    (
        "a DNS TTL of 24h kept traffic on the old load balancer",
        "name caching kept sending people to retired machines",
        (1, 5),
    ),
    (
        "kafka partition rebalance loop caused by a 10s session timeout",
        "consumers kept reshuffling because a heartbeat setting was too tight",
        (4,),
    ),
    (
        "a cron job doing VACUUM FULL during peak hours",
        "maintenance locking tables at the busiest time",
        (0, 7),
    ),
    (
        "the redis maxmemory policy was noeviction",
        "the cache refused writes instead of dropping old keys",
        (0, 1),
    ),
)
FIXES = (
    "bumped the pool to 200 and restarted",
    "added the index concurrently",
    "raised the limit and redeployed",
    "turned rotation back on and cleared old files",
    "added jittered backoff in the client and a rate limit",
    "replaced the bundle and reloaded",
    "flipped the flag off",
    "raised the max to 60 nodes",
    "dropped the TTL to 60s and waited it out",
    "set session.timeout.ms to 45s",
    "moved the job to 03:00",
    "switched to allkeys-lru",
)
DECISIONS = (
    (
        "feature flags",
        "switching features on and off at runtime",
        ("LaunchDarkly", "Unleash"),
        "we can self-host it and there is no per-seat price",
    ),
    (
        "the secrets backend",
        "keeping credentials safe",
        ("Vault", "AWS Secrets Manager"),
        "it works the same in every cloud we run in",
    ),
    (
        "log shipping",
        "moving container output to storage",
        ("Fluent Bit", "Vector"),
        "it uses a fifth of the memory in our tests",
    ),
    (
        "the CI runner",
        "building and testing every commit",
        ("GitHub Actions", "Buildkite"),
        "our own machines keep the caches warm",
    ),
    (
        "the status page",
        "telling customers about outages",
        ("Statuspage", "Instatus"),
        "the cheaper plan covers our subscriber count",
    ),
    (
        "load testing",
        "simulating heavy traffic before launches",
        ("k6", "Locust"),
        "scripts in JavaScript are what the devs already write",
    ),
    (
        "the on-call tool",
        "waking the right person at night",
        ("PagerDuty", "Opsgenie"),
        "the escalation policies import from what we have",
    ),
    (
        "schema migrations",
        "changing table structure safely",
        ("Flyway", "Atlas"),
        "it can lint a migration before it runs",
    ),
    (
        "the service mesh",
        "encrypting traffic between pods",
        ("Linkerd", "Istio"),
        "it is far simpler to operate",
    ),
    (
        "the object storage",
        "keeping large files and backups",
        ("S3", "MinIO"),
        "nobody wants to run storage nodes",
    ),
    (
        "the queue",
        "passing background jobs between workers",
        ("SQS", "RabbitMQ"),
        "there are no brokers to patch",
    ),
    (
        "error tracking",
        "collecting exceptions from apps",
        ("Sentry", "Rollbar"),
        "source maps for the mobile apps just work",
    ),
)
PLACES = (
    "Lisbon",
    "Kyoto",
    "Oaxaca",
    "Tromsø",
    "Marrakesh",
    "Hanoi",
    "Porto",
    "Cusco",
    "Tbilisi",
    "Valparaíso",
    "Zanzibar",
    "Reykjavik",
)
TOOLS = ("terraform", "helm", "kubectl", "ansible", "k9s", "pgbadger", "tcpdump", "stern")
ACKS = (
    "ok",
    "👍",
    "ack",
    "thx!",
    "on it",
    "nice",
    "lgtm",
    "ty",
    "cool",
    "kk",
    "+1",
    "sounds good",
    "🙏",
    "ok thanks",
    "got it",
)
SMALL_TALK = (
    ("anyone up for lunch at the ramen place?", "yes! 12:30?", "count me in"),
    (
        "coffee machine on the 3rd floor is broken again",
        "there's a kettle in the kitchen",
        "ugh, tea it is",
    ),
    ("happy friday folks 🎉", "have a good weekend", "🎉"),
    ("standup moved to 10:15 today", "ok", "👍"),
    ("who took my HDMI adapter from room B", "not me", "check the drawer"),
    ("reminder: fill in the quarterly survey", "done", "will do after lunch"),
    ("the wifi in the big meeting room keeps dropping", "IT knows, ticket is open", "ugh"),
    ("cake in the kitchen, it's my birthday 🎂", "happy birthday!", "🎂🎂"),
)


@dataclass
class Turn:
    id: str
    conversation: str
    session: str
    thread: str
    channel: str
    author: Person
    at: datetime
    text: str


@dataclass
class Question:
    id: str
    conversation: str
    kind: str
    question: str
    evidence: list[str]


@dataclass
class Builder:
    team: Team
    rng: random.Random
    turns: list[Turn] = field(default_factory=list)
    candidates: dict[str, list[tuple[str, list[str]]]] = field(default_factory=dict)
    versions: dict[str, list[int]] = field(default_factory=dict)
    session_no: int = 0
    day: date = date(2026, 1, 1)
    on_call: Person | None = None

    # --- turns ----------------------------------------------------------------------

    def session(self, lines: list[tuple[Person, str]]) -> list[str]:
        """Append one thread of `lines` on the current day; returns the turn ids."""
        self.session_no += 1
        start = datetime.combine(self.day, datetime.min.time(), UTC) + timedelta(
            hours=self.rng.randint(8, 17), minutes=self.rng.randint(0, 59)
        )
        thread = f"{int(start.timestamp())}.{self.session_no:06d}"
        ids, at = [], start
        for author, text in lines:
            number = len(self.turns) + 1
            turn_id = f"{self.team.key}-{number:04d}"
            session = f"{self.team.key}-s{self.session_no:03d}"
            self.turns.append(
                Turn(turn_id, self.team.key, session, thread, self.team.channel, author, at, text)
            )
            ids.append(turn_id)
            at += timedelta(minutes=self.rng.randint(1, 9), seconds=self.rng.randint(0, 59))
        return ids

    def ask(self, kind: str, text: str, evidence: list[str]) -> None:
        self.candidates.setdefault(kind, []).append((text, evidence))

    def others(self, *taken: Person) -> list[Person]:
        return [p for p in self.team.people if p not in taken]

    def pick(self, *taken: Person) -> Person:
        return self.rng.choice(self.others(*taken))

    def ack(self, *taken: Person) -> tuple[Person, str]:
        return self.pick(*taken), self.rng.choice(ACKS)

    def next_version(self, svc: Service) -> str:
        parts = self.versions.setdefault(svc.name, [*svc.version, 0])
        roll = self.rng.random()
        if roll < 0.15:
            parts[:] = [parts[0], parts[1] + 1, 0]
        else:
            parts[2] += 1
        return ".".join(map(str, parts))

    def trouble(self) -> tuple[tuple[str, str], tuple[str, str], str]:
        """A symptom, a cause that can produce it, and the fix of that cause."""
        number = self.rng.randrange(len(CAUSES))
        cause, cause_desc, symptoms = CAUSES[number]
        return SYMPTOMS[self.rng.choice(symptoms)], (cause, cause_desc), FIXES[number]

    # --- sessions -------------------------------------------------------------------

    def deploy(self) -> None:
        svc = self.rng.choice(self.team.services)
        ver = self.next_version(svc)
        env, _ = self.rng.choice(ENVS[:2]) if self.rng.random() < 0.8 else ENVS[2]
        who = self.pick()
        failed = self.rng.random() < 0.3
        lines = [
            (
                who,
                self.rng.choice(
                    (
                        f"deploying {svc.name} {ver} to {env} now",
                        f"shipping {svc.name} {ver} to {env}, shout if anything looks off",
                        f"{svc.name} {ver} going out to {env}",
                    )
                ),
            ),
            self.ack(who),
            (who, f"canary at {self.rng.choice((5, 10, 25))}%, error rate flat so far"),
        ]
        if not failed:
            done = ("fully rolled out ✅", "100% now, all green", "done, dashboards look normal")
            lines.append((who, self.rng.choice(done)))
            ids = self.session(lines)
            self.ask("temporal", f"when did {svc.name} {ver} go out to {env}?", [ids[0], ids[3]])
            self.ask("single", f"who deployed {svc.name} {ver}?", [ids[0]])
            return
        watcher = self.pick(who)
        (symptom, _), (cause, cause_desc), _fix = self.trouble()
        lines += [
            (watcher, f"seeing {symptom} since the rollout"),
            (who, "rolling back"),
            (who, f"rolled back. looks like {cause}"),
            self.ack(who),
        ]
        ids = self.session(lines)
        self.ask("single", f"why was {svc.name} {ver} rolled back?", [ids[5]])
        self.ask("temporal", f"when did we roll back {svc.name} {ver}?", [ids[4], ids[5]])
        self.ask(
            "multi",
            f"who noticed the problem with {svc.name} {ver} and what broke?",
            [ids[3], ids[5]],
        )
        desc = self.rng.choice(svc.descs)
        self.ask(
            "paraphrase",
            f"a release of {desc} had to be undone, was it because of {cause_desc}?",
            [ids[5]],
        )

    def incident(self) -> None:
        svc = self.rng.choice(self.team.services)
        (symptom, symptom_desc), (cause, cause_desc), fix = self.trouble()
        oncall = self.on_call or self.pick()
        helper = self.pick(oncall)
        owner = self.pick()
        ticket = f"INC-{self.rng.randint(1000, 9999)}"
        red_herring = self.rng.choice([c[0] for c in CAUSES if c[0] != cause])
        lines = [
            (
                oncall,
                self.rng.choice(
                    (
                        f"paged: {svc.name} {symptom}",
                        f"🔥 {svc.name} alerting, {symptom}",
                        f"getting paged for {svc.name}: {symptom}",
                    )
                ),
            ),
            (oncall, "ack, looking"),
            (helper, f"could it be {red_herring}?"),
            (oncall, "checked, that's fine"),
            (helper, self.rng.choice(("anything in the logs?", "graphs?", "need a hand?"))),
            (oncall, f"found it: {cause}"),
            (oncall, f"{fix}. recovering"),
            (helper, "back to normal on my side"),
            (owner, f"opened {ticket} for the postmortem, I'll write it up"),
            self.ack(owner),
        ]
        ids = self.session(lines)
        desc = self.rng.choice(svc.descs)
        self.ask(
            "single", f"what was the root cause of the {svc.name} {symptom} incident?", [ids[5]]
        )
        self.ask(
            "single", f"which ticket tracks the {svc.name} postmortem about {symptom}?", [ids[8]]
        )
        self.ask(
            "multi",
            f"who was on call when {svc.name} had {symptom}, and who owns the postmortem?",
            [ids[0], ids[8]],
        )
        self.ask(
            "multi", f"what caused the {svc.name} {symptom} and how was it fixed?", [ids[5], ids[6]]
        )
        self.ask("temporal", f"when did {svc.name} have {symptom}?", [ids[0]])
        self.ask(
            "paraphrase", f"that time {desc} — {symptom_desc} — what was the reason?", [ids[5]]
        )
        self.ask("paraphrase", f"remind me why {desc} broke: was it {cause_desc}?", [ids[5]])

    def port_fact(self) -> None:
        svc = self.rng.choice(self.team.services)
        (component, component_desc) = self.rng.choice(COMPONENTS)
        port = self.rng.choice((8443, 9090, 9443, 8081, 7000, 6060, 9100, 8500, 4317, 10250))
        old = port + self.rng.choice((1, 2, 10, 100))
        asker, answerer = self.pick(), None
        answerer = self.pick(asker)
        lines = [
            (asker, f"what port is the {svc.name} {component} on again?"),
            (
                answerer,
                self.rng.choice(
                    (f"{port}", f"{port} since the last upgrade", f"it's {port}, was {old} before")
                ),
            ),
            (asker, "thanks"),
        ]
        ids = self.session(lines)
        desc = self.rng.choice(svc.descs)
        self.ask("single", f"which port does the {svc.name} {component} listen on?", [ids[1]])
        self.ask(
            "paraphrase",
            f"what number do I connect to for the {component_desc} of {desc}?",
            [ids[1]],
        )

    def decision(self) -> None:
        topic, purpose, options, reason = self.rng.choice(DECISIONS)
        choice = self.rng.choice(options)
        other = options[1] if choice == options[0] else options[0]
        lead, pro_a, pro_b = self.rng.sample(self.team.people, 3)
        lines = [
            (lead, f"we need to pick {topic}: {options[0]} or {options[1]}?"),
            (pro_a, f"{other} is what I used at my last job, it was fine"),
            (pro_b, f"I'd go with {choice}, {reason}"),
            self.ack(lead),
            (lead, f"decision: {choice} for {topic}. {pro_b.first} writes the ADR"),
            self.ack(lead, pro_b),
        ]
        ids = self.session(lines)
        self.ask("single", f"what did we choose for {topic}?", [ids[4]])
        self.ask("multi", f"who argued for {choice} for {topic}, and why?", [ids[2], ids[4]])
        self.ask("temporal", f"when did we decide on {topic}?", [ids[4]])
        self.ask("paraphrase", f"which product did the team settle on for {purpose}?", [ids[4]])

    def handover(self) -> None:
        previous = self.on_call or self.pick()
        nxt = self.pick(previous)
        svc = self.rng.choice(self.team.services)
        tool = self.rng.choice(TOOLS)
        lines = [
            (
                previous,
                f"handing on-call to {nxt.first}. open: {svc.name} flapping alert, "
                f"and the {tool} upgrade is half done",
            ),
            (nxt, f"ack, I have the pager. thanks {previous.first}"),
        ]
        ids = self.session(lines)
        self.on_call = nxt
        self.ask(
            "temporal",
            f"when did {nxt.first} take over on-call from {previous.first}?",
            [ids[0], ids[1]],
        )
        self.ask(
            "single",
            f"what was still open when {previous.first} handed over on-call to {nxt.first}?",
            [ids[0]],
        )

    def time_off(self) -> None:
        away = self.pick()
        cover = self.pick(away)
        place = self.rng.choice(PLACES)
        days = self.rng.randint(4, 12)
        lines = [
            (away, f"heads up: I'm out for {days} days from next monday, {place} 🌞"),
            (cover, f"I'll take {away.first}'s reviews and pager while they're away"),
            self.ack(away),
        ]
        ids = self.session(lines)
        self.ask(
            "multi", f"where did {away.first} go on holiday and who covered?", [ids[0], ids[1]]
        )
        self.ask(
            "paraphrase", f"who stood in for {away.first} during the trip to {place}?", [ids[1]]
        )
        self.ask("temporal", f"when did {away.first} announce the {place} trip?", [ids[0]])

    def cost(self) -> None:
        svc = self.rng.choice(self.team.services)
        pct = self.rng.randint(18, 90)
        month = self.day.strftime("%B")
        culprit = self.rng.choice(
            (
                "cross-AZ traffic",
                "unused EBS snapshots",
                "debug logging left on",
                "oversized nodes",
                "a forgotten GPU instance",
            )
        )
        who, finder = self.pick(), None
        finder = self.pick(who)
        lines = [
            (who, f"the {svc.name} bill went up {pct}% in {month}, any idea why?"),
            (finder, f"it's {culprit}, I'll clean it up this week"),
            self.ack(who),
        ]
        ids = self.session(lines)
        self.ask("single", f"why did {svc.name} cost more in {month}?", [ids[1]])
        self.ask(
            "multi",
            f"by how much did the {svc.name} bill grow, and what caused it?",
            [ids[0], ids[1]],
        )

    def migration(self, svc: Service, stage: int, state: dict[str, str]) -> None:
        if stage == 0:
            moves = (
                ("postgres 13", "postgres 16"),
                ("EC2", "EKS"),
                ("redis 6", "valkey 8"),
                ("mysql 5.7", "aurora mysql 3"),
                ("Jenkins", "GitHub Actions"),
            )
            old, new = self.rng.choice(moves)
            lead = self.pick()
            state.update(old=old, new=new, lead=lead.first)
            lines = [
                (
                    lead,
                    f"kickoff: moving {svc.name} from {old} to {new}, target is end of "
                    f"{(self.day + timedelta(days=45)).strftime('%B')}",
                ),
                self.ack(lead),
            ]
            ids = self.session(lines)
            state["kickoff"] = ids[0]
        elif stage == 1:
            blocker = self.rng.choice(
                (
                    "the replication slot keeps falling behind",
                    "a driver that doesn't support SCRAM auth",
                    "IAM roles for the new nodes are missing",
                    "a schema drift between prod and staging",
                )
            )
            lines = [
                (self.pick(), f"{svc.name} migration is blocked: {blocker}"),
                (self.pick(), "ugh. I can pair on it tomorrow"),
            ]
            ids = self.session(lines)
            state["blocker"] = ids[0]
        else:
            lines = [
                (self.pick(), f"{svc.name} cutover done ✅ running on {state['new']} now"),
                (self.pick(), "🎉 great work"),
            ]
            ids = self.session(lines)
            self.ask(
                "temporal", f"when was the {svc.name} move to {state['new']} finished?", [ids[0]]
            )
            self.ask(
                "multi",
                f"what blocked the {svc.name} migration and when did it finish?",
                [state["blocker"], ids[0]],
            )
            self.ask(
                "multi",
                f"who started the {svc.name} move off {state['old']}, and is it done?",
                [state["kickoff"], ids[0]],
            )

    def small_talk(self) -> None:
        lines = self.rng.choice(SMALL_TALK)
        people = self.rng.sample(self.team.people, len(lines))
        self.session(list(zip(people, lines, strict=True)))


def build(team: Team, rng: random.Random) -> Builder:
    """DAYS working days of one team's channel."""
    b = Builder(team, rng)
    b.day = team.start
    migrating = rng.sample(team.services, 2)
    plans = {
        svc.name: (rng.randint(5, 20), rng.randint(6, 20), rng.randint(5, 15)) for svc in migrating
    }
    states: dict[str, dict[str, str]] = {svc.name: {} for svc in migrating}
    steps = [
        *("deploy",) * 12,
        *("incident",) * 6,
        *("port_fact",) * 4,
        *("decision",) * 3,
        *("handover",) * 2,
        "time_off",
        "cost",
        *("small_talk",) * 4,
    ]
    for day_no in range(DAYS):
        b.day = team.start + timedelta(days=day_no + (day_no // 5) * 2)  # weekdays
        for svc in migrating:
            kick, block, done = plans[svc.name]
            if day_no in (kick, kick + block, kick + block + done):
                stage = (kick, kick + block, kick + block + done).index(day_no)
                b.migration(svc, stage, states[svc.name])
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            getattr(b, rng.choice(steps))()
    return b


_CONTENT_STOP_TEXT = """a an and are as at be but by do does for from has have how i in is it
    its me my of on or our so that the their then there these this to us was we what when
    where which who why will with you your did go went after about again any s"""
CONTENT_STOP = frozenset(_CONTENT_STOP_TEXT.split())


def stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"\w+", text.lower()) if w not in CONTENT_STOP}


def choose_questions(b: Builder, rng: random.Random) -> list[Question]:
    """QUESTIONS_PER_KIND of each kind, distinct texts; paraphrases share at most one
    content word with their evidence."""
    by_id = {t.id: t for t in b.turns}
    chosen: list[Question] = []
    for kind in KINDS:
        pool = list(dict((text, evidence) for text, evidence in b.candidates.get(kind, [])).items())
        if kind == "paraphrase":
            pool = [
                (text, ev)
                for text, ev in pool
                if len(stems(text) & set().union(*(stems(by_id[e].text) for e in ev)))
                <= PARAPHRASE_MAX_SHARED
            ]
        rng.shuffle(pool)
        if len(pool) < QUESTIONS_PER_KIND:
            raise SystemExit(f"{b.team.key}: only {len(pool)} {kind} questions")
        for text, evidence in pool[:QUESTIONS_PER_KIND]:
            number = len(chosen) + 1
            chosen.append(Question(f"{b.team.key}-q{number:03d}", b.team.key, kind, text, evidence))
    return chosen


def main() -> None:
    rng = random.Random(SEED)
    OUT.mkdir(parents=True, exist_ok=True)
    turns: list[Turn] = []
    questions: list[Question] = []
    for team in TEAMS:
        b = build(team, rng)
        turns += b.turns
        questions += choose_questions(b, rng)
    with (OUT / "turns.jsonl").open("w", encoding="utf-8") as out:
        for t in turns:
            half = next(team.half for team in TEAMS if team.key == t.conversation)
            row = {
                "id": t.id,
                "conversation": t.conversation,
                "half": half,
                "channel": t.channel,
                "scope": f"channel:slack/{_channel_id(t.channel)}",
                "thread": t.thread,
                "session": t.session,
                "author": t.author.name,
                "author_id": t.author.user_id,
                "at": t.at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "text": t.text,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    with (OUT / "questions.jsonl").open("w", encoding="utf-8") as out:
        for q in questions:
            half = next(team.half for team in TEAMS if team.key == q.conversation)
            row = {
                "id": q.id,
                "conversation": q.conversation,
                "half": half,
                "kind": q.kind,
                "question": q.question,
                "evidence": q.evidence,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(turns)} turns, {len(questions)} questions in {OUT}")


def _channel_id(channel: str) -> str:
    return next(team.channel_id for team in TEAMS if team.channel == channel)


if __name__ == "__main__":
    main()
