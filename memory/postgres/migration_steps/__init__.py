"""PostgreSQL's migrations, one module each; `memory.postgres.migrations` runs them."""
