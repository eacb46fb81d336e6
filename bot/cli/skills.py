"""`lorebot skills …`: list the catalog with its shadowing, show one skill, validate strictly."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.errors import UserError

if TYPE_CHECKING:
    from bot.config.settings import Settings
    from skills.catalog import Catalog


def add_parser(commands: Any) -> None:
    skills = commands.add_parser("skills", help="list, show and validate skills")
    sub = skills.add_subparsers(title="skills commands", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="every skill with its source, shadowing and warnings")
    p.add_argument("--dir", type=Path, action="append", default=[], help="an extra root")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(command=cmd_list)
    p = sub.add_parser("show", help="show one skill in full")
    p.add_argument("name", help="the skill's name, as `skills list` shows it")
    p.add_argument("--dir", type=Path, action="append", default=[], help="an extra root")
    p.set_defaults(command=cmd_show)
    p = sub.add_parser(
        "validate", help="check skills strictly against the Agent Skills rules (exit 1 if any fail)"
    )
    p.add_argument(
        "paths", type=Path, nargs="+", metavar="PATH", help="a skill folder, or a folder of them"
    )
    p.set_defaults(command=cmd_validate)


def _catalog(settings: Settings, extra: list[Path]) -> Catalog:
    from bot.context.skills import build_catalog

    roots = settings.skills.model_copy(update={"dirs": (*settings.skills.dirs, *extra)})
    catalog = build_catalog(roots)
    catalog.refresh()
    return catalog


async def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    catalog = _catalog(settings, args.dir)
    skills, skipped = catalog.all(), catalog.skipped
    if args.json:
        print(
            json.dumps(
                {
                    "skills": [
                        {
                            "name": s.name,
                            "description": s.description,
                            "source": str(s.path),
                            "shadows": [str(p) for p in s.shadows],
                            "warnings": list(s.warnings),
                            "model_invocable": s.model_invocable,
                        }
                        for s in skills
                    ],
                    "skipped": [{"path": str(s.path), "reason": s.reason} for s in skipped],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    for skill in skills:
        people_only = "  (people only: /" + skill.name + ")" if not skill.model_invocable else ""
        print(f"{skill.name}: {skill.description}{people_only}")
        print(f"    from {skill.path}")
        for path in skill.shadows:
            print(f"    shadows {path}")
        for warning in skill.warnings:
            print(f"    warning: {warning}")
    for item in skipped:
        print(f"skipped {item.path}: {item.reason}")
    if not skills and not skipped:
        print("no skills found")
    return 0


async def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    from skills.parse import normalise_name
    from skills.resources import list_resources, list_scripts

    skill = _catalog(settings, args.dir).get(normalise_name(args.name))
    if skill is None:
        raise UserError(f"there is no skill named {args.name!r} (see `lorebot skills list`)")
    print(f"{skill.name}: {skill.description}")
    print(f"from {skill.path} ({skill.size} bytes, sha256 {skill.sha256})")
    for path in skill.shadows:
        print(f"shadows {path}")
    resources, scripts = list_resources(skill), list_scripts(skill)
    if resources:
        print("resources: " + ", ".join(resources))
    if scripts:
        print("scripts (run only if skills.scripts allows, each on a card): " + ", ".join(scripts))
    print()
    print(skill.body)
    return 0


def _skill_folders(path: Path) -> list[Path]:
    """`path` itself when it is a skill folder, else the skill folders inside it."""
    from skills.parse import SKILL_FILE

    if (path / SKILL_FILE).exists() or path.name == SKILL_FILE:
        return [path.parent if path.name == SKILL_FILE else path]
    if not path.is_dir():
        raise UserError(f"{path} is neither a skill folder nor a folder of skills")
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))


def _nothing_found(path: Path) -> str:
    """Why `path` holds no skill to validate, with the likely fix."""
    from skills.parse import SKILL_FILE

    if (path / SKILL_FILE.lower()).is_file():
        return (
            f"{path}: no skill found: it holds {SKILL_FILE.lower()}, but a skill's file "
            f"must be named {SKILL_FILE}"
        )
    return f"{path}: no skill found: no {SKILL_FILE} here or in the folders inside it"


async def cmd_validate(args: argparse.Namespace, settings: Settings) -> int:
    from skills.parse import check_strict

    failed = checked = 0
    empty = False
    for path in args.paths:
        folders = _skill_folders(path)
        if not folders:
            print(_nothing_found(path))
            empty = True
        for folder in folders:
            checked += 1
            problems = check_strict(folder)
            for problem in problems:
                print(problem)
            if problems:
                failed += 1
            else:
                print(f"{folder}: ok")
    if checked:
        print(f"{checked - failed} of {checked} skills valid")
    return 1 if failed or empty else 0
