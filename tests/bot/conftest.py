from tests.bot.harness import harness  # noqa: F401  (fixture)
