"""A PostgreSQL connection string read as libpq reads it, to show it and to scrub it: the
URL form (`postgresql://user:password@host:5432/db?password=…&sslpassword=…`) and the
keyword/value form (`host=… password='a b'`), with every password in it masked.

Plain Python, not the driver's parser (`psycopg.conninfo.conninfo_to_dict`, which
tests/memory/test_conninfo.py holds this reading against): the settings need the password
for the log filter before an engine is chosen, and the driver's parser quotes the password
in its own errors (a `%` not followed by two hex digits). What libpq would refuse or
misread in a way that quotes a password is said here instead, in words that show none.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field

from memory.policy.redaction import MIN_SECRET_CHARS

MASK = "***"
# The settings of libpq that hold a secret: the server's password, and the TLS key's.
SECRET_KEYS = frozenset({"password", "sslpassword"})
EXAMPLE = "postgresql://user:password@host:5432/dbname"
_POSTGRESQL = re.compile(r"postgres(?:ql)?://")  # libpq's prefixes, in lower case only
# Any scheme is read as a URL, so another database's URL is masked as well.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})|%00")
_SPACE = " \t\n\r\f\v"  # C's isspace(), as libpq splits keyword/value strings

_ESCAPE_PROBLEM = (
    "its password has a % that is not followed by two hex digits (or a %00, which libpq "
    "refuses): write a % that is part of the password as %25"
)
_AT_PROBLEM = (
    "it has an @ that is not the one before the host: write an @, / or ? that is part of "
    "the user name, the password or the database name as %40, %2F or %3F"
)
_AMPERSAND_PROBLEM = "a query parameter of it has no =: write an & that is part of a value as %26"


@dataclass(frozen=True, slots=True)
class Conninfo:
    """A connection string as libpq reads it. `shown` masks every password, for messages
    and logs; `bare` leaves them out, for a command a person runs (which reads the
    password from PGPASSWORD or ~/.pgpass); `secrets` holds each password as written and
    as libpq decodes it; `problem` says what libpq would refuse or misread in it."""

    text: str = field(repr=False)
    shown: str
    bare: str
    secrets: tuple[str, ...] = field(repr=False)
    problem: str | None = None

    def scrub(self, message: str) -> str:
        """`message` (the driver's, about this connection string) with the string itself
        and each of its passwords masked wherever it quotes them."""
        if self.text:
            message = message.replace(self.text, self.shown)
        for secret in sorted(self.secrets, key=len, reverse=True):
            for quote in "\"'":
                message = message.replace(f"{quote}{secret}{quote}", f"{quote}{MASK}{quote}")
            if len(secret) >= MIN_SECRET_CHARS:
                message = message.replace(secret, MASK)
        return message


@dataclass(frozen=True, slots=True)
class _Secret:
    """Where one password is in the text: its value, and what leaving it out removes."""

    start: int
    end: int
    cut_start: int
    cut_end: int


def read_conninfo(text: str) -> Conninfo:
    """`text` read as libpq reads a connection string: a URL when it starts with a scheme,
    else keyword/value pairs."""
    scheme = _SCHEME.match(text)
    spans, problem = (
        _url_secrets(text, scheme.end()) if scheme is not None else _keyword_secrets(text)
    )
    secrets: set[str] = set()
    for span in spans:
        raw = text[span.start : span.end]
        secrets.add(raw)
        if scheme is not None:
            secrets.add(urllib.parse.unquote(raw))
        else:
            secrets.add(_unquoted(raw))
    return Conninfo(
        text,
        shown=_rebuilt(text, [(s.start, s.end, MASK) for s in spans]),
        bare=_rebuilt(text, [(s.cut_start, s.cut_end, "") for s in spans]),
        secrets=tuple(sorted(s for s in secrets if s)),
        problem=problem,
    )


def url_problem(text: str) -> str | None:
    """None for a postgresql:// URL; else what is wrong, quoting nothing of `text` but its
    scheme (a keyword/value string or a mistyped URL may hold a password anywhere)."""
    if _POSTGRESQL.match(text):
        return None
    scheme = _SCHEME.match(text)
    if scheme is not None:
        return f"a postgresql:// URL, not {scheme.group()}: write it as {EXAMPLE}"
    if "=" in text:
        return f"a postgresql:// URL, not a keyword/value connection string: write it as {EXAMPLE}"
    return f"a postgresql:// URL, such as {EXAMPLE}"


def _url_secrets(text: str, start: int) -> tuple[list[_Secret], str | None]:
    """The passwords of a URL whose authority starts at `start`: in the user information
    (up to the first @ before any /, as libpq reads it) and in the query."""
    spans: list[_Secret] = []
    problem = None
    stop = next((i for i in range(start, len(text)) if text[i] in "@/"), len(text))
    at = stop if stop < len(text) and text[stop] == "@" else None
    query = text.find("?", start if at is None else at + 1)
    # A later @ before the query: an @, / or ? in the user information that libpq reads as
    # part of the host, the port or the database name, and quotes in its errors.
    last_at = text.rfind("@", start if at is None else at + 1, len(text) if query < 0 else query)
    if last_at >= 0 and text.find(":", start, last_at) >= 0:
        at, problem = last_at, _AT_PROBLEM
        query = text.find("?", at + 1)
    if at is not None and (colon := text.find(":", start, at)) >= 0:
        spans.append(_Secret(colon + 1, at, colon, at))
        if _BAD_ESCAPE.search(text, colon + 1, at):
            problem = _ESCAPE_PROBLEM
    if query >= 0:
        query_spans, query_problem = _query_secrets(text, query + 1)
        spans += query_spans
        problem = problem or query_problem
    return spans, problem


def _query_secrets(text: str, start: int) -> tuple[list[_Secret], str | None]:
    """The `password=` and `sslpassword=` values of a URL's query, which starts at
    `start`; a part without = after one of them (an & in the password) is part of it."""
    spans: list[_Secret] = []
    problem = None
    following: int | None = None  # where in `spans` the password before this part is
    begin = start
    while begin < len(text):  # libpq takes an empty query, and an & at the end
        end = text.find("&", begin)
        end = len(text) if end < 0 else end
        equals = text.find("=", begin, end)
        if equals < 0:
            problem = problem or _AMPERSAND_PROBLEM
            if following is not None:
                last = spans[following]
                cut_end = end + 1 if last.cut_end > last.end and end < len(text) else end
                spans[following] = _Secret(last.start, end, last.cut_start, cut_end)
                # This part alone too: libpq quotes it as a parameter of its own.
                spans.append(_Secret(begin, end, begin, end))
        else:
            secret = urllib.parse.unquote(text[begin:equals]) in SECRET_KEYS
            following = len(spans) if secret else None
            if secret:
                # Left out with the & before it, or (the first one) the ? or & after it.
                first = text[begin - 1] == "?"
                cut_start, cut_end = (
                    (begin, end + 1) if first and end < len(text) else (begin - 1, end)
                )
                spans.append(_Secret(equals + 1, end, cut_start, cut_end))
                if _BAD_ESCAPE.search(text, equals + 1, end):
                    problem = _ESCAPE_PROBLEM
        begin = end + 1
    return spans, problem


def _keyword_secrets(text: str) -> tuple[list[_Secret], str | None]:
    """The `password` and `sslpassword` values of keyword/value pairs, split as libpq
    splits them: quoted values may hold spaces, and a backslash escapes one character."""
    spans: list[_Secret] = []
    problem = None
    following: int | None = None  # where in `spans` an unquoted password just before is
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _SPACE:
            i += 1
        if i >= n:
            return spans, problem
        key_start = i
        while i < n and text[i] != "=" and text[i] not in _SPACE:
            i += 1
        key, key_end = text[key_start:i], i
        while i < n and text[i] in _SPACE:
            i += 1
        if i >= n or text[i] != "=":
            # libpq quotes this word as a keyword without =: after an unquoted password
            # it is that password's rest, written without quotes around a space.
            problem = problem or "a word of it has no =: quote a value with a space: 'a b'"
            if following is not None:
                last = spans[following]
                spans[following] = _Secret(last.start, key_end, last.cut_start, key_end)
                # This word alone too: libpq quotes it as a keyword of its own.
                spans.append(_Secret(key_start, key_end, key_start, key_end))
            continue
        i += 1
        while i < n and text[i] in _SPACE:
            i += 1
        value_start = i
        quoted = i < n and text[i] == "'"
        if quoted:
            i += 1
        while i < n and (text[i] != "'" if quoted else text[i] not in _SPACE):
            i += 2 if text[i] == "\\" else 1
        i = min(i, n)
        if quoted and i >= n:
            problem = "a quoted value of it has no closing '"
        elif quoted:
            i += 1  # the closing quote
        following = len(spans) if key in SECRET_KEYS and not quoted else None
        if key in SECRET_KEYS:
            cut_start = key_start
            while cut_start > 0 and text[cut_start - 1] in _SPACE:
                cut_start -= 1
            spans.append(_Secret(value_start, i, cut_start, i))


def _unquoted(value: str) -> str:
    """A keyword/value string's value as libpq reads it: quotes off, escapes undone."""
    if value.startswith("'"):
        value = value[1:-1] if len(value) > 1 and value.endswith("'") else value[1:]
    return re.sub(r"\\(.)", r"\1", value, flags=re.DOTALL)


def _rebuilt(text: str, replacements: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end) span replaced, the spans taken in order."""
    parts, at = [], 0
    for start, end, new in sorted(replacements):
        if start < at:  # within a span already replaced
            continue
        parts += [text[at:start], new]
        at = end
    return "".join([*parts, text[at:]])
