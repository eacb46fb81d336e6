"""`read_conninfo` finds the password where libpq does (checked against libpq's own parser,
`psycopg.conninfo.conninfo_to_dict`), in the URL's user information, in `password=` and
`sslpassword=`, and in keyword/value strings with quotes and escapes; what it shows holds
none; what libpq would quote a password in its error for is a problem said without it;
and libpq's own errors, scrubbed, hold neither the password nor the URL."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from memory.policy.conninfo import read_conninfo, url_problem

READABLE = {
    "postgresql://bot:Plain-Hunter-1@db:5432/lore": "Plain-Hunter-1",
    "postgres://bot:s%40cret%25Hunter-2@db/lore": "s@cret%Hunter-2",
    "postgresql://bot:Mark?Hunter#3@db/lore?sslmode=disable": "Mark?Hunter#3",
    "postgresql://bot@db/lore?password=Query-Hunter-4": "Query-Hunter-4",
    "postgresql://bot@db/lore?sslmode=disable&pass%77ord=Q%41-Hunter-5&connect_timeout=3": (
        "QA-Hunter-5"
    ),
    "host=db port=5432 user=bot password=Words-Hunter-6 dbname=lore": "Words-Hunter-6",
    "host=db password = 'a b\\' Hunter\\\\7' dbname=lore": "a b' Hunter\\7",
    "host=db password=a\\ Hunter-8": "a Hunter-8",
}


@pytest.mark.parametrize("text", READABLE)
def test_the_password_is_the_one_libpq_reads_and_is_never_shown(text: str) -> None:
    password = READABLE[text]
    assert conninfo_to_dict(text)["password"] == password
    conninfo = read_conninfo(text)
    assert password in conninfo.secrets and conninfo.problem is None
    for shown in (conninfo.shown, conninfo.bare, repr(conninfo)):
        assert "Hunter" not in shown, shown
    assert "***" in conninfo.shown
    assert "password" not in conninfo_to_dict(conninfo.bare)  # the rest as it was
    assert {k: v for k, v in conninfo_to_dict(conninfo.bare).items()} == {
        k: v for k, v in conninfo_to_dict(text).items() if k != "password"
    }


def test_the_tls_keys_password_is_a_secret_too() -> None:
    conninfo = read_conninfo("postgresql://bot@db/lore?sslpassword=Key-Hunter-9")
    assert conninfo.secrets == ("Key-Hunter-9",)
    assert conninfo.shown == "postgresql://bot@db/lore?sslpassword=***"


# What libpq refuses or misreads in a way that quotes (part of) the password.
MISREAD = {
    "postgresql://bot:Esc%zzHunter@db/lore": "two hex digits",
    "postgresql://bot:Nul%00Hunter@db/lore": "%00",
    "postgresql://bot@db/lore?password=Esc%zHunter": "two hex digits",
    "postgresql://bot:At@Hunter@db/lore": "an @ that is not the one before the host",
    "postgresql://bot:Slash/Hunter@db/lore": "an @ that is not the one before the host",
    "postgresql://bot@db/lore?password=Amp&Hunter&sslmode=disable": "write an & that is",
    "host=db password=Space Hunter": "quote a value with a space",
    "host=db password='Open Hunter": "no closing '",
}


@pytest.mark.parametrize("text", MISREAD)
def test_what_libpq_would_quote_the_password_for_is_said_without_it(text: str) -> None:
    conninfo = read_conninfo(text)
    assert conninfo.problem is not None and MISREAD[text] in conninfo.problem
    assert "Hunter" not in conninfo.problem + conninfo.shown + conninfo.bare
    try:
        conninfo_to_dict(text)
    except psycopg.ProgrammingError as exc:
        assert "Hunter" not in conninfo.scrub(str(exc)), str(exc)


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://bot:Typo-Hunter@[127.0.0.1:5432/lore",
        "postgresql://bot:Typo-Hunter@[127.0.0.1]5432/lore",
        "postgresql://bot:Typo-Hunter@[]:5432/lore",
        "POSTGRESQL://bot:Typo-Hunter@127.0.0.1/lore",
    ],
)
def test_a_whole_url_that_libpq_quotes_is_scrubbed(text: str) -> None:
    with pytest.raises(psycopg.ProgrammingError) as raised:
        conninfo_to_dict(text)
    assert text in str(raised.value)  # libpq's own words hold the password
    scrubbed = read_conninfo(text).scrub(str(raised.value))
    assert "Hunter" not in scrubbed and "bot:***@" in scrubbed


def test_a_short_password_is_scrubbed_only_where_quoted() -> None:
    conninfo = read_conninfo("postgresql://bot:pw@db/lore")
    assert conninfo.scrub('bad "pw" for password') == 'bad "***" for password'


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("postgresql://bot:Right-Hunter@db/lore", None),
        ("postgres://bot@db/lore", None),
        ("mysql://bot:Other-Hunter@db/lore", "not mysql://"),
        ("POSTGRESQL://bot:Upper-Hunter@db/lore", "not POSTGRESQL://"),
        ("host=db password=Words-Hunter", "not a keyword/value connection string"),
        ("Plain-Hunter", "such as postgresql://"),
    ],
)
def test_a_string_that_is_no_url_is_refused_quoting_none_of_it(text: str, said: str | None) -> None:
    problem = url_problem(text)
    if said is None:
        assert problem is None
    else:
        assert problem is not None and said in problem and "Hunter" not in problem
