"""Checking Discord credentials for `lorebot doctor`: the token and the Message Content intent."""

from __future__ import annotations

import aiohttp
import discord
from discord.http import Route

from adapters.diagnosis import Finding
from adapters.discord.errors import BAD_TOKEN, ENABLE_INTENT


async def diagnose_discord(token: str, api_base_url: str) -> list[Finding]:
    """Log in over REST (no gateway) and read the application's intent flags."""
    Route.BASE = api_base_url
    client = discord.Client(intents=discord.Intents.none())
    try:
        await client.login(token)
    except discord.LoginFailure:
        return [Finding(False, "discord", BAD_TOKEN.split(":")[0], "check LOREBOT_DISCORD__TOKEN")]
    except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
        reason = f"cannot reach {api_base_url} ({exc or type(exc).__name__})"
        return [Finding(False, "discord", reason, "check LOREBOT_DISCORD__API_BASE_URL")]
    finally:
        await client.close()
    findings = [Finding(True, "discord", f"signed in as {client.user}")]
    flags = client.application_flags
    if flags.gateway_message_content or flags.gateway_message_content_limited:
        findings.append(Finding(True, "discord intents", "Message Content is enabled"))
    else:
        findings.append(
            Finding(False, "discord intents", "Message Content is disabled", ENABLE_INTENT)
        )
    return findings
