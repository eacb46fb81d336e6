"""Skills in conversations: the catalog a turn sees, loads that need approval, active skills,
resource reads and skill creation.

A skill approved (or asked for by a person with `/name`) stays active in its conversation
while its content hash is unchanged; its instructions are injected on every turn after the
history, so compaction never drops them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from bot.config.sections import SkillsSettings
from memory.stores.active_skills import ActiveSkills
from skills.catalog import BUNDLED_ROOT, Catalog
from skills.parse import normalise_name, text_problems
from skills.resources import (
    ScriptFile,
    linked_folders,
    list_resources,
    list_scripts,
    read_resource,
    read_script,
)
from skills.types import Skill, SkillError
from skills.writer import CREATED_BY, check_new_name, created_by_lorebot, render_skill

_log = logging.getLogger(__name__)

MAX_CARD_SKILL_CHARS = 3000


def build_catalog(settings: SkillsSettings) -> Catalog:
    roots = [BUNDLED_ROOT, settings.home_root, settings.user_root, *settings.dirs]
    return Catalog(roots, catalog_bytes=settings.catalog_max_bytes)


SCRIPTS_RUN = "Scripts (run one with run_skill_script; a person approves each run on a card): "
SCRIPTS_OFF = (
    "Scripts (not run here: skill scripts are off; the operator can turn them on with "
    'skills.scripts = "sandboxed" or "host", and then a person approves each run): '
)


def skill_tool_result(skill: Skill, scripts_runnable: bool = False) -> str:
    """What the model receives when a skill is loaded: the body and its files, and whether
    its scripts can be run here."""
    resources = list_resources(skill)
    scripts = list_scripts(skill)
    parts = [f'<skill name="{skill.name}">\n{skill.body}\n</skill>']
    if resources:
        parts.append("Resources (read with read_skill_resource): " + ", ".join(resources))
    if scripts:
        parts.append((SCRIPTS_RUN if scripts_runnable else SCRIPTS_OFF) + ", ".join(scripts))
    linked = linked_folders(skill.folder)
    if linked:
        parts.append(
            "Not usable (symlinks, and lorebot follows no link in a skill): "
            + ", ".join(f"{sub}/" for sub in linked)
        )
    return "\n".join(parts)


class SkillUse:
    """The skill side of a conversation."""

    def __init__(
        self,
        settings: SkillsSettings,
        catalog: Catalog,
        activations: ActiveSkills,
    ) -> None:
        self.settings = settings
        self.catalog = catalog
        self.activations = activations
        # Whether run_skill_script can run here (scripts enabled, and the sandbox works).
        self.scripts_runnable = False
        # Active skills per conversation as last read, for the synchronous tool offer.
        self._active: dict[str, dict[str, str]] = {}

    def allowed(self, channel_scope: str | None) -> set[str] | None:
        """The skills a channel may use, or None for all of them."""
        if channel_scope is None or channel_scope not in self.settings.channels:
            return None
        return set(self.settings.channels[channel_scope])

    def find(self, name: str, channel_scope: str | None, *, by_person: bool) -> Skill:
        """The skill `name` as this conversation may use it, or SkillError saying why not."""
        skill = self.catalog.get(normalise_name(name.strip()).lower())
        allowed = self.allowed(channel_scope)
        if skill is None or (allowed is not None and skill.name not in allowed):
            known = ", ".join(self.catalog_names(channel_scope)) or "none"
            raise SkillError(f"there is no skill {name!r} here; available: {known}")
        if not by_person and not skill.model_invocable:
            raise SkillError(f"skill {name!r} can only be started by a person (/{name})")
        return skill

    def catalog_names(self, channel_scope: str | None) -> list[str]:
        return [line[2:].split(":", 1)[0] for line in self.catalog_lines(channel_scope)]

    def catalog_lines(self, channel_scope: str | None) -> list[str]:
        return self.catalog.model_catalog(self.allowed(channel_scope))

    def tool_result(self, skill: Skill) -> str:
        return skill_tool_result(skill, self.scripts_runnable)

    async def fetch_active(self, conversation_key: str) -> list[Skill]:
        """The skills active here: approved or started, and unchanged since."""
        approved = await self.activations.fetch(conversation_key)
        self._active[conversation_key] = approved
        return self._unchanged(approved)

    def get_active(self, conversation_key: str) -> list[Skill]:
        """The active skills as last fetched in this process (each turn fetches them first)."""
        return self._unchanged(self._active.get(conversation_key, {}))

    def _unchanged(self, approved: dict[str, str]) -> list[Skill]:
        found = []
        for name, sha in approved.items():
            skill = self.catalog.get(name)
            if skill is not None and skill.sha256 == sha:
                found.append(skill)  # else deleted or edited since: it must be loaded again
        return found

    def active_messages(
        self, conversation_key: str, approved: dict[str, str]
    ) -> list[dict[str, Any]]:
        """System messages carrying the instructions of the skills active here, given the
        activations read (`ActiveSkills.fetch`), kept for the turn's tool offer."""
        self._active[conversation_key] = approved
        return [
            {"role": "system", "content": "Active skill:\n" + self.tool_result(skill)}
            for skill in self._unchanged(approved)
        ]

    async def is_active(self, conversation_key: str, skill: Skill) -> bool:
        return any(s.name == skill.name for s in await self.fetch_active(conversation_key))

    async def activate(self, conversation_key: str, skill: Skill, by: str) -> None:
        await self.activations.activate(conversation_key, skill.name, skill.sha256, by)
        self._active.setdefault(conversation_key, {})[skill.name] = skill.sha256
        _log.info(
            "skill %s (%s) active in %s, by %s", skill.name, skill.sha256[:12], conversation_key, by
        )

    async def read(
        self, conversation_key: str, name: str, path: str, channel_scope: str | None
    ) -> str:
        """A resource of a skill active in this conversation; a skill nobody approved or
        started here keeps its files to itself."""
        skill = self.find(name, channel_scope, by_person=True)
        if not await self.is_active(conversation_key, skill):
            raise SkillError(
                f"the skill {skill.name} is not loaded in this conversation; "
                "load it with load_skill first, then read its resources"
            )
        return read_resource(skill, path)

    async def find_script(
        self, conversation_key: str, name: str, path: str, channel_scope: str | None
    ) -> tuple[Skill, ScriptFile]:
        """A script of a skill active in this conversation, read once and hashed."""
        skill = self.find(name, channel_scope, by_person=True)
        if not await self.is_active(conversation_key, skill):
            raise SkillError(
                f"the skill {skill.name} is not loaded in this conversation; "
                "load it with load_skill first, then run its scripts"
            )
        return skill, read_script(skill, path)

    def new_skill_name(self, name: str) -> str:
        """The name a proposed skill is written under, or SkillError when it is not a valid
        skill name; checked before any card is shown."""
        check_new_name(name)
        return normalise_name(name)

    def draft_skill(
        self, name: str, description: str, body: str, requester: str, conversation: str
    ) -> str:
        """The SKILL.md a proposal would write; SkillError when it cannot be written."""
        name = self.new_skill_name(name)
        folder = self.settings.user_root / name
        if folder.exists() and not created_by_lorebot(folder):
            raise SkillError(f"a skill named {name!r} exists and was not created by lorebot")
        metadata = {
            "created-by": CREATED_BY,
            "requested-by": requester,
            "conversation": conversation,
        }
        text = render_skill(name, description, body, metadata)
        problems = text_problems(text, name)
        if problems:
            raise SkillError("the skill would not be valid: " + "; ".join(problems))
        if len(text) > MAX_CARD_SKILL_CHARS:
            raise SkillError(
                f"the skill is {len(text)} characters; keep a chat-proposed skill under "
                f"{MAX_CARD_SKILL_CHARS} so the whole of it fits on the card"
            )
        return text

    @property
    def user_root(self) -> Path:
        return self.settings.user_root

    def load_card_lines(self, skill: Skill) -> list[str]:
        """What a load card shows: description, provenance, shadowing, size, hash, first lines."""
        lines = [
            f"Description: {skill.description}",
            f"From: {skill.path}",
            f"Size: {skill.size} bytes, sha256 {skill.sha256[:16]}…",
        ]
        if skill.shadows:
            lines.append("Shadows: " + ", ".join(str(p) for p in skill.shadows))
        if not skill.model_invocable:
            lines.append("Marked for people only (disable-model-invocation).")
        first = skill.body.strip().splitlines()[:8]
        lines += [f"> {line}" for line in first]
        return lines
