"""Composition: several independent runs of mechanisms on the same dataset, released together.

``Composed(base, times)`` runs one mechanism ``times`` times; ``Composed([m1, m2, ...])`` runs
different mechanisms once each. The runs use independent randomness, so the output law on a
dataset is the product of the runs' laws, the log density is the sum of theirs, and the
trade-off function of the composition is the tensor product of theirs (Dong, Roth & Su 2022,
"Gaussian differential privacy", Theorem 4); privacy loss distributions convolve (Steinke 2022,
"Composition of differential privacy & privacy amplification by subsampling", Theorem 9).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit._core.jsonvalues import to_json_value
from dpaudit._core.validation import check_integer
from dpaudit.bounds import pld as pld_lib
from dpaudit.bounds.composition import AdvancedComposition, OptimalComposition
from dpaudit.bounds.gaussian_dp import berry_esseen, gdp, gdp_clt
from dpaudit.bounds.rdp import RDPCurve
from dpaudit.mechanisms.base import (
    AdditiveNoiseMechanism,
    CurveProfile,
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
    check_rng,
    check_size,
    mechanism_spec,
)
from dpaudit.mechanisms.gaussian import Gaussian
from dpaudit.mechanisms.randomized_response import RandomizedResponse
from dpaudit.mechanisms.subsampled import FixedSizeSubsampled, PoissonSubsampled

__all__ = ["Composed"]


def _same_pair(a: NeighbouringPair, b: NeighbouringPair) -> bool:
    return (
        a.relation == b.relation
        and a.d.shape == b.d.shape
        and a.d_prime.shape == b.d_prime.shape
        and np.array_equal(a.d, b.d)
        and np.array_equal(a.d_prime, b.d_prime)
    )


def _add_remove_sensitivity(mechanism: Mechanism) -> float | None:
    """The clipping norm when ``mechanism`` is built from add/remove noisy sum queries whose
    worst case is one record of that norm (``None`` otherwise)."""
    if isinstance(mechanism, AdditiveNoiseMechanism | PoissonSubsampled):
        return mechanism.sensitivity
    if isinstance(mechanism, Composed):
        found = [_add_remove_sensitivity(m) for m, _ in mechanism.atoms()]
        if found and all(s is not None for s in found):
            return max(found)
    return None


def _composition_step(atoms: list[tuple[Mechanism, int]]) -> float | None:
    """PLD grid step for composing ``atoms`` (mechanism, runs): :func:`pld.auto_step` for the
    total number of runs, from the mean and spread of one run's loss (the larger of the two
    orders, read off each atom's default PLD). ``None`` (each atom's own grid) when all atoms are
    randomized response with one ``eps``: their grids are exact and equal."""
    if all(isinstance(m, RandomizedResponse) for m, _ in atoms) and (
        len({m.eps for m, _ in atoms}) == 1
    ):
        return None
    runs = sum(n for _, n in atoms)
    mean = var = 0.0
    for m, n in atoms:
        one = m.pld()
        moments = [one.pq.mean_loss(), one.qp.mean_loss()]
        mean += n * max(abs(mu) for mu, _ in moments)
        var += n * max(sd for _, sd in moments) ** 2
    if var <= 0:
        return None
    return pld_lib.auto_step(runs, loss_std=math.sqrt(var / runs), loss_mean=mean / runs)


class Composed(Mechanism):
    """Independent runs of mechanisms on the same dataset.

    ``Composed(base, times)``: outputs of shape ``(size, times, *base_output_shape)``.
    ``Composed([m1, m2, ...])``: every component's outputs flattened per trial and concatenated
    as floats, shape ``(size, sum of widths)``.

    Parameters
    ----------
    mechanisms:
        One mechanism (with ``times``) or a non-empty sequence of mechanisms (without ``times``).
        All must refer to the same neighbouring relation.
    times:
        Number of runs of a single mechanism, an integer ``>= 1``.

    Attributes
    ----------
    base:
        The repeated mechanism, or ``None`` for a list.
    components:
        The distinct mechanisms as given: ``(base,)`` or the list.
    times:
        Number of runs (``len(components)`` for a list).
    """

    def __init__(
        self, mechanisms: Mechanism | Sequence[Mechanism], times: int | None = None
    ) -> None:
        if isinstance(mechanisms, Mechanism):
            if times is None:
                raise ValueError("times must be given when composing one mechanism, e.g. times=10")
            self.base: Mechanism | None = mechanisms
            self.times = check_integer("times", times, minimum=1)
            self.components: tuple[Mechanism, ...] = (mechanisms,)
        else:
            if times is not None:
                raise ValueError(
                    f"times must be None when composing a list of mechanisms, got {times!r}"
                )
            if isinstance(mechanisms, str | bytes) or not isinstance(mechanisms, Sequence):
                raise ValueError(
                    "mechanisms must be a Mechanism or a sequence of Mechanisms, "
                    f"got {type(mechanisms).__name__}"
                )
            components = tuple(mechanisms)
            if not components:
                raise ValueError("mechanisms must hold at least one mechanism, got an empty list")
            for i, m in enumerate(components):
                if not isinstance(m, Mechanism):
                    raise ValueError(f"mechanisms[{i}] must be a Mechanism, got {type(m).__name__}")
            self.base = None
            self.times = len(components)
            self.components = components
        relations = sorted({m.relation for m in self.components})
        if len(relations) != 1:
            raise ValueError(
                "mechanisms must all refer to the same neighbouring relation, got "
                + " and ".join(map(repr, relations))
            )
        self.relation = relations[0]

    @property
    def name(self) -> str:
        """E.g. ``Composed(Gaussian(sigma=1.0, sensitivity=1.0), times=10)``."""
        if self.base is not None:
            return f"Composed({self.base.name}, times={self.times})"
        return "Composed([" + ", ".join(m.name for m in self.components) + "])"

    def params(self) -> dict[str, Any]:
        """``{"base": {...}, "times": T}`` or ``{"components": [{...}, ...]}``."""
        if self.base is not None:
            return {"base": mechanism_spec(self.base), "times": self.times}
        return {"components": [mechanism_spec(m) for m in self.components]}

    def atoms(self) -> list[tuple[Mechanism, int]]:
        """The non-composed mechanisms run, with how often each runs (nested compositions are
        flattened; equal mechanisms, same class and parameters, are grouped)."""
        counts: dict[tuple[type, str], list[Any]] = {}

        def visit(m: Mechanism, times: int) -> None:
            if isinstance(m, Composed):
                if m.base is not None:
                    visit(m.base, times * m.times)
                else:
                    for c in m.components:
                        visit(c, times)
                return
            key = (type(m), json.dumps(to_json_value(m.params(), unknown="str"), sort_keys=True))
            if key in counts:
                counts[key][1] += times
            else:
                counts[key] = [m, times]

        visit(self, 1)
        return [(m, n) for m, n in counts.values()]

    def pld(self, step: float | None = None) -> pld_lib.PLD:
        """Privacy loss distribution of the composition: the atoms' PLDs convolved, both orders
        (Steinke 2022, Theorem 9), ``n``-fold repeats by repeated squaring.

        ``step=None`` chooses the grid with :func:`dpaudit.bounds.pld.auto_step` for the total
        number of runs, from the loss mean and spread of one run of each atom (read off the
        atoms' default PLDs), so that the numerical bracket on ``eps`` stays near 0.3%.
        Randomized response with one common ``eps`` keeps its exact grid instead.
        """
        atoms = self.atoms()
        for m, _ in atoms:
            if "pld" not in m.theory_methods:
                raise ValueError(f"{m.name} has no privacy loss distribution")
        if step is None:
            step = _composition_step(atoms)
        total: pld_lib.PLD | None = None
        for m, n in atoms:
            part = m.pld(step=step)
            if n > 1:
                part = part.self_compose(n)
            total = part if total is None else total.compose(part)
        assert total is not None
        return total

    def rdp(self, orders: object = None) -> RDPCurve:
        """RDP of the composition: the atoms' curves added order by order (Mironov 2017,
        Proposition 1)."""
        total: RDPCurve | None = None
        for m, n in self.atoms():
            if "rdp" not in m.theory_methods:
                raise ValueError(f"{m.name} has no RDP curve")
            part = m.rdp(orders=orders).self_compose(n)
            total = part if total is None else total.compose(part)
        assert total is not None
        return total

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """The compositions that apply, tightest first:

        - ``exact``: Gaussian atoms only, ``G_mu`` with ``mu = sqrt(sum n_i mu_i^2)`` (DRS
          Corollary 2); ``T`` runs of binary randomized response, the Kairouz-Oh-Viswanath
          composition with ``delta = 0``, which is attained by it (KOV 2015, Theorem 3.3);
          a single run: the atom's own theory.
        - ``pld``, ``rdp``: when every atom has them.
        - ``kov``, ``advanced``: pure-DP atoms, with the largest ``eps`` of them and ``k`` the
          total number of runs (KOV 2015 Theorem 3.3; Dwork, Rothblum & Vadhan 2010).
        - ``berry_esseen`` (a bound, DRS Theorem 5) and ``gdp_clt`` (an approximation, Bu et
          al. 2019 / DRS Corollary 4): ``T`` runs of one subsampled Gaussian (DP-SGD).
        """
        atoms = self.atoms()
        runs = sum(n for _, n in atoms)
        if len(atoms) == 1 and runs == 1:
            return atoms[0][0]._theories()
        out: dict[str, Callable[[], PrivacyProfile]] = {}
        if all(isinstance(m, Gaussian) for m, _ in atoms):
            mu = math.sqrt(math.fsum(n * m.mu**2 for m, n in atoms))
            out["exact"] = lambda: CurveProfile(gdp(mu))
        elif len(atoms) == 1 and isinstance(atoms[0][0], RandomizedResponse):
            rr, n = atoms[0]
            if rr.k == 2:
                out["exact"] = lambda: OptimalComposition(rr.eps, 0.0, n)
        if all("pld" in m.theory_methods for m, _ in atoms):
            out["pld"] = self.pld
        if all("rdp" in m.theory_methods for m, _ in atoms):
            out["rdp"] = self.rdp
        pure = [getattr(m, "pure_epsilon", None) for m, _ in atoms]
        if all(e is not None for e in pure):
            eps = max(pure)
            out["kov"] = lambda: OptimalComposition(eps, 0.0, runs)
            out["advanced"] = lambda: AdvancedComposition(eps, 0.0, runs)
        if len(atoms) == 1:
            sub = atoms[0][0]
            if isinstance(sub, PoissonSubsampled | FixedSizeSubsampled) and isinstance(
                sub.base, Gaussian
            ):
                sampling = "poisson" if isinstance(sub, PoissonSubsampled) else "fixed"
                noise = sub.base.sigma / sub.shift
                out["berry_esseen"] = lambda: CurveProfile(berry_esseen(sub.rate, noise, runs))
                out["gdp_clt"] = lambda: CurveProfile(
                    gdp_clt(sub.rate, noise, runs, sampling=sampling)
                )
        return out

    def _widths(self, dataset: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
        shapes = [m.output_shape(dataset) for m in self.components]
        return [(shape, math.prod(shape)) for shape in shapes]

    def output_shape(self, dataset: np.ndarray) -> tuple[int, ...]:
        """``(times, *base_shape)`` or ``(sum of component widths,)``."""
        if self.base is not None:
            return (self.times, *self.base.output_shape(dataset))
        return (sum(width for _, width in self._widths(dataset)),)

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` outputs; runs are independent draws of the components on ``dataset``.

        For one mechanism the ``size * times`` runs come from a single vectorised call.
        """
        size = check_size(size)
        rng = check_rng(rng)
        if self.base is not None:
            runs = self.base.sample(dataset, size * self.times, rng)
            return runs.reshape((size, self.times, *runs.shape[1:]))
        parts = [m.sample(dataset, size, rng) for m in self.components]
        flat = [p.reshape(size, math.prod(p.shape[1:])).astype(float) for p in parts]
        return np.concatenate(flat, axis=1)

    def _sum_over_runs(
        self,
        dataset: np.ndarray,
        outputs: np.ndarray,
        per_run: Callable[[Mechanism, np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """``per_run(mechanism, its runs' outputs)`` for every component, summed per trial.

        ``outputs`` must have the shape this mechanism produces on ``dataset``."""
        y = np.asarray(outputs)
        expected = self.output_shape(dataset)
        if y.ndim != len(expected) + 1 or y.shape[1:] != expected:
            shape = ", ".join(map(str, expected))
            raise ValueError(
                f"outputs must have shape (size, {shape}) on this dataset, got {y.shape}"
            )
        size = y.shape[0]
        if self.base is not None:
            runs = y.reshape((size * self.times, *y.shape[2:]))
            return per_run(self.base, runs).reshape(size, self.times).sum(axis=1)
        total = np.zeros(size)
        start = 0
        for m, (shape, width) in zip(self.components, self._widths(dataset), strict=True):
            total += per_run(m, y[:, start : start + width].reshape((size, *shape)))
            start += width
        return total

    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Exact log density, shape ``(size,)``: the sum of the runs' log densities."""
        return self._sum_over_runs(dataset, outputs, lambda m, y: m.log_density(dataset, y))

    def log_density_ratio(
        self, d: np.ndarray, d_prime: np.ndarray, outputs: np.ndarray
    ) -> np.ndarray:
        """The sum of the runs' log density ratios (each exact where its mechanism's is)."""
        return self._sum_over_runs(d, outputs, lambda m, y: m.log_density_ratio(d, d_prime, y))

    def worst_case_pair(self) -> NeighbouringPair:
        """The base's pair; for a list, the components' common pair, or for noisy sum queries
        (add/remove) one record of the largest clipping norm, which is each component's own
        worst case after clipping. Otherwise ``ValueError``: give the pair explicitly."""
        if self.base is not None:
            return self.base.worst_case_pair()
        pairs = [m.worst_case_pair() for m in self.components]
        if all(_same_pair(pairs[0], p) for p in pairs[1:]):
            return pairs[0]
        sensitivity = _add_remove_sensitivity(self)
        if sensitivity is not None:
            return NeighbouringPair(
                np.zeros(0),
                np.array([sensitivity]),
                "add_remove",
                description="empty dataset vs one record of the largest clipping norm",
            )
        raise ValueError(
            f"the components of {self.name} have different worst-case pairs; "
            "pass an explicit NeighbouringPair to the audit"
        )
