"""The core's replies as plain terminal text: Markdown and Slack-style markup taken out,
links shown with their URL, code kept as written."""

from __future__ import annotations

import re

_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.DOTALL)
_SLACK_TOKEN = re.compile(
    r"<([@#!][^<>|\s]+|(?:https?|mailto|tel):[^<>|\s]+)(?:\|([^<>\n]*))?>", re.IGNORECASE
)
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?|mailto):[^)\s]+)\)")
_STRONG = re.compile(r"(\*\*|__|~~)(?=\S)([^\n]+?)(?<=\S)\1")
# Slack's *bold*, _italic_, ~strike~ (and Markdown's *emphasis*), not inside words such as
# snake_case names or 2*3*4.
_EMPHASIS = re.compile(r"(?<![\w*_~])([*_~])(?=[^\s*_~])([^\n]*?[^\s*_~]|[^\s*_~])\1(?![\w*_~])")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[*+][ \t]+(?=\S)", re.MULTILINE)
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))
_BROADCASTS = {"here", "channel", "everyone"}


def plain_text(text: str) -> str:
    """What a terminal shows for the core's text: Markdown and Slack mrkdwn markup
    (bold, italic, strike, headings, links, `<@U1>` mentions, `&amp;`) become plain
    readable text; code keeps its backticks and its content as written."""
    out: list[str] = []
    last = 0
    for match in _CODE.finditer(text):
        out.append(_plain_prose(text[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(_plain_prose(text[last:]))
    return "".join(out)


def _plain_prose(text: str) -> str:
    kept: list[str] = []

    def keep(shown: str) -> str:
        kept.append(shown)
        return f"\x00{len(kept) - 1}\x00"

    text = text.replace("\x00", "")
    text = _SLACK_TOKEN.sub(lambda m: keep(_plain_token(m.group(1), m.group(2))), text)
    text = _MD_LINK.sub(lambda m: keep(_plain_link(m.group(2), m.group(1))), text)
    text = _HEADING.sub(r"\1", text)
    text = _BULLET.sub(r"\1- ", text)
    for pattern in (_STRONG, _EMPHASIS):
        text = pattern.sub(r"\2", text)
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], text)


def _plain_token(target: str, label: str | None) -> str:
    """A Slack `<…>` token as text: `@name`, `#channel`, `@here`, or a link."""
    label = _unescape(label or "")
    kind, rest = target[0], target[1:]
    if kind == "@":
        return "@" + (label.lstrip("@") or rest)
    if kind == "#":
        return "#" + (label.lstrip("#") or rest)
    if kind == "!":
        special = rest.split("^", 1)[0]
        if special in _BROADCASTS:
            return "@" + special
        return label or special
    return _plain_link(_unescape(target), label)


def _plain_link(url: str, label: str) -> str:
    if url.startswith(("mailto:", "tel:")):
        return label or url.split(":", 1)[1]
    bare = re.sub(r"^[a-z]+://", "", url, flags=re.IGNORECASE).rstrip("/")
    if not label or label.rstrip("/") in (url.rstrip("/"), bare):
        return url
    return f"{label} ({url})"


def _unescape(text: str) -> str:
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return text
