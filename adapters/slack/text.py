"""Slack text at the edge: Slack markup to the core's plain text, and replies to mrkdwn.

Incoming text carries `<@U…>` mentions, `<#C…|name>` channel links, `<url|label>` links,
`<!here>`-style specials and HTML-escaped `&`, `<`, `>`; the core sees readable text. Outgoing
text is escaped first, so nothing the model writes can become Slack markup (a `<!channel>`
ping above all), then common Markdown is rewritten as mrkdwn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SLACK_TEXT_LIMIT = 4000
"""The longest `text` lorebot posts in one message; Slack truncates far longer ones."""

_TOKEN = re.compile(r"<([^<>\n]*)>")
_USER_TOKEN = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>")
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))
_BROADCASTS = {"here", "channel", "everyone"}
_WORD_JOINER = "\u2060"


def unescape(text: str) -> str:
    """Undo Slack's escaping of `<`, `>` and `&` (in that order, so `&amp;lt;` stays `&lt;`)."""
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return text


def escape(text: str) -> str:
    """Escape the three characters Slack treats as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mentioned_user_ids(text: str) -> list[str]:
    """The user ids mentioned as `<@U…>` in Slack text, in order, without repeats."""
    return list(dict.fromkeys(_USER_TOKEN.findall(text)))


def to_plain(text: str, *, bot_user_id: str | None, names: Mapping[str, str]) -> str:
    """The core's plain text for a Slack message.

    The bot's own mention is removed; other mentions become `@name` (from `names`, else the
    name inside the token, else the id); channel links become `#name`; links show their URL.
    """
    if bot_user_id:
        own = re.compile(rf"[ \t]*<@{re.escape(bot_user_id)}(?:\|[^<>]*)?>[:,]?[ \t]*")
        text = own.sub(" ", text)
    parts: list[str] = []
    last = 0
    for match in _TOKEN.finditer(text):
        parts.append(unescape(text[last : match.start()]))
        parts.append(_plain_token(match.group(1), names))
        last = match.end()
    parts.append(unescape(text[last:]))
    lines = "".join(parts).strip().split("\n")
    return "\n".join(line.rstrip() for line in lines)


def _plain_token(inner: str, names: Mapping[str, str]) -> str:
    target, _, label = inner.partition("|")
    label = unescape(label)
    if target.startswith("@"):
        user_id = target[1:]
        return "@" + (names.get(user_id) or label.lstrip("@") or user_id)
    if target.startswith("#"):
        return "#" + (label or target[1:])
    if target.startswith("!"):
        special = target[1:]
        if special in _BROADCASTS:
            return "@" + special
        if special.startswith("subteam^"):
            return label if label.startswith("@") else "@" + (label or special[8:])
        return label or special.split("^", 1)[0]
    url = unescape(target)
    if url.startswith("mailto:") or url.startswith("tel:"):
        return label or url.split(":", 1)[1]
    bare = re.sub(r"^[a-z]+://", "", url).rstrip("/")
    if not label or label in (url, bare) or label.rstrip("/") == bare:
        return url
    return f"{label} ({url})"


# --- outgoing -----------------------------------------------------------------------------

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.DOTALL)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+|mailto:[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(?=\S)", re.MULTILINE)
_BROADCAST = re.compile(r"@(here|channel|everyone)\b", re.IGNORECASE)


def to_mrkdwn(text: str) -> str:
    """Slack mrkdwn for the core's text, with no way to ping `@channel`, `@here`, `@everyone`.

    Everything is escaped, so a `<!channel>` or `<@U…>` the model writes stays literal text;
    code keeps its content, and Markdown bold, strike, links, headings and bullets outside
    code are rewritten in Slack's syntax.
    """
    out: list[str] = []
    last = 0
    for match in _CODE.finditer(text):
        out.append(_prose(text[last : match.start()]))
        out.append(_defuse(escape(match.group(0))))
        last = match.end()
    out.append(_prose(text[last:]))
    return "".join(out)


def _prose(text: str) -> str:
    links: list[str] = []

    def stash(match: re.Match[str]) -> str:
        label = match.group(1).replace("|", "/")
        links.append(f"<{escape(match.group(2))}|{_defuse(escape(label))}>")
        return f"\x00{len(links) - 1}\x00"

    text = _LINK.sub(stash, text.replace("\x00", ""))
    text = _defuse(escape(text))
    text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = _HEADING.sub(lambda m: "*" + m.group(1).strip("*") + "*", text)
    text = _BULLET.sub("\\1• ", text)
    return re.sub("\x00(\\d+)\x00", lambda m: links[int(m.group(1))], text)


def _defuse(text: str) -> str:
    """Break `@here`-style words so no client or `link_names` setting turns them into pings."""
    return _BROADCAST.sub(lambda m: "@" + _WORD_JOINER + m.group(1), text)


CUT_MARK = " …"


def fit_mrkdwn(text: str, limit: int = SLACK_TEXT_LIMIT) -> str:
    """`text` as mrkdwn in one message of at most `limit` characters: whole when it fits,
    else its longest start that fits, cut at a line or word break near the end, and marked
    with " …". The core splits replies to fit; this only guards the limit."""
    converted = to_mrkdwn(text)
    if len(converted) <= limit:
        return converted
    room = limit - len(CUT_MARK)
    start = _at_break(text[: _fitting(text, room)])
    while start and len(to_mrkdwn(start)) > room:  # a cut can unpair markup and grow it
        start = start[: len(start) * 9 // 10].rstrip()
    return to_mrkdwn(start) + CUT_MARK


def _fitting(text: str, room: int) -> int:
    """The longest start of `text` (in characters) whose mrkdwn fits in `room`, found by
    bisection since escaping makes the length grow unevenly."""
    low, high = 0, min(len(text), room)
    while low < high:
        middle = (low + high + 1) // 2
        if len(to_mrkdwn(text[:middle])) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def _at_break(start: str) -> str:
    """`start` up to its last line or word break, when that break is in its last quarter."""
    cut = max(start.rfind("\n"), start.rfind(" "))
    return (start[:cut] if cut > len(start) * 3 // 4 else start).rstrip()


# --- streamed replies ---------------------------------------------------------------------

_STREAM_BREAKS = str.maketrans({"<": "<\u2060", "&": "&\u2060", "@": "@\u2060"})
_MARKUP_SIGNS = re.compile(
    r"[\\`*_~#>\[\]<&|@]|:[a-z0-9_+-]+:|://|www\."
    r"|^[ \t]*(?:[-+]|\d+[.)])[ \t]|^[ \t]*(?:-{3,}|={3,})[ \t]*$|^(?: {4}|\t)",
    re.MULTILINE,
)


def for_stream(text: str) -> str:
    """The core's Markdown as a streamed message shows it (Slack's `markdown_text`), with
    nothing Slack could read as a mention, a ping or an entity: a word joiner follows every
    `<`, `&` and `@`. It works character by character, so streamed pieces join to the whole."""
    return text.translate(_STREAM_BREAKS)


def renders_alike(text: str) -> bool:
    """Whether `text` shows the same streamed as Markdown and posted as mrkdwn: nothing in
    it that either markup reads specially, so a finished stream needs no edit."""
    return _MARKUP_SIGNS.search(text) is None
