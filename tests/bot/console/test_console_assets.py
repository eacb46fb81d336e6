"""What the console's pages are made of: HTMX as vendored (the pinned release, unchanged),
and templates without inline script, styles or event handlers, which its
Content-Security-Policy would block."""

from __future__ import annotations

import hashlib
import re

from bot.console.site import STATIC
from tests.support.paths import ROOT

TEMPLATES = ROOT / "bot" / "console" / "templates"
# `npm pack htmx.org@2.0.11`, dist/htmx.min.js.
HTMX_SHA256 = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"


def test_htmx_is_the_pinned_release_unchanged() -> None:
    vendored = (STATIC / "htmx-2.0.11.min.js").read_bytes()
    assert hashlib.sha256(vendored).hexdigest() == HTMX_SHA256
    assert (STATIC / "htmx-LICENSE.txt").read_text().startswith("Zero-Clause BSD")


def test_no_template_has_inline_script_style_or_handlers() -> None:
    templates = sorted(TEMPLATES.glob("*.html"))
    assert len(templates) >= 15
    for template in templates:
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), template.name
        assert not re.search(r"<style|\sstyle=|\son[a-z]+=|javascript:", text), template.name
        assert "|safe" not in text and "Markup" not in text, template.name
