"""A resumable store of finished batches, so that a long audit never loses work.

``dpaudit.audit_mechanism(..., store=DIR)`` (and ``dpaudit run --store DIR``) saves the sums of
every batch of chunks (see :mod:`dpaudit.audit.engine`) as soon as it is finished; an audit that is
stopped
at any moment, ``SIGKILL`` included, and started again with the same arguments and the same
directory loads the saved batches and runs only the others. Since a batch's sums are stored
exactly (``.npz``, int64 counts and float64 sums) and batches are summed in their fixed order,
the resumed result is bit-identical to an uninterrupted run.

Layout of a store directory::

    manifest.json                 format, dpaudit version and the fingerprint of the audit
    pilot-000000000000.npz        the scores of each finished pilot chunk (they fix the grid)
    selection-000000000000.npz    one file per finished batch: <stream>-<first chunk>.npz
    evaluation-000000000064.npz

Every file is written atomically (:func:`dpaudit._core.files.write_atomic`): to a temporary
file in the same directory, flushed and ``fsync``-ed, then renamed over its final name with
:func:`os.replace` (and the directory is ``fsync``-ed), so a file either exists complete or not
at all. The manifest holds a fingerprint of
everything the sums depend on (mechanism, pair, attack, seed, trial counts, chunking, score grid,
dpaudit and numpy versions); a directory whose manifest differs is refused with a message naming
the fields that differ, so batches of different audits are never mixed. Nothing is pickled.

Every file also holds a checksum of its arrays (names, dtypes, shapes and bytes, SHA-256 keyed by
the fingerprint's digest and the file's own name, that is its stream and first chunk), so a file
whose content was changed after it was written, that comes from another audit's store, or that
was copied over another batch of the same audit, is told from a good one. A batch is also read
only if its counts add up, on each dataset, to the trials that batch holds by the audit's
declared trials and chunking. A file damaged by something else (a full disk, a copy cut short, a
truncated or empty file, an edited, foreign or misplaced content) is reported in one line (a
``RuntimeWarning``), removed, and its batch or chunk is drawn again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._core.files import write_atomic
from dpaudit._core.jsonvalues import to_json_value
from dpaudit._core.validation import check_writable_directory

__all__ = ["ChunkStore", "STORE_FORMAT", "fingerprint_digest"]

#: Version of the layout above; a store of another format is refused.
STORE_FORMAT = 3

_MANIFEST = "manifest.json"
_BATCH = re.compile(r"^(?P<stream>[a-z]+)-(?P<first>\d{12})\.npz$")
_ARRAYS = ("counts", "loss", "fixed")
#: Name of the array that holds a file's checksum.
_CHECKSUM = "checksum"

#: What reading a damaged ``.npz`` file can raise.
_DAMAGE = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile)


def fingerprint_digest(fingerprint: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``fingerprint`` (sorted keys, no whitespace; values
    converted by :func:`~dpaudit._core.jsonvalues.to_json_value`, others written as text)."""
    canonical = to_json_value(fingerprint, unknown="str")
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _checksum(key: str, place: Path, arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256, keyed by ``key`` and the name of the file at ``place``, of the names, dtypes,
    shapes and bytes of ``arrays``: the same arrays under another name do not match it."""
    digest = hashlib.sha256(f"{key}/{place.name}".encode())
    for name in sorted(arrays):
        value = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{value.dtype.str}:{value.shape}".encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


class ChunkStore:
    """A directory of finished batches of one audit, identified by its fingerprint.

    Parameters
    ----------
    directory:
        Where the batches live; created if missing. An existing directory must be empty or hold
        a store with the same fingerprint.
    fingerprint:
        JSON-ready description of everything the stored sums depend on.

    Raises
    ------
    ValueError
        When the directory holds a store of another audit, of another format, or files that
        are not part of a store.
    """

    def __init__(self, directory: str | os.PathLike[str], fingerprint: Mapping[str, Any]) -> None:
        if not isinstance(directory, str | os.PathLike):
            raise ValueError(f"store must be a directory path, got {type(directory).__name__}")
        if not isinstance(fingerprint, Mapping):
            raise ValueError(f"fingerprint must be a mapping, got {type(fingerprint).__name__}")
        self.directory = Path(directory)
        self.fingerprint = to_json_value(dict(fingerprint), unknown="str")
        self.digest = fingerprint_digest(self.fingerprint)
        check_writable_directory("store", self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        manifest = self.directory / _MANIFEST
        if manifest.exists():
            self._check_manifest(manifest)
        else:
            foreign = [p.name for p in self.directory.iterdir() if not p.name.startswith(".")]
            if foreign:
                raise ValueError(
                    f"store {self.directory} is not empty and holds no {_MANIFEST} "
                    f"(found {', '.join(sorted(foreign)[:3])}); use an empty or new directory"
                )
            document = {"format": STORE_FORMAT, "digest": self.digest, **self.fingerprint}
            text = json.dumps(document, indent=1, sort_keys=True).encode("utf-8")
            write_atomic(manifest, lambda handle: handle.write(text))
        self._remove_temporary_files()

    def _check_manifest(self, manifest: Path) -> None:
        try:
            document = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"store {self.directory}: unreadable {_MANIFEST} ({exc})") from None
        if not isinstance(document, dict) or document.get("format") != STORE_FORMAT:
            found = document.get("format") if isinstance(document, dict) else None
            raise ValueError(
                f"store {self.directory} has format {found!r}; this dpaudit reads format "
                f"{STORE_FORMAT} only: use a new directory"
            )
        if document.get("digest") == self.digest:
            return
        stored = {k: v for k, v in document.items() if k not in ("format", "digest")}
        differ = sorted(
            k
            for k in set(stored) | set(self.fingerprint)
            if stored.get(k) != self.fingerprint.get(k)
        )
        raise ValueError(
            f"store {self.directory} belongs to a different audit (differs in: "
            f"{', '.join(differ) or 'digest'}); its batches are not mixed in: use a new directory "
            "or rerun with the same spec, seed, trials and chunking"
        )

    def _remove_temporary_files(self) -> None:
        # Left behind by a run killed while writing; never read.
        for path in self.directory.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                path.unlink()

    def _path(self, stream: str, first: int) -> Path:
        if not isinstance(stream, str) or not re.fullmatch(r"[a-z]+", stream):
            raise ValueError(f"stream must be a lower-case word, got {stream!r}")
        if isinstance(first, bool) or not isinstance(first, int | np.integer) or first < 0:
            raise ValueError(f"first must be a chunk index >= 0, got {first!r}")
        return self.directory / f"{stream}-{int(first):012d}.npz"

    def _read(
        self, path: Path, required: str, trials: int | None = None
    ) -> dict[str, np.ndarray] | None:
        """The arrays of ``path``, which must hold ``required`` (with ``trials``, counts that
        add up to that many trials on each dataset); ``None`` when the file is missing, or
        damaged (then it is reported in one line and removed)."""
        if not path.exists():
            return None
        try:
            if not zipfile.is_zipfile(path):
                raise ValueError("empty file" if path.stat().st_size == 0 else "cut short")
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k].copy() for k in data.files}
            if required not in arrays:
                raise ValueError(f"it holds no {required!r} array")
            stored = str(arrays.pop(_CHECKSUM, ""))
            if stored != _checksum(self.digest, path, arrays):
                raise ValueError("its content does not match its checksum")
            if trials is not None:
                sums = np.asarray(arrays[required]).sum(axis=-1).tolist()
                if sums != [trials, trials]:
                    raise ValueError(f"its counts add up to {sums}, not {trials} trials each")
        except _DAMAGE as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            warnings.warn(
                f"store {self.directory}: {path.name} is damaged ({reason}); it is removed "
                "and drawn again",
                RuntimeWarning,
                stacklevel=3,
            )
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return arrays

    def finished(self) -> set[tuple[str, int]]:
        """``(stream, first chunk)`` of every batch stored and readable; damaged ones are
        reported, removed and left out, so that they run again."""
        out = set()
        for path in sorted(self.directory.iterdir()):
            match = _BATCH.match(path.name)
            if match and self._read(path, "counts" if match["stream"] != "pilot" else "scores"):
                out.add((match["stream"], int(match["first"])))
        return out

    def save(self, stream: str, first: int, arrays: Mapping[str, np.ndarray | None]) -> None:
        """Store the sums of the batch starting at chunk ``first`` of ``stream``, atomically.

        ``arrays`` maps ``counts``, ``loss`` and ``fixed`` to arrays, or ``None`` when absent.
        """
        path = self._path(stream, first)
        present = {k: np.asarray(v) for k, v in arrays.items() if v is not None}
        unknown = set(present) - set(_ARRAYS)
        if unknown:
            raise ValueError(f"arrays must be among {_ARRAYS}, got {sorted(unknown)}")
        present[_CHECKSUM] = np.array(_checksum(self.digest, path, present))
        write_atomic(path, lambda handle: np.savez(handle, **present))

    def load(
        self, stream: str, first: int, trials: int | None = None
    ) -> dict[str, np.ndarray | None] | None:
        """The stored sums of a batch (``None`` for arrays not stored), or ``None`` if absent
        or damaged (a damaged file is reported and removed). With ``trials``, the trials the
        batch holds, its counts must add up to them on each dataset."""
        arrays = self._read(self._path(stream, first), "counts", trials)
        if arrays is None:
            return None
        return {k: arrays.get(k) for k in _ARRAYS}

    def save_scores(self, stream: str, chunk: int, scores: np.ndarray) -> None:
        """Store the scores of chunk ``chunk`` of ``stream`` (the pilot's), atomically."""
        path = self._path(stream, chunk)
        values = np.asarray(scores, dtype=float)
        check = np.array(_checksum(self.digest, path, {"scores": values}))
        write_atomic(path, lambda handle: np.savez(handle, scores=values, **{_CHECKSUM: check}))

    def load_scores(self, stream: str, chunk: int, shape: tuple[int, ...]) -> np.ndarray | None:
        """The stored scores of a chunk, or ``None`` if absent, damaged or not of ``shape``
        (a damaged file is reported and removed)."""
        arrays = self._read(self._path(stream, chunk), "scores")
        if arrays is None:
            return None
        scores = arrays["scores"]
        if scores.shape != tuple(shape) or scores.dtype != np.float64:
            path = self._path(stream, chunk)
            warnings.warn(
                f"store {self.directory}: {path.name} holds scores of shape {scores.shape}, "
                f"expected {tuple(shape)}; it is removed and drawn again",
                RuntimeWarning,
                stacklevel=2,
            )
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return scores

    def __repr__(self) -> str:
        return f"ChunkStore({str(self.directory)!r}, digest={self.digest[:12]})"
