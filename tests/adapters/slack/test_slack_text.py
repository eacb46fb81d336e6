"""Slack text at the edge: what the core reads from Slack, and what Slack shows of replies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.slack.adapter import SlackAdapter
from adapters.slack.text import (
    SLACK_TEXT_LIMIT,
    escape,
    fit_mrkdwn,
    for_stream,
    mentioned_user_ids,
    renders_alike,
    to_mrkdwn,
    to_plain,
    unescape,
)
from bot.split import split_message

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
)
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


# --- one message each ----------------------------------------------------------------------


def slack_length() -> SlackAdapter:
    return SlackAdapter(bot_token="xoxb-1", app_token="xapp-1")


def test_the_cores_split_keeps_escape_heavy_text_within_slacks_limit() -> None:
    adapter = slack_length()
    text = "\n\n".join(f"part {i}: " + "a & b <c> " * 60 for i in range(12))
    assert len(text) < 8000 < len(to_mrkdwn(text))
    chunks = split_message(text, adapter.max_message_chars, adapter.text_length)
    posted = [fit_mrkdwn(chunk) for chunk in chunks]
    assert len(chunks) > 2
    assert all(len(message) <= adapter.max_message_chars for message in posted)
    assert posted == [to_mrkdwn(chunk) for chunk in chunks]  # nothing cut
    assert " ".join(unescape(m) for m in posted).split() == text.split()


@given(st.text(alphabet="ab &<>*_\n", max_size=300), st.integers(min_value=4, max_value=80))
def test_a_text_that_does_not_fit_is_cut_with_a_mark(text: str, limit: int) -> None:
    message = fit_mrkdwn(text, limit)
    assert len(message) <= limit
    if len(to_mrkdwn(text)) <= limit:
        assert message == to_mrkdwn(text)
    else:
        assert message.endswith(" …")


def test_a_long_text_is_cut_at_a_word_break() -> None:
    text = "cats & dogs " * 500
    message = fit_mrkdwn(text)
    assert SLACK_TEXT_LIMIT - 20 < len(message) <= SLACK_TEXT_LIMIT
    kept = unescape(message.removesuffix(" …")).split()
    assert message.endswith(" …") and kept == text.split()[: len(kept)]  # no word cut


# --- streamed text ----------------------------------------------------------------------


@given(st.text(), st.text())
def test_streamed_pieces_join_to_the_whole(first: str, second: str) -> None:
    assert for_stream(first) + for_stream(second) == for_stream(first + second)


@pytest.mark.parametrize(
    "text", ["<!channel> now", "<@UBOB> look", "@here deploy", "&lt;!here&gt;"]
)
def test_a_streamed_text_cannot_ping_or_mention(text: str) -> None:
    streamed = for_stream(text)
    for token in ("<!", "<@", "@here", "&lt;"):
        assert token not in streamed


@pytest.mark.parametrize(
    ("text", "alike"),
    [
        ("The staging DB is pg-stage-2.", True),
        ("Note: it moved on Monday (see the wiki).", True),
        ("this is **important**", False),
        ("see [the runbook](https://wiki.example/run)", False),
        ("- first\n- second", False),
        ("cats & dogs", False),
        ("mail bob@example.com", False),
    ],
)
def test_only_text_without_markup_reads_alike_streamed_and_posted(text: str, alike: bool) -> None:
    assert renders_alike(text) is alike
    if alike:
        assert to_mrkdwn(text) == text
