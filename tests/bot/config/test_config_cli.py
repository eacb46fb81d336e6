"""Settings as an operator meets them: `config show` and `config init`, `.env` files that
hold other programs' keys, misspelt names, one line per invalid value (at start and in
`doctor`), options after the subcommand, a closed pipe, and shell completion."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys

import pytest

from bot.cli.main import build_parser
from bot.config.render import render_env
from tests.support.fresh_shell import Shell
from tests.support.paths import ROOT

SECRET = "xoxb-1234-very-secret-token"


def one_line(result_err: str) -> str:
    lines = result_err.splitlines()
    assert len(lines) == 1, result_err
    return lines[0]


def test_a_dotenv_with_other_programs_keys_still_works(shell: Shell) -> None:
    (shell.cwd / ".env").write_text(
        "POSTGRES_PASSWORD=x\nCOMPOSE_PROJECT_NAME=ops\nLOREBOT_BOT__NAME=from-dotenv\n"
    )
    shown = shell.main("config", "show")
    assert shown.code == 0, shown.err
    assert 'bot.name = "from-dotenv"  (.env: LOREBOT_BOT__NAME)' in shown.out
    assert "POSTGRES" not in shown.out
    assert shell.main("notes", "add", "channel:console/ops", "db", "the db").code == 0


@pytest.mark.parametrize("where", ["environment", ".env"])
def test_a_misspelt_variable_is_named_with_the_nearest_setting(shell: Shell, where: str) -> None:
    if where == "environment":
        shell.setenv("LOREBOT_DATABSE__PATH", str(shell.root / "typo.db"))
        origin = "the environment"
    else:
        (shell.cwd / ".env").write_text(f"LOREBOT_DATABSE__PATH={shell.root / 'typo.db'}\n")
        origin = str(shell.cwd / ".env")
    result = shell.main("notes", "list")
    assert result.code == 1
    assert one_line(result.err) == (
        f"lorebot: LOREBOT_DATABSE__PATH in {origin} is not a lorebot setting: "
        "did you mean LOREBOT_DATABASE__PATH?"
    )


def test_an_unknown_key_in_the_config_file_is_named_with_the_nearest(shell: Shell) -> None:
    config = shell.root / "lorebot.toml"
    config.write_text('[ollama]\nmodle = "qwen3:8b"\n')
    result = shell.main("--config", str(config), "notes", "list")
    assert one_line(result.err) == (
        f"lorebot: ollama.modle in {config} is not a lorebot setting: did you mean ollama.model?"
    )


INVALID = [
    (
        {"LOREBOT_JOBS__TIMEZONE": "Mars/Olympus"},
        None,
        "jobs.timezone (LOREBOT_JOBS__TIMEZONE in the environment): unknown time zone "
        "'Mars/Olympus': use an IANA name such as 'UTC' or 'Europe/Berlin'",
    ),
    (
        {"LOREBOT_JOBS__REFLECTION_CRON": "30 25 * * *"},
        None,
        "jobs.reflection_cron (LOREBOT_JOBS__REFLECTION_CRON in the environment): '30 25 * * *' "
        "is not a cron expression (Error validating expression '25': the last value (25) is "
        "higher than the maximum value (23)): write five fields, minute hour day month weekday, "
        "e.g. '30 23 * * *'",
    ),
    (
        {},
        '[[jobs.digests]]\nchannel = "channel:slack/C1"\ncron = "every morning"\n',
        "jobs.digests.0.cron ({config}): 'every morning' is not a cron expression (wrong number "
        "of fields: got 2, expected 5): write five fields, minute hour day month weekday, "
        "e.g. '30 23 * * *'",
    ),
    (
        {"LOREBOT_SKILLS__CHANNELS": "channel:slack/C1=deploy"},
        None,
        "LOREBOT_SKILLS__CHANNELS in the environment is not valid JSON (Expecting value: line 1 "
        'column 1 (char 0)): write it as JSON, e.g. \'["a", "b"]\' for a list or '
        '\'{"key": "value"}\' for a table',
    ),
    (
        {"LOREBOT_OBSERVABILITY__LISTEN": "9464"},
        None,
        "observability.listen (LOREBOT_OBSERVABILITY__LISTEN in the environment): should be "
        "host:port for /healthz and /metrics, not '9464'",
    ),
]


@pytest.mark.parametrize(("variables", "toml", "expected"), INVALID)
def test_each_invalid_value_is_one_line_at_start_and_in_doctor(
    shell: Shell, variables: dict[str, str], toml: str | None, expected: str
) -> None:
    config = shell.root / "lorebot.toml"
    config.write_text(toml or "")
    expected = expected.replace("{config}", str(config))
    for name, value in variables.items():
        shell.setenv(name, value)
    shell.setenv("LOREBOT_CONFIG", str(config))
    result = shell.main("notes", "list")  # at start, before any job or database
    assert result.code == 1
    assert one_line(result.err) == f"lorebot: {expected}"
    doctor = shell.main("doctor")
    assert doctor.code == 1
    assert doctor.out.splitlines()[0] == f"✗ config: {expected}"


def test_lists_from_the_environment_and_a_lower_case_log_level_are_accepted(
    shell: Shell,
) -> None:
    shell.setenv("LOREBOT_BOT__ADMINS", "user:slack/U1, user:slack/U2")
    shell.setenv("LOREBOT_BOT__ALLOWED_USERS", '["user:slack/U3"]')
    shell.setenv("LOREBOT_BOT__READ_ONLY_CHANNELS", "[channel:slack/C1]")  # systemd ate quotes
    shell.setenv("LOREBOT_LOG_LEVEL", "debug")
    shown = shell.run("config", "show")
    assert shown.code == 0, shown.err
    assert 'bot.admins = ["user:slack/U1", "user:slack/U2"]' in shown.out
    assert 'bot.allowed_users = ["user:slack/U3"]' in shown.out
    assert 'bot.read_only_channels = ["channel:slack/C1"]' in shown.out
    assert 'log_level = "DEBUG"  (environment: LOREBOT_LOG_LEVEL)' in shown.out


def test_config_show_says_where_each_setting_came_from_and_masks_secrets(shell: Shell) -> None:
    config = shell.root / "lorebot.toml"
    config.write_text(
        '[ollama]\nmodel = "from-file"\n\n[memory]\nrecall_k = 7\n\n'
        '[[mcp.servers]]\nname = "ops"\nurl = "http://127.0.0.1:9/mcp"\n'
        'headers = { Authorization = "Bearer literal-secret", "X-Key" = "${OPS_KEY}" }\n'
    )
    (shell.cwd / ".env").write_text("LOREBOT_MEMORY__RECALL_K=9\n")
    shell.setenv("LOREBOT_SLACK__BOT_TOKEN", SECRET)
    shell.setenv("LOREBOT_CONFIG", str(config))
    shown = shell.main("config", "show")
    assert shown.code == 0, shown.err
    assert SECRET not in shown.out and "literal-secret" not in shown.out
    lines = set(shown.out.splitlines())
    assert f"config file: {config}" in lines
    assert 'ollama.model = "from-file"  (file)' in lines
    assert "memory.recall_k = 9  (.env: LOREBOT_MEMORY__RECALL_K)" in lines
    assert 'slack.bot_token = "********"  (environment: LOREBOT_SLACK__BOT_TOKEN)' in lines
    assert "slack.app_token = (not set)  (default)" in lines
    assert 'ollama.host = "http://127.0.0.1:11434"  (default)' in lines
    [servers] = [line for line in lines if line.startswith("mcp.servers = ")]
    assert '"Authorization": "********"' in servers and '"X-Key": "${OPS_KEY}"' in servers

    as_json = json.loads(shell.main("config", "show", "--json").out)
    assert as_json["config_file"] == str(config)
    assert as_json["settings"]["memory.recall_k"] == {
        "value": 9,
        "source": ".env",
        "variable": "LOREBOT_MEMORY__RECALL_K",
        "file": None,
    }
    assert as_json["settings"]["ollama.model"]["file"] == str(config)
    assert as_json["settings"]["slack.bot_token"]["value"] == "********"


def test_config_show_says_when_there_is_no_dotenv(shell: Shell) -> None:
    dotenv = shell.cwd / ".env"
    shown = shell.main("config", "show")
    assert f".env: none ({dotenv} does not exist)" in shown.out.splitlines()

    dotenv.write_text("POSTGRES_PASSWORD=x\n")  # another program's
    shown = shell.main("config", "show")
    assert f".env: {dotenv} (no LOREBOT_ keys)" in shown.out.splitlines()


def uncommented(text: str) -> str:
    """The file with every `# key = value` line of a table's own settings uncommented."""
    return re.sub(r"^# ([a-z_]+ = .+)$", r"\1", text, flags=re.MULTILINE)


def test_config_init_writes_every_setting_and_loads_back(shell: Shell) -> None:
    defaults = shell.main("config", "show", "--json")
    written = shell.main("config", "init")
    path = shell.home / ".config/lorebot/config.toml"
    assert written.code == 0 and written.out.startswith(f"wrote {path}:")
    text = path.read_text()
    for key in json.loads(defaults.out)["settings"]:
        section, _, name = key.rpartition(".")
        if key in ("jobs.digests", "mcp.servers"):  # lists of tables, shown as an example
            assert f"# [[{key}]]" in text
            continue
        assert re.search(rf"^# {name} =", text, re.MULTILINE), key
        assert not section or f"\n[{section}]\n" in text, key

    shown = json.loads(shell.main("config", "show", "--json").out)
    assert shown["config_file"] == str(path)
    assert {k: v["value"] for k, v in shown["settings"].items()} == {
        k: v["value"] for k, v in json.loads(defaults.out)["settings"].items()
    }
    # Every default written in the file is a valid value of its setting.
    path.write_text(uncommented(text))
    again = json.loads(shell.main("config", "show", "--json").out)
    assert again["settings"]["ollama.model"]["source"] == "file"
    assert {k: v["value"] for k, v in again["settings"].items()} == {
        k: v["value"] for k, v in json.loads(defaults.out)["settings"].items()
    }

    refused = shell.main("config", "init")
    assert refused.code == 1
    assert one_line(refused.err) == f"lorebot: {path} exists: add --force to overwrite it"
    assert shell.main("config", "init", "--force").code == 0 and path.read_text() == text

    elsewhere = shell.main("config", "init", "lorebot.toml")
    assert f"lorebot reads it with --config {shell.cwd / 'lorebot.toml'}" in elsewhere.out


def test_config_init_works_while_the_settings_are_broken(shell: Shell) -> None:
    shell.setenv("LOREBOT_JOBS__TIMEZONE", "Nowhere/Land")
    printed = shell.main("config", "init", "-")
    assert printed.code == 0 and printed.out.startswith("# lorebot configuration")


def test_the_environment_file_lists_every_setting_and_loads_back(shell: Shell) -> None:
    example = (ROOT / "systemd/lorebot.env.example").read_text()
    assert example.endswith(render_env()), "regenerate it: lorebot config init --env -"
    keys = json.loads(shell.main("config", "show", "--json").out)["settings"]
    for key in keys:
        assert f"#LOREBOT_{key.upper().replace('.', '__')}=" in example, key

    dotenv = shell.cwd / ".env"
    assert shell.main("config", "init", "--env").code == 0
    assert dotenv.stat().st_mode & 0o777 == 0o600
    # Every value written is read back as it was (quotes as python-dotenv reads them).
    dotenv.write_text(re.sub(r"^#(LOREBOT_\w+=.+)$", r"\1", dotenv.read_text(), flags=re.M))
    shown = json.loads(shell.main("config", "show", "--json").out)["settings"]
    assert shown["jobs.reflection_cron"] == {
        "value": "30 23 * * *",
        "source": ".env",
        "variable": "LOREBOT_JOBS__REFLECTION_CRON",
        "file": None,
    }
    assert shown["skills.channels"]["value"] == {} and shown["mcp.servers"]["value"] == []
    assert {k: v["value"] for k, v in shown.items()} == {k: v["value"] for k, v in keys.items()}


def test_options_work_after_the_subcommand_too(shell: Shell) -> None:
    config = shell.root / "elsewhere.toml"
    config.write_text(f'[database]\npath = "{shell.root / "elsewhere.db"}"\n')
    before = shell.main("--config", str(config), "notes", "add", "channel:console/x", "t", "s")
    assert before.code == 0
    after = shell.main("notes", "list", "--config", str(config), "--log-format", "json")
    assert after.code == 0 and "channel:console/x" in after.out
    between = shell.main("notes", "--config", str(config), "list")
    assert between.code == 0 and "channel:console/x" in between.out
    assert shell.main("notes", "list", "--debug").code == 1  # the default database: none yet


def closed_pipe(shell: Shell, *argv: str) -> subprocess.CompletedProcess[str]:
    """`lorebot ARGV | head -0`: the reader is gone before lorebot writes."""
    child = subprocess.Popen(
        [sys.executable, "-m", "bot.cli.main", *argv],
        cwd=shell.cwd,
        env=shell.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read()
    child.stderr.close()
    return subprocess.CompletedProcess(argv, child.wait(timeout=60), "", err)


@pytest.mark.parametrize(
    "argv",
    [
        ("notes", "list"),  # written when lorebot exits
        ("config", "show"),
        ("completion", "zsh"),  # larger than the pipe's buffer: fails mid-write
    ],
    ids=" ".join,
)
def test_a_reader_that_leaves_early_gets_no_traceback(shell: Shell, argv: tuple[str, ...]) -> None:
    shell.setenv("LOREBOT_DATABASE__PATH", str(shell.root / "notes.db"))
    assert shell.main("notes", "add", "channel:console/ops", "db", "the db").code == 0
    done = closed_pipe(shell, *argv)
    assert done.stderr == ""
    assert done.returncode == 141  # as a shell reports a writer stopped by SIGPIPE


def test_completion_scripts_for_bash_and_zsh(shell: Shell) -> None:
    bash = shell.run("completion", "bash")
    assert bash.code == 0 and "complete -o bashdefault -F _shtab_lorebot lorebot" in bash.out
    script = shell.root / "lorebot.bash"
    script.write_text(bash.out)
    probe = (
        f"source {script}\n"
        "for line in 'lorebot no' 'lorebot notes l' 'lorebot completion ' "
        "'lorebot config i'; do\n"
        "  read -ra COMP_WORDS <<< \"$line\"; [[ $line == *' ' ]] && COMP_WORDS+=('')\n"
        '  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _shtab_lorebot; echo "${COMPREPLY[*]}"\n'
        "done\n"
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["notes", "list", "bash zsh", "init"], done.stderr

    zsh = shell.run("completion", "zsh")
    assert zsh.code == 0 and zsh.out.startswith("#compdef lorebot")
    assert "proposals" in zsh.out and "completion" in zsh.out
    if shutil.which("zsh"):
        (shell.root / "_lorebot").write_text(zsh.out)
        checked = subprocess.run(["zsh", "-n", str(shell.root / "_lorebot")], capture_output=True)
        assert checked.returncode == 0, checked.stderr


def test_every_argument_and_choice_has_help() -> None:
    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif (not action.option_strings or action.choices) and not action.help:
                missing.append(f"{path} {action.dest}")

    walk(build_parser(), "lorebot")
    assert missing == []
