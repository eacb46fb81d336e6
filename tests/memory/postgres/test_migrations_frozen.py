"""A PostgreSQL migration does what it did on the day it was written: each is a module of
its own that imports nothing of lorebot's, its SQL is unchanged, and a database at any
version gets the same steps it always got."""

from __future__ import annotations

import hashlib

from memory.postgres.migrations import BASELINE, SCHEMA_VERSION, STEPS, steps_after
from tests.support.migrations import lorebot_imports
from tests.support.paths import ROOT

ENGINE = ROOT / "memory" / "postgres"
OWN = "memory.postgres.migration_steps"
PACKAGE = sorted((ENGINE / "migration_steps").glob("*.py"))

# The SQL of the baseline and of each step after it as it was written (sha256, first 16
# hex digits). A new migration adds its line here.
WRITTEN = (
    (16, "b4e2c1e50409e1d2"),
    (17, "e84e74495702870a"),
    (18, "0799cd0420712dbc"),
    (19, "4e0d37c8c21afea9"),
    (20, "81ae7fc278fdf967"),
    (21, "e004ebd5b5532a4b"),
    (22, "3850e39d575dde2c"),
    (23, "e665165288ff4529"),
)


def test_each_migration_is_a_module_of_its_own() -> None:
    steps = [path.name[:5] for path in PACKAGE if path.name != "__init__.py"]
    assert steps == [f"m{number:03}_" for number in range(BASELINE, SCHEMA_VERSION + 1)]


def test_the_migrations_import_no_code_of_lorebots() -> None:
    ours = lorebot_imports([ENGINE / "migrations.py", *PACKAGE], OWN)
    assert not ours, f"migrations call live code: {sorted(ours)}"


def test_no_migration_written_is_changed_and_the_schema_version_counts_them() -> None:
    found = tuple(
        (number, hashlib.sha256(sql.encode()).hexdigest()[:16]) for number, sql in steps_after(0)
    )
    assert found[: len(WRITTEN)] == WRITTEN, "a migration already written was changed"
    assert len(found) == len(WRITTEN), "a new migration: add its line to WRITTEN"
    assert SCHEMA_VERSION == BASELINE + len(STEPS) == 23


def test_a_database_at_any_version_gets_the_steps_after_it_in_order() -> None:
    assert [number for number, _ in steps_after(0)] == list(range(BASELINE, SCHEMA_VERSION + 1))
    for version in range(BASELINE, SCHEMA_VERSION + 1):
        assert steps_after(version) == steps_after(0)[version - BASELINE + 1 :]
