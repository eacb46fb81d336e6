"""The web console in a real browser (headless Chromium) against a real `lorebot run` with
the fake Slack, the fake Ollama and a real MCP server, on SQLite and on PostgreSQL: sign in
by a one-time link and with Slack (the fake's OpenID Connect provider), browse and search,
forget a note and see the change set, approve a card whose waiting turn then answers in
Slack, find the action in the audit, and be refused another person's note and a form
without its token. A screenshot of each page is saved in test-artifacts/console/ENGINE/."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import aiohttp

from memory import NoteDraft, Scope
from memory.stores.stores import StoreOptions
from tests.fakes.ollama import FakeOllama
from tests.fakes.slack import FakeSlack
from tests.fakes.slack import fake_slack_fixture as fake_slack_fixture  # noqa: F401
from tests.support.browser import Chromium
from tests.support.daemon import daemon, daemon_env
from tests.support.engines import open_engine
from tests.support.mcp import stdio_server
from tests.support.polling import until

ALICE = "user:slack/UALICE"
BOB = "user:slack/UBOB"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def seed(engine: str, where: str | Path) -> dict[str, int]:
    """Notes of two people, before the daemon starts: their ids by topic."""
    stores = await open_engine(engine, where, StoreOptions())
    try:
        ids = {}
        for scope, topic, summary, private in (
            (ALICE, "deploys", "alice deploys on fridays after the standup", False),
            (ALICE, "coffee", "alice drinks her coffee black", True),
            (ALICE, "editor", "alice writes in helix", False),
            ("channel:slack/C1", "standup", "the standup is at ten", False),
            (BOB, "deploy-key", "bob keeps the deploy key in the red folder", True),
        ):
            saved = await stores.notes.save(
                NoteDraft(Scope.parse(scope), topic, summary, private=private), actor=scope
            )
            ids[topic] = saved.note.id
        return ids
    finally:
        await stores.close()


async def sign_in_link(env: dict[str, str], cwd: Path, user: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "console",
        "link",
        "--user",
        user,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().strip()


async def console_up(base: str) -> bool:
    try:
        async with aiohttp.ClientSession() as http, http.get(base + "/signin") as response:
            return response.status == 200
    except aiohttp.ClientError:
        return False


async def test_the_console_in_a_browser(
    engine: str,
    database_at: str | Path,
    tmp_path: Path,
    fake_ollama: FakeOllama,
    fake_slack: FakeSlack,
    chromium: Chromium,
) -> None:
    ids = await seed(engine, database_at)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = daemon_env(tmp_path, fake_ollama, fake_slack)
    if engine == "sqlite":
        env["LOREBOT_DATABASE__PATH"] = str(database_at)
    else:
        env["LOREBOT_DATABASE__URL"] = str(database_at)
    env.update(
        LOREBOT_CONSOLE__ENABLED="true",
        LOREBOT_CONSOLE__LISTEN=f"127.0.0.1:{port}",
        LOREBOT_BOT__ADMINS=json.dumps(["user:slack/UADMIN"]),
        LOREBOT_MCP__SERVERS=json.dumps([stdio_server()]),
        LOREBOT_CONSOLE__SLACK_CLIENT_ID=fake_slack.openid.client_id,
        LOREBOT_CONSOLE__SLACK_CLIENT_SECRET=fake_slack.openid.client_secret,
    )
    shots = f"console/{engine}"
    fake_ollama.tool_call("ops__restart", {"service": "web"})
    fake_ollama.reply("web is restarting.")
    async with daemon(tmp_path, env) as process:
        await fake_slack.wait_for(lambda: fake_slack.connections, within=60)
        await until(lambda: console_up(base), within=60)
        await fake_slack.push(fake_slack.app_mention("<@UBOT> restart web"), within=10)
        await fake_slack.wait_for(lambda: any(p.buttons for p in fake_slack.posts), within=30)
        [card] = [p for p in fake_slack.posts if p.buttons]

        # Signing in by a one-time link, printed on the server.
        link = await sign_in_link(env, tmp_path, "slack/UALICE")
        assert link.startswith(base + "/signin/link/")
        await chromium.open(link)
        await chromium.screenshot(f"{shots}/signin-link")
        await chromium.click("#use-link")
        assert "Overview" in await chromium.text() and ALICE in await chromium.text("header")
        await chromium.screenshot(f"{shots}/overview")

        # Memory: her scope, a search, a note and its history.
        await chromium.click("header a[href='/memory']")
        assert ALICE in await chromium.text() and BOB not in await chromium.text()
        await chromium.screenshot(f"{shots}/memory")
        await chromium.type("input[name=q]", "deploy")
        await chromium.click("form.search button")
        found = await chromium.text()
        assert "alice deploys on fridays" in found and "red folder" not in found
        await chromium.screenshot(f"{shots}/search")
        await chromium.click(f"a[href='/notes/{ids['deploys']}']")
        await chromium.screenshot(f"{shots}/note")

        # Forget it: the change set, authored by her, which can be undone.
        await chromium.click("#forget")
        change = await chromium.text()
        assert "forget" in change and f"by {ALICE}" in change and "Undo this change" in change
        await chromium.screenshot(f"{shots}/change")

        # Approve the card: the turn that waited on it answers in Slack.
        await chromium.click("header a[href='/cards']")
        waiting = await chromium.text()
        assert "run restart" in waiting and '"service": "web"' in waiting
        await chromium.screenshot(f"{shots}/cards")
        await chromium.click("#card-1 button[value=approve]")
        assert "approved by " + ALICE in await chromium.text()
        await fake_slack.wait_for(
            lambda: any(p.text == "web is restarting." for p in fake_slack.posts), within=30
        )
        assert card.current.startswith("✅")
        await chromium.screenshot(f"{shots}/card")

        # The action in the audit.
        await chromium.click("header a[href='/actions']")
        audit = await chromium.text()
        assert "ops__restart" in audit and "restarted web" in await chromium.run(
            "return document.querySelector('main').innerHTML"
        )
        await chromium.screenshot(f"{shots}/actions")
        for page in ("jobs", "skills"):
            await chromium.click(f"header a[href='/{page}']")
            await chromium.screenshot(f"{shots}/{page}")

        # Another person's note, by editing the address: not found, and nothing of it shown.
        await chromium.open(f"{base}/notes/{ids['deploy-key']}")
        assert await chromium.title() == "Not found · lorebot console"
        assert "red folder" not in await chromium.text()
        await chromium.screenshot(f"{shots}/not-found")

        # A form whose token was taken out is refused, and the note stays.
        await chromium.open(f"{base}/notes/{ids['editor']}")
        await chromium.run("document.querySelectorAll('input[name=csrf]').forEach(e => e.remove())")
        await chromium.click("#forget")
        assert await chromium.title() == "Forbidden · lorebot console"
        await chromium.screenshot(f"{shots}/forbidden")
        await chromium.open(f"{base}/notes/{ids['editor']}")
        assert "alice writes in helix" in await chromium.text()

        # Signing out, then in with Slack: the fake's OpenID Connect provider, and back.
        await chromium.click("header form.who button")
        await chromium.screenshot(f"{shots}/signin")
        await chromium.click("#slack")
        assert "Overview" in await chromium.text() and ALICE in await chromium.text("header")
        await chromium.click("header a[href='/memory']")
        assert "channel:slack/C1" in await chromium.text()  # Slack says she is in C1

        # An admin's settings page.
        await chromium.open(await sign_in_link(env, tmp_path, "slack/UADMIN"))
        await chromium.click("#use-link")
        await chromium.click("header a[href='/settings']")
        assert "console.listen" in await chromium.text()
        await chromium.screenshot(f"{shots}/settings")

        process.terminate()
        async with asyncio.timeout(20):
            assert await process.wait() == 0
