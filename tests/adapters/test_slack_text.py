"""Slack text at the edge: what the core reads from Slack, and what Slack shows of replies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.slack_text import (
    escape,
    mentioned_user_ids,
    split_for_slack,
    to_mrkdwn,
    to_plain,
    unescape,
)

NAMES = {"UBOB": "bob", "UCAROL": "Carol Danvers"}


def plain(text: str) -> str:
    return to_plain(text, bot_user_id="UBOT", names=NAMES)


# --- Slack to plain text ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slack", "expected"),
    [
        ("<@UBOT> where is the wiki?", "where is the wiki?"),
        ("<@UBOT>: deploy status", "deploy status"),
        ("hey <@UBOT>, what's up", "hey what's up"),
        ("can <@UBOT> help?", "can help?"),
        ("<@UBOT|lorebot> hi", "hi"),
        ("<@UBOT>", ""),
        ("<@UBOT> first line\nsecond line", "first line\nsecond line"),
    ],
)
def test_the_bots_own_mention_is_removed(slack: str, expected: str) -> None:
    assert plain(slack) == expected


@pytest.mark.parametrize(
    ("slack", "expected"),
    [
        ("ask <@UBOB>", "ask @bob"),
        ("ask <@UCAROL> and <@UBOB>", "ask @Carol Danvers and @bob"),
        ("ask <@UDAVE|dave>", "ask @dave"),
        ("ask <@UERIN>", "ask @UERIN"),
        ("ask <@WENTERPRISE>", "ask @WENTERPRISE"),
    ],
)
def test_other_mentions_show_display_names(slack: str, expected: str) -> None:
    assert plain(slack) == expected


@pytest.mark.parametrize(
    ("slack", "expected"),
    [
        ("see <#C024BE7LR|ops>", "see #ops"),
        ("see <#C024BE7LR>", "see #C024BE7LR"),
        ("see <#C024BE7LR|>", "see #C024BE7LR"),
        ("<!here> standup", "@here standup"),
        ("<!channel> and <!everyone>", "@channel and @everyone"),
        ("paging <!subteam^S0614TZR7|@oncall>", "paging @oncall"),
        ("paging <!subteam^S0614TZR7>", "paging @S0614TZR7"),
        ("on <!date^1392734382^{date_short}|Feb 18, 2014>", "on Feb 18, 2014"),
    ],
)
def test_channels_and_specials_read_naturally(slack: str, expected: str) -> None:
    assert plain(slack) == expected


@pytest.mark.parametrize(
    ("slack", "expected"),
    [
        ("<https://wiki.example/db|the wiki>", "the wiki (https://wiki.example/db)"),
        ("<https://wiki.example/db>", "https://wiki.example/db"),
        ("<https://wiki.example/|wiki.example>", "https://wiki.example/"),
        ("<http://a.io?x=1&amp;y=2|a &amp; b>", "a & b (http://a.io?x=1&y=2)"),
        ("mail <mailto:ops@example.com|ops@example.com>", "mail ops@example.com"),
        ("a &lt;b&gt; &amp;&amp; c &amp;lt;", "a <b> && c &lt;"),
    ],
)
def test_links_and_escapes_become_readable(slack: str, expected: str) -> None:
    assert plain(slack) == expected


def test_mentioned_user_ids_in_order_without_repeats() -> None:
    assert mentioned_user_ids("<@UBOB> <@UBOT|x> <@UBOB> <#C1> <!here>") == ["UBOB", "UBOT"]


# --- plain text to mrkdwn -----------------------------------------------------------------


def test_markup_characters_are_escaped() -> None:
    assert to_mrkdwn("if a < b && c > d") == "if a &lt; b &amp;&amp; c &gt; d"


@pytest.mark.parametrize(
    "text",
    ["<!channel>", "<!here>", "<!everyone>", "<!here|here>", "<!subteam^S1|@oncall>"],
)
def test_slack_specials_from_the_model_stay_literal(text: str) -> None:
    out = to_mrkdwn(f"ping {text} now")
    assert "<" not in out and ">" not in out
    assert unescape(out).replace("\u2060", "") == f"ping {text} now"


@pytest.mark.parametrize("word", ["@here", "@channel", "@everyone", "@HERE"])
def test_plain_broadcast_words_cannot_ping(word: str) -> None:
    out = to_mrkdwn(f"hey {word}, deploy time")
    assert word not in out
    assert out.replace("\u2060", "") == f"hey {word}, deploy time"  # looks the same


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("this is **important**", "this is *important*"),
        ("this is __important__", "this is *important*"),
        ("~~old~~ new", "~old~ new"),
        ("see [runbook](https://w.io/?a=1&b=2)", "see <https://w.io/?a=1&amp;b=2|runbook>"),
        ("# Summary\ntext", "*Summary*\ntext"),
        ("## **Steps**", "*Steps*"),
        ("- one\n- two\n  * nested", "• one\n• two\n  • nested"),
        ("> quoted line", "&gt; quoted line"),
        ("✅ Saved `staging-db`: pg <2>", "✅ Saved `staging-db`: pg &lt;2&gt;"),
    ],
)  # fmt: skip
def test_markdown_becomes_mrkdwn(markdown: str, mrkdwn: str) -> None:
    assert to_mrkdwn(markdown) == mrkdwn


def test_code_keeps_its_content() -> None:
    text = "run `**not bold** & <x>` then\n```\nif a < b:\n    print('**x**')  # @here\n```"
    out = to_mrkdwn(text)
    assert "`**not bold** &amp; &lt;x&gt;`" in out
    assert "```\nif a &lt; b:\n    print('**x**')  # @\u2060here\n```" in out


def test_a_link_label_cannot_smuggle_markup() -> None:
    out = to_mrkdwn("[<!channel>|x](https://a.io)")
    assert out == "<https://a.io|&lt;!channel&gt;/x>"


@given(st.text())
def test_model_text_never_becomes_a_ping_or_a_mention(text: str) -> None:
    out = to_mrkdwn(text)
    assert "<!" not in out and "<@" not in out and "<#" not in out
    for word in ("@here", "@channel", "@everyone"):
        assert word not in out.lower()


@given(st.text(alphabet=st.characters(blacklist_characters="[`*_~#-+>\x00\u2060")))
def test_without_markdown_the_text_survives_escaping(text: str) -> None:
    assert unescape(to_mrkdwn(text)).replace("\u2060", "") == text


@given(st.text())
def test_escape_round_trips(text: str) -> None:
    assert unescape(escape(text)) == text


# --- splitting ----------------------------------------------------------------------------


def test_short_text_is_one_message() -> None:
    assert split_for_slack("hello & bye") == ["hello &amp; bye"]


def test_escaping_that_overflows_the_limit_splits_at_breaks() -> None:
    text = "\n\n".join(f"part {i}: " + "a & b " * 30 for i in range(8))
    assert len(text) < 1600 < len(to_mrkdwn(text))
    chunks = split_for_slack(text, limit=1000)
    assert len(chunks) > 1 and all(len(chunk) <= 1000 for chunk in chunks)
    assert " ".join(unescape(c) for c in chunks).split() == text.split()
    assert all(chunk.startswith("part ") for chunk in chunks)


def test_a_single_overlong_word_is_cut() -> None:
    chunks = split_for_slack("x" * 50, limit=20)
    assert all(len(chunk) <= 20 for chunk in chunks)
    assert "".join(chunks) == "x" * 50
