"""What an engine's migrations import of lorebot's own code: a migration does what it did
on the day it was written, so it may take no live code that could change since."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGES = ("bot", "memory", "adapters", "skills")


def lorebot_imports(paths: list[Path], own: str) -> set[str]:
    """The modules of lorebot that the modules at `paths` import, their package `own`
    left out; a relative import fails, as it hides what it takes."""
    imported: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path.name}: a relative import hides what it takes"
                imported.add(node.module or "")
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
    return {
        name
        for name in imported
        if name.split(".")[0] in PACKAGES and name != own and not name.startswith(f"{own}.")
    }
