"""Migration 22, SQLite's 22 on PostgreSQL: when a waiting card's approvers were reminded
of it; cards already waiting count as reminded."""

SQL = """
    ALTER TABLE proposals ADD COLUMN reminded_at timestamptz;
    UPDATE proposals SET reminded_at = created_at;
    """
