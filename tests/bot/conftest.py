from tests.support.fresh_shell import shell  # noqa: F401  (fixture)
from tests.support.harness import harness  # noqa: F401  (fixture)
