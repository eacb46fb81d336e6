"""Strict validation against the Agent Skills rules, and lenient loading of real-world skills."""

from __future__ import annotations

from pathlib import Path

import pytest

from skills.parse import MAX_FILE_BYTES, check_strict, load_skill
from skills.types import SkillError

GOOD = "---\nname: {name}\ndescription: Says hello. Use when greeting.\n---\n# Hello\n"

STRICT_CASES = [
    # (folder, file content, expected problem fragment or None for valid)
    ("hello", GOOD.format(name="hello"), None),
    ("hello", GOOD.format(name="hello").replace("\n", "\r\n"), None),
    ("café", GOOD.format(name="café"), None),
    ("v2-tool", GOOD.format(name="v2-tool"), None),
    ("навык", GOOD.format(name="навык"), None),
    ("НАВЫК", GOOD.format(name="НАВЫК"), "only lowercase letters"),
    ("Hello", GOOD.format(name="Hello"), "only lowercase letters"),
    ("hello", GOOD.format(name="hel_lo"), "only lowercase letters"),
    ("-hello", GOOD.format(name="-hello"), "must not start or end with a hyphen"),
    ("hello-", GOOD.format(name="hello-"), "must not start or end with a hyphen"),
    ("he--llo", GOOD.format(name="he--llo"), "hold `--`"),
    ("x" * 65, GOOD.format(name="x" * 65), "at most 64"),
    ("hello", GOOD.format(name="other"), "differs from its folder's name"),
    ("hello", "---\nname: hello\n---\nbody\n", "`description` is missing"),
    ("hello", "---\nname: hello\ndescription: ''\n---\n", "`description` is missing"),
    ("hello", f"---\nname: hello\ndescription: {'d' * 1025}\n---\n", "at most 1024"),
    (
        "hello",
        "---\nname: hello\ndescription: x\ncompatibility: " + "c" * 501 + "\n---\n",
        "`compatibility`",
    ),
    ("hello", "---\nname: hello\ndescription: x\ncolour: red\n---\n", "unknown front matter keys"),
    ("hello", "---\nname: hello\ndescription: x\nname: hello\n---\n", "duplicate key 'name'"),
    ("hello", "name: hello\ndescription: x\n", "must start with a `---`"),
    ("hello", "---\nname: hello\ndescription: x\n", "not closed"),
    ("hello", "---\nname: [unclosed\ndescription: x\n---\n", "not valid YAML"),
    ("hello", "---\n- a\n- b\n---\n", "must be a YAML mapping"),
    ("hello", "", "must start with a `---`"),
    ("hello", "\ufeff" + GOOD.format(name="hello"), "byte-order mark"),
    ("hello", "---\nname: hello\ndescription: x\nmetadata: [1]\n---\n", "`metadata` must be"),
]


@pytest.mark.parametrize(("folder", "content", "problem"), STRICT_CASES)
def test_strict_rules(tmp_path: Path, folder: str, content: str, problem: str | None) -> None:
    skill = tmp_path / folder
    skill.mkdir()
    (skill / "SKILL.md").write_bytes(content.encode())
    problems = check_strict(skill)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_nfkc_equivalent_folder_names_match(tmp_path: Path) -> None:
    folder = tmp_path / "ﬁle-tool"  # the "ﬁ" ligature is NFKC-equal to "fi"
    folder.mkdir()
    (folder / "SKILL.md").write_text(GOOD.format(name="file-tool"))
    assert check_strict(folder) == []


def test_oversized_file_is_refused_strictly_and_leniently(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "SKILL.md").write_text(GOOD.format(name="big") + "x" * MAX_FILE_BYTES)
    assert "at most" in check_strict(folder)[0]
    with pytest.raises(SkillError, match="at most"):
        load_skill(folder, tmp_path)


def test_lenient_loading_warns_but_loads(tmp_path: Path) -> None:
    folder = tmp_path / "real-world"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "\ufeff---\r\nname: Real World\r\ndescription: " + "d" * 1100 + "\r\n"
        "allowed-tools: Bash\r\nversion: 3\r\n---\r\nDo it.\r\n"
    )
    skill = load_skill(folder, tmp_path)
    assert skill.name == "Real World" and skill.body == "Do it."
    warnings = " ".join(skill.warnings)
    assert "differs from its folder" in warnings and "longer than 1024" in warnings
    assert "version" in warnings


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("---\nname: x\n---\nbody", "`description` is missing"),
        ("---\nname: [x\ndescription: y\n---\n", "not valid YAML"),
        ("no front matter", "must start with"),
    ],
)
def test_lenient_loading_skips_only_unusable_skills(
    tmp_path: Path, content: str, reason: str
) -> None:
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "SKILL.md").write_text(content)
    with pytest.raises(SkillError, match=reason):
        load_skill(folder, tmp_path)


def test_disable_model_invocation_is_honoured(tmp_path: Path) -> None:
    folder = tmp_path / "manual"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: manual\ndescription: x\ndisable-model-invocation: true\n---\n"
    )
    assert load_skill(folder, tmp_path).model_invocable is False


MALFORMED_FRONT_MATTER = [
    ("---\n? [a, b]\n: c\nname: x\ndescription: y\n---\n", "a key is a list or mapping"),
    ("---\n? {a: b}\n: c\nname: x\ndescription: y\n---\n", "a key is a list or mapping"),
    ("---\nname: x\ndescription: y\nk: " + "[" * 5000 + "\n---\n", "nested too deeply"),
    ("---\nname: x\ndescription: y\nsince: 2024-02-30\n---\n", "cannot be read"),
    ("---\nname: x\ndescription: y\nn: " + "7" * 5000 + "\n---\n", "cannot be read"),
]


@pytest.mark.parametrize(("content", "reason"), MALFORMED_FRONT_MATTER)
def test_malformed_front_matter_is_a_skill_error_never_a_crash(
    tmp_path: Path, content: str, reason: str
) -> None:
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "SKILL.md").write_text(content)
    with pytest.raises(SkillError, match=reason):
        load_skill(folder, tmp_path)
    [problem] = check_strict(folder)
    assert problem.startswith(f"{folder / 'SKILL.md'}: ") and reason in problem


def test_names_are_checked_in_nfkc_form(tmp_path: Path) -> None:
    decomposed, precomposed = "cafe\u0301", "caf\u00e9"
    folder = tmp_path / precomposed
    folder.mkdir()
    (folder / "SKILL.md").write_text(GOOD.format(name=decomposed))
    assert check_strict(folder) == []
    skill = load_skill(folder, tmp_path)
    assert skill.name == precomposed and skill.warnings == ()
    upper = tmp_path / "CAFE\u0301"
    upper.mkdir()
    (upper / "SKILL.md").write_text(GOOD.format(name="CAFE\u0301"))
    assert any("only lowercase letters" in p for p in check_strict(upper))
