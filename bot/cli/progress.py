"""The progress bar of a long import: on stderr, and only on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(unit: str) -> Iterator[Callable[[int, int], None]]:
    """A bar "importing" `unit`s; call what it yields with (done, total) as work ends."""
    from tqdm import tqdm  # loaded only by the commands that show one

    with tqdm(desc="importing", unit=unit, file=sys.stderr, disable=None) as bar:

        def advance(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield advance
