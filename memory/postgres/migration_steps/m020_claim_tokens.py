"""Migration 20, SQLite's 20 on PostgreSQL: each claim's fencing token, new whenever the
claim changes hands."""

SQL = "ALTER TABLE conversation_claims ADD COLUMN token bigint NOT NULL DEFAULT 0;"
