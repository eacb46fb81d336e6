"""The one place lorebot picks its storage engine from the settings: `engine_for` gives
PostgreSQL when `database.url` is set, else SQLite at `database.path`, and the daemon and
every command ask that `Engine` (its kind, whether replicas may share it, its name without
a password, its backup advice, its leadership) instead of reading the URL. Every store of
the database is opened the same way for the daemon and the command line (with the
driver's self-test, and the vector index when an embedding model is set), and the
database alone for backups and `doctor`. Only this module of `bot` knows an engine's
package."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bot.config.paths import old_database_hint
from bot.config.snapshot import DatabaseView
from bot.errors import UserError
from memory.clock import Clock, utc_now
from memory.embedder import Embedder
from memory.sqlite.database import SqliteDatabase, inspect_file
from memory.sqlite.driver import driver_name
from memory.sqlite.migrations import SCHEMA_VERSION
from memory.sqlite.stores import open_stores
from memory.stores.database import Database, Health
from memory.stores.leadership import Leadership, SoleLeadership
from memory.stores.stores import StoreOptions, Stores

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.config.snapshot import SettingsSnapshot
    from memory.sqlite.reembed import ReembedResult

    # What opening the memory reads: the settings, or a read-only command's snapshot.
    StoreSettings = Settings | SettingsSnapshot

EMBED_TIMEOUT_S = 30.0

# Whether `open_memory` may start a new database; the command line clears it for the
# commands that act on the database as it is.
_may_create: ContextVar[bool] = ContextVar("may_create_database", default=True)


def embedder_for(settings: StoreSettings) -> Embedder | None:
    """The embedder of the backend's `embed_model` (Ollama's, or an OpenAI-compatible
    server's), or None when none is set."""
    server = settings.model_server
    if not server.embed_model:
        return None
    # Queries wait on embeddings, so they get less time than a chat answer.
    timeout_s = min(server.timeout_s, EMBED_TIMEOUT_S)
    probe_timeout_s = min(server.probe_timeout_s, timeout_s)
    if server.backend == "openai":
        from bot.model.openai_compat import OpenAIEmbedder

        return OpenAIEmbedder(
            server.url,
            server.embed_model,
            api_key=_api_key(settings),
            timeout_s=timeout_s,
            probe_timeout_s=probe_timeout_s,
        )
    from bot.model.ollama import OllamaEmbedder  # the model client, only when configured

    return OllamaEmbedder(
        server.url, server.embed_model, timeout_s=timeout_s, probe_timeout_s=probe_timeout_s
    )


def quick_embedder_for(settings: StoreSettings) -> Embedder | None:
    """The embedder of a one-shot command (`bot.model.quick_embed`): it asks for one query's
    vector without loading a model client. None when no model is set."""
    server = settings.model_server
    if not server.embed_model:
        return None
    from bot.model.quick_embed import QuickEmbedder

    # A one-shot command has not seen the model answer yet: the probe's timeout, as the
    # daemon's embedder gives its first calls.
    timeout_s = min(server.timeout_s, EMBED_TIMEOUT_S, server.probe_timeout_s)
    return QuickEmbedder(
        server.url,
        server.embed_model,
        timeout_s=timeout_s,
        backend=server.backend,
        api_key=_api_key(settings),
    )


def _api_key(settings: StoreSettings) -> str | None:
    """The OpenAI-compatible server's key; a snapshot has none (it is not kept when set)."""
    from bot.config.settings import Settings

    return settings.openai.key() if isinstance(settings, Settings) else None


class SqliteEngine:
    """The SQLite file at `database.path`: one daemon at a time, which its lock file and
    `SoleLeadership` stand for; `lorebot backup` copies it."""

    kind: Final = "sqlite"
    shared: Final = False  # replicas need PostgreSQL

    def __init__(self, path: Path, *, busy_timeout_ms: int) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms

    @property
    def label(self) -> str:
        """Where the memory is, as messages name it."""
        return str(self.path)

    def may_exist(self) -> bool:
        """Whether there may be a database to look into."""
        return self.path.exists()

    def backup_advice(self, target: Path) -> None:
        """None: `lorebot backup` and `restore` handle this engine themselves."""
        return None

    def leadership(self) -> Leadership:
        return SoleLeadership()

    async def open_stores(
        self, options: StoreOptions, *, embedder: Embedder | None, create: bool
    ) -> Stores:
        return await open_stores(
            self.path,
            options,
            embedder=embedder,
            busy_timeout_ms=self.busy_timeout_ms,
            create=create,
        )

    async def open_database(self, *, create: bool = True) -> Database:
        return await SqliteDatabase.open(self.path, create=create)


class PostgresEngine:
    """The PostgreSQL database at `database.url`, which replicas share: a lock on the
    server chooses their leader; its own tools back it up."""

    kind: Final = "postgresql"
    shared: Final = True

    def __init__(self, url: str, *, pool_size: int) -> None:
        self._url = url  # holds the password: never shown, never logged
        self.pool_size = pool_size

    @property
    def label(self) -> str:
        """Where the memory is, as messages name it: the URL without its password."""
        from memory.policy.conninfo import read_conninfo

        return read_conninfo(self._url).shown

    def may_exist(self) -> bool:
        return True  # opening it tells

    def backup_advice(self, target: Path) -> str:
        """What to run instead of `lorebot backup`/`restore`: PostgreSQL's own tools, with
        the exact command."""
        from memory.postgres.database import backup_advice

        return backup_advice(self._url, target)

    def leadership(self) -> Leadership:
        from memory.postgres.leadership import AdvisoryLeadership

        return AdvisoryLeadership(self._url)

    async def open_stores(
        self, options: StoreOptions, *, embedder: Embedder | None, create: bool
    ) -> Stores:
        with _postgresql_driver():
            from memory.postgres.stores import open_stores as open_postgres
        return await open_postgres(
            self._url, options, embedder=embedder, pool_size=self.pool_size, create=create
        )

    async def open_database(self, *, create: bool = False) -> Database:
        """The database alone (`doctor`), on a small pool."""
        with _postgresql_driver():
            from memory.postgres.database import PostgresDatabase
        return await PostgresDatabase.open(
            self._url, pool_size=min(self.pool_size, 2), create=create
        )


# The engine the settings choose: everything else asks it, never the settings' URL.
Engine = SqliteEngine | PostgresEngine


def engine_for(settings: StoreSettings) -> Engine:
    """PostgreSQL when `database.url` is set, else SQLite at `database.path`. A settings
    snapshot is never taken while a URL is set, so it always means SQLite."""
    database = settings.database
    if isinstance(database, DatabaseView) or database.url is None:
        return SqliteEngine(database.path, busy_timeout_ms=database.busy_timeout_ms)
    return PostgresEngine(database.url.get_secret_value(), pool_size=database.pool_size)


def check_database(settings: StoreSettings, *, create: bool) -> None:
    """Stop with one line when the database is not where a command needs it: an older
    lorebot's `./lorebot.db` waits to be moved, or (unless `create`) none exists yet.
    PostgreSQL says so itself when the database is opened."""
    if engine_for(settings).shared:
        return
    path = settings.database.path
    hint = old_database_hint(path)
    if hint is not None:
        raise UserError(hint)
    if create or path.exists():
        return
    from bot.config.loading import read_inputs  # only to say where the path came from

    source = read_inputs(settings.config).source_of(("database", "path"))
    origin = "the default" if source.origin == "default" else f"set by {source}"
    raise UserError(
        f"there is no lorebot database at {path} ({origin}): to use another one, set "
        "LOREBOT_DATABASE__PATH or database.path in the config file"
    )


@contextmanager
def existing_database_only(only: bool = True) -> Iterator[None]:
    """Within it (when `only`), opening the memory without a database says where lorebot
    looked instead of starting an empty one."""
    token = _may_create.set(not only)
    try:
        yield
    finally:
        _may_create.reset(token)


async def open_memory(
    settings: StoreSettings,
    *,
    clock: Clock = utc_now,
    embedder: Embedder | None = None,
    prepare: bool = True,
    probe: bool = True,
    create: bool | None = None,
) -> Stores:
    """Open and migrate the database and check the embedding model against the stored
    vectors (`EmbeddingMismatch` stops here, nothing changed). `embedder` defaults to the
    configured one; `prepare=False` skips the model check (for `notes reembed`);
    `probe=False` checks the model's name but leaves its dimension to the first vector
    it makes (a one-shot search, which embeds its query anyway); `create=False` (by
    default: within `existing_database_only`) refuses to start a new database, in a
    `UserError` that says where lorebot looked."""
    create = _may_create.get() if create is None else create
    check_database(settings, create=create)
    embedder = embedder or embedder_for(settings)
    options = StoreOptions(
        clock=clock,
        max_note_bytes=settings.memory.max_note_bytes,
        index_max_lines=settings.memory.index_max_lines,
        index_max_bytes=settings.memory.index_max_bytes,
        secrets=tuple(settings.secrets()),
    )
    stores = await engine_for(settings).open_stores(options, embedder=embedder, create=create)
    try:
        await stores.log.index_older_messages()
        if prepare:
            await stores.vectors.prepare(probe=probe)
    except BaseException:
        await stores.close()
        raise
    return stores


async def open_database(path: Path | str, *, create: bool = True) -> Database:
    """The SQLite database at `path` alone (a backup's source or target; `doctor`'s check,
    which passes ":memory:" to test the driver where there is no database yet)."""
    return await SqliteDatabase.open(path, create=create)


@contextmanager
def _postgresql_driver() -> Iterator[None]:
    """Around importing the PostgreSQL engine: a missing driver becomes a `UserError`
    saying how to install it."""
    try:
        yield
    except ImportError as exc:
        raise UserError(
            f"database.url names PostgreSQL, whose driver is not installed ({exc.name}): "
            "pip install 'lorebot[postgresql]'"
        ) from None


def inspect_backup(path: Path) -> Health:
    """The health of a database file read as it is, without migrating it (a backup before
    it is restored); `StoreError` when it is no lorebot database."""
    return inspect_file(path)


def known_schema() -> int:
    """The newest schema version this lorebot knows."""
    return SCHEMA_VERSION


def engine_name() -> str:
    """The storage engine and its driver, as `doctor` shows them."""
    return driver_name()


async def reembed_store(
    stores: Stores,
    embedder: Embedder,
    *,
    batch_size: int,
    progress: Callable[[str, int, int], None] | None = None,
) -> ReembedResult:
    """Move every vector of the store to `embedder`'s model (`lorebot notes reembed`)."""
    from memory.sqlite.reembed import reembed  # only this command needs it

    if not isinstance(stores.db, SqliteDatabase):
        raise UserError(f"re-embedding is not available on {stores.db.engine}")
    return await reembed(stores.db, embedder, batch_size=batch_size, progress=progress)


async def copy_to_postgresql(
    settings: Settings,
    url: str,
    *,
    replace: bool,
    progress: Callable[[str, int], None] | None = None,
) -> tuple[str, str, list[Any]]:
    """Copy the SQLite database of the settings into the PostgreSQL database at `url`
    (`lorebot db copy`): both at the newest schema first. Returns the source, the target
    as shown, and the rows copied per table (`Copied`)."""
    from memory.sqlite.table_source import SqliteTableSource

    with _postgresql_driver():
        from memory.postgres.database import PostgresDatabase, shown_url
        from memory.postgres.table_load import load_tables

    check_database(settings, create=False)
    source = await SqliteDatabase.open(settings.database.path, create=False)
    try:
        target = await PostgresDatabase.open(url, pool_size=1)
        try:
            copied = await load_tables(
                target, SqliteTableSource(source), replace=replace, progress=progress
            )
        finally:
            await target.close()
    finally:
        await source.close()
    return str(settings.database.path), shown_url(url), copied
