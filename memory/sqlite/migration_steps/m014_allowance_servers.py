"""Migration 14: an allowance holds for the server it was granted for (its command and
arguments, or URL): one granted before this was known allows nothing until granted again."""

SQL = """
    ALTER TABLE action_allowances ADD COLUMN server_id TEXT NOT NULL DEFAULT '';
    """
