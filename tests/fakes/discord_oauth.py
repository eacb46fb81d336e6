"""Sign in with Discord as the fake Discord plays it: OAuth2's authorization code flow
(`/oauth2/authorize`, `POST /oauth2/token`, `GET /users/@me` with the person's token), in
the shapes Discord documents. The authorize page signs in `user` at once, as a person
already signed in to Discord who clicks Authorize would be."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

Body = dict[str, Any]

CLIENT_ID = "1100000000000000001"
CLIENT_SECRET = "discord-oauth-secret-5678"


@dataclass
class DiscordOAuth:
    user: Body  # the person who signs in, as /users/@me shows them
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    authorized: list[Body] = field(default_factory=list)
    _codes: dict[str, Body] = field(default_factory=dict, repr=False)
    _tokens: dict[str, Body] = field(default_factory=dict, repr=False)

    async def authorize(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.authorized.append(query)
        if query.get("client_id") != self.client_id or query.get("scope") != "identify":
            return web.Response(status=400, text="invalid client or scope")
        code = secrets.token_urlsafe(16)
        self._codes[code] = {"user": self.user, "redirect_uri": query.get("redirect_uri")}
        back = {"code": code, "state": query.get("state", "")}
        raise web.HTTPFound(f"{query['redirect_uri']}?{urlencode(back)}")

    async def token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        if (form.get("client_id"), form.get("client_secret")) != (
            self.client_id,
            self.client_secret,
        ):
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = self._codes.pop(str(form.get("code")), None)
        if (
            form.get("grant_type") != "authorization_code"
            or grant is None
            or grant["redirect_uri"] != form.get("redirect_uri")
        ):
            return web.json_response({"error": "invalid_grant"}, status=400)
        access = secrets.token_urlsafe(20)
        self._tokens[access] = grant["user"]
        return web.json_response(
            {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": 604800,
                "scope": "identify",
            }
        )

    def person(self, authorization: str | None) -> Body | None:
        """The person a `Bearer` token was given to, if it is one."""
        if not authorization or not authorization.startswith("Bearer "):
            return None
        return self._tokens.get(authorization.removeprefix("Bearer "))
