"""Pages from Jinja2 templates, escaped by default, with the console's base path and the
person's form token at hand; and the page that says why something was refused."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import jinja2
from aiohttp import web

from bot.console.people import VISITOR


def base_path(public_url: str) -> str:
    """The path every console address starts with ("" at the root)."""
    return urlsplit(public_url).path.rstrip("/")


def _when(moment: datetime | None) -> str:
    return "—" if moment is None else f"{moment:%Y-%m-%d %H:%M} UTC"


class Pages:
    """The templates, and how a page is made of one."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("bot.console", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.env.globals["url"] = self.url
        self.env.filters["when"] = _when

    def url(self, path: str) -> str:
        """An address of the console, under its base path."""
        return f"{self.prefix}{path}"

    def render(
        self, request: web.Request, template: str, *, status: int = 200, **context: Any
    ) -> web.Response:
        visitor = request.get(VISITOR)
        page = self.env.get_template(template).render(
            person=visitor.person if visitor else None,
            csrf=visitor.csrf if visitor else "",
            path=request.path,
            status=status,
            **context,
        )
        return web.Response(text=page, status=status, content_type="text/html")


class Refused(Exception):
    """A request the console turns down, shown as a page saying why: 404 for what the
    person may not see (never saying whether it exists), 403, 409, 410, 400, 429."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(f"{status} {title}")
        self.status = status
        self.title = title
        self.detail = detail


def not_found() -> Refused:
    return Refused(404, "Not found", "There is nothing here that you can see.")


def page_number(text: str, most: int) -> int:
    """A page's number from an address, or a 400 page saying what one is."""
    if not (text.isascii() and text.isdigit() and len(text) <= 7 and 1 <= int(text) <= most):
        raise Refused(400, "No such page", f"A page is a number from 1 to {most}.")
    return int(text)
