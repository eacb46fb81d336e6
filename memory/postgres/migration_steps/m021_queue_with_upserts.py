"""Migration 21, SQLite's 21 on PostgreSQL: there, the triggers that queue an item for its
vector came to skip one that waits already as PostgreSQL's have from the start (`ON
CONFLICT DO NOTHING`); nothing changes here but the version."""

SQL = "SELECT 1"
