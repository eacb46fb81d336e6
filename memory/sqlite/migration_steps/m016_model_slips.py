"""Migration 16: the model's slips in turns (empty answers, repeated calls, …), for
`doctor`."""

SQL = """
    CREATE TABLE model_slips (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        conversation TEXT NOT NULL
    );
    CREATE INDEX model_slips_at ON model_slips (at);
    """
