"""lorebot's image, built from the `Containerfile` and run here: what an operator who
starts it meets (the version, `doctor`, a piped chat, the user and the state volume), what
it must not hold (a compiler, a token), `lorebot run` inside it answering in Slack,
healthy by its own health check and stopped by SIGTERM as `docker stop` stops it, and two
`lorebot run --replica` in it on one PostgreSQL, as compose's `ha` profile runs them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tomllib

from bot.core.fallback import OFFLINE_NOTICE
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.containers import ROOT, Container, container, image_config, tool_env
from tests.support.containers import lorebot_image as lorebot_image  # noqa: F401
from tests.support.llama import free_port

_ = container  # a fixture
STATE = "/var/lib/lorebot"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_image_runs_the_daemon_as_its_own_user_with_state_in_a_volume(
    lorebot_image: str,
) -> None:
    config = image_config(lorebot_image)
    assert config["Cmd"] == ["lorebot", "run"]
    assert config["User"] == "lorebot:lorebot"
    assert set(config["Volumes"]) == {STATE}
    assert config["StopSignal"] == "SIGTERM"
    check = " ".join(config["Healthcheck"]["Test"])
    assert "/healthz" in check and "9464" in check
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["STATE_DIRECTORY"] == STATE
    assert env["LOREBOT_OBSERVABILITY__LISTEN"].endswith(":9464")
    # Tokens and passwords come with the container, never in the image.
    assert not [k for k in env if any(w in k for w in ("TOKEN", "SECRET", "PASSWORD", "URL"))]


def test_version_and_doctor_say_where_lorebot_keeps_its_state(container: Container) -> None:
    version = container.run("lorebot", "--version")
    assert version.stdout.strip() == f"lorebot {VERSION}", version.stderr

    doctor = container.run("lorebot", "doctor")
    assert doctor.returncode == 1  # no model server: one check fails
    assert f"none yet at {STATE}/lorebot.db" in doctor.stdout
    assert "✗ model: unreachable at http://127.0.0.1:11434" in doctor.stdout
    assert "Traceback" not in doctor.stdout + doctor.stderr


def test_a_piped_chat_answers_from_memory_when_the_model_is_unreachable(
    container: Container,
) -> None:
    chat = container.run("lorebot", "chat", stdin="hello there\n")
    assert chat.returncode == 0, chat.stderr
    assert OFFLINE_NOTICE in chat.stdout
    assert "Traceback" not in chat.stderr
    # The database is the image's user's, in the volume, readable by it alone.
    owner = container.run("stat", "-c", "%U %a", f"{STATE}/lorebot.db")
    assert owner.stdout.split() == ["lorebot", "600"]
    who = container.run("id", "-un")
    assert who.stdout.strip() == "lorebot"
    # The README's backup command works as it is written there.
    backup = container.run("lorebot", "backup", f"{STATE}/backups/")
    assert backup.returncode == 0, backup.stderr
    assert f" to {STATE}/backups/lorebot-" in backup.stdout


def test_sandboxed_scripts_say_what_the_container_must_allow(container: Container) -> None:
    doctor = container.run("lorebot", "doctor", env={"LOREBOT_SKILLS__SCRIPTS": "sandboxed"})
    # bubblewrap is installed; whether it may make namespaces is the container runtime's say.
    assert "not installed" not in doctor.stdout
    assert "Traceback" not in doctor.stdout + doctor.stderr
    works = container.run("bwrap", "--ro-bind", "/", "/", "--unshare-all", "true")
    if works.returncode != 0:
        assert "bubblewrap cannot start a sandbox here" in doctor.stdout
        assert "user namespaces" in doctor.stdout


def test_the_image_holds_no_compiler(container: Container) -> None:
    found = container.run(
        "sh", "-c", "for tool in gcc cc c++ g++ clang make ld as; do command -v $tool; done"
    )
    assert found.stdout == ""


async def test_lorebot_run_in_the_image_answers_in_slack_and_stops_on_sigterm(
    container: Container, fake_ollama: FakeOllama, fake_slack: FakeSlack
) -> None:
    fake_ollama.reply("Hello from the container.")
    env = {
        "LOREBOT_OLLAMA__HOST": fake_ollama.url,
        "LOREBOT_SLACK__BOT_TOKEN": fake_slack.bot_token,
        "LOREBOT_SLACK__APP_TOKEN": fake_slack.app_token,
        "LOREBOT_SLACK__API_BASE_URL": fake_slack.api_url,
    }
    # `exec` keeps the shell's pid, which is the daemon's: SIGTERM goes to lorebot itself,
    # as `docker stop` sends it to the container's first process.
    process = await asyncio.create_subprocess_exec(
        *container.command("sh", "-c", "echo $$; exec lorebot run", env=env),
        env=tool_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    try:
        pid = int(await asyncio.wait_for(process.stdout.readline(), 60))
        await fake_slack.wait_for(lambda: fake_slack.connections, within=60)
        await fake_slack.push(fake_slack.app_mention("<@UBOT> are you there?"), within=10)
        await fake_slack.wait_for(lambda: fake_slack.posts, within=30)
        assert [p.text for p in fake_slack.posts] == ["Hello from the container."]

        healthy = await _health_check(container)
        assert healthy == 0

        os.kill(pid, signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    log = (await process.stdout.read()).decode()
    assert code == 0, log
    assert fake_slack.bot_token not in log and fake_slack.app_token not in log


async def _health_check(container: Container) -> int:
    """The exit status of the image's own HEALTHCHECK command, run in `container`."""
    test = image_config(container.image)["Healthcheck"]["Test"]
    assert test[0] == "CMD"
    check = await asyncio.create_subprocess_exec(
        *container.command(*test[1:]),
        env=tool_env(),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    return await asyncio.wait_for(check.wait(), 30)


async def test_two_replicas_in_the_image_share_postgresql_as_the_ha_profile_runs_them(
    container: Container, fake_ollama: FakeOllama, fake_slack: FakeSlack, pg_url: str
) -> None:
    refused = container.run("lorebot", "run", "--replica")
    assert refused.returncode != 0 and "needs database.url" in refused.stderr
    assert "Traceback" not in refused.stderr

    fake_ollama.default_reply = lambda body: "Answered by a replica."
    env = {
        "LOREBOT_DATABASE__URL": pg_url,
        "LOREBOT_OLLAMA__HOST": fake_ollama.url,
        "LOREBOT_SLACK__BOT_TOKEN": fake_slack.bot_token,
        "LOREBOT_SLACK__APP_TOKEN": fake_slack.app_token,
        "LOREBOT_SLACK__API_BASE_URL": fake_slack.api_url,
    }
    processes, pids = [], []
    try:
        for _ in range(2):  # each its own health port, as compose publishes 9464 and 9465
            listen = {"LOREBOT_OBSERVABILITY__LISTEN": f"127.0.0.1:{free_port()}"}
            command = "echo $$; exec lorebot run --replica"
            process = await asyncio.create_subprocess_exec(
                *container.command("sh", "-c", command, env={**env, **listen}),
                env=tool_env(),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            assert process.stdout is not None
            pids.append(int(await asyncio.wait_for(process.stdout.readline(), 60)))
            processes.append(process)
            await fake_slack.wait_for(lambda: fake_slack.connections == len(pids), within=60)
        for n in range(2):  # one mention through each replica's connection
            mention = fake_slack.app_mention(f"<@UBOT> question {n}", channel=f"C{n}")
            await fake_slack.push(mention, to=n, within=10)
        await fake_slack.wait_for(lambda: len(fake_slack.posts) == 2, within=30)
        doctor = await asyncio.to_thread(container.run, "lorebot", "doctor", "--json", env=env)
        replicas = json.loads(doctor.stdout)["replicas"]
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        codes = [await asyncio.wait_for(p.wait(), 30) for p in processes]
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert [p.text for p in fake_slack.posts] == ["Answered by a replica."] * 2
    assert sorted(r["role"] for r in replicas) == ["leader", "standby"]
    assert codes == [0, 0]
