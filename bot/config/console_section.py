"""`[console]`: the web console the daemon serves, where it listens, how people sign in."""

from __future__ import annotations

import ipaddress

from pydantic import Field, SecretStr, field_validator

from bot.config.sections import Section


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, as `listen` gives it) is this machine only."""
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ConsoleSettings(Section):
    enabled: bool = Field(False, description="serve the web console")
    listen: str = Field(
        "127.0.0.1:9470",
        pattern=r"^[^:\s]*:\d{1,5}$",
        description="host:port the console listens on; beyond loopback it needs "
        "password_hash or an OAuth app",
    )
    base_url: str = Field(
        "",
        description="the console's address as people open it, e.g. "
        "https://lorebot.example.com/console behind a reverse proxy; its path prefixes "
        "every link, and https makes the cookies Secure; empty: http://LISTEN/",
    )
    password_hash: SecretStr | None = Field(
        None,
        description="an argon2 hash (`lorebot console hash-password`) of a password that "
        "signs in as the first of bot.admins",
    )
    session_hours: float = Field(12.0, gt=0, le=24 * 30, description="how long a sign-in lasts")
    slack_client_id: str | None = Field(
        None, description="the Slack app's client id, for Sign in with Slack"
    )
    slack_client_secret: SecretStr | None = Field(
        None, description="the Slack app's client secret, for Sign in with Slack"
    )
    discord_client_id: str | None = Field(
        None, description="the Discord application's client id, for Sign in with Discord"
    )
    discord_client_secret: SecretStr | None = Field(
        None, description="the Discord application's client secret"
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        url = url.strip().rstrip("/")
        if url and not url.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return url

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0] or "127.0.0.1"

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    @property
    def slack_sign_in(self) -> bool:
        return bool(self.slack_client_id) and self.slack_client_secret is not None

    @property
    def discord_sign_in(self) -> bool:
        return bool(self.discord_client_id) and self.discord_client_secret is not None

    @property
    def sign_in_method(self) -> bool:
        """Whether people can sign in other than by a link printed on the server."""
        return self.password_hash is not None or self.slack_sign_in or self.discord_sign_in

    @property
    def public_url(self) -> str:
        """Where people open the console, without a trailing slash."""
        return self.base_url or f"http://{self.listen}"
