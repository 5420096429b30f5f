"""ember.cli.progress: a bar with the step and the count on a terminal, cleared when done; nothing at all when
the stream is not a terminal (pipes, CI logs) or with --quiet."""

import io
import re

from ember.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_draws_steps_on_a_terminal_and_clears_the_line():
    tty = Terminal()
    with Progress("ember export m", total=3, stream=tty) as p:
        p.stage("torch.export")
        p.stage("to_edge", 1)
        assert "[########................] 1/3 to_edge" in p.line()
        p.message("a log line")
    text = tty.getvalue()
    assert "ember export m [........................] 0/3 torch.export" in text
    assert "\r\x1b[Ka log line\n" in text
    assert text.endswith("\r\x1b[K")  # the last thing written clears the progress line


def test_a_spinner_without_a_total():
    tty = Terminal()
    with Progress("bazel build //:runner", stream=tty) as p:
        p.stage("building")
        assert re.match(r"bazel build //:runner [|/\\-] building +\d+\.\ds$", p.line()), p.line()


def test_silent_when_not_a_terminal_or_quiet():
    for stream, quiet in ((io.StringIO(), False), (Terminal(), True)):
        with Progress("x", total=2, stream=stream, quiet=quiet) as p:
            p.stage("a", 1)
            p.advance()
        assert stream.getvalue() == ""
    # Messages still go through when the bar is off: they are the tool's log, not decoration.
    plain = io.StringIO()
    with Progress("x", stream=plain) as p:
        p.message("bench: step")
    assert plain.getvalue() == "bench: step\n"
