"""The PostgreSQL password is never shown, in any form libpq takes it (the URL's user
information, `?password=`, a keyword/value string) and however the URL is wrong (a `%`
not followed by two hex digits, an @ in the password, a mistyped host that libpq quotes
the whole URL for, a wrong password): `doctor` (text and --json), `notes list`, `db copy
--to`, `backup`'s advice and `run --replica` say what is wrong in lorebot's words, on a
real server that asks for the password."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.loading import load_settings
from bot.daemon.logs import SecretFilter
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.daemon import daemon_env
from tests.support.llama import free_port
from tests.support.postgres import PostgresServer

PASSWORD = "Right-Hunter-41"  # the role's own


@dataclass(frozen=True)
class Form:
    """A database URL with a password in it: `template` takes the role, the host and
    port, the port and the database; `secret` is the part no output may hold, and `said`
    what the message must say."""

    name: str
    template: str
    secret: str
    said: str

    def url(self, role_url: str) -> str:
        rest = role_url.removeprefix("postgresql://")
        role, _, rest = rest.partition("@")
        host, _, db = rest.partition("/")
        port = host.rpartition(":")[2]
        return self.template.format(role=role, host=host, port=port, db=db)


FORMS = [
    Form(
        "bad escape in the user information",
        "postgresql://{role}:Esc%zzHunter-41a@{host}/{db}",
        "Hunter-41a",
        "its password has a % that is not followed by two hex digits",
    ),
    Form(
        "a wrong password with ? and # in the user information",
        "postgresql://{role}:Wrong?Hunter#41b@{host}/{db}",
        "Hunter#41b",
        "password authentication failed",
    ),
    Form(
        "wrong password= in the query",
        "postgresql://{role}@{host}/{db}?password=Query-Hunter-41c",
        "Hunter-41c",
        "password authentication failed",
    ),
    Form(
        "an @ in the password",
        "postgresql://{role}:At@Hunter-41d@{host}/{db}",
        "Hunter-41d",
        "an @ that is not the one before the host",
    ),
    Form(
        "a host typo that libpq quotes the whole URL for",
        "postgresql://{role}:Typo-Hunter-41e@[127.0.0.1:{port}/{db}",
        "Hunter-41e",
        'looking for matching "]"',
    ),
    Form(
        "a host typo with password= in the query",
        "postgresql://{role}@127.0.0.l:{port}/{db}?password=Host-Hunter-41f",
        "Hunter-41f",
        "failed to resolve host '127.0.0.l'",
    ),
    Form(
        "a keyword/value string with a quoted password",
        "host=127.0.0.1 port={port} user={role} password='KV Hunter-41g' dbname={db}",
        "Hunter-41g",
        "not a keyword/value connection string",
    ),
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """The exit code and all that the command printed and logged."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def assert_hidden(secret: str, text: str, argv: tuple[str, ...]) -> None:
    assert secret.lower() not in text.lower(), (argv, text)


@pytest.fixture
def role_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A new empty database whose owner logs in with `PASSWORD` (not in the URL)."""
    url = postgres_server.new_password_role(PASSWORD)
    try:
        yield url
    finally:
        postgres_server.drop_database(url)


@pytest.fixture
def sqlite_with_a_note(env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The SQLite database `db copy` copies, with one note in it."""
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", f"http://127.0.0.1:{free_port()}")  # no model
    assert main(["notes", "add", "channel:slack/C1", "staging-db", "db-2"]) == 0
    return env


@pytest.mark.parametrize("form", FORMS, ids=[form.name for form in FORMS])
def test_no_command_shows_the_password_and_each_says_what_is_wrong(
    form: Form,
    role_url: str,
    sqlite_with_a_note: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = form.url(role_url)
    capsys.readouterr()
    argv: tuple[str, ...] = ("db", "copy", "--to", url)
    code, text = run(capsys, *argv)
    assert code == 1 and form.said in text, text
    assert_hidden(form.secret, text, argv)

    monkeypatch.setenv("LOREBOT_DATABASE__URL", url)
    for argv in (
        ("doctor",),
        ("doctor", "--json"),
        ("notes", "list"),
        ("--debug", "notes", "list"),
    ):
        code, text = run(capsys, *argv)
        assert code == 1 and form.said in text.replace('\\"', '"'), (argv, text)
        assert_hidden(form.secret, text, argv)
    argv = ("backup", str(sqlite_with_a_note / "backups") + "/")
    code, text = run(capsys, *argv)
    assert code == 1 and ("pg_dump" in text or form.said in text), text
    assert_hidden(form.secret, text, argv)


def test_the_right_password_in_the_query_works_and_is_never_shown(
    role_url: str,
    sqlite_with_a_note: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"{role_url}?password={PASSWORD}&application_name=lorebot-test"
    shown = f"{role_url}?password=***&application_name=lorebot-test"
    capsys.readouterr()
    code, text = run(capsys, "db", "copy", "--to", url)
    assert code == 0 and f"to {shown}:" in text, text
    assert_hidden(PASSWORD, text, ("db", "copy"))

    monkeypatch.setenv("LOREBOT_DATABASE__URL", url)
    code, text = run(capsys, "doctor")
    assert "✓ database: PostgreSQL 1" in text and f"at {shown}: schema" in text, text
    assert_hidden(PASSWORD, text, ("doctor",))
    code, text = run(capsys, "--debug", "notes", "list")
    assert code == 0 and "staging-db" in text
    assert_hidden(PASSWORD, text, ("notes", "list"))
    code, text = run(capsys, "backup", str(sqlite_with_a_note / "backups") + "/")
    # The advice runs as written: the password left out, for pg_dump to find it itself.
    bare = f"{role_url}?application_name=lorebot-test"
    assert code == 1 and f"'{bare}'" in text and "PGPASSWORD or ~/.pgpass" in text, text
    assert_hidden(PASSWORD, text, ("backup",))


REPLICA_FORMS = [form for form in FORMS if form.template.startswith("postgresql://")]


@pytest.mark.parametrize("form", REPLICA_FORMS, ids=[form.name for form in REPLICA_FORMS])
async def test_a_replica_that_cannot_connect_says_why_without_the_password(
    form: Form,
    role_url: str,
    tmp_path: Path,
    fake_ollama: FakeOllama,
    fake_slack: FakeSlack,
) -> None:
    env = {
        **daemon_env(tmp_path, fake_ollama, fake_slack),
        "LOREBOT_DATABASE__URL": form.url(role_url),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "--debug",
        "run",
        "--replica",
        cwd=tmp_path,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        async with asyncio.timeout(60):
            output, _ = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    text = output.decode()
    assert process.returncode == 1 and form.said in text, text
    assert_hidden(form.secret, text, ("run", "--replica"))


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("postgresql://bot:Mark?Hunter#42a@db/lore", "Mark?Hunter#42a"),
        ("postgresql://bot@db/lore?password=Query-Hunter-42c", "Query-Hunter-42c"),
        ("postgresql://bot@db/lore?sslpassword=Key-Hunter-42d", "Key-Hunter-42d"),
    ],
)
def test_the_log_filter_knows_the_password_in_every_form(
    url: str, password: str, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOREBOT_DATABASE__URL", url)
    record = logging.LogRecord(
        "psycopg.pool",
        logging.WARNING,
        __file__,
        1,
        "error connecting: %s",
        (f'bad password "{password}"',),
        None,
    )
    SecretFilter(load_settings().secrets()).filter(record)
    assert "Hunter" not in record.getMessage()
