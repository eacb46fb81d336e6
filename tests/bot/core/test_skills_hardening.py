"""Skills that are broken, hostile or misnamed: the bot keeps working and says what is wrong.

A malformed SKILL.md is skipped with a reason everywhere (chat, CLI, doctor), resources are
read only from skills active in the conversation, proposed skills need a valid name before
a card is posted, and names are compared in NFKC form as the Agent Skills rules say.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from adapters.base import APPROVE
from bot.cli.main import main
from tests.fakes.ollama import FakeOllama
from tests.support.clock import FakeClock
from tests.support.harness import Harness, start_harness
from tests.support.skills import write_skill

GOOD_DESCRIPTION = "Triage a production incident. Use when something is down."
# Front matter PyYAML reads into something other than a mapping of text: each used to
# escape the parser as TypeError, RecursionError or ValueError and stop lorebot.
MALFORMED = {
    "unhashable-key": "---\n? [a, b]\n: c\nname: unhashable-key\ndescription: x\n---\nbody\n",
    "deep-nesting": "---\nname: deep-nesting\ndescription: x\nk: " + "[" * 5000 + "\n---\n",
    "impossible-date": "---\nname: impossible-date\ndescription: x\nsince: 2024-02-30\n---\n",
    "huge-integer": "---\nname: huge-integer\ndescription: x\nn: " + "7" * 5000 + "\n---\n",
}
REASONS = {
    "unhashable-key": "a key is a list or mapping",
    "deep-nesting": "nested too deeply",
    "impossible-date": "cannot be read",
    "huge-integer": "cannot be read",
}


RELEASE_KEYS = {"skill": "release", "path": "references/keys.md"}


def write_bad(root: Path, kind: str) -> Path:
    folder = root / kind
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(MALFORMED[kind], encoding="utf-8")
    return folder


def add_triage(root: Path) -> Path:
    folder = write_skill(root, "incident-triage", description=GOOD_DESCRIPTION)
    (folder / "references").mkdir()
    (folder / "references" / "owners.md").write_text("API: team-api\n")
    return folder


def tool_results(h: Harness) -> list[str]:
    return [m["content"] for m in h.last_prompt() if m["role"] == "tool"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- 1. one malformed SKILL.md never stops lorebot -------------------------------------------


@pytest.mark.parametrize("kind", sorted(MALFORMED))
async def test_a_bot_starts_with_a_malformed_skill_and_the_good_one_works(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, kind: str
) -> None:
    user_root = tmp_path / "user-skills"
    write_bad(user_root, kind)
    add_triage(user_root)
    h = await start_harness(tmp_path, fake_ollama, clock)
    try:
        fake_ollama.tool_call("load_skill", {"name": "incident-triage"})
        await h.say("the API is down")
        [card] = h.adapter.cards
        assert "Load the skill `incident-triage`" in card.text
        fake_ollama.reply("Check the dashboards first.")
        await h.react(card, APPROVE)
        assert h.adapter.replies == ["Check the dashboards first."]
        prefix = h.last_prompt()[0]["content"]
        assert "- incident-triage: Triage a production incident." in prefix
        assert f"- {kind}:" not in prefix
        skipped = {s.path.parent.name: s.reason for s in h.bot.catalog.skipped}
        assert REASONS[kind] in skipped[kind]
    finally:
        await h.bot.stop()


@pytest.mark.parametrize("kind", sorted(MALFORMED))
async def test_a_malformed_skill_appearing_while_running_leaves_turns_working(
    harness: Harness, kind: str
) -> None:
    user_root = harness.bot.settings.skills.user_root
    add_triage(user_root)
    harness.ollama.reply("Hello.")
    await harness.say("hi")

    write_bad(user_root, kind)  # the catalog reloads before the next turn
    harness.ollama.reply("Still here.")
    await harness.say("are you there?")
    assert harness.adapter.replies == ["Hello.", "Still here."]
    prefix = harness.last_prompt()[0]["content"]
    assert "- incident-triage:" in prefix and f"- {kind}:" not in prefix


async def test_lorebot_chat_starts_with_a_malformed_skill(
    env: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_bad(env / "user-skills", "deep-nesting")
    write_bad(env / "user-skills", "unhashable-key")
    add_triage(env / "user-skills")
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", fake_ollama.url)
    monkeypatch.setattr("sys.stdin", io.StringIO("/incident-triage\n"))
    assert await asyncio.to_thread(main, ["chat", "--user", "alice"]) == 0
    assert "The skill `incident-triage` is active here now." in capsys.readouterr().out


def test_skills_list_validate_and_doctor_report_a_malformed_skill(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")  # nothing listens there
    for kind in MALFORMED:
        write_bad(env / "user-skills", kind)
    good = add_triage(env / "user-skills")

    code, out, err = run(capsys, "skills", "list")
    assert code == 0 and "Traceback" not in err
    assert "incident-triage: Triage a production incident." in out
    for kind, reason in REASONS.items():
        line = next(x for x in out.splitlines() if x.startswith("skipped") and f"/{kind}/" in x)
        assert reason in line

    code, out, err = run(capsys, "skills", "validate", str(env / "user-skills"))
    assert code == 1 and "Traceback" not in err
    assert f"{good}: ok" in out and "1 of 5 skills valid" in out
    assert f"{env / 'user-skills' / 'deep-nesting' / 'SKILL.md'}: the front matter is nested" in out
    assert "unhashable-key/SKILL.md: the front matter is not valid YAML: a key is a list" in out

    code, out, err = run(capsys, "doctor")
    assert code == 1 and "Traceback" not in err
    assert "✓ skills: 3 skills loaded" in out  # the two bundled and incident-triage
    assert "deep-nesting/SKILL.md skipped: the front matter is nested too deeply" in out


# --- 2. resources only from skills active in this conversation -------------------------------


async def test_resources_of_a_skill_not_active_here_are_refused(harness: Harness) -> None:
    user_root = harness.bot.settings.skills.user_root
    add_triage(user_root)
    people_only = write_skill(
        user_root,
        "release",
        description="Release. Use when releasing.",
        extra="disable-model-invocation: true\n",
    )
    (people_only / "references").mkdir()
    (people_only / "references" / "keys.md").write_text("signing key: hunter2\n")
    harness.ollama.tool_call(
        "read_skill_resource", {"skill": "incident-triage", "path": "references/owners.md"}
    )
    harness.ollama.tool_call("read_skill_resource", RELEASE_KEYS)
    harness.ollama.reply("That skill is not active here.")
    await harness.say("who owns the API?")

    assert harness.adapter.replies == ["That skill is not active here."]
    results = tool_results(harness)
    assert len(results) == 2
    for result in results:
        assert result.startswith("error:") and "load it with load_skill first" in result
    assert "team-api" not in " ".join(results) and "hunter2" not in " ".join(results)

    # Once a person starts it here, its resources are readable in this conversation only.
    await harness.say("/release")
    harness.ollama.tool_call("read_skill_resource", RELEASE_KEYS)
    harness.ollama.reply("Found it.")
    await harness.say("which key do we sign with?")
    assert tool_results(harness)[-1] == "signing key: hunter2\n"
    harness.ollama.tool_call("read_skill_resource", RELEASE_KEYS)
    harness.ollama.reply("Not here.")
    await harness.say("which key?", channel="C2")
    assert "load it with load_skill first" in tool_results(harness)[-1]


async def test_an_unreadable_resource_is_an_error_for_the_model(harness: Harness) -> None:
    folder = add_triage(harness.bot.settings.skills.user_root)
    (folder / "references" / "loop.md").symlink_to(folder / "references" / "loop.md")
    await harness.say("/incident-triage")
    harness.ollama.tool_call(
        "read_skill_resource", {"skill": "incident-triage", "path": "references/loop.md"}
    )
    harness.ollama.reply("That file cannot be read.")
    await harness.say("who owns the API?")
    assert harness.adapter.replies[-1] == "That file cannot be read."
    result = tool_results(harness)[-1]
    assert result == "error: references/loop.md cannot be read: it is a symlink loop"


# --- 3. a proposed skill needs a valid name before its card is posted -------------------------


UNWRITABLE_NAMES = ["../escape", "../../outside", ".", "", "/tmp/abs", "Upper", "a--b"]


@pytest.mark.parametrize("name", UNWRITABLE_NAMES)
async def test_propose_skill_with_an_unwritable_name_posts_no_card(
    harness: Harness, tmp_path: Path, name: str
) -> None:
    harness.ollama.tool_call(
        "propose_skill",
        {
            "name": name,
            "description": "Escape. Use when escaping.",
            "body": "1. Escape.",
        },
    )
    harness.ollama.reply("That name is not allowed.")
    await harness.say("make a skill")
    assert harness.adapter.cards == []
    assert harness.adapter.replies == ["That name is not allowed."]
    [result] = tool_results(harness)
    assert result.startswith("error: the skill name is not valid: `name`")
    assert str(tmp_path) not in result
    assert await harness.bot.proposals.fetch_recent() == []


# --- 4. validating a folder that holds no skill ----------------------------------------------


def test_validate_a_folder_without_a_skill_says_so_and_fails(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = env / "empty"
    empty.mkdir()
    code, out, _ = run(capsys, "skills", "validate", str(empty))
    assert code == 1
    assert f"{empty}: no skill found" in out and "0 of 0" not in out

    lowercase = env / "lowercase"
    lowercase.mkdir()
    (lowercase / "skill.md").write_text("Just notes, no front matter.\n")
    code, out, _ = run(capsys, "skills", "validate", str(lowercase))
    assert code == 1
    assert f"{lowercase}: no skill found" in out and "must be named SKILL.md" in out


# --- 5. names are compared after NFKC normalisation ------------------------------------------


def test_a_decomposed_name_matches_its_precomposed_folder(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decomposed, precomposed = "cafe\u0301", "caf\u00e9"
    folder = write_skill(env / "mine", precomposed, name=decomposed)
    code, out, _ = run(capsys, "skills", "validate", str(folder))
    assert (code, out.splitlines()[-1]) == (0, "1 of 1 skills valid")

    shouting = write_skill(env / "mine", "CAFE\u0301", name="CAFE\u0301")
    code, out, _ = run(capsys, "skills", "validate", str(shouting))
    assert code == 1 and "only lowercase letters" in out


async def test_a_decomposed_name_is_started_by_its_precomposed_command(harness: Harness) -> None:
    user_root = harness.bot.settings.skills.user_root
    write_skill(user_root, "caf\u00e9", name="cafe\u0301", body="Order a flat white.")
    skill = harness.bot.catalog.get("caf\u00e9")
    assert skill is not None and skill.warnings == ()
    await harness.say("/caf\u00e9")
    assert harness.adapter.replies == ["🧩 The skill `café` is active here now."]


async def test_a_resource_reaches_the_model_without_a_configured_secret(
    tmp_path: Path, fake_ollama: FakeOllama, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "plain-words-no-shape-a-scanner-knows"
    monkeypatch.setenv("DEPLOY_KEY", secret)
    h = await start_harness(
        tmp_path, fake_ollama, clock, skills={"script_env": {"KEY": "${DEPLOY_KEY}"}}
    )
    try:
        folder = add_triage(h.bot.settings.skills.user_root)
        (folder / "references" / "deploy.md").write_text(f"deploy with {secret}, then wait\n")
        await h.say("/incident-triage")
        h.ollama.tool_call(
            "read_skill_resource", {"skill": "incident-triage", "path": "references/deploy.md"}
        )
        h.ollama.reply("Deploy, then wait.")
        await h.say("how do we deploy?")
        assert tool_results(h)[-1] == "deploy with [REDACTED], then wait\n"
        assert all(secret not in str(m["content"]) for m in h.last_prompt())
    finally:
        await h.bot.stop()
