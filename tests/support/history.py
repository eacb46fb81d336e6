"""Chat history as Slack and DiscordChatExporter export it (people, channels, messages,
the ZIP), and the `lorebot` runs that import and search it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main

# 2026-09-01 09:00:00 UTC and after, as Slack timestamps.
T0 = 1788253200


def ts(minutes: int, micro: int = 100) -> str:
    return f"{T0 + minutes * 60}.{micro:06d}"


def profile(display: str, real: str) -> dict[str, Any]:
    return {
        "avatar_hash": "g0a1b2",
        "image_72": "https://avatars.slack-edge.com/a.png",
        "first_name": real.split()[0],
        "real_name": real,
        "display_name": display,
        "team": "T0TEAM",
        "name": real.lower().replace(" ", "."),
        "is_restricted": False,
        "is_ultra_restricted": False,
    }


def user(uid: str, display: str, real: str, *, is_bot: bool = False) -> dict[str, Any]:
    return {
        "id": uid,
        "team_id": "T0TEAM",
        "name": real.lower().replace(" ", "."),
        "deleted": False,
        "color": "9f69e7",
        "real_name": real,
        "tz": "Europe/Berlin",
        "tz_label": "Central European Summer Time",
        "tz_offset": 7200,
        "profile": {**profile(display, real), "title": "", "phone": "", "skype": ""},
        "is_admin": False,
        "is_owner": False,
        "is_bot": is_bot,
        "is_app_user": False,
        "updated": 1780000000,
    }


def said(uid: str, text: str, when: str, **extra: Any) -> dict[str, Any]:
    """A person's message as a Slack export writes it (with blocks and the author's profile)."""
    message = {
        "client_msg_id": f"0d5c-{when}",
        "type": "message",
        "text": text,
        "user": uid,
        "ts": when,
        "blocks": [
            {
                "type": "rich_text",
                "block_id": "xYz1",
                "elements": [
                    {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
                ],
            }
        ],
        "team": "T0TEAM",
        "user_team": "T0TEAM",
        "source_team": "T0TEAM",
    }
    return {**message, **extra}


def channel(cid: str, name: str, members: list[str]) -> dict[str, Any]:
    created = {"created": 1700000000, "creator": members[0], "is_archived": False}
    about = {"value": f"#{name}", "creator": members[0], "last_set": 1700000000}
    return {
        "id": cid,
        "name": name,
        **created,
        "is_general": name == "general",
        "members": members,
        "topic": {"value": "", "creator": "", "last_set": 0},
        "purpose": about,
    }


def zip_folder(folder: Path, target: Path, inside: str = "") -> Path:
    """The export as Slack sends it: a ZIP, its files at the top or `inside` one folder."""
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, inside + path.relative_to(folder).as_posix())
    return target


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def search(capsys: pytest.CaptureFixture[str], query: str, *where: str) -> list[dict[str, Any]]:
    """Past messages as a person sees them: `--as USER [--in CHANNEL]` (without --in, a DM)."""
    code, out, err = run(capsys, "notes", "search", query, "--history", "--json", *where)
    assert code == 0, err
    hits: list[dict[str, Any]] = json.loads(out)
    return hits


def discord_export(
    channel: dict[str, Any], messages: list[dict[str, Any]], guild: tuple[str, str]
) -> dict[str, Any]:
    return {
        "guild": {"id": guild[0], "name": guild[1], "iconUrl": "https://cdn.discordapp.com/i.png"},
        "channel": {"categoryId": "1100", "category": "Engineering", "topic": None, **channel},
        "dateRange": {"after": None, "before": None},
        "exportedAt": "2026-10-01T10:00:00+00:00",
        "messages": messages,
        "messageCount": len(messages),
    }


def author(
    aid: str, name: str, nickname: str | None = None, is_bot: bool = False
) -> dict[str, Any]:
    return {
        "id": aid,
        "name": name,
        "discriminator": "0000",
        "nickname": nickname or name,
        "color": None,
        "isBot": is_bot,
        "roles": [],
        "avatarUrl": "https://cdn.discordapp.com/a.png",
    }


def post(mid: str, who: dict[str, Any], content: str, minute: int, **extra: Any) -> dict[str, Any]:
    when = f"2026-09-03T10:{minute:02d}:00.123+02:00"
    message = {
        "id": mid,
        "type": "Default",
        "timestamp": when,
        "timestampEdited": None,
        "callEndedTimestamp": None,
        "isPinned": False,
        "content": content,
        "author": who,
        "attachments": [],
        "embeds": [],
        "stickers": [],
        "reactions": [],
        "mentions": [],
        "inlineEmojis": [],
    }
    return {**message, **extra}
