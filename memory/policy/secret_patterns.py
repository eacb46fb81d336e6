"""What credentials look like: one `SecretPattern` per kind, with the checks that tell a
credential from text that only looks like one.

`memory.policy.redaction` scans text with these. Every repeat in the patterns is bounded and none
is nested, so a scan stays linear in the text's length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

Accept = Callable[[str, re.Match[str], str], bool]
"""Whether a match is a credential, given the normalised text, the match and its value."""


@dataclass(frozen=True, slots=True)
class SecretPattern:
    """What a credential looks like; `name` says what was found, so a refusal can say why.

    The pattern is only tried on text whose lowercased form holds one of `needles` (if
    any are given) and matches `gate` (when given). A `lower` pattern is written in
    lowercase and searched in the lowercased text: the same test as a case-insensitive
    one, several times faster. `groups` name the part that is the secret (the first that
    matched), else the whole match is. `accept` rejects matches that only look like
    credentials; `extend` finds where a multi-line one ends."""

    name: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    lower: bool = False
    groups: tuple[str, ...] = ()
    accept: Accept | None = None
    extend: Callable[[str, int], int] | None = None
    gate: re.Pattern[str] | None = None

    def spans(self, text: str, lowered: str) -> Iterator[tuple[int, int]]:
        """Where the secrets of this kind are in the normalised `text`."""
        if self.lower and len(lowered) != len(text):
            # Some characters lowercase to two; search the text itself so spans line up.
            matches = re.compile(self.pattern.pattern, re.IGNORECASE).finditer(text)
        else:
            matches = self.pattern.finditer(lowered if self.lower else text)
        for match in matches:
            start, end = _secret_span(match, self.groups)
            if self.accept is not None and not self.accept(text, match, text[start:end]):
                continue
            yield start, (self.extend(text, end) if self.extend is not None else end)


def _secret_span(match: re.Match[str], groups: tuple[str, ...]) -> tuple[int, int]:
    for group in groups:
        if match.group(group) is not None:
            return match.span(group)
    return match.span()


# --- what a value must look like ----------------------------------------------------

# A value that repeats a key word is a template: `postgres://user:password@host`.
_PLACEHOLDER_WORDS = frozenset(
    {
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "redacted",
        "changeme",
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "token",
    }
)
_REFERENCE = re.compile(r"[a-z_][a-z0-9_.]{0,100}(?:[(\[].{0,200})?")
# "my password", "our wifi password": the words right before a key that say whose it is.
_POSSESSIVE = re.compile(r"\b(?:my|our|your|his|her|their)\s+(?:[\w-]+\s+)?$", re.IGNORECASE)
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]{0,100}")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _is_placeholder(value: str) -> bool:
    """`${VAR}`, `$VAR`, `<your key>`, `{{ secret }}`, `%(pw)s`, `[REDACTED]`, `****`…"""
    v = value.strip().lower()
    if not v or v[0] in "<{[" or v.startswith(("${", "%(", "%s")):
        return True
    if v[0] == "$" and re.fullmatch(r"\$[a-z_][a-z0-9_]{0,100}", v):
        return True
    repeated = len(v) >= 3 and len(set(v)) == 1  # `****`, `xxxx`, `...`
    return (repeated and v[0] in "*x•.?#-_") or v in _PLACEHOLDER_WORDS


def _is_reference(value: str, word: str) -> bool:
    """Code that names the secret instead of holding it: `get_password()`, `os.environ[`,
    `db_password`, `self.token`."""
    v = value.lower().rstrip(",)]}")
    if _REFERENCE.fullmatch(v) is None:
        return False
    return "(" in v or "[" in v or (word in v and ("_" in v or "." in v or v == word))


def _looks_random(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _key_start(text: str, end: int) -> int:
    start = end
    while start > 0 and end - start < 80 and text[start - 1] in _KEY_CHARS:
        start -= 1
    return start


def _alone_on_line(text: str, key_start: int, value_end: int) -> bool:
    """A YAML-style `key: value` line: nothing but indentation or a list dash before the
    key, and nothing after the value."""
    line_start = text.rfind("\n", 0, key_start) + 1
    line_end = text.find("\n", value_end)
    before = text[line_start:key_start]
    after = text[value_end : len(text) if line_end < 0 else line_end]
    return not before.strip(" \t-#>") and not after.strip()


def _accept_assignment(text: str, match: re.Match[str], value: str) -> bool:
    word = match.group("word").lower()
    before = text[max(0, match.start() - 12) : match.start()].lower()
    if word in ("pass", "pwd") and not before.endswith(("_", ".", "-")):
        return False  # only as part of a name (DB_PASS, MYSQL_PWD): `bypass`, `$PWD`
    if word == "key" and not before.rstrip("_- ").endswith(KEY_KINDS):
        return False  # `api_key`, `API key`, `private-key`, but not `primary key` or `monkey`
    if _is_placeholder(value) or value.startswith("="):
        return False  # `password == other` compares
    if match.group("v") is None:
        return True  # a quoted value
    if (value.isdigit() and len(value) < 6) or _is_reference(value, word):
        return False
    if match.group("sep") != ":" or match.group("kq"):
        return True
    # `password: x` is YAML or prose: a plain word mid-sentence is prose, unless someone's
    # own password is given ("my wifi password: bluesky").
    key_start = _key_start(text, match.start())
    return (
        _PLAIN_WORD.fullmatch(value) is None
        or _alone_on_line(text, key_start, match.end())
        or _POSSESSIVE.search(text[max(0, key_start - 40) : key_start]) is not None
    )


def _accept_flag(text: str, match: re.Match[str], value: str) -> bool:
    if _is_placeholder(value) or value.startswith("-"):
        return False
    if match.group("v") is None:
        return True
    word = match.group("word").lower()
    return _PLAIN_WORD.fullmatch(value) is None and not _is_reference(value, word)


def _accept_value(text: str, match: re.Match[str], value: str) -> bool:
    return not _is_placeholder(value)


def _accept_header(text: str, match: re.Match[str], value: str) -> bool:
    """`Authorization: Bearer <token>` holds a token; `Authorization: Bearer` alone not."""
    return not _is_placeholder(value) and _PLAIN_WORD.fullmatch(value) is None


def _accept_word_start(text: str, match: re.Match[str], value: str) -> bool:
    return match.start() == 0 or not text[match.start() - 1].isalnum()


def _accept_random(text: str, match: re.Match[str], value: str) -> bool:
    return _looks_random(value)


# --- private key blocks ---------------------------------------------------------------

_PEM_LINE = re.compile(r"[A-Za-z0-9+/=]{16,128}|[A-Za-z-]{1,40}: [^\n]{0,200}")
_PEM_MAX = 20_000


def _pem_end(text: str, end: int) -> int:
    """The end of a private key block: its END line, or else its last base64 line."""
    marker = text.find("-----END", end, end + _PEM_MAX)
    if marker >= 0:
        close = text.find("-----", marker + 8, marker + 80)
        return close + 5 if close >= 0 else marker + 8
    last, pos = end, end
    while pos < len(text) and pos - end < _PEM_MAX:
        newline = text.find("\n", pos)
        line_end = len(text) if newline < 0 else newline
        line = text[pos:line_end].strip()
        if line and _PEM_LINE.fullmatch(line) is None:
            break
        if line:
            last = line_end
        pos = line_end + 1
    return last


# --- the patterns ---------------------------------------------------------------------

_T = "A-Za-z0-9_-"  # the characters of a URL-safe token
# The words that make `key` a credential's name: `api_key`, `signing-key`, `App Key`.
KEY_KINDS = ("api", "access", "secret", "private", "auth", "signing", "encryption", "master", "app")
_KEYWORD = (
    r"(?P<word>pass(?:word|wd|phrase)?|pwd|secret|token|"
    + "|".join(rf"{kind}[_-]?key" for kind in KEY_KINDS)
    + ")"
)
_QUOTED = r"\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'"
_VALUE_GROUPS = ("dq", "sq", "v")
_ASSIGNMENT = (
    r"(?P<kq>[\"']?)[ \t]{0,4}(?P<sep>:=|=>|[:=])[ \t]{0,4}"
    rf"(?:{_QUOTED}|(?P<v>[^\s\"'`;]{{1,256}}))"
)
# One pattern per key word: a pattern starting with a literal is searched much faster
# than one starting with an alternation.
_ASSIGNMENT_WORDS = (r"pass(?:word|wd|phrase)?", "pwd", "secret", "token", "key")
_XML = r"<[a-z0-9_:.-]{0,40}" + _KEYWORD + r">(?P<v>[^<\n]{1,256})</"
_FLAG = (
    r"(?<![a-z0-9_-])--[a-z0-9-]{0,30}(?P<word>password|passwd|passphrase|token|secret|"
    rf"api-?key)[ \t]{{1,4}}(?:{_QUOTED}|(?P<v>[^\s\"'`;|&]{{1,256}}))"
)
_AUTHORIZATION = (
    r"authorization[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?(?:(?:bearer|token|bot|basic)[ \t]{1,4})?"
    r"(?P<v>[a-z0-9._~+/-]{6,4096}={0,3})"
)
_AWS_SECRET = (
    r"aws_?secret_?(?:access_?)?key[\"']?[ \t]{0,4}(?::=|=>|[:=])[ \t]{0,4}[\"']?"
    r"(?P<v>[a-z0-9/+=]{40})"
)
_PRIVATE_KEY = r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_TOKEN_SHAPE = re.compile(r"\.[a-z0-9_-]{6,7}\.")


def _token(name: str, regex: str, *needles: str, accept: Accept | None = None) -> SecretPattern:
    return SecretPattern(name, re.compile(regex), needles, accept=accept)


SECRET_PATTERNS: tuple[SecretPattern, ...] = (
    _token("a Slack token", r"xox[abposre](?:\.xox[abp])?-[A-Za-z0-9-]{10,250}", "xox"),
    _token("a Slack app token", r"xapp-\d{1,4}-[A-Za-z0-9-]{10,250}", "xapp-"),
    SecretPattern(
        "a Slack webhook URL",
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<p>[A-Za-z0-9_/-]{20,300})"
        ),
        ("hooks.slack.com/",),
        groups=("p",),
    ),
    SecretPattern(
        "a Discord webhook URL",
        re.compile(rf"discord(?:app)?\.com/api/webhooks/(?P<p>\d{{15,22}}/[{_T}]{{30,120}})"),
        ("/api/webhooks/",),
        groups=("p",),
    ),
    SecretPattern(
        "a Discord bot token",
        re.compile(rf"(?<![.{_T}])[{_T}]{{23,28}}\.[{_T}]{{6,7}}\.[{_T}]{{27,40}}(?![{_T}])"),
        (".",),
        gate=_TOKEN_SHAPE,
    ),
    # No needles: a case-sensitive pattern starting with a literal `A` is scanned as
    # fast as a needle would be.
    _token(
        "an AWS access key",
        r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA)[0-9A-Z]{16}(?![A-Z0-9])",
        accept=_accept_word_start,
    ),
    SecretPattern("an AWS secret key", re.compile(_AWS_SECRET), ("aws",), True, ("v",)),
    _token(
        "a GitHub token",
        r"g(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})",
        "gh",
        "github_pat_",
    ),
    _token("a GitLab token", rf"glpat-[{_T}]{{20,64}}", "glpat-"),
    _token(
        "an OpenAI-style API key",
        rf"(?<![{_T}])sk-(?:proj-|svcacct-|admin-|ant-[a-z]{{1,8}}\d\d-)?[{_T}]{{20,400}}",
        "sk-",
        accept=_accept_random,
    ),
    _token(
        "a Stripe key",
        r"(?<![A-Za-z0-9_])(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,255}|"
        r"whsec_[A-Za-z0-9]{24,255})",
        "_live_",
        "_test_",
        "whsec_",
    ),
    _token("a Google API key", rf"AIza[{_T}]{{35}}", "aiza"),
    _token("a Google OAuth client secret", rf"GOCSPX-[{_T}]{{28}}", "gocspx-"),
    _token("an npm token", r"npm_[A-Za-z0-9]{36}", "npm_"),
    _token("a PyPI token", rf"pypi-AgEIcHlwaS5vcmc[{_T}]{{50,400}}", "pypi-ageichlwas5vcmc"),
    _token("a Hugging Face token", r"(?<![A-Za-z0-9_])hf_[A-Za-z]{34}(?![A-Za-z0-9])", "hf_"),
    _token("a SendGrid key", rf"SG\.[{_T}]{{22}}\.[{_T}]{{43}}", "sg."),
    _token("a Telegram bot token", rf"(?<!\d)\d{{8,10}}:AA[{_T}]{{33}}(?![{_T}])", ":aa"),
    _token(
        "a JSON Web Token",
        rf"(?<![{_T}])eyJ[{_T}]{{5,4000}}\.eyJ[{_T}]{{5,8000}}\.[{_T}]{{0,4000}}",
        "eyj",
    ),
    SecretPattern("a private key", re.compile(_PRIVATE_KEY), ("private key",), extend=_pem_end),
    SecretPattern(
        "credentials in a URL",
        re.compile(r"://[^\s:/@?#]{0,128}:(?P<pw>[^\s/?#]{1,256})@"),
        ("://",),
        groups=("pw",),
        accept=_accept_value,
    ),
    SecretPattern(
        "an authorization header",
        re.compile(_AUTHORIZATION),
        ("authorization",),
        True,
        ("v",),
        _accept_header,
    ),
    SecretPattern(
        "a bearer token",
        re.compile(r"(?<![a-z0-9_-])bearer[ \t]{1,4}(?P<v>[a-z0-9._~+/-]{12,4096}={0,3})"),
        ("bearer",),
        True,
        ("v",),
        _accept_random,
    ),
    SecretPattern(
        "a password in a command-line flag",
        re.compile(_FLAG),
        ("--",),
        True,
        _VALUE_GROUPS,
        _accept_flag,
    ),
    *(
        SecretPattern(
            "a password or secret assignment",
            re.compile(f"(?P<word>{word}){_ASSIGNMENT}"),
            ("pass" if word.startswith("pass") else word,),
            True,
            _VALUE_GROUPS,
            _accept_assignment,
        )
        for word in _ASSIGNMENT_WORDS
    ),
    SecretPattern(
        "a password or secret assignment",
        re.compile(_XML),
        ("</",),
        True,
        ("v",),
        lambda text, match, value: not _is_placeholder(value),
    ),
)
