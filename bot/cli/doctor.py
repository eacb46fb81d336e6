"""`lorebot doctor`: check configuration, database, model, platforms and skills, with fixes."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from adapters.diagnosis import Finding
from bot.cli.common import print_json
from bot.cli.doctor_replicas import fetch_replicas, replica_checks, replicas_json
from memory.clock import utc_now

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.daemon.platforms import Platform
    from bot.storage import PostgresEngine

Check = Finding


def line(check: Check) -> str:
    mark = "✓" if check.ok else "✗"
    fix = f"\n    fix: {check.fix}" if not check.ok and check.fix else ""
    return f"{mark} {check.name}: {check.detail}{fix}"


def add_parser(commands: Any) -> None:
    p = commands.add_parser("doctor", help="check that everything lorebot needs works")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON object: ok, passed, total, checks (each name, ok, detail, fix; "
        "fix is null when there is none); the exit code is the same",
    )
    p.set_defaults(command=cmd_doctor)


def _plain(text: str) -> str:
    """Check texts quote commands in backticks for people; JSON carries the bare text."""
    return text.replace("`", "")


def _check_json(check: Check) -> dict[str, Any]:
    return {
        "name": check.name,
        "ok": check.ok,
        "detail": _plain(check.detail),
        "fix": _plain(check.fix) if check.fix else None,
    }


def print_json_report(checks: list[Check], **more: Any) -> None:
    """The checks as `doctor --json` prints them, one object for the whole run, with the
    `more` fields after them."""
    passed = sum(c.ok for c in checks)
    print_json({
        "ok": passed == len(checks),
        "passed": passed,
        "total": len(checks),
        "checks": [_check_json(c) for c in checks],
        **more,
    })  # fmt: skip


async def check_database(settings: Settings) -> list[Check]:
    from bot.storage import PostgresEngine, engine_for, known_schema, open_database
    from memory import StoreError

    engine = engine_for(settings)
    if isinstance(engine, PostgresEngine):
        return await check_postgresql(engine)
    path = settings.database.path
    # Doctor only reads: without a database it checks the driver on a throwaway one.
    exists = path.exists()
    try:
        db = await open_database(path if exists else ":memory:", create=False)
    except StoreError as exc:
        return [
            Check(False, "database", str(exc), "point LOREBOT_DATABASE__PATH at a lorebot database")
        ]
    try:
        health = await db.fetch_health()
    finally:
        await db.close()
    integrity, version, notes = health.integrity, health.schema, health.notes
    if not exists:
        detail = (f"none yet at {path} (`lorebot chat` or `lorebot run` starts it; "
                  "LOREBOT_DATABASE__PATH names another); FTS5 works")  # fmt: skip
        return [Check(True, "database", detail)]
    if integrity != "ok":
        return [Check(False, "database", f"{path}: integrity check says {integrity}",
                      "restore a backup with `lorebot restore SRC`")]  # fmt: skip
    return [Check(True, "database", f"{path}: integrity ok, schema {version}/{known_schema()}, "
                  f"FTS5 works, {notes} notes")]  # fmt: skip


async def check_postgresql(engine: PostgresEngine) -> list[Check]:
    """The PostgreSQL server: its version, lorebot's schema, the notes, the extensions."""
    from bot.storage import known_schema
    from memory import StoreError

    where = engine.label
    try:
        db = await engine.open_database(create=False)
    except StoreError as exc:
        fix = "check LOREBOT_DATABASE__URL, and that the server runs and lets lorebot in"
        if "there is no lorebot database" in str(exc):
            fix = "`lorebot run` or `lorebot chat` creates lorebot's tables in it"
        return [Check(False, "database", str(exc), fix)]
    try:
        health = await db.fetch_health()
        server = db.engine
        extensions = dict(getattr(db, "extensions", {}))
    finally:
        await db.close()
    listed = ", ".join(f"{name} {version}" for name, version in sorted(extensions.items()))
    checks = [Check(True, "database", f"{server} at {where}: schema "
                    f"{health.schema}/{known_schema()}, full-text works, {health.notes} notes; "
                    f"extensions: {listed or 'none'}")]  # fmt: skip
    if "vector" not in extensions:
        checks.append(Check(True, "pgvector", "not installed on this server: recall is by "
                            "words alone (install pgvector and lorebot enables it at the "
                            "next start)"))  # fmt: skip
    return checks


async def check_model(settings: Settings) -> list[Check]:
    """The model probed as the daemon probes it, within the backend's probe timeout: one
    check named `model` whether it passes or not, saying where its context length came
    from; on an OpenAI-compatible server, also how it takes structured output."""
    from bot.model.client import chat_client
    from bot.model.errors import ModelUnavailable
    from bot.model.response_formats import ResponseFormats

    server = settings.model_server
    client = chat_client(server, ResponseFormats.beside(settings.database.path))
    try:
        info = await client.fetch_model_info(server.model)
    except ModelUnavailable as exc:
        return [Check(False, "model", str(exc), exc.fix)]
    finally:
        await client.close()
    checks = [Check(True, "model", f"{server.model} at {server.url}, context "
                    f"{info.context_length} tokens ({info.context_from}), thinking "
                    f"{'yes' if info.supports_thinking else 'no'}")]  # fmt: skip
    if server.backend == "openai":
        learnt = info.structured_output or (
            "not tried yet on this server (the first structured answer, such as a drafted "
            "note, finds out and keeps it)"
        )
        checks.append(Check(True, "structured output", learnt))
    if not info.supports_tools:
        checks.append(Check(False, "model tools", f"{server.model} does not support tools",
                            "pick a model with tool support (e.g. qwen3:8b); without it lorebot "
                            "answers with recall only"))  # fmt: skip
    return checks


async def check_vectors(settings: Settings) -> list[Check]:
    """The SQLite driver, and with an embedding model set: the model against the stored
    vectors, and how many notes and messages wait for theirs."""
    from bot.storage import engine_name, open_memory
    from memory import StoreError
    from memory.errors import EmbeddingMismatch

    server = settings.model_server
    if not server.embed_model:
        return [Check(True, "vectors", f"off (no {server.backend}.embed_model); {engine_name()}")]
    if not _database_exists(settings):
        return [Check(True, "vectors", f"{server.embed_model}; no database yet")]
    try:
        memory = await open_memory(settings, create=False)
    except EmbeddingMismatch as exc:
        fix = f"lorebot notes reembed, or set {server.backend}.embed_model back"
        return [Check(False, "vectors", str(exc).split(". ")[0], fix)]
    except StoreError as exc:
        return [Check(False, "vectors", str(exc), "pip install sqlite-vec pysqlite3-binary")]
    try:
        state, waiting = memory.vectors.state, await memory.vectors.pending()
        unavailable: str | None = getattr(memory.vectors, "unavailable", None)
    finally:
        await memory.close()
    if unavailable is not None:
        return [Check(False, "vectors", f"{server.embed_model} is set, but {unavailable}",
                      "install pgvector on the PostgreSQL server, or unset "
                      f"{server.backend}.embed_model")]  # fmt: skip
    if state is None:
        fix = (f"ollama pull {server.embed_model}" if server.backend == "ollama"
               else f"serve {server.embed_model} at {server.url}")  # fmt: skip
        return [Check(False, "vectors", f"{server.embed_model} did not answer at "
                      f"{server.url}; {waiting} notes and messages wait", fix)]  # fmt: skip
    return [Check(True, "vectors", f"{state.describe()} with {engine_name()}; "
                  f"{waiting} notes and messages wait for a vector")]  # fmt: skip


async def check_slips(settings: Settings) -> list[Check]:
    """How often the model slipped in the last day (empty answers, repeated calls, …): a
    count, not a failure; many say the model is too small for the job."""
    from datetime import timedelta

    from bot.core.slips import KINDS
    from bot.storage import open_memory
    from memory import StoreError
    from memory.clock import utc_now

    if not _database_exists(settings):
        return [Check(True, "model slips", "none yet (no database)")]
    try:
        memory = await open_memory(settings, create=False, prepare=False)
    except StoreError as exc:
        return [Check(False, "model slips", str(exc))]
    try:
        counts = await memory.slips.fetch_counts_since(utc_now() - timedelta(days=1))
    finally:
        await memory.close()
    if not counts:
        return [Check(True, "model slips", "none in the last day")]
    known = [kind for kind in KINDS if kind in counts] + sorted(set(counts) - set(KINDS))
    listed = ", ".join(f"{kind} {counts[kind]}" for kind in known)
    return [Check(True, "model slips", f"in the last day: {listed} (a larger model slips "
                  "less; `lorebot_model_slips_total` counts them live)")]  # fmt: skip


def _database_exists(settings: Settings) -> bool:
    """Whether there is a database to look into (on PostgreSQL, opening it tells)."""
    from bot.storage import engine_for

    return engine_for(settings).may_exist()


async def check_skills(settings: Settings) -> list[Check]:
    from bot.context.skills import build_catalog

    catalog = build_catalog(settings.skills)
    skills, skipped = catalog.all(), catalog.skipped
    checks = [Check(True, "skills", f"{len(skills)} skills loaded"), _check_scripts(settings)]
    for item in skipped:
        checks.append(Check(False, "skill", f"{item.path} skipped: {item.reason}",
                            f"lorebot skills validate {item.path.parent}"))  # fmt: skip
    for skill in skills:
        for path in skill.shadows:
            checks.append(Check(True, "skill", f"{skill.name} from {skill.path} shadows {path}"))
    return checks


def _check_scripts(settings: Settings) -> Check:
    """Whether skill scripts can run as `skills.scripts` says: the sandbox tried for real
    (in a container, its runtime decides whether bubblewrap may make namespaces)."""
    from bot.actions.sandbox import script_sandbox_problem

    mode = settings.skills.scripts
    problem = script_sandbox_problem(settings)
    if problem is not None:  # its own words end with the fix
        return Check(False, "scripts", problem)
    detail = {"disabled": "disabled (skills.scripts)", "sandboxed": "sandboxed under bubblewrap",
              "host": "run as lorebot's own user, unsandboxed (skills.scripts = host)"}  # fmt: skip
    return Check(True, "scripts", detail[mode])


async def check_mcp(settings: Settings) -> list[Check]:
    """Each MCP server started and asked for its tools, as the daemon would."""
    from bot.actions.mcp import McpServer

    checks = []
    for config in settings.mcp.servers:
        server = McpServer(config, connect_timeout_s=settings.mcp.connect_timeout_s)
        problem = await server.probe()
        where = config.url or " ".join([config.command or "", *config.args]).strip()
        if problem is None:
            names = ", ".join(t.name for t in server.tools)
            detail = f"connected, {len(server.tools)} tools ({names}); trust {config.trust}"
            checks.append(Check(True, f"MCP {config.name}", detail))
            if server.refused:
                refused = ", ".join(repr(name[:80]) for name in server.refused)
                checks.append(Check(False, f"MCP {config.name}",
                                    f"tools not offered, their names are not plain: {refused}",
                                    "a tool name is letters, digits, _, . and -, at most 64; "
                                    "ask the server's maintainers to rename them"))  # fmt: skip
        else:
            checks.append(Check(False, f"MCP {config.name}", f"{where}: {problem}",
                                f"run `{where}` by hand to see why, or fix [[mcp.servers]] "
                                f"name = {config.name!r}"))  # fmt: skip
    return checks


async def check_platforms(
    settings: Settings, platforms: Sequence[Platform[Any]] | None = None
) -> list[Check]:
    """Each configured platform's credentials tried against it, or one line saying none is;
    `platforms` defaults to the table of `bot.daemon.platforms`."""
    from bot.daemon.platforms import PLATFORMS, configured

    on = configured(settings, PLATFORMS if platforms is None else platforms)
    if not on:
        return [Check(True, "platforms", "none configured (`lorebot chat` still works)")]
    checks: list[Check] = []
    for platform in on:
        checks += await platform.check(settings)
    return checks


async def cmd_doctor(
    args: argparse.Namespace, settings: Settings, platforms: Sequence[Platform[Any]] | None = None
) -> int:
    source = f"from {settings.config}" if settings.config else "from the environment and defaults"
    results = [Check(True, "config", f"loaded {source}")]
    checks = (check_database, check_model, check_vectors, check_slips, check_skills, check_mcp)
    for check in checks:
        results += await check(settings)
    results += await check_platforms(settings, platforms)
    replicas, now = await fetch_replicas(settings), utc_now()
    results += replica_checks(replicas, now)
    failed = sum(not r.ok for r in results)
    if args.json:
        print_json_report(results, replicas=replicas_json(replicas, now))
        return 1 if failed else 0
    for result in results:
        print(line(result))
    print(f"{len(results) - failed} of {len(results)} checks passed")
    return 1 if failed else 0
