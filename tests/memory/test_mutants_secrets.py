"""Where redaction draws its lines: YAML keys alone on a line, private key blocks among
other PEM blocks, code that names a secret, and the arguments of a captured action."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import InvalidInput, NoteDraft, Scope
from memory.policy.redaction import REDACTED, find_secret, is_secret_name, redact, redact_value
from memory.sql.events import SqlEventLog
from memory.sqlite.database import SqliteDatabase
from memory.sqlite.notes import SqliteNoteStore
from tests.support.clock import FakeClock

CHANNEL = Scope.parse("channel:slack/C1")

PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu\n"
    "Qw8Er7Zx9AbCdEfGhIjKlMnOpQrSt\n-----END RSA PRIVATE KEY-----"
)
PUBLIC_KEY = (
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcD\n-----END PUBLIC KEY-----"
)
CERTIFICATE = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUZx9Qw8\n-----END CERTIFICATE-----"
KEY_BODY = ("MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu", "Qw8Er7Zx9AbCdEfGhIjKlMnOpQrSt")
CUT_OFF_NOTE = "(the paste was cut off here; the certificate below is the one we serve)"
YAML_PREAMBLE = "".join(f"  setting_{n}: value number {n}\n" for n in range(8))

# (text, what it must become): a plain word after `password:` is a secret only on a
# YAML-style line of its own.
REDACTIONS: list[tuple[str, str]] = [
    ("password: correcthorse", "password: [REDACTED]"),
    ("DB_PASSWORD: correcthorse", "DB_PASSWORD: [REDACTED]"),
    ("\npassword: correcthorse", "\npassword: [REDACTED]"),
    ("users:\n  - password: correcthorse", "users:\n  - password: [REDACTED]"),
    (
        "db:\n  password: correcthorse\n  user: app\n  port: 5432",
        "db:\n  password: [REDACTED]\n  user: app\n  port: 5432",
    ),
    (
        f"app:\n{YAML_PREAMBLE}  DB_PASSWORD: correcthorse\n",
        f"app:\n{YAML_PREAMBLE}  DB_PASSWORD: [REDACTED]\n",
    ),
    (
        "log in with password=correcthorse and user=bob",
        "log in with password=[REDACTED] and user=bob",
    ),
    ("password=123456", "password=[REDACTED]"),
    ("password=hunter_22", "password=[REDACTED]"),
    ("db.pass=s3cr3t-v4lue", "db.pass=[REDACTED]"),
    ("db-pass=s3cr3t-v4lue", "db-pass=[REDACTED]"),
    # A key block among public ones: only the private key goes.
    (f"{PUBLIC_KEY}\n{PRIVATE_KEY}\n{CERTIFICATE}", f"{PUBLIC_KEY}\n{REDACTED}\n{CERTIFICATE}"),
    # A block pasted without its END line: its base64 lines go, the words after stay.
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIOrAbCd\nthat was the whole key",
        f"{REDACTED}\nthat was the whole key",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIOrAbCd",
        REDACTED,
    ),
    # A cut-off END line: everything up to the cut goes, what comes after stays.
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu\n-----END RSA PRI",
        f"{REDACTED} RSA PRI",
    ),
    (
        f"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu\n-----END RSA PRI\n"
        f"{CUT_OFF_NOTE}\n{CERTIFICATE}",
        f"{REDACTED} RSA PRI\n{CUT_OFF_NOTE}\n{CERTIFICATE}",
    ),
    ("password=$ecureP4ss!", "password=[REDACTED]"),
]

# Text that names a secret, or looks like an assignment to one, but holds none.
NOT_SECRETS: list[str] = [
    "we said password: correcthorse\nthanks",
    "db:\n  password: later is fine\n  user: app",
    "password = getpass()",
    "password = db_password",
    "password = self.password",
    "password=%(db_password)s",
    "password=%s",
    "password=***",
    "password=xxxx",
    "DB_PASSWORD=$DB_PASSWORD",
    "PWD=/home/alice",
    "SSH_ASKPASS=/usr/lib/ssh/ssh-askpass",
    "partition_key=2026-11-30",
    "mysql -u root --password -h db.internal",
    "deploy --token config.token",
]


@pytest.mark.parametrize(("text", "redacted"), REDACTIONS)
def test_redaction_takes_the_secret_and_leaves_the_rest(text: str, redacted: str) -> None:
    assert redact(text) == redacted


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_text_that_only_names_a_secret_is_kept(text: str) -> None:
    assert find_secret(text) is None
    assert redact(text) == text


def test_a_key_block_far_into_a_long_paste_is_redacted_to_its_end() -> None:
    log = "deploy log line without anything secret in it\n" * 300
    text = f"{log}-----BEGIN PRIVATE KEY-----\n{KEY_BODY[0]}\n{KEY_BODY[1]}\n"
    assert redact(text) == f"{log}{REDACTED}\n"


def test_a_key_without_its_end_line_does_not_swallow_a_later_one() -> None:
    prose = "and then the rollout went on with nothing else of note. " * 400
    text = f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY[0]}\n{prose}\n-----END CERTIFICATE-----"
    assert redact(text) == f"{REDACTED}\n{prose}\n-----END CERTIFICATE-----"


def test_configured_secrets_side_by_side_become_one_marker() -> None:
    known = ["tokenvalue1", "signingsecret2"]
    assert redact("creds: tokenvalue1signingsecret2 ok", known) == f"creds: {REDACTED} ok"


async def test_a_note_with_a_yaml_password_is_refused(store: SqliteNoteStore) -> None:
    draft = NoteDraft(CHANNEL, "db", "database settings", body="db:\n  password: correcthorse")
    with pytest.raises(InvalidInput, match="a password or secret assignment"):
        await store.save(draft, actor="user:slack/U1")


@pytest.mark.parametrize("name", ['"password"', "'api_key'"])
def test_a_quoted_field_name_is_still_a_secret_name(name: str) -> None:
    assert is_secret_name(name)


async def test_a_captured_action_keeps_no_secret_from_a_list_and_shows_empty_ones(
    db_path: Path, clock: FakeClock
) -> None:
    db = await SqliteDatabase.open(db_path)
    try:
        events = SqlEventLog(db, clock=clock)
        arguments = {"password": ["hunter", "gatekeeper"], "token": "", "hosts": ["db1", "db2"]}
        await events.capture(
            "deploy",
            arguments,
            outcome="ok",
            conversation={},
            channel_scope=None,
            person="user:slack/U1",
        )
        async with db.conn.execute("SELECT arguments_json FROM events") as cursor:
            [(stored,)] = await cursor.fetchall()
    finally:
        await db.close()
    assert json.loads(stored) == {
        "password": [REDACTED, REDACTED],
        "token": "",
        "hosts": ["db1", "db2"],
    }
    assert redact_value(["db1", "password=hunter22"]) == ["db1", f"password={REDACTED}"]
