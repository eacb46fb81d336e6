"""A real PostgreSQL for the tests: Debian's server started in a temporary folder for the
session, and an empty database of its own for each test that asks.

Debian's PostgreSQL refuses to run as root, so as root the server runs as the `postgres`
user. Without the server's programs the tests that need it are skipped, unless
`TESTS_NEED_POSTGRESQL=1` (CI sets it) turns that into a failure.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.llama import free_port
from tests.support.polling import HANG_GUARD_S

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
USER = "lorebot"


def server_programs() -> Path | None:
    """The folder of `initdb` and `pg_ctl`: Debian's newest, else what PATH has."""
    for folder in BIN_DIRS:
        if (folder / "initdb").exists():
            return folder
    found = shutil.which("initdb")
    return Path(found).parent if found else None


@dataclass
class PostgresServer:
    """One private PostgreSQL server on 127.0.0.1, its socket and data in `root`."""

    root: Path
    port: int = field(default_factory=free_port)
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def _run(self, *command: str) -> None:
        as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=120)

    def start(self, programs: Path) -> PostgresServer:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        data = self.root / "data"
        self._run(str(programs / "initdb"), "-D", str(data), "-A", "trust", "-U", USER)
        self.pg_ctl = programs / "pg_ctl"
        self.data = data
        self._ctl("start")
        return self

    def _ctl(self, action: str) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(self.pg_ctl),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "-m",
            "fast",
            action,
        )

    def stop(self) -> None:
        self._ctl("stop")

    def start_again(self) -> None:
        """Start the server after `stop`, on the same port and data."""
        self._ctl("start")

    def restart(self) -> None:
        """Stop and start the server, as an operator's restart would: every connection
        of lorebot's pool is cut."""
        self._ctl("restart")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """The URL of a new, empty database."""
        name = f"test_{next(self._names)}"
        self.sql(f"CREATE DATABASE {name}")
        return self.url(name)

    def new_password_role(self, password: str) -> str:
        """The URL (without the password) of a new, empty database owned by a new role
        that logs in over TCP with `password` only, where `lorebot` is trusted."""
        role = f"pw_{next(self._names)}"
        self.sql(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        hba = self.data / "pg_hba.conf"
        hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        self._run(str(self.pg_ctl), "-D", str(self.data), "reload")
        url = self.new_database()
        self.sql(f"ALTER DATABASE {url.rsplit('/', 1)[1]} OWNER TO {role}")
        url = url.replace(f"//{USER}@", f"//{role}@")
        deadline = time.monotonic() + HANG_GUARD_S
        while not _refused_without_password(url):  # the server reloads pg_hba.conf soon
            assert time.monotonic() < deadline, f"{role} still logs in without a password"
            time.sleep(0.05)
        return url

    def drop_database(self, url: str) -> None:
        self.sql(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement with psql; what it printed."""
        done = subprocess.run(
            [
                "psql",
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                statement,
                self.url(database),
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout.strip()


def _refused_without_password(url: str) -> bool:
    """Whether the server asks the role of `url` for a password (psql is told not to
    prompt, and is given none)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    done = subprocess.run(
        ["psql", "-X", "-w", "-c", "SELECT 1", url],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    return done.returncode != 0 and "password" in done.stderr


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    programs = server_programs()
    if programs is None or shutil.which("psql") is None:
        if os.environ.get("TESTS_NEED_POSTGRESQL") == "1":
            pytest.fail("PostgreSQL is not installed: apt-get install -y postgresql")
        pytest.skip("PostgreSQL is not installed here (apt-get install -y postgresql)")
    # Not under pytest's own temporary folder, which the `postgres` user may not enter.
    root = Path(tempfile.mkdtemp(prefix="lorebot-postgres-"))
    os.chmod(root, 0o755)
    server = PostgresServer(root / "server").start(programs)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    """An empty database on the session's server, dropped after the test."""
    url = postgres_server.new_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url)
