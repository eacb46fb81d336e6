"""`lorebot console link` and `lorebot console hash-password`, and the rule that keeps a
console beyond this machine from starting without a way to sign in."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from argon2 import PasswordHasher

from memory.stores.stores import StoreOptions
from tests.support.engines import open_engine
from tests.support.fresh_shell import Shell


def hash_password(shell: Shell, password: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "console", "hash-password"],
        input=password + "\n",
        cwd=shell.cwd,
        env=shell.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_hash_password_prints_an_argon2_hash_of_what_it_read(shell: Shell) -> None:
    done = hash_password(shell, "correct horse battery")
    assert done.returncode == 0, done.stderr
    printed = done.stdout.strip()
    assert printed.startswith("$argon2id$")
    assert PasswordHasher().verify(printed, "correct horse battery")
    assert "correct horse" not in done.stderr


def test_a_short_password_is_refused(shell: Shell) -> None:
    done = hash_password(shell, "short")
    assert done.returncode == 1 and done.stdout == ""
    assert "12 characters at least" in done.stderr


def test_a_link_signs_in_the_first_admin_once(shell: Shell) -> None:
    shell.setenv("LOREBOT_BOT__ADMINS", '["user:slack/UADMIN", "user:slack/UOTHER"]')
    shell.setenv("LOREBOT_CONSOLE__ENABLED", "true")
    assert shell.main("notes", "add", "user:slack/UADMIN", "seed", "a first note").code == 0
    done = shell.main("console", "link")
    assert done.code == 0, done.err
    link = done.out.strip()
    assert link.startswith("http://127.0.0.1:9470/signin/link/")
    assert "signs in user:slack/UADMIN once, until" in done.err
    token = link.rsplit("/", 1)[1]

    async def use_twice() -> list[str]:
        stores = await open_engine(
            "sqlite", shell.home / ".local/share/lorebot/lorebot.db", StoreOptions()
        )
        try:
            return [(await stores.console.use_link(token)).state for _ in range(2)]
        finally:
            await stores.close()

    assert asyncio.run(use_twice()) == ["ok", "used"]


def test_a_link_for_someone_else_and_for_nobody(shell: Shell) -> None:
    assert shell.main("notes", "add", "user:slack/U1", "seed", "a first note").code == 0
    done = shell.main("console", "link")
    assert done.code == 1 and "bot.admins is empty" in done.err
    done = shell.main("console", "link", "--user", "slack/U024BE7LH")
    assert done.code == 0 and "signs in user:slack/U024BE7LH" in done.err
    assert "console.enabled is off" in done.err  # said, not refused
    for wrong in ("U024", "channel:slack/C1", "slack/" + "x" * 300):
        done = shell.main("console", "link", "--user", wrong)
        assert done.code == 1 and "--user" in done.err, wrong


def test_a_console_beyond_this_machine_needs_a_way_to_sign_in(shell: Shell) -> None:
    shell.setenv("LOREBOT_CONSOLE__ENABLED", "true")
    shell.setenv("LOREBOT_CONSOLE__LISTEN", "0.0.0.0:9470")
    done = shell.main("config", "show")
    assert done.code == 1
    assert "console.listen" in done.err and "0.0.0.0, beyond this machine" in done.err
    shell.setenv("LOREBOT_CONSOLE__PASSWORD_HASH", PasswordHasher().hash("a long password!"))
    assert shell.main("config", "show").code == 0


def test_doctor_says_whether_the_console_is_on_and_how_people_sign_in(shell: Shell) -> None:
    shell.setenv("LOREBOT_OLLAMA__HOST", "http://127.0.0.1:9")  # no model: doctor goes on
    assert "✓ console: off (console.enabled)" in shell.main("doctor").out
    shell.setenv("LOREBOT_CONSOLE__ENABLED", "true")
    shell.setenv("LOREBOT_CONSOLE__PASSWORD_HASH", PasswordHasher().hash("a long password!"))
    out = shell.main("doctor").out
    assert "✓ console: on at http://127.0.0.1:9470/, sign in with a link" in out
    assert "the password" in out and "$argon2" not in out
    shell.setenv("LOREBOT_CONSOLE__PASSWORD_HASH", "hunter2")
    out = shell.main("doctor").out
    assert "✗ console: console.password_hash is not an argon2 hash" in out and "hunter2" not in out
