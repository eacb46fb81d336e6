"""Checking Slack credentials for `lorebot doctor`: the bot token, its scopes, the app token."""

from __future__ import annotations

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.diagnosis import Finding
from adapters.slack.errors import describe_error, missing_scopes, response_header

APP_TOKEN_FIX = "generate an app-level token with connections:write and enable Socket Mode"
BUTTONS_HINT = (
    "cards show Approve/Decline buttons once Interactivity is on (app settings → "
    "Interactivity & Shortcuts; Socket Mode needs no request URL); reactions decide either way"
)
BUTTONS_OFF = (
    "off (slack.buttons = false): cards are decided with reactions; to turn buttons on, "
    "enable Interactivity in the app's settings, then set slack.buttons = true"
)
SCOPES_FIX = "add them under OAuth & Permissions → Bot Token Scopes, then reinstall the app"


async def diagnose_slack(
    bot_token: str, app_token: str | None, api_base_url: str, *, buttons: bool = True
) -> list[Finding]:
    async with aiohttp.ClientSession() as session:
        client = AsyncWebClient(token=bot_token, base_url=api_base_url, session=session)
        try:
            response = await client.auth_test()
        except SlackApiError as exc:
            error = str(exc.response.get("error"))
            refused = f"the bot token was refused ({error})"
            return [Finding(False, "slack", refused, describe_error(error, {}))]
        except (aiohttp.ClientError, TimeoutError) as exc:
            unreachable = f"cannot reach {api_base_url} ({exc or type(exc).__name__})"
            return [Finding(False, "slack", unreachable, "check LOREBOT_SLACK__API_BASE_URL")]
        who = f"signed in as @{response.get('user')} in workspace {response.get('team_id')}"
        findings = [Finding(True, "slack", who)]
        granted = response_header(response, "x-oauth-scopes")
        missing = missing_scopes(granted) if granted is not None else []
        if missing:
            findings.append(
                Finding(False, "slack scopes", "missing " + ", ".join(missing), SCOPES_FIX)
            )
        else:
            findings.append(Finding(True, "slack scopes", "every scope lorebot needs is granted"))
        findings.append(Finding(True, "slack buttons", BUTTONS_HINT if buttons else BUTTONS_OFF))
        if app_token is not None:
            try:
                await client.apps_connections_open(app_token=app_token)
            except SlackApiError as exc:
                error = f"the app token was refused ({exc.response.get('error')})"
                findings.append(Finding(False, "slack socket mode", error, APP_TOKEN_FIX))
            else:
                findings.append(Finding(True, "slack socket mode", "the app token connects"))
        return findings
