"""The terminal chat prints an answer as the model writes it, as plain text: prose at once,
a line with markup once it is complete, and the whole answer again only when what was
printed is not what the answer became, or when another line cut it short; before the answer,
`lorebot is thinking…`."""

from __future__ import annotations

import io

from adapters.base import UserRef
from adapters.console.adapter import ConsoleAdapter


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def console(stdout: io.StringIO) -> ConsoleAdapter:
    return ConsoleAdapter("alice", stdin=io.StringIO(), stdout=stdout)


async def test_prose_is_printed_as_it_arrives_and_markup_once_its_line_is_done() -> None:
    screen = Terminal()
    adapter = console(screen)
    stream = adapter.stream_reply(adapter.conversation, UserRef("console", "alice"))
    await stream.show("Staging is")
    assert screen.getvalue() == "lorebot> Staging is"
    await stream.show("Staging is **pg-st")
    assert screen.getvalue() == "lorebot> Staging is "  # the bold may still close
    await stream.show("Staging is **pg-stage-2** today.\nAsk")
    assert screen.getvalue() == "lorebot> Staging is pg-stage-2 today.\nAsk"
    await stream.finish("Staging is **pg-stage-2** today.\nAsk in #ops.")
    assert screen.getvalue() == "lorebot> Staging is pg-stage-2 today.\nAsk in #ops.\n"


async def test_an_answer_that_changed_is_printed_again_in_full() -> None:
    screen = Terminal()
    adapter = console(screen)
    stream = adapter.stream_reply(adapter.conversation, UserRef("console", "alice"))
    await stream.show("Let me look")
    await stream.finish("Nothing about that.")
    assert screen.getvalue() == "lorebot> Let me look\nlorebot> Nothing about that.\n"


async def test_piped_output_gets_the_whole_answer_once() -> None:
    piped = io.StringIO()
    adapter = console(piped)
    stream = adapter.stream_reply(adapter.conversation, UserRef("console", "alice"))
    await stream.show("Staging is")
    assert piped.getvalue() == ""
    await stream.finish("Staging is **pg-stage-2**.")
    assert piped.getvalue() == "lorebot> Staging is pg-stage-2.\n"


async def test_a_reply_whose_line_another_cut_is_printed_again_whole() -> None:
    screen = Terminal()
    adapter = console(screen)
    stream = adapter.stream_reply(adapter.conversation, UserRef("console", "alice"))
    await stream.show("Staging is")
    await adapter.send(adapter.conversation, "Card #1 waits.")  # a line of its own comes
    await stream.show("Staging is pg-stage-2")  # its line is gone: nothing more of it now

    await stream.finish("Staging is pg-stage-2.")

    assert screen.getvalue() == (
        "lorebot> Staging is…\nlorebot> Card #1 waits.\nlorebot> Staging is pg-stage-2.\n"
    )


async def test_the_working_indicator_gives_way_to_the_answer() -> None:
    screen = Terminal()
    adapter = console(screen)
    stream = adapter.stream_reply(adapter.conversation, UserRef("console", "alice"))
    async with adapter.working(adapter.conversation) as status:
        assert screen.getvalue() == "lorebot is thinking…"
        await status("is searching notes…")
        await stream.show("It is")
        await stream.finish("It is pg-stage-2.")

    assert screen.getvalue() == (
        f"lorebot is thinking…\r{' ' * 20}\rlorebot is searching notes…\r{' ' * 27}\r"
        "lorebot> It is pg-stage-2.\n"
    )


async def test_the_working_indicator_goes_when_the_work_ends_without_an_answer() -> None:
    screen = Terminal()
    adapter = console(screen)
    async with adapter.working(adapter.conversation):
        pass
    assert screen.getvalue() == f"lorebot is thinking…\r{' ' * 20}\r"


async def test_piped_output_shows_no_working_indicator() -> None:
    piped = io.StringIO()
    adapter = console(piped)
    async with adapter.working(adapter.conversation):
        pass
    assert piped.getvalue() == ""
