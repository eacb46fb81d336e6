"""Sign in with Slack as the fake Slack plays it: OpenID Connect's authorization code flow
(`/openid/connect/authorize`, `openid.connect.token`, `openid.connect.userInfo`), in the
shapes Slack documents. The authorize page signs in `user` of `team` at once, as a person
already signed in to Slack who clicks Allow would be."""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

Body = dict[str, Any]

CLIENT_ID = "2000.3000"
CLIENT_SECRET = "oidc-client-secret-1234"


def _b64(data: Body) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


@dataclass
class SlackOpenID:
    team: str
    user: str = "UALICE"
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    authorized: list[Body] = field(default_factory=list)  # each authorize request's query
    _codes: dict[str, Body] = field(default_factory=dict, repr=False)
    _tokens: dict[str, Body] = field(default_factory=dict, repr=False)

    async def authorize(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.authorized.append(query)
        if query.get("client_id") != self.client_id:
            return web.Response(status=400, text="invalid_client_id")
        code = secrets.token_urlsafe(16)
        self._codes[code] = {
            "user": self.user,
            "team": self.team,
            "nonce": query.get("nonce"),
            "redirect_uri": query.get("redirect_uri"),
        }
        back = {"code": code, "state": query.get("state", "")}
        raise web.HTTPFound(f"{query['redirect_uri']}?{urlencode(back)}")

    def token(self, params: Body) -> Body:
        """`openid.connect.token`: a code is good once, for its client and redirect."""
        if (params.get("client_id"), params.get("client_secret")) != (
            self.client_id,
            self.client_secret,
        ):
            return {"ok": False, "error": "invalid_client_id"}
        grant = self._codes.pop(str(params.get("code")), None)
        if grant is None or grant["redirect_uri"] != params.get("redirect_uri"):
            return {"ok": False, "error": "invalid_code"}
        access = "xoxp-" + secrets.token_hex(12)
        self._tokens[access] = grant
        claims = {
            "iss": "https://slack.com",
            "sub": grant["user"],
            "aud": self.client_id,
            "nonce": grant["nonce"],
            "https://slack.com/user_id": grant["user"],
            "https://slack.com/team_id": grant["team"],
        }
        id_token = f"{_b64({'alg': 'RS256'})}.{_b64(claims)}.c2lnbmF0dXJl"
        return {"ok": True, "access_token": access, "token_type": "Bearer", "id_token": id_token}

    def user_info(self, token: str | None) -> Body:
        grant = self._tokens.get(token or "")
        if grant is None:
            return {"ok": False, "error": "invalid_auth"}
        return {
            "ok": True,
            "sub": grant["user"],
            "https://slack.com/user_id": grant["user"],
            "https://slack.com/team_id": grant["team"],
            "name": grant["user"].lower(),
        }
