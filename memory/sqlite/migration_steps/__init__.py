"""SQLite's migrations, one module each; `memory.sqlite.migrations` runs them in order."""
