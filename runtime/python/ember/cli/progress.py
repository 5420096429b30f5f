"""A small progress bar for long steps, on stderr when it is a terminal, silent otherwise (pipes, CI logs) or with
--quiet. Known totals draw a bar; unknown ones (a Bazel build) a spinner with the elapsed time. A background
thread redraws a few times a second so the clock moves while one step runs for minutes."""

from __future__ import annotations

import shutil
import sys
import threading
import time

_SPIN = "|/-\\"


class Progress:
    def __init__(self, label: str, total: int | None = None, quiet: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = not quiet and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.label, self.total, self.done, self.step = label, total, 0, ""
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def stage(self, step: str, advance: int = 0):
        """Names the step now running; `advance` counts steps finished before it."""
        with self._lock:
            self.step, self.done = step, self.done + advance
        self._draw()

    def advance(self, n: int = 1, step: str | None = None):
        with self._lock:
            self.done += n
            if step is not None:
                self.step = step
        self._draw()

    def message(self, text: str):
        """Prints `text` as a line of its own on the stream, above the progress line (which is redrawn)."""
        with self._lock:
            self.stream.write(("\r\x1b[K" if self.enabled else "") + text + "\n")
            self.stream.flush()
        self._draw()

    def line(self) -> str:
        elapsed = time.monotonic() - self._t0
        if self.total:
            width = 24
            filled = min(width, int(width * self.done / self.total))
            body = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
        else:
            body = _SPIN[int(elapsed * 4) % len(_SPIN)]
        text = f"{self.label} {body} {self.step} {elapsed:5.1f}s"
        return text[: max(10, shutil.get_terminal_size((80, 24)).columns - 1)]

    def _draw(self):
        if self.enabled:
            with self._lock:
                self.stream.write("\r\x1b[K" + self.line())
                self.stream.flush()

    def _tick(self):
        while not self._stop.wait(0.25):
            self._draw()

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.enabled = False
