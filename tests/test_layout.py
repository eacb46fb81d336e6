"""The layout of the tests: a test module never imports another test module or a conftest,
and what tests share lives in `tests/support/` (helpers) or `tests/fakes/` (network fakes)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHARED = ("support", "fakes")


def _is_test_module_name(name: str) -> bool:
    return name.startswith("test_") or name == "conftest"


def _module_of(path: Path) -> str:
    """The dotted name of the module at `path` (a file under the repository's root)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    relative = Path(*dotted.split("."))
    return (ROOT / relative.with_suffix(".py")).is_file() or (ROOT / relative).is_dir()


def imported_modules(path: Path) -> Iterator[tuple[str, str]]:
    """(where, dotted name) of every module the file at `path` imports, `where` being
    `file:line: statement`: relative imports resolved, and `from package import module`
    counted as importing the module."""
    here = _module_of(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        where = f"{path.relative_to(ROOT)}:{node.lineno}: {ast.get_source_segment(source, node)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield where, alias.name
            continue
        module = node.module or ""
        if node.level:
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1])
            module = f"{base}.{module}" if module else base
        yield where, module
        for alias in node.names:
            if _is_module(f"{module}.{alias.name}"):
                yield where, f"{module}.{alias.name}"


def forbidden_imports(paths: list[Path]) -> list[str]:
    """Each import, in the files at `paths`, of a test module or a conftest."""
    found = []
    for path in paths:
        for where, module in imported_modules(path):
            parts = module.split(".")
            if parts[0] == "tests" and any(_is_test_module_name(p) for p in parts[1:]):
                found.append(f"{where}  (imports {module})")
    return list(dict.fromkeys(found))


def test_no_test_module_imports_another_test_module_or_a_conftest() -> None:
    modules = sorted(TESTS.rglob("test_*.py"))
    assert Path(__file__).resolve() in modules
    found = forbidden_imports(modules)
    assert found == [], "move what these share to tests/support/:\n" + "\n".join(found)


def test_helpers_and_conftests_import_no_test_module_or_conftest_either() -> None:
    others = [p for p in sorted(TESTS.rglob("*.py")) if not p.name.startswith("test_")]
    assert TESTS / "conftest.py" in others
    found = forbidden_imports(others)
    assert found == [], "move what these share to tests/support/:\n" + "\n".join(found)


def test_helpers_live_in_tests_support_or_tests_fakes() -> None:
    """Outside tests/support/ and tests/fakes/ there are only test modules, conftests and
    package markers."""
    stray = [
        str(path.relative_to(ROOT))
        for path in sorted(TESTS.rglob("*.py"))
        if not _is_test_module_name(path.stem)
        and path.name != "__init__.py"
        and path.relative_to(TESTS).parts[0] not in SHARED
    ]
    assert stray == [], "move these helpers to tests/support/: " + ", ".join(stray)


def test_the_test_folders_mirror_the_packages() -> None:
    """tests/bot/core/ holds the tests of bot/core/, and so on: every folder of tests/ but
    the shared ones is a package of lorebot's."""
    folders = [
        path.relative_to(TESTS)
        for path in sorted(TESTS.rglob("*"))
        if path.is_dir()
        and path.name != "__pycache__"
        and path.relative_to(TESTS).parts[0] not in SHARED
    ]
    assert Path("bot", "core") in folders
    strays = [str(f) for f in folders if not (ROOT / f / "__init__.py").is_file()]
    assert strays == [], "these test folders mirror no package: " + ", ".join(strays)


def test_shared_folders_hold_no_tests() -> None:
    tests = [
        str(p.relative_to(ROOT)) for s in SHARED for p in sorted((TESTS / s).rglob("test_*.py"))
    ]
    assert tests == [], "move these tests beside the package they test: " + ", ".join(tests)
