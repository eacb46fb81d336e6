"""The topic and summary on a `remember that …` card: drafted by the model when it is up
and its draft comes from the person's words, else lorebot's own draft from the text.

A drafted topic or summary comes from the person's words when every number in it is one
the person wrote (a small model that invents "1,380,962 ,7/15 / 2020" writes numbers
nobody said), and at least half of its other words are theirs, leaving out words such as
"the" or "is". Words are compared without case or accents, by their first five letters,
so "deploys" is the person's "deployed"; "5,432" is the number 5432. A draft with no such
word or number says nothing of theirs. Each of the two is checked, and replaced, alone.
"""

from __future__ import annotations

import logging
import re
import unicodedata

from pydantic import BaseModel

from bot.model.client import Model, ModelUnavailable
from bot.model.structured import InvalidModelOutput, ask_structured
from memory.ranking import ENGLISH_STOPWORDS
from memory.types import (
    GENERIC_WORDS,
    SUMMARY_MAX_CHARS,
    hashed_topic,
    is_generic,
    slug_words,
    slugify,
)

_log = logging.getLogger(__name__)

# A number's digits, or a word's letters, after case and accents are dropped.
_TERM = re.compile(r"\d+|[^\W\d_]+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_APOSTROPHE_IN_WORD = re.compile(r"(?<=\w)['’](?=\w)")
STEM_CHARS = 5
MIN_SHARE = 0.5  # of a draft's words that must be the person's


class NoteTitle(BaseModel):
    """What the model proposes as a note's topic and summary (structured output)."""

    topic: str
    summary: str


def _terms(text: str) -> tuple[set[str], set[str]]:
    """The numbers and the words (all but the commonest) of `text`, as they are compared."""
    plain = _APOSTROPHE_IN_WORD.sub("", _THOUSANDS.sub("", text)).casefold()
    bare = "".join(c for c in unicodedata.normalize("NFKD", plain) if not unicodedata.combining(c))
    terms = _TERM.findall(bare)
    numbers = {t for t in terms if t.isdigit()}
    words = {t for t in terms if not t.isdigit() and t not in ENGLISH_STOPWORDS}
    return numbers, words


def from_their_words(drafted: str, text: str) -> bool:
    """Whether `drafted` (a topic or summary) comes from the person's `text`: every number
    in it is one they wrote, and at least half of its words are theirs (module docstring)."""
    numbers, words = _terms(drafted)
    their_numbers, their_words = _terms(text)
    if not (numbers or words) or not numbers <= their_numbers:
        return False
    stems = {word[:STEM_CHARS] for word in their_words}
    theirs = sum(word[:STEM_CHARS] in stems for word in words)
    return not words or theirs >= MIN_SHARE * len(words)


def derived_topic(text: str) -> str:
    """A topic without the model: the first four words of `text` that name something, or a
    hash of the text when none does (only numbers, or a script slugs cannot spell)."""
    words = [w for w in dict.fromkeys(slug_words(text)) if w not in GENERIC_WORDS][:4]
    return hashed_topic(text) if is_generic(words) else slugify(" ".join(words))


def derived_summary(text: str) -> str:
    """A summary without the model: the first sentence of `text`, cut to fit."""
    first = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0]
    limit = min(120, SUMMARY_MAX_CHARS)
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def fallback_title(text: str) -> NoteTitle:
    """Topic and summary without the model: the first content words and the first sentence."""
    return NoteTitle(topic=derived_topic(text), summary=derived_summary(text))


async def draft_title(model: Model, text: str) -> tuple[NoteTitle, bool]:
    """Topic and summary for a note of `text`: the model's (structured output, one retry)
    where they come from the person's words, else lorebot's own; and whether the topic was
    derived from the text rather than chosen by the model."""
    prompt = (
        "Give this note a topic (a lowercase kebab-case slug of 1-4 words) and a one-line "
        f"summary under 120 characters. Answer in JSON.\n\nNote: {text}"
    )
    try:
        title = await ask_structured(model, prompt, NoteTitle)
    except (ModelUnavailable, InvalidModelOutput) as exc:
        _log.info("deriving the note title without the model: %s", exc)
        return fallback_title(text), True
    summary = " ".join(title.summary.split())
    if not summary or len(summary) > SUMMARY_MAX_CHARS or not from_their_words(summary, text):
        _log.info("the model's note summary is not from the note's words: using lorebot's own")
        summary = derived_summary(text)
    words = slug_words(title.topic)
    if is_generic(words) or not from_their_words(" ".join(words), text):  # "note", "1", "東京"
        _log.info("the model's note topic names nothing of the note's words: using lorebot's own")
        return NoteTitle(topic=derived_topic(text), summary=summary), True
    return NoteTitle(topic=slugify(title.topic), summary=summary), False
