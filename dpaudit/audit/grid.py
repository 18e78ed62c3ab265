"""The score grid: the thresholds an audit can test, fixed before any evaluation trial is drawn.

The engine keeps only counts of attack scores per bin of this grid (sufficient statistics), so
the grid must be chosen from data that is independent of the evaluation trials: the pilot sample.
Three kinds:

- ``uniform``: continuous scores. A fine uniform grid over the pilot's score range widened by
  :data:`MARGIN` of that range on each side, plus the two overflow bins ``(-inf, e_0)`` and
  ``[e_last, inf)``. The margins put thresholds into tails the pilot never reaches (tight
  ``eps`` bounds need false-positive rates near ``1e-6``). Binning is arithmetic.
- ``lattice``: few distinct scores on an arithmetic progression (randomized response and its
  compositions). A uniform grid whose bins are centred on the lattice points, widened by the
  lattice's span, so every score value, seen in the pilot or not, is counted exactly on its own.
- ``discrete``: few distinct scores off any lattice. Edges halfway between neighbouring values.
- ``values``: one edge at every distinct finite score of the selection and evaluation samples
  (:meth:`ScoreGrid.from_values`), and one just above the largest when some score is ``+inf``,
  so that the last bin holds the ``+inf`` scores alone; used by audits of given scores, whose
  samples are small enough to keep one bin per value. The edges that are selection scores are
  the thresholds the selection sample names (:meth:`AuditResult._named`).

Bins are half-open: bin ``0`` is ``(-inf, e_0)``, bin ``k`` is ``[e_{k-1}, e_k)``, the last bin is
``[e_{E-1}, inf)``. The test at edge ``e_j`` answers "D_prime" iff ``score >= e_j``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit._core.validation import check_choice, check_integer

__all__ = ["ScoreGrid", "GRID_KINDS", "MARGIN", "MAX_ATOMS", "MAX_BINS"]

GRID_KINDS = ("uniform", "lattice", "discrete", "values")

#: Fraction of the pilot's score range added on each side of a uniform grid.
MARGIN = 0.5

#: A pilot with at most this many distinct score values (after merging values that differ by
#: rounding only) is treated as discrete.
MAX_ATOMS = 1000

#: Most bins a grid may have: 64 times the default's largest, and every tally of an audit (two
#: count rows, four privacy-loss rows) then still fits in tens of megabytes.
MAX_BINS = 2**20

#: Relative tolerance under which two pilot scores count as the same atom.
_ATOM_TOL = 1e-9

#: Relative tolerance of the lattice test (gaps must be integer multiples of the smallest gap).
_LATTICE_TOL = 1e-6


@dataclass(frozen=True)
class ScoreGrid:
    """Sorted finite bin edges ``e_0 < ... < e_{E-1}`` and how scores are binned.

    For ``uniform`` and ``lattice`` grids ``edges = lo + width * arange(E)`` and binning is one
    multiply-add per score; ``discrete`` grids use a binary search over the edges.
    """

    kind: str
    edges: np.ndarray = field(repr=False)
    lo: float = 0.0
    width: float = 0.0

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, GRID_KINDS)
        edges = np.asarray(self.edges, dtype=float)
        if edges.ndim != 1 or edges.size < 1:
            raise ValueError(f"edges must be a 1-d array of at least one edge, got {edges.shape}")
        if not np.isfinite(edges).all() or (np.diff(edges) <= 0).any():
            raise ValueError("edges must be finite and strictly increasing")
        object.__setattr__(self, "edges", edges)

    @classmethod
    def uniform(cls, lo: float, width: float, bins: int, kind: str = "uniform") -> ScoreGrid:
        """``bins`` bins of equal ``width`` starting at ``lo`` (``bins + 1`` edges)."""
        bins = check_integer("bins", bins, minimum=1)
        if not (np.isfinite(lo) and np.isfinite(width) and width > 0):
            raise ValueError(f"width must be in (0, inf) and lo finite, got lo={lo}, width={width}")
        edges = lo + width * np.arange(bins + 1, dtype=float)
        return cls(kind, edges, float(lo), float(width))

    @classmethod
    def from_scores(
        cls, scores: np.ndarray, bins: int = 2**14, max_atoms: int = MAX_ATOMS
    ) -> ScoreGrid:
        """Choose the grid from pilot scores (both datasets pooled); see the module docstring."""
        bins = check_integer("bins", bins, minimum=2, maximum=MAX_BINS)
        s = np.asarray(scores, dtype=float).ravel()
        if np.isnan(s).any():
            raise ValueError("scores must not contain NaN")
        finite = s[np.isfinite(s)]
        if finite.size == 0:
            return cls("discrete", np.array([0.0]))
        values = np.unique(finite)
        scale = max(1.0, float(np.abs(values).max()))
        starts = np.concatenate([[True], np.diff(values) > _ATOM_TOL * scale])
        atoms = values[starts]
        if atoms.size == 1:
            half = 0.5 * scale
            return cls("discrete", np.array([atoms[0] - half, atoms[0] + half]))
        if atoms.size <= max_atoms:
            gaps = np.diff(atoms)
            step = float(gaps.min())
            ratio = gaps / step
            span_steps = int(round((atoms[-1] - atoms[0]) / step))
            on_lattice = np.abs(ratio - np.round(ratio)).max() <= _LATTICE_TOL * ratio.max()
            if on_lattice and 3 * span_steps + 3 <= bins:
                extra = span_steps + 1
                lo = atoms[0] - (extra + 0.5) * step
                return cls.uniform(lo, step, span_steps + 2 * extra + 1, kind="lattice")
            return cls("discrete", 0.5 * (atoms[1:] + atoms[:-1]))
        lo, hi = float(finite.min()), float(finite.max())
        margin = MARGIN * (hi - lo)
        width = (hi - lo + 2.0 * margin) / bins
        # Start on a multiple of the width so that 0 is an edge whenever the range covers it
        # (the privacy-loss statistics are exact at edges, and eps = 0 is always asked for).
        first = math.floor((lo - margin) / width)
        last = math.ceil((hi + margin) / width)
        return cls.uniform(first * width, width, last - first)

    @classmethod
    def from_values(cls, scores: np.ndarray) -> ScoreGrid:
        """One edge at each distinct finite value of ``scores`` (at least one edge: ``0`` when
        none is finite), and one just above the largest when a score is ``+inf`` (its bin then
        holds the ``+inf`` scores alone); the test at edge ``e`` is "D_prime iff score >= e"."""
        s = np.asarray(scores, dtype=float).ravel()
        if np.isnan(s).any():
            raise ValueError("scores must not contain NaN")
        values = s[np.isfinite(s)]
        if values.size == 0:
            return cls("values", np.array([0.0]))
        if not (values[1:] >= values[:-1]).all():  # sorted scores skip the sort
            values = np.sort(values)
        values = values[np.concatenate([[True], values[1:] != values[:-1]])]
        if np.isposinf(s).any():
            values = np.append(values, np.nextafter(values[-1], np.inf))
        return cls("values", values)

    @property
    def n_bins(self) -> int:
        """Number of bins, ``len(edges) + 1`` (two of them unbounded)."""
        return self.edges.size + 1

    @property
    def arithmetic(self) -> bool:
        """True when scores are binned by arithmetic (uniform and lattice grids)."""
        return self.kind in ("uniform", "lattice")

    def locate(self, scores: np.ndarray, weight: str | None = None) -> tuple[np.ndarray, Any]:
        """Bin index of every score and, optionally, its privacy-loss weight in that bin.

        ``weight="upper"``: ``exp(score - upper edge of its bin)``; ``weight="lower"``:
        ``exp(lower edge - score)``. Both are in ``(0, 1]`` inside the bin, except in the one
        overflow bin whose open side has no edge (the top bin for ``"upper"``, the bottom bin for
        ``"lower"``); there the weight is meaningless (possibly ``inf``) and must be ignored.
        ``scores`` must be a float array without NaN. Returns ``(index, weights or None)``.
        """
        if weight not in (None, "upper", "lower"):
            raise ValueError(f"weight must be None, 'upper' or 'lower', got {weight!r}")
        top = self.edges.size
        if not self.arithmetic:
            index = np.searchsorted(self.edges, scores, side="right")
            if weight is None:
                return index, None
            with np.errstate(invalid="ignore", over="ignore"):
                if weight == "upper":
                    gap = scores - np.append(self.edges, np.inf)[index]
                else:
                    gap = np.insert(self.edges, 0, -np.inf)[index] - scores
                return index, np.exp(np.fmin(gap, 0.0))
        inv = 1.0 / self.width
        # x = (s - lo) / width + 1: bin k (1 <= k <= top - 1) holds x in [k, k + 1).
        x = np.multiply(scores, inv)
        x += 1.0 - self.lo * inv
        index = np.clip(x, 0.0, float(top)).astype(np.intp)
        if weight is None:
            return index, None
        x -= index
        with np.errstate(over="ignore", invalid="ignore"):
            if weight == "upper":
                x -= 1.0
                x *= self.width
            else:
                x *= -self.width
            np.exp(x, out=x)
        return index, x

    def torch_locate(self, scores: Any) -> Any:
        """The device twin of :meth:`locate` without weights: the bin index of every score of a
        float64 tensor (no NaN), as an int64 tensor on its device, by the same arithmetic."""
        top = self.edges.size
        if not self.arithmetic:
            import torch

            edges = torch.as_tensor(self.edges, dtype=torch.float64, device=scores.device)
            return torch.searchsorted(edges, scores, right=True)
        inv = 1.0 / self.width
        x = scores.mul(inv)
        x += 1.0 - self.lo * inv
        return x.clamp_(0.0, float(top)).long()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle arithmetic grids by their parameters, not their edges (sent with every batch)."""
        if self.arithmetic:
            return (ScoreGrid.uniform, (self.lo, self.width, self.edges.size - 1, self.kind))
        return (ScoreGrid, (self.kind, self.edges, self.lo, self.width))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description; :meth:`from_dict` rebuilds the identical grid."""
        if self.arithmetic:
            return {
                "kind": self.kind,
                "lo": self.lo,
                "width": self.width,
                "bins": self.edges.size - 1,
            }
        return {"kind": self.kind, "edges": self.edges.tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreGrid:
        """Inverse of :meth:`to_dict`."""
        if data["kind"] in ("discrete", "values"):
            return cls(data["kind"], np.asarray(data["edges"], dtype=float))
        return cls.uniform(data["lo"], data["width"], data["bins"], kind=data["kind"])
