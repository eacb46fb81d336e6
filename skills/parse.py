"""Reading SKILL.md: front matter and body, with strict and lenient checks.

`check_strict` applies the Agent Skills rules and lists every problem; `load_skill` is
lenient so real-world skills work: only unparseable front matter or a missing
description skips a skill, everything else is a warning. Names are compared and checked
in NFKC form, and the text fields read as text (`name: 123` is the name "123"), as the
convention's reference validator does.
"""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path
from typing import Any

import yaml

from skills.resources import linked_folders
from skills.types import Skill, SkillError

SKILL_FILE = "SKILL.md"
MAX_FILE_BYTES = 1024 * 1024
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
ALLOWED_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
# Keys lorebot understands beyond the convention's own.
KNOWN_EXTRA_KEYS = frozenset({"disable-model-invocation"})
# Top-level keys whose value is text however it looks: YAML would read `name: 123` as a
# number and `description: yes` as true.
TEXT_KEYS = frozenset({"name", "description", "license", "compatibility"})
BOM = "\ufeff"
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate keys instead of keeping the last one, and reads
    the text fields of the front matter as the text they are written as."""

    def construct_document(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                plain = isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode)
                if plain and key.value in TEXT_KEYS and value.tag != _NULL_TAG:
                    value.tag = _STR_TAG
        return super().construct_document(node)


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a key is a list or mapping, not text", key_node.start_mark
            ) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def split_front_matter(text: str) -> tuple[str, str]:
    """The YAML between the opening and closing `---` lines, and the body after it.

    Accepts LF and CRLF line ends. Raises SkillError when the delimiters are missing."""
    normalised = text.replace("\r\n", "\n")
    if not normalised.startswith("---\n"):
        raise SkillError("the file must start with a `---` front matter line")
    end = normalised.find("\n---\n", 3)
    if end < 0:
        if normalised.endswith("\n---"):
            end = len(normalised) - 4
        else:
            raise SkillError("the front matter is not closed with a `---` line")
    return normalised[4 : end + 1], normalised[end + 5 :]


def parse_front_matter(yaml_text: str) -> dict[str, Any]:
    """The front matter as a mapping; SkillError for anything that cannot be read as one,
    so a hostile or broken file never escapes as another exception."""
    try:
        data = yaml.load(yaml_text, Loader=_UniqueKeyLoader)  # noqa: S506 - safe loader subclass
    except yaml.YAMLError as exc:
        raise SkillError(f"the front matter is not valid YAML: {_first_line(exc)}") from None
    except RecursionError:
        raise SkillError("the front matter is nested too deeply to read") from None
    except (TypeError, ValueError, OverflowError) as exc:
        # e.g. a date like 2024-02-30, or an integer of thousands of digits
        raise SkillError(f"the front matter holds a value that cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise SkillError("the front matter must be a YAML mapping of keys to values")
    return data


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _allowed_name_char(char: str) -> bool:
    """Hyphens, digits and lowercase letters of any script (`é` yes, `Н` no)."""
    return char == "-" or (char.isalnum() and char == char.lower())


def normalise_name(name: str) -> str:
    """The form names are checked and compared in (NFKC), so `é` typed as `e` plus a
    combining accent is the same name as the precomposed `é`."""
    return unicodedata.normalize("NFKC", name)


def name_problems(name: object, folder_name: str) -> list[str]:
    """The convention's rules for `name` in NFKC form, with Unicode letters allowed but
    only lowercase."""
    if not isinstance(name, str) or not name:
        return [text_problem("name", name)]
    name = normalise_name(name)
    problems = []
    if len(name) > MAX_NAME_CHARS:
        problems.append(f"`name` is {len(name)} characters; at most {MAX_NAME_CHARS}")
    bad = sorted({c for c in name if not _allowed_name_char(c)})
    if bad:
        problems.append(
            "`name` may hold only lowercase letters, digits and hyphens, not "
            + ", ".join(repr(c) for c in bad)
        )
    if name.startswith("-") or name.endswith("-") or "--" in name:
        problems.append("`name` must not start or end with a hyphen or hold `--`")
    if name != normalise_name(folder_name):
        problems.append(f"`name` {name!r} differs from its folder's name {folder_name!r}")
    return problems


def text_problem(key: str, value: object) -> str:
    """Why `value` of the text field `key` cannot be used: missing, or not text at all."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return f"`{key}` is missing or empty"
    kind = "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else None
    return f"`{key}` must be text, not {kind or type(value).__name__}"


def failure_reason(exc: Exception) -> str:
    """Why a skill file could not be used, in one line for a list or a log."""
    if isinstance(exc, SkillError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"the file cannot be read: {exc.strerror or exc}"
    return f"the file cannot be read ({type(exc).__name__}: {_first_line(exc)})"


def check_strict(folder: Path) -> list[str]:
    """Every rule `folder`/SKILL.md breaks, as readable lines; empty when it is valid.

    A file that cannot be read at all is reported as a problem, never raised."""
    path = folder / SKILL_FILE
    if not path.is_file():
        hint = ""
        if (folder / SKILL_FILE.lower()).is_file():
            hint = f" (it holds {SKILL_FILE.lower()}; the file must be named {SKILL_FILE})"
        return [f"{folder}: no {SKILL_FILE} in this folder{hint}"]
    try:
        problems = _file_problems(path, folder.name)
    except Exception as exc:  # one unreadable file is a finding, not a crash
        problems = [failure_reason(exc)]
    return [f"{path}: {p}" for p in problems]


def _file_problems(path: Path, folder_name: str) -> list[str]:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        return [f"the file is {size} bytes; at most {MAX_FILE_BYTES}"]
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return ["the file is not UTF-8 text"]
    return text_problems(text, folder_name)


def text_problems(text: str, folder_name: str) -> list[str]:
    """Every rule a SKILL.md text breaks for a skill in a folder named `folder_name`."""
    problems = []
    if text.startswith(BOM):
        problems.append("the file starts with a byte-order mark; save it as UTF-8 without BOM")
        text = text[1:]
    try:
        data = parse_front_matter(split_front_matter(text)[0])
    except SkillError as exc:
        return [*problems, str(exc)]
    unknown = sorted(str(k) for k in data if k not in ALLOWED_KEYS)
    if unknown:
        problems.append(
            "unknown front matter keys: "
            + ", ".join(unknown)
            + " (allowed: "
            + ", ".join(sorted(ALLOWED_KEYS))
            + ")"
        )
    problems += name_problems(data.get("name"), folder_name)
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append(text_problem("description", description))
    elif len(description) > MAX_DESCRIPTION_CHARS:
        problems.append(
            f"`description` is {len(description)} characters; at most {MAX_DESCRIPTION_CHARS}"
        )
    compatibility = data.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or len(compatibility) > MAX_COMPATIBILITY_CHARS
    ):
        problems.append(
            f"`compatibility` must be text of at most {MAX_COMPATIBILITY_CHARS} characters"
        )
    if "metadata" in data and not isinstance(data["metadata"], dict):
        problems.append("`metadata` must be a mapping")
    return problems


def load_skill(folder: Path, root: Path) -> Skill:
    """Read a skill leniently; raise SkillError only when it cannot be used at all."""
    link = folder / SKILL_FILE
    path = link.resolve()
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SkillError(f"the file is {size} bytes; at most {MAX_FILE_BYTES}")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError:
        raise SkillError("the file is not UTF-8 text") from None
    yaml_text, body = split_front_matter(text)
    data = parse_front_matter(yaml_text)
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(text_problem("description", description))
    name = data.get("name")
    warnings = []
    if not isinstance(name, str) or not name.strip():
        warnings.append(text_problem("name", name) + "; using the folder's name")
        name = folder.name
    else:
        warnings += name_problems(name, folder.name)
    if len(description) > MAX_DESCRIPTION_CHARS:
        warnings.append(f"`description` is longer than {MAX_DESCRIPTION_CHARS} characters")
    warnings += [
        f"{sub}/ is a symlink, so lorebot reads and runs nothing in it"
        for sub in linked_folders(folder)
    ]
    unknown = sorted(str(k) for k in data if k not in ALLOWED_KEYS | KNOWN_EXTRA_KEYS)
    if unknown:
        warnings.append("unknown front matter keys: " + ", ".join(unknown))
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return Skill(
        name=normalise_name(name.strip()),
        description=" ".join(description.split()),
        folder=folder,
        path=path,
        root=root,
        body=body.strip("\n"),
        size=size,
        sha256=hashlib.sha256(raw).hexdigest(),
        metadata={str(k): v for k, v in (metadata or {}).items()},
        model_invocable=data.get("disable-model-invocation") is not True,
        warnings=tuple(warnings),
    )
