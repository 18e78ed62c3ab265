"""Progress lines while a long step has nothing else to say.

A progress bar moves when work is counted; some steps count nothing for a long time: building a
spec's mechanism, the two-output probe of a mechanism whose every output takes minutes, a pilot
chunk, a single batch, drawing the figures of a large report. While :func:`beating` is active,
a thread watches stderr, and whenever nothing was written to it for :data:`HEARTBEAT_SECONDS`
it writes one line saying what is being done and for how long::

    dpaudit: still drawing two outputs of DPSGD(...) to learn their shape (16 s so far)

What is being done is the innermost :func:`doing` of the main thread, a text or a callable that
returns one (so that a count can be read when the line is written). Outside :func:`beating`
:func:`doing` costs nothing and shows nothing. The command line beats for every command unless
``-q``; :func:`dpaudit.audit_mechanism` beats when it shows progress.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

__all__ = ["HEARTBEAT_SECONDS", "beating", "doing"]

#: Longest quiet on stderr before a heartbeat line (half the 10 s a user waits before
#: wondering whether anything happens, with room for a loaded machine).
HEARTBEAT_SECONDS = 5.0

#: How often the heartbeat thread looks at the clock.
_TICK = 0.25

_lock = threading.Lock()
#: The steps being done, outermost first: (what, since when).
_steps: list[tuple[str | Callable[[], str], float]] = []
_active: list[_Stamped] = []


class _Stamped:
    """``stream`` that notes when it was last written to and whether a line is open."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.last = time.monotonic()
        self.open_line = False

    def write(self, text: str) -> int:
        with _lock:
            written = self.stream.write(text)
            if text:
                self.last = time.monotonic()
                self.open_line = not text.endswith("\n")
        return written

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _text(what: str | Callable[[], str]) -> str:
    return what() if callable(what) else what


def _beat(stamped: _Stamped, prefix: str, stop: threading.Event) -> None:
    started = time.monotonic()
    while not stop.wait(_TICK):
        now = time.monotonic()
        with _lock:
            if now - stamped.last < HEARTBEAT_SECONDS:
                continue
            what, since = _steps[-1] if _steps else ("working", started)
        try:
            line = f"{prefix}: still {_text(what)} ({now - since:,.0f} s so far)"
        except Exception:  # noqa: BLE001 - a count read while it changes: say less
            line = f"{prefix}: still working ({now - since:,.0f} s so far)"
        with contextlib.suppress(OSError, ValueError):
            stamped.write(("\n" if stamped.open_line else "") + line + "\n")
            stamped.flush()


@contextlib.contextmanager
def beating(prefix: str = "dpaudit") -> Iterator[None]:
    """Meanwhile, a line ``"<prefix>: still <what> (N s so far)"`` reaches stderr whenever
    nothing else did for :data:`HEARTBEAT_SECONDS` (module docstring). Nested calls, and calls
    from other threads than the main one, add nothing."""
    if _active or threading.current_thread() is not threading.main_thread():
        yield
        return
    stamped = _Stamped(sys.stderr)
    stop = threading.Event()
    thread = threading.Thread(target=_beat, args=(stamped, prefix, stop), daemon=True)
    previous, sys.stderr = sys.stderr, stamped
    _active.append(stamped)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        _active.pop()
        sys.stderr = previous


@contextlib.contextmanager
def doing(what: str | Callable[[], str]) -> Iterator[None]:
    """Meanwhile, a heartbeat of :func:`beating` says this process is ``what`` (e.g.
    ``"drawing the pilot"``; a callable is called when the line is written). Only the main
    thread's steps are told."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _lock:
        _steps.append((what, time.monotonic()))
    try:
        yield
    finally:
        with _lock:
            _steps.pop()
