"""The documentation stays true to the code: the configuration reference is what the
settings models make of it, every page is in the site's navigation, and the README's
links lead somewhere."""

from __future__ import annotations

import os
import re

import pytest

from bot.config.reference import COMMAND, render_reference
from tests.support.paths import ROOT as ROOT

DOCS = ROOT / "docs"


def test_the_configuration_reference_is_generated_from_the_settings() -> None:
    page = (DOCS / "configuration.md").read_text()
    assert page == render_reference(), (
        "docs/configuration.md differs from what the settings models make of it: "
        f"regenerate it with `{COMMAND}` (and edit the settings' descriptions in "
        "bot/config/settings.py, not the page)"
    )


def test_the_reference_lists_every_setting_with_its_variable() -> None:
    from bot.config.settings import section_model, setting_fields, variable_name

    page = render_reference()
    for path, field in setting_fields():
        if section_model(field) is None and path != ("config",):
            assert f"| `{'.'.join(path)}` | `{variable_name(path)}` |" in page
    assert "| `name` | required |" in page  # a key of each [[mcp.servers]] table


def test_the_reference_is_the_same_wherever_it_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOREBOT_SLACK__BOT_TOKEN", "xoxb-not-for-the-docs")
    monkeypatch.setenv("LOREBOT_OLLAMA__MODEL", "llama-of-the-machine")
    monkeypatch.setenv("OLLAMA_HOST", "http://gpu-box:11434")
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/lorebot")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/elsewhere/config")
    monkeypatch.setenv("HOME", "/home/someone")
    page = render_reference()
    assert page == (DOCS / "configuration.md").read_text()
    for value in ("xoxb-not-for-the-docs", "llama-of-the-machine", "gpu-box", "/home/someone"):
        assert value not in page
    # The environment is given back as it was.
    assert os.environ["LOREBOT_SLACK__BOT_TOKEN"] == "xoxb-not-for-the-docs"
    assert os.environ["HOME"] == "/home/someone"


def test_every_page_is_in_the_sites_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    listed = re.findall(r":\s*(\S+\.md)\s*$", nav, re.MULTILINE)
    pages = sorted(path.name for path in DOCS.glob("*.md"))
    assert sorted(listed) == pages


def test_the_readme_links_to_every_page_and_only_to_files_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\((?!https?://)([^)#\s]+)(?:#[^)]*)?\)", readme)
    for target in targets:
        assert (ROOT / target).is_file(), f"the README links to {target}, which is not there"
    pages = {f"docs/{path.name}" for path in DOCS.glob("*.md")} - {"docs/index.md"}
    assert pages <= set(targets), f"the README does not link to {sorted(pages - set(targets))}"
