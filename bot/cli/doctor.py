"""`lorebot doctor`: check configuration, database, model, platforms and skills, with fixes."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from adapters.diagnosis import Finding
from bot.cli.common import print_json
from bot.cli.doctor_replicas import fetch_replicas, replica_checks, replicas_json
from bot.cli.doctor_storage import (
    check_database,
    check_slips,
    check_vectors,
    check_waiting_cards,
)
from memory.clock import utc_now

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from bot.daemon.platforms import Platform

Check = Finding


def line(check: Check) -> str:
    mark = "✓" if check.ok else "✗"
    fix = f"\n    fix: {check.fix}" if not check.ok and check.fix else ""
    return f"{mark} {check.name}: {check.detail}{fix}"


def add_parser(commands: Any) -> None:
    p = commands.add_parser("doctor", help="check that everything lorebot needs works")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON object: ok, passed, total, checks (each name, ok, detail, fix; "
        "fix is null when there is none); the exit code is the same",
    )
    p.set_defaults(command=cmd_doctor)


def _plain(text: str) -> str:
    """Check texts quote commands in backticks for people; JSON carries the bare text."""
    return text.replace("`", "")


def _check_json(check: Check) -> dict[str, Any]:
    return {
        "name": check.name,
        "ok": check.ok,
        "detail": _plain(check.detail),
        "fix": _plain(check.fix) if check.fix else None,
    }


def print_json_report(checks: list[Check], **more: Any) -> None:
    """The checks as `doctor --json` prints them, one object for the whole run, with the
    `more` fields after them."""
    passed = sum(c.ok for c in checks)
    print_json(
        {
            "ok": passed == len(checks),
            "passed": passed,
            "total": len(checks),
            "checks": [_check_json(c) for c in checks],
            **more,
        }
    )


async def check_model(settings: Settings) -> list[Check]:
    """The model probed as the daemon probes it, within the backend's probe timeout: one
    check named `model` whether it passes or not, saying where its context length came
    from; on an OpenAI-compatible server, also how it takes structured output."""
    from bot.model.client import chat_client
    from bot.model.errors import ModelUnavailable
    from bot.model.response_formats import ResponseFormats

    server = settings.model_server
    client = chat_client(server, ResponseFormats.beside(settings.database.path))
    try:
        info = await client.fetch_model_info(server.model)
    except ModelUnavailable as exc:
        return [Check(False, "model", str(exc), exc.fix)]
    finally:
        await client.close()
    checks = [
        Check(
            True,
            "model",
            f"{server.model} at {server.url}, context {info.context_length} tokens "
            f"({info.context_from}), thinking {'yes' if info.supports_thinking else 'no'}",
        )
    ]
    if server.backend == "openai":
        learnt = info.structured_output or (
            "not tried yet on this server (the first structured answer, such as a drafted "
            "note, finds out and keeps it)"
        )
        checks.append(Check(True, "structured output", learnt))
    if not info.supports_tools:
        checks.append(
            Check(
                False,
                "model tools",
                f"{server.model} does not support tools",
                "pick a model with tool support (e.g. qwen3:8b); without it lorebot "
                "answers with recall only",
            )
        )
    return checks


async def check_skills(settings: Settings) -> list[Check]:
    from bot.context.skills import build_catalog

    catalog = build_catalog(settings.skills)
    skills, skipped = catalog.all(), catalog.skipped
    checks = [Check(True, "skills", f"{len(skills)} skills loaded"), _check_scripts(settings)]
    for item in skipped:
        checks.append(
            Check(
                False,
                "skill",
                f"{item.path} skipped: {item.reason}",
                f"lorebot skills validate {item.path.parent}",
            )
        )
    for skill in skills:
        for path in skill.shadows:
            checks.append(Check(True, "skill", f"{skill.name} from {skill.path} shadows {path}"))
    return checks


def _check_scripts(settings: Settings) -> Check:
    """Whether skill scripts can run as `skills.scripts` says: the sandbox tried for real
    (in a container, its runtime decides whether bubblewrap may make namespaces)."""
    from bot.actions.sandbox import script_sandbox_problem

    mode = settings.skills.scripts
    problem = script_sandbox_problem(settings)
    if problem is not None:  # its own words end with the fix
        return Check(False, "scripts", problem)
    detail = {
        "disabled": "disabled (skills.scripts)",
        "sandboxed": "sandboxed under bubblewrap",
        "host": "run as lorebot's own user, unsandboxed (skills.scripts = host)",
    }
    return Check(True, "scripts", detail[mode])


async def check_mcp(settings: Settings) -> list[Check]:
    """Each MCP server started and asked for its tools, as the daemon would."""
    from bot.actions.mcp import McpServer

    checks = []
    for config in settings.mcp.servers:
        server = McpServer(config, connect_timeout_s=settings.mcp.connect_timeout_s)
        problem = await server.probe()
        where = config.url or " ".join([config.command or "", *config.args]).strip()
        if problem is None:
            names = ", ".join(t.name for t in server.tools)
            detail = f"connected, {len(server.tools)} tools ({names}); trust {config.trust}"
            checks.append(Check(True, f"MCP {config.name}", detail))
            if server.refused:
                refused = ", ".join(repr(name[:80]) for name in server.refused)
                checks.append(
                    Check(
                        False,
                        f"MCP {config.name}",
                        f"tools not offered, their names are not plain: {refused}",
                        "a tool name is letters, digits, _, . and -, at most 64; "
                        "ask the server's maintainers to rename them",
                    )
                )
        else:
            checks.append(
                Check(
                    False,
                    f"MCP {config.name}",
                    f"{where}: {problem}",
                    f"run `{where}` by hand to see why, or fix [[mcp.servers]] "
                    f"name = {config.name!r}",
                )
            )
    return checks


async def check_console(settings: Settings) -> list[Check]:
    """Whether the web console is on, where, and how people sign in to it."""
    console = settings.console
    if not console.enabled:
        return [Check(True, "console", "off (console.enabled)")]
    stored = console.password_hash.get_secret_value() if console.password_hash else ""
    if stored and not stored.startswith("$argon2"):
        fix = "make one with `lorebot console hash-password`"
        return [Check(False, "console", "console.password_hash is not an argon2 hash", fix)]
    ways = ["a link (`lorebot console link`)"]
    ways += ["the password"] if stored else []
    ways += ["Slack"] if console.slack_sign_in else []
    ways += ["Discord"] if console.discord_sign_in else []
    detail = f"on at {console.public_url}/, sign in with {', '.join(ways)}"
    return [Check(True, "console", detail)]


async def check_platforms(
    settings: Settings, platforms: Sequence[Platform[Any]] | None = None
) -> list[Check]:
    """Each configured platform's credentials tried against it, or one line saying none is;
    `platforms` defaults to the table of `bot.daemon.platforms`."""
    from bot.daemon.platforms import PLATFORMS, configured

    on = configured(settings, PLATFORMS if platforms is None else platforms)
    if not on:
        return [Check(True, "platforms", "none configured (`lorebot chat` still works)")]
    checks: list[Check] = []
    for platform in on:
        checks += await platform.check(settings)
    return checks


async def cmd_doctor(
    args: argparse.Namespace, settings: Settings, platforms: Sequence[Platform[Any]] | None = None
) -> int:
    source = f"from {settings.config}" if settings.config else "from the environment and defaults"
    results = [Check(True, "config", f"loaded {source}")]
    checks = (
        check_database,
        check_model,
        check_vectors,
        check_slips,
        check_waiting_cards,
        check_skills,
        check_mcp,
        check_console,
    )
    for check in checks:
        results += await check(settings)
    results += await check_platforms(settings, platforms)
    replicas, now = await fetch_replicas(settings), utc_now()
    results += replica_checks(replicas, now)
    failed = sum(not r.ok for r in results)
    if args.json:
        print_json_report(results, replicas=replicas_json(replicas, now))
        return 1 if failed else 0
    for result in results:
        print(line(result))
    print(f"{len(results) - failed} of {len(results)} checks passed")
    return 1 if failed else 0
