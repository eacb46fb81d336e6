"""The shapes credentials come in, and the ordinary ops text that only resembles them.

Every shape must be refused by `find_secret` and its secret value must be gone after
`redact`; every near miss must be accepted and come back from `redact` unchanged.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any

import pytest

from memory import InvalidInput, NoteDraft, Scope
from memory.policy.redaction import (
    REDACTED,
    find_secret,
    is_secret_name,
    normalise,
    redact,
)
from memory.policy.secret_patterns import SECRET_PATTERNS
from memory.sqlite.notes import SqliteNoteStore

CHANNEL = Scope.parse("channel:slack/C1")
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

# (text, the part that must not survive redaction)
SHAPES: list[tuple[str, str]] = [
    # Slack
    ("the bot token is xoxb-2048-1234567890-AbCdEfGhIjKlMnOp", "1234567890-AbCdEfGhIjKlMnOp"),
    ("user token xoxp-1111-2222-3333-abcdefabcdef", "2222-3333-abcdefabcdef"),
    ("socket mode uses xapp-1-A0123456789-1234567890-abcdef0123", "A0123456789-1234567890"),
    ("refresh with xoxe.xoxp-1-Mi0yLTE2NzIzOTQ1MjM2NTYtMTIz", "Mi0yLTE2NzIzOTQ1MjM2NTYtMTIz"),
    ("rotation token xoxe-1-My0xLTEyMzQ1Njc4OTAtMTIzNDU2", "My0xLTEyMzQ1Njc4OTAtMTIzNDU2"),
    ("my token is xoxb-123\u200b456-7890123456-AbCdEfGhIjKl", "7890123456-AbCdEfGhIjKl"),
    (
        "alerts post to https://hooks.slack.com/services/T0EXAMPLE/B0EXAMPLE/AbCdEfGhIjKlMnOpQrSt",
        "AbCdEfGhIjKlMnOpQrSt",
    ),
    # Discord
    (
        "token MTA5ODc2NTQzMjEwOTg3NjU0Mw.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB",
        "abcdefghijklmnopqrstuvwxyz0123456789AB",
    ),
    (
        "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz01234-_x",
        "AbCdEfGhIjKlMnOpQrStUvWxYz01234",
    ),
    # AWS
    ("use AKIAIOSFODNN7EXAMPLE for the deploy user", "AKIAIOSFODNN7EXAMPLE"),
    (
        f'{{"aws_access_key_id": "AKIAIOSFODNN7EXAMPLE", "aws_secret_access_key": "{AWS_SECRET}"}}',
        AWS_SECRET,
    ),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    # code hosts and package registries
    ("export GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c8"),
    (
        "fine-grained github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOP0123456789",
        "mnopqrstuvwxyzABCDEFGHIJKLMNOP",
    ),
    ("installation token ghs_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz01"),
    ("gitlab deploy: glpat-xYz12AbCdEfGhIjKlMnO", "xYz12AbCdEfGhIjKlMnO"),
    (
        "//registry.npmjs.org/:_authToken=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    (
        "twine upload with pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5"
        "ejAxMjM0NTY3ODk",
        "CJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0",
    ),
    ("HF_TOKEN hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"),
    # AI and payment APIs
    ("OPENAI_API_KEY is sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78", "Ab12Cd34Ef56Gh78Ij90"),
    ("legacy key sk-AbCdEfGhIjKlMnOpQrStT3BlbkFJUvWxYz0123456789abcd", "T3BlbkFJUvWxYz0123456789"),
    ("claude: sk-ant-api03-AbCdEfGh1234IjKlMnOp5678QrStUvWx", "AbCdEfGh1234IjKlMnOp5678"),
    ("charge with sk_live_51HqEXAMPLEabcdefGHIJKL0123456789", "51HqEXAMPLEabcdefGHIJKL"),
    ("restricted key rk_test_51HqEXAMPLEabcdefGHIJKL0123", "51HqEXAMPLEabcdefGHIJKL"),
    ("stripe webhook secret whsec_AbCdEfGhIjKlMnOpQrStUvWx0123", "AbCdEfGhIjKlMnOpQrStUvWx0123"),
    (
        "SendGrid SG.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdE",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    # Google, Telegram
    ("maps key AIzaSyA-1234567890abcdefghijklmnopqrstu", "SyA-1234567890abcdefghijklmnopqrstu"),
    ("oauth client GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx1234", "AbCdEfGhIjKlMnOpQrStUvWx1234"),
    ("telegram bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "AAHdqTcvCH1vGWJxfSeofSAs0K5"),
    # tokens in headers
    (f"the session cookie holds {JWT}", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    (
        "curl -H 'Authorization: Bearer 0123456789abcdef0123456789abcdef' https://api.example.com",
        "0123456789abcdef0123456789abcdef",
    ),
    ("Authorization: Basic YWRtaW46aHVudGVyMg==", "YWRtaW46aHVudGVyMg"),
    ("send bearer ya29.a0AfH6SMBx1234abcdEXAMPLE in the header", "a0AfH6SMBx1234abcdEXAMPLE"),
    # private keys, whole blocks
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Oe3\n"
        "q7Jf3EXAMPLEbodyLINE2xyz0123456789abcd\n-----END RSA PRIVATE KEY-----\nthanks!",
        "q7Jf3EXAMPLEbodyLINE2xyz0123456789abcd",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ),
    (
        '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n'
        '-----END PRIVATE KEY-----\\n"',
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0EXAMPLEAQgAxyz0123456789abcdefABCD\n"
        "=AbCd\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBF0EXAMPLEAQgAxyz0123456789abcdefABCD",
    ),
    # credentials in connection URLs
    ("postgres://admin:S3cret@db.internal:5432/app", "S3cret"),
    ("MONGO_URL=mongodb+srv://app:p%40ssw0rd@cluster0.ab1cd.mongodb.net/prod", "p%40ssw0rd"),
    ("cache at redis://:hunter2redis@cache-1:6379/0", "hunter2redis"),
    ("broker amqp://lore:Rabbit-pass-9@mq.internal:5672/vhost", "Rabbit-pass-9"),
    ("mysql://root:p@ss:w0rd@127.0.0.1/app", "p@ss:w0rd"),
    ("clone https://deploy:Tr0ub4dor&3@git.example.com/ops/infra.git", "Tr0ub4dor&3"),
    # passwords and keys assigned in JSON, YAML, TOML, env files, code, XML
    ('{"password": "hunter2"}', "hunter2"),
    ("{'db_password': 'hunter2'}", "hunter2"),
    ("password: hunter2", "hunter2"),
    ("db:\n  user: app\n  password: correcthorse\n  port: 5432", "correcthorse"),
    ("PASSWORD=x", "=x"),
    ('api_key = "x"', '"x"'),
    ('api_key = "abc123def456"', "abc123def456"),
    ("export DB_PASSWORD=hunter22", "hunter22"),
    ("MYSQL_PWD=Sup3rS3cret mysql -u root", "Sup3rS3cret"),
    ("DB_PASS=letmein99", "letmein99"),
    ("client_secret: 'Zx9-Qw8-Er7'", "Zx9-Qw8-Er7"),
    ("Server=db;User Id=sa;Password=Str0ng!Pass;Database=app", "Str0ng!Pass"),
    ("host=db user=app password=pg-Secret-42 dbname=app", "pg-Secret-42"),
    ("$password = 'correct horse battery staple';", "correct horse battery staple"),
    ('config.password => "r4nd0m"', "r4nd0m"),
    ("SECRET_KEY := 'django-insecure-abc123'", "django-insecure-abc123"),
    ("<password>hunter2xml</password>", "hunter2xml"),
    ('curl -H "X-Api-Key: 9f8e7d6c5b4a" https://api.example.com', "9f8e7d6c5b4a"),
    ("the new one is token: 7d1f9a0c2b3e4f56 for now", "7d1f9a0c2b3e4f56"),
    ("API key: 9f8e7d6c5b4a3210", "9f8e7d6c5b4a3210"),
    # command-line flags
    ("mysql --password=hunter2 -u root", "hunter2"),
    ("docker login --password Hunter2x registry.example.com", "Hunter2x"),
    ("vault login --token 's.AbCdEf123456'", "s.AbCdEf123456"),
    # hidden by Unicode: full-width forms, soft hyphens, word joiners, a BOM
    ("ｐａｓｓｗｏｒｄ＝hunter22", "hunter22"),
    ("pass\u00adword=hunter22", "hunter22"),
    ("AKIA\u2060IOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("\ufeffghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c8"),
    ("postgres://admin:S3\u200dcret@host/db", "cret"),
]

NEAR_MISSES: list[str] = [
    "the password policy requires 12 characters",
    "token bucket rate limiter",
    "postgres://host/db",
    "postgres://db.internal:5432/app",
    "the DSN format is postgres://user:password@host:5432/db",
    "see the API key in Vault at secret/ci",
    "3735fcf2a9c1e5b8d0f4a6c2e9b7d1f3a5c8e0b2",
    "123e4567-e89b-12d3-a456-426614174000",
    "pg-stage-2.internal",
    "keys: ssh key rotation happens monthly",
    "API key: ask the platform team",
    "primary key: id",
    "the monkey: a mascot",
    "rotate the Slack token every quarter (it lives in Vault at secret/slack)",
    "version 1.2.3 of discord.py",
    "password: reset it in the Okta portal",
    "passwords: must be rotated every 90 days",
    "use --password-stdin with docker login",
    "pass --token as a flag to the CLI",
    "DB_PASSWORD=${DB_PASSWORD}",
    "password: ********",
    "api_key: <your key here>",
    "token: {{ secrets.SLACK_TOKEN }}",
    "password=[REDACTED]",
    "conn = connect(host=h, password=password)",
    "password = os.environ['DB_PASSWORD']",
    "token_ttl: 3600",
    "token: 3600",
    "password_policy: strict",
    "secret_name: prod-db-creds",
    "if password == confirm_password:",
    "Bearer authentication is configured on the gateway",
    "the bearer of bad news",
    "the AIza prefix marks Google API keys",
    "sk-learn-pipeline-examples is not a package; use scikit-learn",
    "ghp_ tokens are classic GitHub PATs and xoxb- tokens are Slack bot tokens",
    "the JWT header always starts with eyJ",
    "AKIA prefixes identify AWS access key ids",
    "https://user@example.com/path",
    "mail ops@example.com or see https://wiki.example.com:8443/ops",
    "http://localhost:8080/health",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBbExampleExampleExampleExampleExample ops@bastion",
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "docker run --user 1000:1000 app",
    "JIRA-1234: fix the token refresh loop",
    "the bypass: on for maintenance",
    "the S3 bucket arn:aws:s3:::logs-bucket",
    "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    "Discord user 109876543210987654 joined",
    "family trip 👨‍👩‍👧 photos are in the drive",
    "Ｆｕｌｌｗｉｄｔｈ notes stay as they are",
]


def test_the_table_is_large_enough() -> None:
    assert len(SHAPES) >= 40 and len(NEAR_MISSES) >= 40


@pytest.mark.parametrize(("text", "secret"), SHAPES)
def test_each_secret_shape_is_refused_and_redacted(text: str, secret: str) -> None:
    assert find_secret(text) is not None
    redacted = redact(text)
    assert secret not in redacted and normalise(secret) not in redacted
    assert REDACTED in redacted
    assert find_secret(redacted) is None


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_each_near_miss_is_accepted_and_unchanged(text: str) -> None:
    assert find_secret(text) is None
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ('{"password": "hunter2", "user": "app"}', '{"password": "[REDACTED]", "user": "app"}'),
        ("PASSWORD=hunter2 ./run.sh", "PASSWORD=[REDACTED] ./run.sh"),
        ("postgres://admin:S3cret@host/db", "postgres://admin:[REDACTED]@host/db"),
        ("redis://:hunter2@cache:6379", "redis://:[REDACTED]@cache:6379"),
        ("amqp://guest:guest@rabbit:5672/", "amqp://guest:[REDACTED]@rabbit:5672/"),
        ("Authorization: Bearer 0123456789abcdef", "Authorization: Bearer [REDACTED]"),
        ("my token is xoxb-123\u200b456-7890123456-AbCdEfGhIjKl ok?", "my token is [REDACTED] ok?"),
        (
            "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu\n"
            "-----END RSA PRIVATE KEY-----\nthanks",
            "key:\n[REDACTED]\nthanks",
        ),
        (
            "https://hooks.slack.com/services/T0AAAA/B0BBBB/CcDdEeFfGgHhIiJj",
            "https://hooks.slack.com/services/[REDACTED]",
        ),
    ],
)
def test_redaction_keeps_what_the_text_was_about(text: str, redacted: str) -> None:
    assert redact(text) == redacted


def test_configured_secrets_are_redacted_even_with_invisible_characters() -> None:
    token = "discord-token-value"
    assert redact("the token discord-\u200btoken-value leaked", [token]) == (
        "the token [REDACTED] leaked"
    )
    assert redact("short ones like abc are left alone", ["abc"]) == (
        "short ones like abc are left alone"
    )


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("DB_PASS", True),
        ("client_secret", True),
        ("x-api-key", True),
        ("aws_secret_access_key", True),
        ("refresh_token", True),
        ("MYSQL_PWD", True),
        ("token_ttl", False),
        ("max_tokens", False),
        ("password_policy", False),
        ("keys", False),
        ("bypass", False),
        ("compass", False),
        ("name", False),
    ],
)
def test_secret_field_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_every_invisible_format_character_is_removed_before_matching() -> None:
    format_chars = [
        chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"
    ]
    assert format_chars and normalise("a" + "".join(format_chars) + "b") == "ab"


def _repeats(parsed: Any, inside: bool = False) -> list[tuple[int, int, bool]]:
    """Every repeat in a parsed pattern: (min, max, whether it sits in another repeat)."""
    found: list[tuple[int, int, bool]] = []
    for op, arg in parsed:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            low, high, sub = arg
            found.append((low, high, inside))
            found += _repeats(sub, inside or high > 1)
        elif op == sre_constants.SUBPATTERN:
            found += _repeats(arg[-1], inside)
        elif op == sre_constants.BRANCH:
            for branch in arg[1]:
                found += _repeats(branch, inside)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            found += _repeats(arg[1], inside)
    return found


@pytest.mark.parametrize("secret", SECRET_PATTERNS, ids=lambda s: s.name)
def test_patterns_have_no_nested_or_unbounded_repeats(secret: Any) -> None:
    """Bounded, un-nested repeats keep every scan linear in the text's length: no
    catastrophic backtracking, whatever the input."""
    repeats = _repeats(sre_parser.parse(secret.pattern.pattern))
    assert all(high != sre_constants.MAXREPEAT for _, high, _ in repeats)
    assert not any(nested for _, _, nested in repeats)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 100_000,
        "eyJ" * 34_000,
        "eyJa." * 20_000,
        "xoxb-" * 20_000,
        "://a:" * 20_000,
        "password=" * 11_000,
        "password: " * 10_000,
        "--password " * 9_000,
        "-----BEGIN PRIVATE KEY-----\n" * 3_600,
        "a." * 50_000,
        "\u200b" * 100_000,
        "key " * 25_000,
    ],
    ids=lambda text: repr(text[:12]),
)
def test_a_100_kb_input_is_scanned_in_one_pass(text: str) -> None:
    redacted = redact(text)
    assert find_secret(redacted) is None


@pytest.mark.parametrize(
    "draft",
    [
        NoteDraft(CHANNEL, "staging-db", 'staging db login {"password": "hunter2"}', "see body"),
        NoteDraft(CHANNEL, "staging-db", "staging db", "postgres://admin:S3cret@db/app"),
        NoteDraft(CHANNEL, "bot-token", "the bot token", "xoxb-123\u200b456-7890123456-AbCdEf"),
    ],
    ids=["summary", "body-url", "zero-width"],
)
async def test_the_note_store_refuses_each_form(store: SqliteNoteStore, draft: NoteDraft) -> None:
    with pytest.raises(InvalidInput, match="not saved: the note contains"):
        await store.save(draft, actor="a")
    assert await store.list_notes() == []


def test_lowercase_patterns_are_written_in_lowercase() -> None:
    """A `lower` pattern is searched in lowercased text: an uppercase letter in it could
    never match."""
    for secret in SECRET_PATTERNS:
        assert not secret.pattern.flags & re.IGNORECASE
        if secret.lower:
            source = secret.pattern.pattern.replace("(?P<", "(?<")
            assert re.search(r"(?<!\\)[A-Z]", source) is None, secret.name
