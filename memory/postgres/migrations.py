"""The PostgreSQL schema, numbered as SQLite's: the same version means the same tables.

A new PostgreSQL database starts at the baseline, which creates in one step what SQLite's
migrations 1 to `BASELINE` made; each later step has the number of SQLite's migration of
the same change. `lorebot_schema` holds the version, as `PRAGMA user_version` does there.
The baseline and each step are modules of `memory.postgres.migration_steps`, named by
their numbers.

Differences from SQLite, each for PostgreSQL's own sake: times are `timestamptz`, flags are
`boolean`, ids are identities (given explicitly by `lorebot db copy`, so references hold),
and the word index is a `tsvector` column with a GIN index (topic A, summary B, body C;
a message's content A, the message before B, the message after C, its author D).
"""

from __future__ import annotations

from memory.postgres.migration_steps import (
    m016_baseline,
    m017_import_change_sets,
    m018_replicas,
    m019_inbox,
    m020_claim_tokens,
    m021_queue_with_upserts,
    m022_card_reminders,
    m023_console_sign_ins,
)

BASELINE = 16

# (version, SQL) after the baseline, each the PostgreSQL form of SQLite's migration with
# the same number.
STEPS: tuple[tuple[int, str], ...] = (
    (17, m017_import_change_sets.SQL),
    (18, m018_replicas.SQL),
    (19, m019_inbox.SQL),
    (20, m020_claim_tokens.SQL),
    (21, m021_queue_with_upserts.SQL),
    (22, m022_card_reminders.SQL),
    (23, m023_console_sign_ins.SQL),
)

SCHEMA_VERSION = BASELINE + len(STEPS)


def steps_after(version: int) -> list[tuple[int, str]]:
    """The migrations a database at `version` needs, in order (the baseline for a new one)."""
    if version == 0:
        return [(BASELINE, m016_baseline.SQL), *STEPS]
    return [(number, sql) for number, sql in STEPS if number > version]
