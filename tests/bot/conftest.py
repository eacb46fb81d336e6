from tests.bot.fresh_shell import shell  # noqa: F401  (fixture)
from tests.bot.harness import harness  # noqa: F401  (fixture)
