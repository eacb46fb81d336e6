"""SQL lives in the storage packages only: no module of lorebot outside `memory/sql/` (the
stores, written once) and the engine packages holds an SQL statement (the import contract
keeps the drivers in the engine packages too)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import ROOT

ENGINES = (ROOT / "memory" / "sql", ROOT / "memory" / "sqlite", ROOT / "memory" / "postgres")
STATEMENT = re.compile(
    r"\b(SELECT\s.*\bFROM\b|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
    r"CREATE\s+(TABLE|INDEX|VIRTUAL|TRIGGER)|PRAGMA\s+\w+|BEGIN\s+IMMEDIATE)",
    re.S,
)


def sql_in(path: Path) -> list[str]:
    """`file:line` of each string constant in the module at `path` that reads as SQL."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and STATEMENT.search(node.value)
    ]


def test_the_check_sees_sql_where_it_is() -> None:
    assert sql_in(ROOT / "memory" / "sql" / "seen_events.py")


def test_no_module_outside_an_engine_package_holds_sql() -> None:
    found = [
        where
        for package in ("bot", "adapters", "skills", "memory")
        for path in sorted((ROOT / package).rglob("*.py"))
        if not any(path.is_relative_to(engine) for engine in ENGINES)
        for where in sql_in(path)
    ]
    assert found == [], (
        "move this SQL into an engine package (memory/sqlite/, memory/postgres/): "
        + ", ".join(found)
    )
