"""The house keeps its modules small: none in `bot/`, `adapters/`, `memory/` or `skills/` is
over 400 lines, and every package's `__init__.py` is empty (a docstring, the version), so
that importing one part loads nothing else (the cold-start tests guard what that buys)."""

from __future__ import annotations

from tests.support.paths import ROOT

PACKAGES = ("bot", "adapters", "memory", "skills")
MAX_LINES = 400
# Modules still over the limit, each with what splits it: the list only ever shrinks.
WAIVED: dict[str, int] = {}


# Loads its names on first use (PEP 562), so importing one light submodule loads no more.
LAZY_FACADES = ("memory/__init__.py",)


def _modules() -> list[str]:
    return sorted(
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "bundled" not in path.parts
    )


def test_no_module_is_over_400_lines() -> None:
    sizes = {name: len((ROOT / name).read_text().splitlines()) for name in _modules()}
    over = {name: n for name, n in sizes.items() if n > WAIVED.get(name, MAX_LINES)}
    assert not over, f"split these modules (at most {MAX_LINES} lines): {over}"
    stale = [name for name in WAIVED if sizes.get(name, 0) <= MAX_LINES]
    assert not stale, f"no longer over the limit, drop them from WAIVED: {stale}"


def test_every_packages_init_is_empty() -> None:
    inits = [name for name in _modules() if name.endswith("__init__.py")]
    heavy = []
    for name in inits:
        code = [
            line
            for line in (ROOT / name).read_text().splitlines()
            if line.strip() and not line.startswith(("#", '"""', "__version__"))
        ]
        if code and name not in LAZY_FACADES:
            heavy.append(name)
    assert not heavy, f"keep these __init__.py empty: {heavy}"
