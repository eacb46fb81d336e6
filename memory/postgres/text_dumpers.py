"""psycopg's text dumpers with lorebot's rule for text (`memory.policy.storable`): every Python
string sent to PostgreSQL on a connection made with `ADAPTERS`, as a parameter or a COPY
row, in text or binary format, goes through `storable_text` first, so no query can send a
NUL the server would refuse."""

from __future__ import annotations

from typing import cast

import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import AdaptersMap, Dumper
from psycopg.types import string

from memory.policy.storable import storable_text


def _storable(base: type[Dumper]) -> type[Dumper]:
    def dump(self: Dumper, obj: str) -> Buffer | None:
        return base.dump(self, storable_text(obj))

    return cast("type[Dumper]", type(f"Storable{base.__name__}", (base,), {"dump": dump}))


def _adapters() -> AdaptersMap:
    adapters = AdaptersMap(psycopg.adapters)
    # psycopg's own, in the order it registers them: the last one of each format is its
    # default for a `str`; the others serve a column's type named in a COPY.
    for base in (
        string.StrBinaryDumperName,
        string.StrBinaryDumperVarchar,
        string.StrBinaryDumper,
        string.StrDumperName,
        string.StrDumperVarchar,
        string.StrDumper,
        string.StrDumperUnknown,
    ):
        adapters.register_dumper(str, _storable(base))
    return adapters


# The `context` of every pooled connection (`memory.postgres.database`).
ADAPTERS = _adapters()
