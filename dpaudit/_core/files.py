"""Writing a file so that it is either whole or absent: a temporary sibling, ``fsync``-ed, then
renamed over the final name (a crash or a kill at any moment leaves the old file or the new one,
never a part of either)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["fsync_directory", "os_error_text", "write_atomic"]


def os_error_text(exc: OSError) -> str:
    """``exc`` in words for one line: ``"<file>: <reason>"`` (``"out: no space left on
    device"``), without Python's ``[Errno N]``."""
    reason = (exc.strerror or str(exc) or type(exc).__name__).strip()
    reason = reason[:1].lower() + reason[1:]
    return f"{exc.filename}: {reason}" if exc.filename else reason


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (not every platform can open a directory: Windows
    cannot, and then nothing is done)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Write through ``write(file)`` (a binary file) into a temporary file beside ``path``,
    fsync it, then rename it onto ``path``; on any failure the temporary file is removed."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):  # named by the file meant, not by the temporary one
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise
    fsync_directory(path.parent)
