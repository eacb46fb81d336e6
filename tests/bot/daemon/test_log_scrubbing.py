"""The log filter scrubs a credential however a library wrote it into its line: as written,
in the repr() of a string or a dict, in JSON text, and in JSON text inside a repr (each
layer escaping the quotes and slashes around it), and leaves every other line as it was."""

from __future__ import annotations

import json
import logging

import pytest

from bot.daemon.logs import SecretFilter

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPastedQ7Ke"
PASTED = (
    f'the config says {{"aws_secret_access_key": "{AWS_SECRET}", "password": "hunter2-Q7x"}} '
    "and the deploy uses password='s3cr3t-Q7x'"
)
SECRETS = ("wJalrXUtnFEMI", "bPxRfiCYPasted", "hunter2", "s3cr3t")


def scrubbed(message: str, *args: object) -> str:
    record = logging.LogRecord("lib", logging.DEBUG, __file__, 1, message, args or None, None)
    SecretFilter(["xoxb-our-own-token-123"]).filter(record)
    return record.getMessage()


def envelope(text: str) -> str:
    """A Socket Mode frame as slack_sdk logs it, Slack's escaped slashes included."""
    return json.dumps({"payload": {"event": {"text": text}}}).replace("/", "\\/")


@pytest.mark.parametrize(
    ("shape", "line"),
    [
        ("as written", PASTED),
        ("repr of a str (aiosqlite's parameters)", repr((PASTED, 3))),
        ("repr of a dict (discord.py's gateway event)", repr({"t": "MESSAGE", "d": PASTED})),
        ("JSON text", json.dumps({"text": PASTED})),
        ("JSON with escaped slashes", envelope(PASTED)),
        ("JSON text in a repr (slack_sdk's raw frame)", repr(envelope(PASTED))),
        ("JSON in JSON in a repr", repr(json.dumps(json.dumps(PASTED)))),
        ("\\u escapes", json.dumps(PASTED.replace("password", "pass\u200bword"))),
        ("HTML entities", PASTED.replace('"', "&quot;")),
    ],
)
def test_a_credential_is_scrubbed_however_it_was_escaped(shape: str, line: str) -> None:
    message = scrubbed("Received message (data: %s)", line)
    assert [secret for secret in SECRETS if secret in message] == [], shape
    assert "aws_secret_access_key" in message and "[REDACTED]" in message


def test_a_known_secret_is_scrubbed_inside_escapes_too() -> None:
    message = scrubbed("body: %r", json.dumps({"token": "our own: xoxb-our-own-token-123"}))
    assert "xoxb-our-own-token-123" not in message


@pytest.mark.parametrize(
    "line",
    [
        repr(("SELECT 1 WHERE a = ?\n", "it\\'s C:\\\\temp\\\\x")),
        envelope('see https://example.com/a/b and "quotes" & <tags>'),
        "executing functools.partial(<built-in method execute>, 'BEGIN IMMEDIATE', [])",
    ],
)
def test_a_line_without_a_credential_is_left_as_it_was(line: str) -> None:
    assert scrubbed("%s", line) == line
