"""The name the SQLite note store (`notes.py`, `note_search.py`) gives the vector index:
the engine-neutral index (`memory.sql.vectors`), built over sqlite-vec's tables
(`vector_tables.py`) by `stores.py`."""

from __future__ import annotations

from memory.sql.vectors import SqlVectorIndex

SqliteVectorIndex = SqlVectorIndex
