"""Recognising the deterministic commands, which never need the model."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Remember:
    text: str
    about_self: bool


@dataclass(frozen=True, slots=True)
class Forget:
    what: str


@dataclass(frozen=True, slots=True)
class Undo:
    pass


@dataclass(frozen=True, slots=True)
class Recall:
    about: str


@dataclass(frozen=True, slots=True)
class Help:
    pass


Command = Remember | Forget | Undo | Recall | Help

_REMEMBER = re.compile(
    r"^(?:please\s+)?remember(?P<forme>\s+for\s+me)?(?:\s*:\s*|\s+that\s+|\s+)(?P<text>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_ABOUT_SELF = re.compile(r"^(?:i|i'm|i've|i'd|i'll|my|me)\b", re.IGNORECASE)
_FORGET = re.compile(r"^(?:please\s+)?forget(?:\s+about)?\s*:?\s+(?P<what>.+)$", re.I | re.S)
_RECALL = re.compile(
    r"^what\s+do\s+you\s+(?:remember|know)(?:\s+about\s+(?P<about>.+?))?\s*\??$", re.I | re.S
)
_UNDO = re.compile(r"^undo[.!]?$", re.IGNORECASE)
_HELP = re.compile(r"^(?:help|/help|\?|commands)[.!?]?$", re.IGNORECASE)

HELP_TEXT = """\
Here is what I understand without thinking hard:
• `remember that …` — I propose a note; you approve it with ✅ on my card. In a DM it is \
your private note; in a channel it belongs to the channel, unless it is about you \
("remember that I …" or "remember for me …").
• `forget …` — I propose forgetting the matching note.
• `undo` — I revert your latest change to my notes.
• `what do you remember [about …]` — I list the notes I can see here, or search them.
• `help` — this message.
Anything else is a question for me; I answer with what I remember."""


def parse_command(text: str) -> Command | None:
    """The command `text` asks for, or None when it is a question for the model."""
    text = text.strip()
    if _HELP.match(text):
        return Help()
    if _UNDO.match(text):
        return Undo()
    if match := _RECALL.match(text):
        return Recall((match.group("about") or "").strip())
    if match := _REMEMBER.match(text):
        body = match.group("text").strip()
        about_self = bool(match.group("forme")) or bool(_ABOUT_SELF.match(body))
        return Remember(body, about_self)
    if match := _FORGET.match(text):
        return Forget(match.group("what").strip())
    return None


SLASH_HELP = """\
`/lorebot remember <fact>` — I post a card here; the note is saved when you approve it \
with ✅ (in a DM it is your private note).
`/lorebot forget <topic or words>` — I post a card to forget the matching note.
`/lorebot recall [about]` — what I remember, shown to you alone (your own notes included).
`/lorebot undo` — revert your latest change to my notes.
`/lorebot approve <card number>` / `/lorebot decline <card number>` — decide a card, as \
its buttons do.
`/lorebot help` — this message."""

SLASH_WORDS = ("remember", "forget", "recall", "undo", "approve", "decline", "help")


def parse_slash(text: str) -> Command | None:
    """The command of `/lorebot <text>`, or None for a subcommand lorebot does not have."""
    word, _, rest = text.strip().partition(" ")
    word, rest = word.lower(), rest.strip()
    if word == "recall":
        return Recall(rest)
    if word == "remember":
        found = parse_command(text)
        return found if isinstance(found, Remember) else Remember(rest, False)
    if word == "forget":
        return Forget(rest)
    if word in ("undo", "help") and not rest:
        return Undo() if word == "undo" else Help()
    return None
