"""Migration 5: new notes are indexed by the store, in bulk for imports: a per-row
trigger made imports four times slower."""

SQL = """
    DROP TRIGGER notes_ai;
    """
