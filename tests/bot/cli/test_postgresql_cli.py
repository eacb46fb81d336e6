"""The command line on PostgreSQL (`LOREBOT_DATABASE__URL`): `doctor` names the server, its
version, the schema and the extensions; `backup` and `restore` say to use pg_dump; and
the URL's password is never printed, not even with --debug."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.support.llama import free_port
from tests.support.postgres import PostgresServer

PASSWORD = "hunter2-not-for-logs"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def url_with_password(env: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test's database, named with a password (the test server trusts local logins,
    so it is ignored there, but lorebot must never show it)."""
    url = pg_url.replace("postgresql://lorebot@", f"postgresql://lorebot:{PASSWORD}@")
    monkeypatch.setenv("LOREBOT_DATABASE__URL", url)
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", f"http://127.0.0.1:{free_port()}")  # no model
    return url


def test_doctor_names_the_server_the_schema_and_the_extensions(
    url_with_password: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "doctor")
    assert code == 1
    assert "✗ database: there is no lorebot database at postgresql://lorebot:***@" in out
    assert "creates lorebot's tables in it" in out

    assert run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "db-2")[0] == 0
    code, out, err = run(capsys, "doctor")
    [line] = [x for x in out.splitlines() if x.startswith("✓ database:")]
    assert line.startswith("✓ database: PostgreSQL 1")
    assert "psycopg 3." in line and "schema 23/23" in line and "1 notes" in line
    assert "extensions: plpgsql" in line
    assert "✓ pgvector: not installed on this server: recall is by words alone" in out
    assert PASSWORD not in out + err


def test_backup_and_restore_point_to_pg_dump_and_change_nothing(
    url_with_password: str, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "db-2")[0] == 0
    code, out, err = run(capsys, "backup", str(env / "backups") + "/")
    assert code == 1 and out == ""
    assert f"pg_dump --format=custom --file={env}/backups/lorebot.dump 'postgresql://" in err
    assert "pg_restore --clean --if-exists" in err and "PGPASSWORD or ~/.pgpass" in err
    assert not (env / "backups").exists()
    code, _, err = run(capsys, "restore", str(env / "old.dump"))
    assert code == 1 and "pg_restore --clean --if-exists" in err
    assert PASSWORD not in err
    code, out, _ = run(capsys, "notes", "list")
    assert code == 0 and "staging-db" in out


def test_the_password_is_not_in_any_output_or_log_line(
    url_with_password: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ("--debug", "notes", "add", "channel:slack/C1", "staging-db", "db-2"),
        (
            "--debug",
            "notes",
            "search",
            "staging",
            "--as",
            "user:slack/U1",
            "--in",
            "channel:slack/C1",
        ),
        ("config", "show"),
        ("config", "show", "--json"),
    ):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        assert PASSWORD not in out + err, argv


def test_an_unreachable_server_is_one_line_without_the_password(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://lorebot:{PASSWORD}@127.0.0.1:{free_port()}/lorebot?connect_timeout=1"
    monkeypatch.setenv("LOREBOT_DATABASE__URL", url)
    code, out, err = run(capsys, "notes", "list")
    assert code == 1
    [line] = err.strip().splitlines()
    assert line.startswith("lorebot: cannot reach PostgreSQL at postgresql://lorebot:***@")
    assert PASSWORD not in out + err


def test_a_statement_timeout_is_one_clear_line_and_changes_nothing(
    url_with_password: str,
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(capsys, "notes", "add", "channel:slack/C1", "vpn", "the gateway is vpn-2")[0] == 0
    monkeypatch.setenv("LOREBOT_DATABASE__URL", f"{pg_url}?options=-c%20statement_timeout%3D300")
    holder = subprocess.Popen(
        [
            "psql",
            "-X",
            "-q",
            pg_url,
            "-c",
            "BEGIN; LOCK TABLE notes IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT;",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)  # the lock is taken
        code, out, err = run(capsys, "notes", "forget", "channel:slack/C1", "vpn")
        assert code == 1 and "Traceback" not in err
        [line] = err.strip().splitlines()
        assert "ran past the statement_timeout" in line and "nothing of it was written" in line
    finally:
        assert holder.wait(10) == 0
    code, out, _ = run(capsys, "notes", "list", "--scope", "channel:slack/C1")
    assert code == 0 and "vpn" in out  # nothing was forgotten


def test_a_database_url_that_is_not_postgresql_is_refused_by_name(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_DATABASE__URL", "mysql://bot@db/lorebot")
    code, _, err = run(capsys, "notes", "list")
    assert code == 1 and "database.url" in err and "postgresql://" in err


def test_the_server_restarting_between_commands_loses_nothing(
    url_with_password: str, postgres_server: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "notes", "add", "channel:slack/C1", "staging-db", "db-2")[0] == 0
    postgres_server.restart()
    code, out, _ = run(capsys, "notes", "list")
    assert code == 0 and "staging-db" in out
