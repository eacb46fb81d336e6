"""Text at the Discord edge: mention markup in, the 2,000-character limit out."""

from __future__ import annotations

import pytest

from adapters.discord.text import EMPTY_REPLY, MAX_MESSAGE_CHARS, clip, plain_text

BOT = 900
ALICE = 101
ROLE = 300
BOT_ROLE = 301
CHANNEL = 500
NAMES = {ALICE: "Alice Liddell", BOT: "lorebot"}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"<@{BOT}> what is the VPN host?", "what is the VPN host?"),
        (f"<@!{BOT}> what is the VPN host?", "what is the VPN host?"),
        (f"<@{BOT}>, remember that lunch is at noon", "remember that lunch is at noon"),
        (f"<@{BOT}>: help", "help"),
        (f"hey <@{BOT}> what's up", "hey what's up"),
        (f"thanks <@{BOT}>", "thanks"),
        (f"<@&{BOT_ROLE}> ping", "ping"),
    ],
)
def test_the_bots_own_mention_is_removed(content: str, expected: str) -> None:
    assert plain_text(content, remove_users={BOT}, remove_roles={BOT_ROLE}) == expected


def test_other_mentions_are_shown_by_name() -> None:
    text = plain_text(
        f"<@{BOT}> ask <@{ALICE}> or <@!{ALICE}> in <#{CHANNEL}>, cc <@&{ROLE}> <:party:123>",
        remove_users={BOT},
        users=NAMES,
        roles={ROLE: "oncall"},
        channels={CHANNEL: "ops"},
    )
    assert text == "ask @Alice Liddell or @Alice Liddell in #ops, cc @oncall :party:"


def test_unknown_mentions_are_named_as_unknown_not_as_raw_ids() -> None:
    text = plain_text("<@42> <@&43> <#44> <a:dance:45>", remove_users={BOT})
    assert text == "@unknown-user @unknown-role #unknown-channel :dance:"


def test_line_breaks_and_everyone_survive_as_plain_text() -> None:
    content = f"<@{BOT}> remember that:\n- step one\n- step two @everyone"
    assert plain_text(content, remove_users={BOT}) == (
        "remember that:\n- step one\n- step two @everyone"
    )


def test_clip_shortens_an_edit_to_one_message() -> None:
    assert clip("short") == "short"
    clipped = clip("word " * 500)
    assert len(clipped) <= MAX_MESSAGE_CHARS and clipped.endswith("…")
    assert clip("  ") == EMPTY_REPLY
