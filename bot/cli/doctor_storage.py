"""`lorebot doctor`'s storage checks: the database, SQLite's file or the PostgreSQL server,
the vectors beside its notes and messages, and the model slips it counted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.diagnosis import Finding as Check

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.storage import PostgresEngine


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
        detail = (
            f"none yet at {path} (`lorebot chat` or `lorebot run` starts it; "
            "LOREBOT_DATABASE__PATH names another); FTS5 works"
        )
        return [Check(True, "database", detail)]
    if integrity != "ok":
        return [
            Check(
                False,
                "database",
                f"{path}: integrity check says {integrity}",
                "restore a backup with `lorebot restore SRC`",
            )
        ]
    return [
        Check(
            True,
            "database",
            f"{path}: integrity ok, schema {version}/{known_schema()}, FTS5 works, {notes} notes",
        )
    ]


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
    checks = [
        Check(
            True,
            "database",
            f"{server} at {where}: schema {health.schema}/{known_schema()}, full-text works, "
            f"{health.notes} notes; extensions: {listed or 'none'}",
        )
    ]
    if "vector" not in extensions:
        checks.append(
            Check(
                True,
                "pgvector",
                "not installed on this server: recall is by words alone (install pgvector "
                "and lorebot enables it at the next start)",
            )
        )
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
        return [
            Check(
                False,
                "vectors",
                f"{server.embed_model} is set, but {unavailable}",
                f"install pgvector on the PostgreSQL server, or unset {server.backend}.embed_model",
            )
        ]
    if state is None:
        fix = (
            f"ollama pull {server.embed_model}"
            if server.backend == "ollama"
            else f"serve {server.embed_model} at {server.url}"
        )
        return [
            Check(
                False,
                "vectors",
                f"{server.embed_model} did not answer at {server.url}; "
                f"{waiting} notes and messages wait",
                fix,
            )
        ]
    return [
        Check(
            True,
            "vectors",
            f"{state.describe()} with {engine_name()}; "
            f"{waiting} notes and messages wait for a vector",
        )
    ]


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
    return [
        Check(
            True,
            "model slips",
            f"in the last day: {listed} (a larger model slips less; "
            "`lorebot_model_slips_total` counts them live)",
        )
    ]


async def check_waiting_cards(settings: Settings) -> list[Check]:
    """How many cards have waited over a day for a decision: a count, not a failure; many
    say people do not see them (reminders are `bot.card_reminder_minutes`)."""
    from datetime import timedelta

    from bot.storage import open_memory
    from memory import StoreError
    from memory.clock import utc_now

    if not _database_exists(settings):
        return [Check(True, "waiting cards", "none yet (no database)")]
    try:
        memory = await open_memory(settings, create=False, prepare=False)
    except StoreError as exc:
        return [Check(False, "waiting cards", str(exc))]
    try:
        waiting = await memory.proposals.count_waiting(utc_now() - timedelta(days=1))
    finally:
        await memory.close()
    if not waiting:
        return [Check(True, "waiting cards", "none has waited over a day")]
    return [
        Check(
            True,
            "waiting cards",
            f"{waiting} waited over a day for a decision (`lorebot proposals list` shows "
            "them; they expire after bot.proposal_ttl_hours)",
        )
    ]


def _database_exists(settings: Settings) -> bool:
    """Whether there is a database to look into (on PostgreSQL, opening it tells)."""
    from bot.storage import engine_for

    return engine_for(settings).may_exist()
