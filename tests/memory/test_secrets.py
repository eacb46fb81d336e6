"""Notes that carry credentials are refused, naming what was found."""

from __future__ import annotations

import pytest

from memory import InvalidInput, NoteDraft, Scope
from memory.policy.redaction import find_secret, redact
from memory.sqlite.notes import SqliteNoteStore

CHANNEL = Scope.parse("channel:slack/C1")

SECRETS = [
    ("a Slack token", "the bot token is xoxb-2048-1234567890-AbCdEfGhIjKlMnOp"),
    ("a Slack token", "user token xoxp-1111-2222-3333-abcdefabcdef"),
    ("a Slack app token", "socket mode uses xapp-1-A0123456789-1234567890-abcdef0123"),
    (
        "a Discord bot token",
        "token MTA5ODc2NTQzMjEwOTg3NjU0Mw.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB",
    ),
    ("an AWS access key", "use AKIAIOSFODNN7EXAMPLE for the deploy user"),
    ("an AWS secret key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYAB"),
    ("a private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"),
    ("a private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n"),
    ("a password or secret assignment", "db login: password=hunter22"),
    ("a password or secret assignment", "API_KEY: 'sk-live-abc123'"),
    ("a password or secret assignment", "export DB_PASSWORD=hunter22"),
    ("a password or secret assignment", '{"password": "hunter2"}'),
    ("a password or secret assignment", "db:\n  password: hunter2\n"),
    ("an AWS secret key", '"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"'),
    ("credentials in a URL", "postgres://admin:S3cret@pg-stage-2.internal/db"),
    ("a Slack token", "xoxb-123\u200b456-7890123456-AbCdEfGhIjKl"),
    ("a GitHub token", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("a JSON Web Token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"),
    ("an authorization header", "curl -H 'Authorization: Bearer 0123456789abcdef0123'"),
    ("a bearer token", "send it as bearer ya29.a0AfH6SMBx1234abcd"),
    ("a password in a command-line flag", "docker login --password Hunter2x"),
]


@pytest.mark.parametrize(("kind", "text"), SECRETS)
async def test_each_secret_kind_is_refused_and_nothing_is_stored(
    store: SqliteNoteStore, kind: str, text: str
) -> None:
    with pytest.raises(InvalidInput, match=f"contains {kind}"):
        await store.save(NoteDraft(CHANNEL, "creds", "credentials", body=text), actor="a")
    assert await store.list_notes() == []


@pytest.mark.parametrize(("kind", "text"), SECRETS)
def test_redact_removes_each_secret(kind: str, text: str) -> None:
    assert find_secret(text) == kind
    assert find_secret(redact(text)) is None
    assert "[REDACTED]" in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "the password policy requires 12 characters",
        "rotate the Slack token every quarter (it lives in Vault at secret/slack)",
        "staging DB is pg-stage-2.internal:5432",
        "version 1.2.3 of discord.py",
    ],
)
def test_ordinary_ops_text_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("my password: correcthorse", "my password: [REDACTED]"),
        ("our wifi password: bluesky", "our wifi password: [REDACTED]"),
        ("Her token: abcdef", "Her token: [REDACTED]"),
        # Prose that merely names the field keeps its words.
        ("the field is password: required", "the field is password: required"),
        (
            "in my view the password: field is required",
            "in my view the password: field is required",
        ),
    ],
)
def test_someones_own_password_is_redacted_even_as_one_word_in_a_sentence(
    said: str, kept: str
) -> None:
    assert redact(said) == kept
