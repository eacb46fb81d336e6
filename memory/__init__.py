"""lorebot's memory: notes per user, channel and team, with recall and change sets. The
stores' interfaces live in `memory/stores/`; each engine (`memory/sqlite/`) implements them.

The names below load on first use (PEP 562), so importing one light submodule such as
`memory.errors` does not load the whole store and its drivers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.errors import Conflict as Conflict
    from memory.errors import InvalidInput as InvalidInput
    from memory.errors import NotFound as NotFound
    from memory.errors import SchemaTooNew as SchemaTooNew
    from memory.errors import StoreError as StoreError
    from memory.policy.visibility import Viewer as Viewer
    from memory.policy.visibility import Visibility as Visibility
    from memory.policy.visibility import explicit as explicit
    from memory.policy.visibility import visibility_for as visibility_for
    from memory.stores.database import Database as Database
    from memory.stores.notes import ImportResult as ImportResult
    from memory.stores.notes import NoteStore as NoteStore
    from memory.types import Category as Category
    from memory.types import Change as Change
    from memory.types import Note as Note
    from memory.types import NoteDraft as NoteDraft
    from memory.types import SaveResult as SaveResult
    from memory.types import Scope as Scope
    from memory.types import ScopeKind as ScopeKind
    from memory.types import SearchHit as SearchHit

_HOMES = {
    "memory.stores.database": ("Database",),
    "memory.errors": ("Conflict", "InvalidInput", "NotFound", "SchemaTooNew", "StoreError"),
    "memory.stores.notes": ("ImportResult", "NoteStore"),
    "memory.types": (
        "Category",
        "Change",
        "Note",
        "NoteDraft",
        "SaveResult",
        "Scope",
        "ScopeKind",
        "SearchHit",
    ),
    "memory.policy.visibility": ("Viewer", "Visibility", "explicit", "visibility_for"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Category",
    "Change",
    "Conflict",
    "Database",
    "ImportResult",
    "InvalidInput",
    "Note",
    "NoteDraft",
    "NoteStore",
    "NotFound",
    "SaveResult",
    "SchemaTooNew",
    "Scope",
    "ScopeKind",
    "SearchHit",
    "StoreError",
    "Viewer",
    "Visibility",
    "explicit",
    "visibility_for",
]


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value
