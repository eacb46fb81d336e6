"""CI runs what the README tells developers and newcomers to run, word for word."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands(section: str) -> list[str]:
    """The `sh` code blocks of one README section."""
    text = (ROOT / "README.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", body, re.DOTALL)]


def test_ci_runs_the_readmes_development_gate_verbatim() -> None:
    [gate] = readme_commands("Development")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert gate in ci
    steps = (
        "ruff check",
        "ruff format --check",
        "mypy",
        "lint-imports",
        "mkdocs build --strict",
        "pytest",
    )
    for step in steps:
        assert f".venv/bin/{step}" in gate


def test_the_quickstart_installs_into_its_own_virtual_environment() -> None:
    clone, chat, tests = readme_commands("Quickstart")[:3]
    assert clone.startswith("git clone ")
    assert chat == "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/lorebot chat"
    assert tests == (
        "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest"
    )
    [gate] = readme_commands("Development")
    assert gate.endswith("&& .venv/bin/pytest")  # the test command's last step, in CI too


def test_ci_checks_the_llama_cpp_that_the_test_extra_asks_for() -> None:
    """`.ci/run` proves llama.cpp runs here before the gate, for the same requirement as the
    test extra, so the gate's install keeps what that check proved."""
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["test"]
    [wanted] = [line for line in extra if line.startswith("llama-cpp-python")]
    ci = (ROOT / ".ci" / "run").read_text()
    assert f'LLAMA="{wanted}"' in ci
    assert ci.index(".ci/llama_works.py") < ci.index(".venv/bin/pytest")


def test_ci_gives_the_tests_a_real_postgresql_and_forbids_skipping_them() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "apt-get install -y -qq postgresql" in ci
    assert "export TESTS_NEED_POSTGRESQL=1" in ci
    assert ci.index("TESTS_NEED_POSTGRESQL") < ci.index(".venv/bin/pytest")


def test_ci_builds_the_image_and_forbids_skipping_its_tests() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "apt-get install -y -qq buildah podman debootstrap" in ci
    assert "    export TESTS_NEED_CONTAINERS=1" in ci  # as root, which debootstrap needs
    assert ci.index("TESTS_NEED_CONTAINERS") < ci.index(".venv/bin/pytest")


def test_ci_gives_the_tests_a_real_browser_and_forbids_skipping_them() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "apt-get install -y -qq chromium chromium-driver" in ci
    assert "export TESTS_NEED_BROWSER=1" in ci
    assert ci.index("TESTS_NEED_BROWSER") < ci.index(".venv/bin/pytest")
