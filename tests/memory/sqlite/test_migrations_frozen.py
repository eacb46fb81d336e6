"""A migration does what it did on the day it was written: the migrations import no live
code of lorebot's that could change what an old database's upgrade does."""

from __future__ import annotations

import ast

from tests.support.paths import ROOT

# The scrubber is taken live on purpose: a newer one only ever hides more.
ALLOWED = {"memory.redaction"}
# The migrations' own modules, as frozen as they are.
FROZEN = ("migrations", "redacting_migration")


def test_the_migrations_import_no_live_code_but_the_scrubber() -> None:
    imported: set[str] = set()
    for name in FROZEN:
        tree = ast.parse((ROOT / "memory" / "sqlite" / f"{name}.py").read_text())
        imported |= {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module is not None
        } | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}  # fmt: skip
    imported -= {f"memory.sqlite.{name}" for name in FROZEN}
    ours = {name for name in imported if name.split(".")[0] in ("bot", "memory", "adapters")}
    assert ours <= ALLOWED, f"migrations call live code: {sorted(ours - ALLOWED)}"
