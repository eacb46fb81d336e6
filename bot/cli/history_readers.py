"""The export formats `lorebot history import` reads. Each platform's own format is read
by its adapter; memory's importer, which may not import a platform, is handed them here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from adapters.discord.export import read_discord
from adapters.slack.export import is_slack_folder, read_slack
from memory.stores.conversations import PastMessage
from memory.transfer import history_import
from memory.transfer.history_import import Collector, ExportReaders, HistoryExport, ImportOptions
from memory.transfer.history_parse import Progress

READERS = ExportReaders(
    is_workspace=is_slack_folder, read_workspace=read_slack, read_json=read_discord
)


def iter_history(path: Path, collector: Collector) -> Iterator[PastMessage]:
    """The messages of the export at `path`, read as they are asked for."""
    return history_import.iter_history(path, collector, READERS)


def read_history(
    path: Path, options: ImportOptions, progress: Progress | None = None
) -> HistoryExport:
    """Every message of the export at `path` at once."""
    return history_import.read_history(path, options, READERS, progress)
