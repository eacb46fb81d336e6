"""lorebot's image, built from the `Containerfile` for the tests, and containers of it.

No image registry is reachable from the test machines, so the base is made here
(`make_container_base.sh`: Debian's minbase through debootstrap, imported with podman)
and the image is built from it with `buildah bud --isolation chroot`; commands run inside
with `buildah run --isolation chroot`, which shares the host's network (the fakes on
127.0.0.1 are reachable) and process ids (a signal reaches lorebot itself). `podman run`
does not work on these machines. Without buildah, podman and debootstrap the tests that
need them are skipped, unless `TESTS_NEED_CONTAINERS=1` (CI sets it) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE = "localhost/lorebot-base:bookworm"
IMAGE = "localhost/lorebot:test"
TOOLS = ("buildah", "podman", "debootstrap")
BUILD_TIMEOUT_S = 900


def tool_env() -> dict[str, str]:
    """The environment for buildah and podman: no default rlimits, which crun cannot set
    on these machines."""
    conf = Path(tempfile.gettempdir()) / "lorebot-tests-containers.conf"
    conf.write_text("[containers]\ndefault_ulimits = []\n", encoding="utf-8")
    return {**os.environ, "CONTAINERS_CONF": str(conf)}


def buildah(*args: str, timeout: float = 120, check: bool = True) -> str:
    done = subprocess.run(
        ["buildah", *args],
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"buildah {' '.join(args[:2])} failed:\n{done.stderr[-4000:]}")
    return done.stdout


@dataclass(frozen=True)
class Container:
    """A working container of the image: commands run in it as the image's user."""

    name: str
    image: str

    def run(
        self, *command: str, env: dict[str, str] | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*command, env=env),
            env=tool_env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def command(self, *command: str, env: dict[str, str] | None = None) -> list[str]:
        """The host's command line that runs `command` in this container."""
        settings = [f"--env={key}={value}" for key, value in (env or {}).items()]
        return ["buildah", "run", "--isolation", "chroot", *settings, self.name, "--", *command]


def image_config(image: str) -> dict[str, Any]:
    """The image's configuration as `docker inspect` shows it (`Config`: user, command,
    environment, volumes, health check, stop signal)."""
    found: dict[str, Any] = json.loads(buildah("inspect", "--type", "image", image))
    config: dict[str, Any] = found["Docker"]["config"]
    return config


def _missing_tools() -> Sequence[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


@pytest.fixture(scope="session")
def lorebot_image() -> str:
    """The image built from this checkout's Containerfile (a few minutes the first time:
    the base, then lorebot's dependencies from the package index)."""
    missing = _missing_tools()
    if missing or os.geteuid() != 0:
        why = f"{', '.join(missing)} not installed" if missing else "not running as root"
        if os.environ.get("TESTS_NEED_CONTAINERS") == "1":
            pytest.fail(f"cannot build the image: {why} (apt-get install -y {' '.join(TOOLS)})")
        pytest.skip(f"cannot build the image here: {why}")
    subprocess.run(
        [str(ROOT / "tests" / "support" / "make_container_base.sh"), BASE],
        env=tool_env(),
        check=True,
        capture_output=True,
        timeout=BUILD_TIMEOUT_S,
    )
    # The docker format keeps HEALTHCHECK, which the OCI format has no field for.
    buildah(
        "bud",
        "--format",
        "docker",
        "--isolation",
        "chroot",
        "--layers",
        "--build-arg",
        f"BASE={BASE}",
        "-t",
        IMAGE,
        "-f",
        str(ROOT / "Containerfile"),
        str(ROOT),
        timeout=BUILD_TIMEOUT_S,
    )
    return IMAGE


@pytest.fixture
def container(lorebot_image: str) -> Iterator[Container]:
    """A fresh container of the image, removed after the test."""
    name = buildah("from", "--pull-never", lorebot_image).strip()
    try:
        yield Container(name, lorebot_image)
    finally:
        buildah("rm", name, check=False)
