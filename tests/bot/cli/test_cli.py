"""The `lorebot` command line, run in-process through its real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version_and_help(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("lorebot ")
    with pytest.raises(SystemExit):
        main(["notes", "--help"])
    assert "search" in capsys.readouterr().out


def test_walkthrough_add_search_isolation_undo_export_import(
    env: Path, cli_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys,
        "notes",
        "add",
        "channel:slack/C1",
        "staging-db",
        "staging DB is pg-stage-2",
        "--body",
        "pg-stage-2.internal",
    )
    assert code == 0 and "saved channel:slack/C1 / staging-db" in out
    run(capsys, "notes", "add", "user:slack/U1", "editor", "prefers vim", "--private")
    run(capsys, "notes", "add", "channel:slack/C2", "other", "staging lives elsewhere")

    code, out, _ = run(
        capsys,
        "notes",
        "search",
        "staging",
        "--as",
        "user:slack/U1",
        "--in",
        "channel:slack/C1",
        "--json",
    )
    hits = json.loads(out)
    assert [(h["scope"], h["topic"]) for h in hits] == [("channel:slack/C1", "staging-db")]
    assert set(hits[0]) == {"scope", "topic", "summary", "score", "snippet"}

    _, out, _ = run(
        capsys, "notes", "search", "vim", "--as", "user:slack/U1", "--in", "channel:slack/C1"
    )
    assert "nothing found" in out  # a private note stays out of channels
    _, out, _ = run(capsys, "notes", "search", "vim", "--as", "user:slack/U1")
    assert "editor" in out  # ...and shows in the person's DM

    code, out, _ = run(capsys, "notes", "undo")
    assert code == 0 and "channel:slack/C2 / other" in out
    _, out, _ = run(capsys, "notes", "list")
    assert "other" not in out and "staging-db" in out

    code, out, _ = run(capsys, "notes", "export", str(env / "out"))
    assert code == 0 and (env / "out/channel/slack/C1/staging-db.md").exists()
    _, out, _ = run(capsys, "notes", "import", str(env / "out"))
    assert "0 new, 0 updated, 2 unchanged" in out

    _, out, _ = run(capsys, "notes", "history")
    assert "revert" in out and "create" in out


def test_user_errors_exit_1_with_one_line_and_no_traceback(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "notes", "add", "channel:slack/C1", "other", "another note")
    code, _, err = run(capsys, "notes", "show", "channel:slack/C1", "nope")
    assert code == 1 and err.strip() == "lorebot: there is no note 'nope' in channel:slack/C1"
    code, _, err = run(
        capsys, "notes", "add", "channel:slack/C1", "creds", "x", "--body", "password=hunter22"
    )
    assert code == 1 and "Traceback" not in err and "password" in err
    code, _, err = run(capsys, "notes", "revert", "12345")
    assert code == 1 and "no change 12345" in err
    code, _, err = run(capsys, "notes", "search", "x")
    assert code == 1 and "--scope" in err


def test_bad_config_is_one_line_naming_the_key(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = env / "lorebot.toml"
    config.write_text("[memory]\nmax_note_bytes = 'lots'\n")
    code, _, err = run(capsys, "--config", str(config), "notes", "list")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "memory.max_note_bytes" in err

    config.write_text("[memory\n")
    code, _, err = run(capsys, "--config", str(config), "notes", "list")
    assert code == 1 and "not valid TOML" in err

    monkeypatch.setenv("LOREBOT_OLLAMA__TIMEOUT_S", "-3")
    code, _, err = run(capsys, "notes", "list")
    assert code == 1 and "LOREBOT_OLLAMA__TIMEOUT_S" in err


def test_config_file_env_and_dotenv_layer(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.config.loading import load_settings

    (env / "lorebot.toml").write_text('[ollama]\nmodel = "from-toml"\nhost = "http://toml:1"\n')
    (env / ".env").write_text("LOREBOT_OLLAMA__HOST=http://dotenv:2\n")
    monkeypatch.setenv("LOREBOT_CONFIG", str(env / "lorebot.toml"))
    settings = load_settings()
    assert settings.ollama.model == "from-toml"
    assert settings.ollama.host == "http://dotenv:2"
    monkeypatch.setenv("LOREBOT_OLLAMA__HOST", "http://env:3")
    assert load_settings().ollama.host == "http://env:3"


def test_database_defaults_to_the_systemd_state_directory(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.config.loading import load_settings

    monkeypatch.delenv("LOREBOT_DATABASE__PATH")
    monkeypatch.setenv("XDG_DATA_HOME", str(env / "data"))
    assert load_settings().database.path == env / "data" / "lorebot" / "lorebot.db"
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/lorebot")
    assert load_settings().database.path == Path("/var/lib/lorebot/lorebot.db")


def test_secrets_are_hidden_in_settings(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.config.loading import load_settings

    monkeypatch.setenv("LOREBOT_SLACK__BOT_TOKEN", "xoxb-very-secret-value")
    settings = load_settings()
    assert "very-secret" not in repr(settings) and "very-secret" not in str(settings)
    assert settings.slack.bot_token is not None
    assert settings.slack.bot_token.get_secret_value() == "xoxb-very-secret-value"


def test_run_without_any_platform_points_to_chat_and_the_docs(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "run")
    assert code == 1
    assert "lorebot chat" in err and "docs/slack.md" in err and "Traceback" not in err


def test_skills_validate_and_list(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.skills import write_skill

    good = write_skill(env / "mine", "good-one")
    bad = write_skill(env / "mine", "Bad_One", name="Bad_One", description="")
    code, out, _ = run(capsys, "skills", "validate", str(env / "mine"))
    assert code == 1
    assert f"{good}: ok" in out and "1 of 2 skills valid" in out
    assert f"{bad / 'SKILL.md'}: `description` is missing or empty" in out
    code, out, _ = run(capsys, "skills", "validate", str(good))
    assert code == 0

    write_skill(env / "user-skills", "remembering", description="Mine. Use when mine.")
    code, out, _ = run(capsys, "skills", "list", "--dir", str(env / "mine"))
    assert code == 0
    assert "remembering: Mine. Use when mine." in out
    assert "shadows " in out and "bundled/remembering/SKILL.md" in out
    assert "skipped " in out and "Bad_One" in out
    code, out, _ = run(capsys, "skills", "show", "good-one", "--dir", str(env / "mine"))
    assert code == 0 and "1. Do the thing." in out
