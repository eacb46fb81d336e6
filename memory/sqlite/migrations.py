"""Numbered schema migrations, applied in order at open; `PRAGMA user_version` is the count.

Each migration is a module of `memory.sqlite.migration_steps` named by its number, and
does what it did on the day it was written; a new one adds its module and its line below.
Most are SQL scripts; one that must run Python over the stored rows is an async function of
the connection, run in the same kind of transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import aiosqlite

from memory.sqlite.migration_steps import (
    m001_notes,
    m002_proposals_and_history,
    m003_skill_activations,
    m004_events_and_jobs,
    m005_notes_indexed_in_bulk,
    m006_vectors,
    m007_card_channels_and_follow_ups,
    m008_actions,
    m009_message_sources,
    m010_message_context_after,
    m011_live_replies,
    m012_redact_stored_messages,
    m013_live_messages,
    m014_allowance_servers,
    m015_message_prompts,
    m016_model_slips,
    m017_import_change_sets,
    m018_replicas,
    m019_inbox,
    m020_claim_tokens,
    m021_queue_with_upserts,
    m022_card_reminders,
    m023_console_sign_ins,
)

Step = Callable[[aiosqlite.Connection], Awaitable[None]]

MIGRATIONS: tuple[str | Step, ...] = (
    m001_notes.SQL,
    m002_proposals_and_history.SQL,
    m003_skill_activations.SQL,
    m004_events_and_jobs.SQL,
    m005_notes_indexed_in_bulk.SQL,
    m006_vectors.SQL,
    m007_card_channels_and_follow_ups.SQL,
    m008_actions.SQL,
    m009_message_sources.SQL,
    m010_message_context_after.SQL,
    m011_live_replies.SQL,
    m012_redact_stored_messages.redact_stored_messages,
    m013_live_messages.SQL,
    m014_allowance_servers.SQL,
    m015_message_prompts.SQL,
    m016_model_slips.SQL,
    m017_import_change_sets.SQL,
    m018_replicas.SQL,
    m019_inbox.SQL,
    m020_claim_tokens.SQL,
    m021_queue_with_upserts.SQL,
    m022_card_reminders.SQL,
    m023_console_sign_ins.SQL,
)

SCHEMA_VERSION = len(MIGRATIONS)
