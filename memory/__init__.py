"""lorebot's memory: notes per user, channel and team in SQLite, with recall and change sets."""

from memory.db import Database
from memory.errors import Conflict, InvalidInput, NotFound, SchemaTooNew, StoreError
from memory.store import ImportResult, NoteStore
from memory.types import Category, Change, Note, NoteDraft, SaveResult, Scope, ScopeKind, SearchHit
from memory.visibility import Viewer, Visibility, explicit, visibility_for

__all__ = [
    "Category", "Change", "Conflict", "Database", "ImportResult", "InvalidInput", "Note",
    "NoteDraft", "NoteStore", "NotFound", "SaveResult", "SchemaTooNew", "Scope", "ScopeKind",
    "SearchHit", "StoreError", "Viewer", "Visibility", "explicit", "visibility_for",
]  # fmt: skip
