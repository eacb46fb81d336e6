"""Topics of `remember that …` made without the model: readable, never generic, never an
unasked replacement of another note."""

from __future__ import annotations

import re

from adapters.base import APPROVE
from memory import Scope
from tests.support.harness import Harness

CHANNEL = Scope.parse("channel:test/C1")
HASHED = re.compile(r"note-[0-9a-f]{6}")


def topic_of(card_text: str) -> str:
    match = re.search(r"^Topic: `([^`]+)`$", card_text, re.MULTILINE)
    assert match is not None, card_text
    return match.group(1)


async def remember(harness: Harness, fact: str) -> str:
    """Say `remember that FACT`, approve the card, and return the card's topic."""
    await harness.say(f"remember that {fact}")
    card = harness.adapter.cards[-1]
    await harness.react(card, APPROVE)
    assert card.current.startswith("✅ "), card.current
    return topic_of(card.text)


async def test_offline_topics_spell_accents_and_apostrophes_as_letters(
    harness: Harness,
) -> None:
    await harness.ollama.down()
    assert await remember(harness, "Zoë's café opens at 9") == "zoes-cafe-opens-9"
    assert await remember(harness, "the Straße near Łódź is closed") == "strasse-near-lodz-closed"


async def test_offline_facts_with_generic_or_foreign_words_all_survive(
    harness: Harness,
) -> None:
    await harness.ollama.down()
    facts = [
        "1",
        "1.",
        "note",
        "it",
        "東京のサーバーは落ちている",
        "大阪のサーバーは元気です",
        "the staging db host is pg-1 for now",
        "staging db host is pg-2 since monday",
    ]
    topics = [await remember(harness, fact) for fact in facts]

    assert len(set(topics)) == len(facts), topics
    assert all(HASHED.fullmatch(t) for t in topics[:6]), topics
    assert topics[6:] == ["staging-db-host-pg", "staging-db-host-pg-2"]
    notes = await harness.bot.notes.list_notes(CHANNEL)
    assert sorted(n.body for n in notes) == sorted(facts)
    assert not any(card.text.startswith("📝 Update") for card in harness.adapter.cards)

    # The same fact again is the same note, not a copy of it.
    assert await remember(harness, facts[6]) == "staging-db-host-pg"
    assert len(await harness.bot.notes.list_notes(CHANNEL)) == len(facts)


async def test_an_unusable_model_topic_is_derived_from_the_text(harness: Harness) -> None:
    harness.script_title("note", "Tokyo's server is down")
    first = await remember(harness, "the tokyo server is down")
    harness.script_title("東京", "Osaka's server is fine")
    second = await remember(harness, "the osaka server is fine")
    harness.script_title("1", "1")
    third = await remember(harness, "1")
    assert (first, second) == ("tokyo-server-down", "osaka-server-fine")
    assert HASHED.fullmatch(third)
    assert [c.text.splitlines()[3] for c in harness.adapter.cards] == [
        "Summary: Tokyo's server is down",
        "Summary: Osaka's server is fine",
        "Summary: 1",
    ]

    # A topic the model chose is its judgement that this is the same subject: an update.
    harness.script_title("tokyo-server-down", "Tokyo's server is up again")
    await harness.say("remember that the tokyo server is up again")
    card = harness.adapter.cards[-1]
    assert card.text.startswith("📝 Update") and "Replaces: Tokyo's server is down" in card.text


async def test_remember_that_with_nothing_after_it_explains_and_makes_no_card(
    harness: Harness,
) -> None:
    for text in ("remember that", "Remember that.", "please remember that …"):
        await harness.say(text)
        assert harness.adapter.replies[-1] == (
            "Tell me what to remember, e.g. `remember that the staging db is db-2`."
        )
    assert harness.adapter.cards == []
    assert harness.ollama.chat_requests == []
