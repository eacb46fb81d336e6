"""`compose.yaml` and `compose.env.example` as the README's "Run in a container" section
describes them: the services, volumes, health checks and variables it names exist, the
compose file agrees with the image it builds, the `ha` profile's two replicas share its
PostgreSQL, and the example's values load as settings. Compose itself cannot run here
(no registry for the Ollama and PostgreSQL images); its file is parsed."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from bot.config.sections import BotSettings
from tests.support.fresh_shell import Shell
from tests.support.fresh_shell import shell as shell  # noqa: F401  (fixture)
from tests.support.paths import ROOT

COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
EXAMPLE = (ROOT / "compose.env.example").read_text()
CONTAINERFILE = (ROOT / "Containerfile").read_text()
README = (ROOT / "README.md").read_text()
SECTION = README.split("## Run in a container\n", 1)[1].split("\n## ", 1)[0]
VARIABLE = re.compile(r"\bLOREBOT_[A-Z0-9_]+")


def _image_volume() -> str:
    [volume] = re.findall(r"^VOLUME (\S+)$", CONTAINERFILE, flags=re.M)
    return volume


def _image_env(name: str) -> str:
    [value] = re.findall(rf"\b{name}=(\S+)", CONTAINERFILE)
    return value


def _image_user() -> str:
    [user] = re.findall(r"^USER (\w+):", CONTAINERFILE, flags=re.M)
    return user


def _profile(name: str | None) -> set[str]:
    """The services compose starts with profile `name` (None: with no profile)."""
    chosen = [] if name is None else [name]
    return {
        service
        for service, spec in COMPOSE["services"].items()
        if not spec.get("profiles") or set(spec["profiles"]) & set(chosen)
    }


def test_compose_runs_lorebot_beside_ollama_each_with_a_volume() -> None:
    services = COMPOSE["services"]
    assert _profile(None) == {"lorebot", "ollama"}
    ollama, lorebot = services["ollama"], services["lorebot"]
    assert ollama["image"].startswith("docker.io/ollama/ollama")
    assert "ollama-models:/root/.ollama" in ollama["volumes"]
    assert ollama["healthcheck"]["test"][:2] == ["CMD", "ollama"]

    assert lorebot["build"] == {"context": ".", "dockerfile": "Containerfile"}
    assert (ROOT / lorebot["build"]["dockerfile"]).exists()
    assert f"lorebot-state:{_image_volume()}" in lorebot["volumes"]
    assert set(COMPOSE["volumes"]) >= {"lorebot-state", "ollama-models"}
    # lorebot reaches Ollama by its service name, once Ollama is healthy.
    assert lorebot["environment"]["LOREBOT_OLLAMA__HOST"] == "http://ollama:11434"
    assert lorebot["depends_on"]["ollama"] == {"condition": "service_healthy"}
    assert lorebot["env_file"] == "compose.env"
    assert "compose.env" in (ROOT / ".gitignore").read_text().split()


def test_the_ha_profile_runs_two_replicas_on_its_postgresql() -> None:
    services = COMPOSE["services"]
    assert _profile("ha") == {"lorebot", "ollama", "postgres", "lorebot-replica"}
    postgres, lorebot = services["postgres"], services["lorebot"]
    replica = services["lorebot-replica"]
    assert postgres["image"].startswith("docker.io/pgvector/pgvector:pg")
    assert postgres["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    # No password in the file: compose refuses the profile until one is given.
    assert postgres["environment"]["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    assert "postgres-data:/var/lib/postgresql/data" in postgres["volumes"]

    # The replica is lorebot again, with its own state and port, and never alone on SQLite.
    for key in ("build", "image", "env_file", "environment", "stop_grace_period"):
        assert replica[key] == lorebot[key], key
    assert replica["command"] == ["lorebot", "run", "--replica"]
    assert set(replica["volumes"]).isdisjoint(lorebot["volumes"])
    assert set(replica["ports"]).isdisjoint(lorebot["ports"])
    assert replica["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert lorebot["depends_on"]["postgres"]["required"] is False  # not there without ha

    # The example's URL names the profile's server, user and database.
    [url] = re.findall(r"^#LOREBOT_DATABASE__URL=(\S+)$", EXAMPLE, flags=re.M)
    given = postgres["environment"]
    user, database = given["POSTGRES_USER"], given["POSTGRES_DB"]
    assert re.fullmatch(rf"postgresql://{user}:[^@]+@postgres:5432/{database}", url), url


def test_a_replica_refuses_to_start_without_the_shared_database(shell: Shell) -> None:
    refused = shell.main("run", "--replica")
    assert refused.code != 0
    assert "needs database.url (LOREBOT_DATABASE__URL)" in refused.err
    assert "Traceback" not in refused.err


def test_compose_agrees_with_the_image_on_port_and_stopping() -> None:
    lorebot = COMPOSE["services"]["lorebot"]
    port = _image_env("LOREBOT_OBSERVABILITY__LISTEN").rpartition(":")[2]
    assert f"127.0.0.1:{port}:{port}" in lorebot["ports"]
    assert f"127.0.0.1:{port}/healthz" in CONTAINERFILE  # the image's HEALTHCHECK
    # Docker kills the container after stop_grace_period: it must outlast the turns' own.
    grace = int(lorebot["stop_grace_period"].removesuffix("s"))
    assert grace > BotSettings().shutdown_timeout_s


def test_the_readme_backs_up_into_a_folder_the_image_makes_for_its_user() -> None:
    [folder] = re.findall(r"lorebot backup (/\S+?)/`", SECTION)
    assert folder.startswith(f"{_image_volume()}/")  # kept with the state, in the volume
    made = re.findall(r"install -d -o (\w+) -g \w+ -m 0\d+ (\S+)", CONTAINERFILE)
    assert (_image_user(), folder) in made


def test_the_readme_names_what_compose_and_the_example_hold() -> None:
    for name in [*COMPOSE["services"], *COMPOSE["volumes"]]:
        assert f"`{name}`" in SECTION or f"{name} " in SECTION, name
    assert f"`{_image_volume()}`" in SECTION
    assert "port 9464" in SECTION and "127.0.0.1:9464" in SECTION
    example_variables = set(VARIABLE.findall(EXAMPLE))
    said_to_be_listed = SECTION.split("**What to set**", 1)[1].split("\n- **", 1)[0]
    for variable in VARIABLE.findall(said_to_be_listed):
        assert (
            variable in example_variables
            or variable in COMPOSE["services"]["lorebot"]["environment"]
        ), variable


def test_every_variable_of_the_example_is_a_setting_and_its_values_load(shell: Shell) -> None:
    known = json.loads(shell.main("config", "show", "--json").out)["settings"]
    names = {f"LOREBOT_{key.upper().replace('.', '__')}" for key in known}
    for variable in VARIABLE.findall(EXAMPLE + SECTION + CONTAINERFILE):
        assert variable in names, f"{variable} is not a lorebot setting"

    # The example with every line filled in as it shows, as an operator starts from it.
    filled = re.sub(r"^#(LOREBOT_\w+=.+)$", r"\1", EXAMPLE, flags=re.M)
    (shell.cwd / ".env").write_text(filled)
    shown = shell.main("config", "show", "--json")
    assert shown.code == 0, shown.err
    settings = json.loads(shown.out)["settings"]
    given = dict(re.findall(r"^(LOREBOT_\w+)=(.+)$", filled, flags=re.M))
    assert len(given) >= 6
    for key, setting in settings.items():
        if setting["variable"] in given:
            assert setting["source"] == ".env", key
    assert settings["bot.admins"]["value"] == ["user:slack/U024BE7LH"]


def test_the_example_holds_placeholders_not_tokens() -> None:
    tokens = re.findall(r"^#?LOREBOT_\w*TOKEN=(.*)$", EXAMPLE, flags=re.M)
    assert len(tokens) == 3
    assert all(token.endswith("…") and len(token) <= 6 for token in tokens), tokens
