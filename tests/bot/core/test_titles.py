"""The topic and summary on a `remember that …` card: the model's where they come from the
person's words, lorebot's own where they do not (a small model's nonsense never reaches a
card)."""

from __future__ import annotations

import re

import pytest

from bot.core.titles import from_their_words
from tests.support.harness import Harness

FACT = "the staging database is pg-stage-2 on port 5432"


async def card_title(harness: Harness, topic: str, summary: str) -> tuple[str, str]:
    """The topic and summary on the card for `remember that FACT`, when the model drafts
    `topic` and `summary`."""
    harness.script_title(topic, summary)
    await harness.say(f"remember that {FACT}")
    text = harness.adapter.cards[-1].text
    found = re.search(r"^Topic: `([^`]+)`\nSummary: (.*)$", text, re.MULTILINE)
    assert found is not None, text
    return found.group(1), found.group(2)


async def test_a_summary_of_numbers_nobody_wrote_gives_way_to_the_persons_words(
    harness: Harness,
) -> None:
    # What SmolLM2-135M drafted for this very note.
    assert await card_title(harness, "staging-db", "1,380,962 ,7/15 / 2020 2 :") == (
        "staging-db",
        FACT,
    )


async def test_a_topic_and_summary_of_someone_elses_words_give_way_to_lorebots_own(
    harness: Harness,
) -> None:
    assert await card_title(harness, "2020-7-15", "The user wants a reminder") == (
        "staging-database-pg-stage",
        FACT,
    )


async def test_a_draft_in_the_persons_words_is_kept_as_the_model_wrote_it(
    harness: Harness,
) -> None:
    assert await card_title(harness, "staging-db", "Staging DB is pg-stage-2, port 5,432") == (
        "staging-db",
        "Staging DB is pg-stage-2, port 5,432",
    )


@pytest.mark.parametrize(
    ("drafted", "theirs"),
    [
        ("Staging DB host and port", True),  # half of the words are the person's
        ("Staging databases", True),  # another ending of the same word
        ("port 5,432", True),  # the same number, written with a separator
        ("pg-stage-2", True),
        ("The user wants a reminder", False),  # none of the words are the person's
        ("staging database on port 5433", False),  # a number the person never wrote
        ("2020-7-15", False),
        ("...", False),  # nothing of anyone's
    ],
)
def test_a_draft_comes_from_the_persons_words_by_its_numbers_and_most_of_its_words(
    drafted: str, theirs: bool
) -> None:
    assert from_their_words(drafted, FACT) is theirs
