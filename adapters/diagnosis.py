"""What platform checks report to `lorebot doctor`: a pass/fail line and a fix."""

from __future__ import annotations

from typing import NamedTuple


# A named tuple rather than a dataclass: `lorebot --help` builds the doctor's parser, and
# loading dataclasses there would cost it a tenth of its start.
class Finding(NamedTuple):
    """One line of `lorebot doctor`: what was checked, whether it passed, and the fix."""

    ok: bool
    name: str
    detail: str
    fix: str = ""
