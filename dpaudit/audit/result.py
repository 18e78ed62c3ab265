"""The result of an audit: counts, the empirical trade-off curve, and the numbers read off it.

Every number an :class:`AuditResult` reports is one of two kinds, and says so:

- **lower bounds** (``epsilon_lower_bound``, ``mu_lower_bound``, ``violates``): valid at the
  stated confidence whatever the attack, the grid or the mechanism's own claims, because the
  threshold they are read at was fixed without looking at the evaluation counts
  (:mod:`dpaudit.audit.strategies`);
- **estimates** (``delta_estimate``'s point value, ``gdp_estimate``): informative, never bounds.

A result round-trips through JSON (:meth:`AuditResult.to_json` / :meth:`AuditResult.from_json`)
without re-running anything: the counts are the sufficient statistics of every number here.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from dpaudit._core.jsonvalues import json_leaf
from dpaudit._core.provenance import audit_metadata
from dpaudit._core.validation import check_deltas, check_probability
from dpaudit.audit import frames
from dpaudit.audit.empirical import EmpiricalTradeoff
from dpaudit.audit.grid import ScoreGrid
from dpaudit.audit.lower_bounds import epsilon_from_errors, mu_from_errors, violation_margin
from dpaudit.audit.privacy_loss import PrivacyLossStatistics
from dpaudit.audit.strategies import (
    MU_SHAPES,
    band_ceiling_errors,
    band_shape,
    bonferroni_candidates,
    ceiling_errors,
    choose_threshold,
    crossed_tests,
    exact_share,
    oracle_errors,
)
from dpaudit.audit.witness import Witness
from dpaudit.bounds.gaussian_dp import GDPTradeoff
from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.mechanisms.base import NeighbouringPair, PrivacyProfile

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AuditResult", "RESULT_FORMAT", "DEFAULT_DELTAS", "claim_curve"]

#: ``format`` tag and version of :meth:`AuditResult.to_dict`.
RESULT_FORMAT = {"name": "dpaudit.audit_result", "version": 1}

#: The ``delta`` values of the summary table and of :meth:`AuditResult.theory_comparison`.
DEFAULT_DELTAS = (0.0, 1e-5)

#: A threshold enters the GDP estimate only if each of its four counts is at least this.
_GDP_MIN_COUNT = 10


def _float_key(value: float) -> str:
    return repr(float(value))


def _claimed_epsilon(claim: TradeoffCurve, delta: float) -> float | None:
    """``claim.epsilon(delta)``, or ``None`` when the claim's curve cannot say."""
    try:
        with np.errstate(all="ignore"):
            value = float(claim.epsilon(delta))
    except (ValueError, ArithmeticError, NotImplementedError):
        return None
    return None if np.isnan(value) else value


def claim_curve(claim: Any) -> TradeoffCurve:
    """The trade-off curve of a claim: a :class:`~dpaudit.bounds.tradeoff.TradeoffCurve` as it
    is, or the ``.tradeoff()`` of a guarantee stated in another form (``ZCDP``, ``ApproxZCDP``,
    ``RDPCurve``, a ``PLD``, any :class:`~dpaudit.mechanisms.base.PrivacyProfile`), which carries
    that guarantee's own ``delta(eps)``."""
    if isinstance(claim, TradeoffCurve):
        return claim
    tradeoff = getattr(claim, "tradeoff", None)
    curve = tradeoff() if callable(tradeoff) else None
    if not isinstance(curve, TradeoffCurve):
        raise ValueError(
            "claim must be a TradeoffCurve or a guarantee with .tradeoff() (ZCDP, ApproxZCDP, "
            f"RDPCurve, PLD), got {type(claim).__name__}"
        )
    return curve


def _refutation(claim: TradeoffCurve, witness: Witness) -> dict[str, Any] | None:
    """How the certified point of ``witness`` refutes ``claim`` (see
    :meth:`AuditResult.verdict`), or ``None``.

    Returns ``order``, ``claimed_beta``, ``margin`` (the larger of ``f(alpha+) - beta+`` and
    ``f(beta+) - alpha+``) and ``claim``; with an ``eps`` witness also ``claimed_epsilon``, with a
    ``mu`` witness and a GDP claim ``claimed_mu``.
    """
    a, b = witness["alpha_upper"], witness["beta_upper"]
    forward, reverse = (float(m) for m in violation_margin(claim, a, b))
    refuted = max(forward, reverse) > 0.0
    evidence: dict[str, Any] = {"claim": claim.name, "margin": max(forward, reverse)}
    if "epsilon" in witness:
        claimed = _claimed_epsilon(claim, witness["delta"])
        evidence["claimed_epsilon"] = claimed
        refuted |= claimed is not None and witness["epsilon"] > claimed
    if "mu" in witness and isinstance(claim, GDPTradeoff):
        evidence["claimed_mu"] = claim.mu
        refuted |= witness["mu"] > claim.mu
    if not refuted:
        return None
    if forward >= reverse:
        evidence["order"], evidence["claimed_beta"] = "d_d_prime", float(claim(a))
    else:
        evidence["order"], evidence["claimed_beta"] = "d_prime_d", float(claim(b))
    return evidence


@dataclass(eq=False)
class AuditResult:
    """Everything an audit measured; see the module docstring.

    ``counts[0]`` / ``counts[1]``: evaluation scores per grid bin under ``D`` / ``D_prime``;
    ``selection_counts`` the same for the selection sample; ``fixed_counts`` (strategy
    ``"fixed"``): false positives ``#{s > t}`` under ``D`` and false negatives ``#{s <= t}`` under
    ``D_prime`` at each given threshold. ``mechanism``, ``pair`` and ``attack`` are the objects
    audited (``mechanism`` and ``attack`` are ``None`` after loading from JSON; their names and
    parameters stay in ``metadata``). ``gamma_share`` is the share of ``1 - confidence`` that this
    result's bounds spend, less than 1 when the procedure that made it spends the rest on tests
    it did not report (the earlier looks of a sequential audit, :mod:`dpaudit.audit.sequential`);
    every bound is read at :attr:`gamma`.
    """

    mechanism: Any
    pair: NeighbouringPair | None
    attack: Any
    name: str
    trials: int
    selection_trials: int
    pilot_trials: int
    fit_trials: int
    seed: int
    confidence: float
    strategy: str
    elapsed_seconds: float
    grid: ScoreGrid
    counts: np.ndarray
    selection_counts: np.ndarray
    privacy_loss: PrivacyLossStatistics | None = None
    fixed_thresholds: np.ndarray | None = None
    fixed_counts: np.ndarray | None = None
    chunk_size: int = 0
    gamma_share: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def describe(
        mechanism: Any, pair: NeighbouringPair, attack: Any, exact: bool
    ) -> dict[str, Any]:
        """Deprecated: the engine's metadata helper, :func:`dpaudit._core.provenance.audit_metadata`
        (to be removed in the next release; the result's own record is :attr:`metadata`)."""
        warnings.warn(
            "AuditResult.describe is deprecated and will be removed in the next release; "
            "the record of an audit is result.metadata",
            DeprecationWarning,
            stacklevel=2,
        )
        return audit_metadata(mechanism, pair, attack, exact)

    # ------------------------------------------------------------------ curves
    @property
    def edges(self) -> np.ndarray:
        """The score grid's finite bin edges (the candidate thresholds)."""
        return self.grid.edges

    @property
    def gamma(self) -> float:
        """The error probability this result's bounds spend: ``(1 - confidence) * gamma_share``."""
        return (1.0 - self.confidence) * self.gamma_share

    def _curve(self, counts: np.ndarray, label: str) -> EmpiricalTradeoff:
        return EmpiricalTradeoff(
            self.grid.edges,
            counts[0],
            counts[1],
            confidence=self.confidence,
            name=f"{label}: {self.name}",
        )

    @cached_property
    def tradeoff(self) -> EmpiricalTradeoff:
        """The empirical trade-off curve of the evaluation trials, with its band."""
        return self._curve(self.counts, "empirical")

    @cached_property
    def selection_tradeoff(self) -> EmpiricalTradeoff:
        """The same curve on the selection sample (used only to choose thresholds)."""
        return self._curve(self.selection_counts, "selection")

    @cached_property
    def candidates(self) -> np.ndarray:
        """Grid indices of the Bonferroni candidate thresholds (from the selection sample)."""
        sel = self.selection_tradeoff
        return bonferroni_candidates(sel.fp, sel.fn, sel.n_d, sel.n_d_prime)

    # ------------------------------------------------------------------ threshold choice
    def _named(self) -> np.ndarray | None:
        """Indices of the edges the selection sample names, on a grid of both samples' values
        (``None``, every edge, on any other grid): edge ``e_k`` is a selection score exactly
        when the bin ``[e_k, e_k+1)`` holds selection trials, since such a bin holds only
        scores equal to ``e_k``."""
        if self.grid.kind != "values":
            return None
        return np.flatnonzero(self.selection_counts[:, 1:].sum(axis=0) > 0)

    @cached_property
    def _band_shapes(self) -> tuple[str, str]:
        """The shapes of the exact bands of ``alpha`` and ``beta``, each chosen from the *other*
        side's trials (:func:`~dpaudit.audit.strategies.band_shape`): from its scores when the
        audit recorded them (``metadata["band_shapes"]``, audits of given scores), else from its
        selection and evaluation counts pooled, each bin standing for its lower edge (a grid
        fixed before the trials, so the edges say nothing of the other side)."""
        given = self.metadata.get("band_shapes")
        if given is not None:
            return str(given[0]), str(given[1])
        values = np.concatenate([[-np.inf], self.grid.edges])
        pooled = self.counts + self.selection_counts
        return band_shape(values, pooled[1]), band_shape(values, pooled[0])

    def _shapes_for_strategy(self) -> tuple[str, str]:
        """:attr:`_band_shapes` for the strategies with an exact band, computed only for them
        (the others read no shape)."""
        if self.strategy in ("holdout+exact", "crossed"):
            return self._band_shapes
        return ("tail", "tail")

    @cached_property
    def _crossed_tests(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The thresholds at which ``"crossed"`` tests ``alpha`` and ``beta``, each from the
        *other* side's occupied bins (:func:`~dpaudit.audit.strategies.crossed_tests`)."""
        pooled = self.counts + self.selection_counts
        return crossed_tests(pooled[1]), crossed_tests(pooled[0])

    def _selection(self) -> tuple[np.ndarray, np.ndarray, int, int] | None:
        """``(fp, fn, n_d, n_d_prime)`` of the selection sample, ``None`` when it is empty (an
        audit of given scores whose strategy spends none of them on choosing)."""
        if not self.selection_counts.any():
            return None
        sel = self.selection_tradeoff
        return sel.fp, sel.fn, sel.n_d, sel.n_d_prime

    @cached_property
    def _choice_memo(self) -> dict[Any, np.ndarray]:
        """What the threshold choice computes once per audit, whatever its objective."""
        return {}

    def _witness(
        self,
        objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
        shapes: tuple[str, str] | None = None,
    ) -> Witness:
        """Choose a threshold by the strategy and read the evaluation counts there.

        ``objective(alpha_upper, beta_upper) -> array`` (larger is better); the choice itself is
        :func:`~dpaudit.audit.strategies.choose_threshold` (``"fixed"``: the best of the fixed
        thresholds, ``gamma/(2K)`` per bound). ``shapes``: those of the exact bands, fixed for
        the quantity read (``None``: each chosen from the other side's trials).
        """
        ev = self.tradeoff
        n0, n1 = ev.n_d, ev.n_d_prime
        selection = None
        if self.strategy == "fixed":
            thresholds, rule = self.fixed_thresholds, ">"
            evaluation = (self.fixed_counts[0], self.fixed_counts[1], n0, n1)
        else:
            thresholds, rule = self.grid.edges, ">="
            evaluation = (ev.fp, ev.fn, n0, n1)
            selection = self._selection()
        choice = choose_threshold(
            self.strategy,
            objective,
            selection,
            evaluation,
            self.gamma,
            None if self.strategy == "crossed" else self._named(),
            self._choice_memo,
            self._shapes_for_strategy() if shapes is None else shapes,
            self._crossed_tests if self.strategy == "crossed" else (None, None),
        )
        j = choice["index"]
        return Witness(
            threshold=float(thresholds[j]),
            rule=f"D_prime iff score {rule} threshold",
            alpha=choice["fp"] / choice["n_d"],
            beta=choice["fn"] / choice["n_d_prime"],
            alpha_upper=choice["alpha_upper"],
            beta_upper=choice["beta_upper"],
            strategy=choice["strategy"],
            candidates=int(choice["candidates"]),
            gamma_per_bound=float(choice["gamma_per_bound"]),
            confidence=self.confidence,
        )

    # ------------------------------------------------------------------ lower bounds
    def epsilon_witness(self, delta: float = 0.0) -> Witness:
        """The threshold behind :meth:`epsilon_lower_bound` and its numbers.

        Keys: ``threshold``, ``rule``, ``alpha``, ``beta`` (estimates), ``alpha_upper``,
        ``beta_upper``, ``epsilon``, ``delta``, ``order`` (``"d_d_prime"`` when the bound comes
        from ``log((1 - delta - beta+) / alpha+)``, ``"d_prime_d"`` for the swapped roles), and the
        strategy's bookkeeping.
        """
        delta = check_probability("delta", delta, high_open=True)
        w = self._witness(lambda a, b: epsilon_from_errors(a, b, delta))
        a, b = w.alpha_upper, w.beta_upper
        # Which ratio attains the bound: (1 - delta - b) / a (test as given) or its mirror.
        return w.with_(
            delta=delta,
            epsilon=float(epsilon_from_errors(a, b, delta)),
            order="d_d_prime" if (1 - delta - b) * b >= (1 - delta - a) * a else "d_prime_d",
        )

    def epsilon_lower_bound(self, delta: float = 0.0) -> float:
        """``eps`` such that the mechanism is not ``(eps', delta)``-DP for any ``eps' < eps``,
        at the stated confidence (docs/theory.md#empirical). Never negative."""
        return self.epsilon_witness(delta)["epsilon"]

    def mu_witness(self) -> Witness:
        """The threshold behind :meth:`mu_lower_bound` (keys as :meth:`epsilon_witness`, ``mu``).
        An exact band reads ``mu`` with the shape of the middle counts on both sides
        (:data:`MU_SHAPES`), where ``mu`` is decided whatever the tails."""
        w = self._witness(mu_from_errors, MU_SHAPES)
        return w.with_(mu=float(mu_from_errors(w.alpha_upper, w.beta_upper)))

    def mu_lower_bound(self) -> float:
        """``mu`` such that the mechanism is not ``mu'``-GDP for any ``mu' < mu``, at the stated
        confidence: ``Phi^{-1}(1 - alpha+) - Phi^{-1}(beta+)`` (docs/theory.md#empirical)."""
        return self.mu_witness()["mu"]

    # ------------------------------------------------------------------ ceilings
    def _ceiling_errors(self, kind: str) -> tuple[Any, Any]:
        ev = self.tradeoff
        if kind == "perfect":
            a, b = ceiling_errors(ev.n_d, ev.n_d_prime, self.gamma)
            if self.strategy not in ("holdout+band", "holdout+exact", "crossed"):
                return a, b
            # The band reads a perfect attack on the pooled trials as well.
            sel = self._selection()
            n_sel = (0, 0) if sel is None else (sel[2], sel[3])
            pooled = (ev.n_d + n_sel[0], ev.n_d_prime + n_sel[1])
            if self.strategy == "crossed":
                # Each of its bounds is one of the pooled trials at gamma / 2 at most, whatever
                # tests and band the other side configures: a single threshold there bounds them.
                pooled_a, pooled_b = ceiling_errors(*pooled, self.gamma)
            else:
                share = exact_share(*n_sel) if self.strategy == "holdout+exact" else None
                pooled_a, pooled_b = band_ceiling_errors(
                    *pooled, self.gamma, share, self._shapes_for_strategy()
                )
            return np.array([a, pooled_a]), np.array([b, pooled_b])
        if kind != "oracle":
            raise ValueError(f"kind must be 'perfect' or 'oracle', got {kind!r}")
        curve = getattr(self.mechanism, "tradeoff", None)
        if not callable(curve):
            raise ValueError(
                "the oracle ceiling needs the audited mechanism's trade-off curve "
                "(mechanism.tradeoff()); this result has none"
            )
        return oracle_errors(curve(), ev.n_d, ev.n_d_prime, self.gamma)

    def epsilon_ceiling(self, delta: float = 0.0, kind: str = "perfect") -> float:
        """The most this audit could certify at ``delta``, whatever its attack's scores.

        ``kind="perfect"``: a perfect attack (no errors at all) read at one threshold with
        ``gamma/2`` per bound on the evaluation trials
        (:func:`~dpaudit.audit.strategies.ceiling_errors`); with ``"holdout+band"`` or
        ``"holdout+exact"`` also by the band (of this result's shapes) on the selection and
        evaluation trials pooled, and with ``"crossed"`` at one threshold with ``gamma/2`` per
        bound on the pooled trials, which no test or band of it can pass; the larger of the two.
        No bound this result reads exceeds it.
        ``kind="oracle"``: an *estimate* of what the best single threshold certifies on the
        mechanism's own trade-off curve
        (:func:`~dpaudit.audit.strategies.oracle_errors`; needs ``mechanism.tradeoff()``).
        The gap between :meth:`epsilon_lower_bound` and these is what the audit left unused.
        """
        delta = check_probability("delta", delta, high_open=True)
        a, b = self._ceiling_errors(kind)
        return float(np.max(epsilon_from_errors(a, b, delta)))

    def mu_ceiling(self, kind: str = "perfect") -> float:
        """The ``mu`` counterpart of :meth:`epsilon_ceiling`."""
        a, b = self._ceiling_errors(kind)
        return float(np.max(mu_from_errors(a, b)))

    def _margin_witness(self, claim: TradeoffCurve) -> Witness:
        """The claim's own test: the threshold chosen (by the strategy) to maximise the margin
        by which the two errors' upper bounds fall below ``claim``, in either order."""

        def objective(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            forward, reverse = violation_margin(claim, a, b)
            return np.maximum(forward, reverse)

        return self._witness(objective)

    def verdict(
        self, claim: TradeoffCurve | PrivacyProfile | None, deltas: Sequence[float] = DEFAULT_DELTAS
    ) -> dict[str, Any]:
        """Every number a report shows, and the verdict on ``claim``, as one family of tests.

        ``claim`` is a trade-off curve, or a guarantee in another form whose ``.tradeoff()``
        gives one (:func:`claim_curve`: zCDP, approximate zCDP, an RDP curve, a PLD).

        The family holds ``m = len(deltas) + 1 (+ 1 with a claim)`` tests: the ``eps`` lower
        bound at each ``delta`` in ``deltas``, the ``mu`` lower bound, and the claim's own test
        (:meth:`violates`'s threshold, chosen to maximise the margin below the claimed curve).
        The confidence is split by Bonferroni: each test is read exactly as
        :meth:`epsilon_witness` / :meth:`mu_witness` read it, at confidence ``1 - gamma/m``
        (the strategy spends that as it spends ``1 - gamma`` for a lone test).

        The verdict is ``"violated"`` iff some test of the family refutes the claim ``f``:

        - its certified point ``(alpha+, beta+)`` lies strictly below ``f`` in either order,
          ``beta+ < f(alpha+)`` or ``alpha+ < f(beta+)``;
        - or its ``eps`` bound at ``delta`` exceeds ``f.epsilon(delta)``, the claim's own
          ``eps`` at that ``delta``;
        - or (a ``mu``-GDP claim) its ``mu`` bound exceeds the claimed ``mu``.

        **Consistency.** By construction, no ``eps`` bound of the family is above the claim's
        ``eps`` at its ``delta``, and no ``mu`` bound above a GDP claim's ``mu``, when the
        verdict is ``"consistent"``; so a report that shows the family's bounds (as
        :func:`dpaudit.reports.build_record` does) never shows a certified bound beyond the
        claim beside a consistent verdict.

        **Validity.** Let ``E_i`` be the event that test ``i``'s two upper bounds hold,
        ``alpha_i <= alpha+_i`` and ``beta_i <= beta+_i`` for the true errors of its threshold
        test. The strategy guarantees ``P(not E_i) <= gamma/m`` at confidence ``1 - gamma/m``
        (whatever the other tests do), so ``P(E_1 and ... and E_m) >= 1 - gamma`` (union
        bound). Suppose the mechanism is ``f``-DP on this pair, i.e. every test has
        ``beta >= f(alpha)`` and ``alpha >= f(beta)`` (``f`` is symmetric or both orders are
        claimed, as in :func:`~dpaudit.audit.lower_bounds.violation_margin`). On the joint
        event, since ``f`` is non-increasing, ``beta+_i >= beta_i >= f(alpha_i) >=
        f(alpha+_i)`` and likewise in the other order: no point is below ``f``. ``f``-DP implies
        ``(f.epsilon(delta), delta)``-DP (``f`` lies above that claim's curve), so each ``eps``
        bound, valid on ``E_i``, is at most ``f.epsilon(delta)``; and ``f = G_mu`` gives
        ``mu_i <= mu``. Hence a correct claim is reported violated with probability at most
        ``gamma``: the verdict is a test at level ``gamma``, and every number of the family
        holds simultaneously with probability at least ``1 - gamma``.

        Returns a dict: ``verdict`` (``"violated"``, ``"consistent"``, or ``None`` without a
        claim), ``witness`` (the refuting test's numbers, or ``None``), ``refuted_by`` (which
        tests refute: ``"claim"``, ``"epsilon@<delta>"``, ``"mu"``), ``epsilon_lower_bounds`` and
        ``epsilon_witnesses`` (keyed by ``repr(float(delta))``), ``mu_lower_bound``,
        ``mu_witness``, and ``family``: ``{"tests", "gamma_per_test", "confidence_per_test",
        "confidence", "method": "bonferroni"}``.
        """
        if claim is not None:
            claim = claim_curve(claim)
        asked = list(dict.fromkeys(check_deltas("deltas", deltas)))
        tests = len(asked) + 1 + (claim is not None)
        gamma_each = self.gamma / tests
        member = replace(self, confidence=1.0 - gamma_each, gamma_share=1.0)
        eps_witnesses = {_float_key(d): member.epsilon_witness(d) for d in asked}
        mu_witness = member.mu_witness()
        out: dict[str, Any] = {
            "verdict": None,
            "witness": None,
            "refuted_by": [],
            "epsilon_lower_bounds": {k: w["epsilon"] for k, w in eps_witnesses.items()},
            "epsilon_witnesses": eps_witnesses,
            "mu_lower_bound": mu_witness["mu"],
            "mu_witness": mu_witness,
            "family": {
                "tests": tests,
                "gamma_per_test": gamma_each,
                "confidence_per_test": 1.0 - gamma_each,
                "confidence": self.confidence,
                "method": "bonferroni",
            },
        }
        if claim is None:
            return out
        named = [("claim", member._margin_witness(claim)), ("mu", mu_witness)]
        named += [(f"epsilon@{d!r}", eps_witnesses[_float_key(d)]) for d in asked]
        refuting = []
        for label, w in named:
            evidence = _refutation(claim, w)
            if evidence is not None:
                refuting.append((label, w.with_(**evidence, test=label)))
        out["refuted_by"] = [label for label, _ in refuting]
        out["verdict"] = "violated" if refuting else "consistent"
        if refuting:
            out["witness"] = max(refuting, key=lambda item: item[1].margin)[1]
        return out

    def violates(
        self, claim: TradeoffCurve | PrivacyProfile, deltas: Sequence[float] = DEFAULT_DELTAS
    ) -> Witness | None:
        """Evidence that the mechanism is not ``claim``-DP, or ``None``.

        The verdict of :meth:`verdict` (the claim's own test together with the ``eps`` bounds at
        ``deltas`` and the ``mu`` bound, confidence split between them): ``None`` when it is
        consistent, else the witness of the refuting test with the largest margin, holding
        ``threshold``, ``alpha_upper``, ``beta_upper``, ``order`` (``"d_d_prime"``:
        ``beta+ < f(alpha+)``; ``"d_prime_d"``: ``alpha+ < f(beta+)``), ``claimed_beta`` (``f`` at
        the other error), ``margin``, ``test`` and ``claim``.
        """
        return self.verdict(claim_curve(claim), deltas)["witness"]

    # ------------------------------------------------------------------ estimates
    def delta_estimate(self, eps: float | np.ndarray) -> dict[str, Any]:
        """Monte Carlo ``delta(eps)`` with an empirical Bernstein interval, both pair orders.

        Only for audits run with ``privacy_loss=True``, whose score is the exact privacy loss of
        the audited mechanism on this pair (:class:`~dpaudit.attacks.LikelihoodRatio`); see
        :meth:`dpaudit.audit.privacy_loss.PrivacyLossStatistics.delta`.
        """
        if self.privacy_loss is None:
            raise ValueError(
                "delta_estimate needs the privacy-loss sums of an audit run with "
                "privacy_loss=True and an attack whose score is the exact privacy loss "
                "(LikelihoodRatio); this result has none"
            )
        return self.privacy_loss.delta(eps, self.confidence)

    def gdp_estimate(self) -> dict[str, Any]:
        """A ``mu``-GDP *estimate* (Nasr et al. 2023, "Tight auditing"), never a bound.

        Assumes the curve is ``G_mu``: every threshold with at least 10 counts on each side gives
        ``mu_j = Phi^{-1}(1 - alpha_j) - Phi^{-1}(beta_j)``; they are averaged with inverse
        delta-method variances ``alpha(1-alpha) / (N0 phi(z_alpha)^2) + (same for beta)``, and
        clipped at 0. ``mu`` is ``None`` (with a ``note``) when no threshold has enough counts,
        e.g. when the two output distributions never overlap in the sample.
        """
        ev = self.tradeoff
        fp, fn = ev.fp, ev.fn
        n0, n1 = ev.n_d, ev.n_d_prime
        m = _GDP_MIN_COUNT
        ok = (fp >= m) & (n0 - fp >= m) & (fn >= m) & (n1 - fn >= m)
        pairs = np.unique(np.stack([fp[ok], fn[ok]], axis=1), axis=0)
        base = {"label": "estimate", "method": "inverse-variance mean of per-threshold mu"}
        if pairs.shape[0] == 0:
            note = f"no threshold has {m} or more counts on each side: no estimate"
            return {"mu": None, "thresholds": 0, **base, "note": note}
        a = pairs[:, 0] / n0
        b = pairs[:, 1] / n1
        za, zb = special.ndtri(a), special.ndtri(b)
        mu_j = -za - zb
        pdf = (
            np.exp(-0.5 * za * za) / np.sqrt(2 * np.pi),
            np.exp(-0.5 * zb * zb) / np.sqrt(2 * np.pi),
        )
        var = a * (1 - a) / (n0 * pdf[0] ** 2) + b * (1 - b) / (n1 * pdf[1] ** 2)
        weights = 1.0 / var
        mu = max(float(np.sum(weights * mu_j) / np.sum(weights)), 0.0)
        return {"mu": mu, "thresholds": int(pairs.shape[0]), **base}

    # ------------------------------------------------------------------ tables
    def theory_comparison(
        self, methods: Sequence[str] | None = None, deltas: Sequence[float] = DEFAULT_DELTAS
    ) -> pd.DataFrame:
        """Lower bounds beside the mechanism's theoretical values, one row per method and number:
        :func:`dpaudit.audit.frames.theory_comparison`."""
        return frames.theory_comparison(self, methods, deltas)

    def tightness(
        self, deltas: Sequence[float] = (1e-5,), method: str | None = None
    ) -> dict[str, float]:
        """``lower bound / theoretical value`` for ``eps`` at each ``delta`` and for ``mu``:
        :func:`dpaudit.audit.frames.tightness`."""
        return frames.tightness(self, deltas, method)

    def summary(self, deltas: Sequence[float] = DEFAULT_DELTAS) -> dict[str, Any]:
        """The headline numbers: ``eps`` lower bounds at ``deltas``, the ``mu`` lower bound and
        the GDP estimate."""
        return {
            "epsilon_lower_bound": {_float_key(d): self.epsilon_lower_bound(d) for d in deltas},
            "mu_lower_bound": self.mu_lower_bound(),
            "gdp_estimate": self.gdp_estimate()["mu"],
        }

    def to_frame(self, deltas: Sequence[float] = DEFAULT_DELTAS) -> pd.DataFrame:
        """One row per reported number (:func:`dpaudit.audit.frames.result_frame`). Per-threshold
        points: ``result.tradeoff.to_frame()``."""
        return frames.result_frame(self, deltas)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """Every count and setting, JSON-ready; :meth:`from_dict` rebuilds an equal result."""
        fixed = None
        if self.fixed_thresholds is not None:
            fixed = {
                "thresholds": self.fixed_thresholds.tolist(),
                "fp": self.fixed_counts[0].tolist(),
                "fn": self.fixed_counts[1].tolist(),
            }
        return {
            "format": RESULT_FORMAT["name"],
            "format_version": RESULT_FORMAT["version"],
            "name": self.name,
            "trials": self.trials,
            "selection_trials": self.selection_trials,
            "pilot_trials": self.pilot_trials,
            "fit_trials": self.fit_trials,
            "seed": self.seed,
            "confidence": self.confidence,
            "strategy": self.strategy,
            "elapsed_seconds": self.elapsed_seconds,
            "chunk_size": self.chunk_size,
            "gamma_share": self.gamma_share,
            **self.metadata,
            "grid": self.grid.to_dict(),
            "counts": {"d": self.counts[0].tolist(), "d_prime": self.counts[1].tolist()},
            "selection_counts": {
                "d": self.selection_counts[0].tolist(),
                "d_prime": self.selection_counts[1].tolist(),
            },
            "privacy_loss": None if self.privacy_loss is None else self.privacy_loss.to_dict(),
            "fixed": fixed,
            "summary": self.summary(),
        }

    def to_json(self, path: str | None = None, *, indent: int | None = None) -> str:
        """The :meth:`to_dict` record as strict JSON (no NaN/inf); written to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=json_leaf)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return text

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditResult:
        """Rebuild a result from :meth:`to_dict` output (``mechanism`` and ``attack`` are
        ``None``; the pair is rebuilt)."""
        if data.get("format") != RESULT_FORMAT["name"]:
            found = data.get("format")
            raise ValueError(f"data must be a {RESULT_FORMAT['name']!r} record, got {found!r}")
        grid = ScoreGrid.from_dict(data["grid"])
        counts = np.array([data["counts"]["d"], data["counts"]["d_prime"]], dtype=np.int64)
        sel = data["selection_counts"]
        selection = np.array([sel["d"], sel["d_prime"]], dtype=np.int64)
        loss = None
        if data.get("privacy_loss") is not None:
            pl = data["privacy_loss"]
            loss = PrivacyLossStatistics(
                grid.edges,
                pl["counts_d"],
                pl["sum_d"],
                pl["sum_sq_d"],
                pl["counts_d_prime"],
                pl["sum_d_prime"],
                pl["sum_sq_d_prime"],
            )
        fixed_t = fixed_c = None
        if data.get("fixed") is not None:
            fixed_t = np.asarray(data["fixed"]["thresholds"], dtype=float)
            fixed_c = np.array([data["fixed"]["fp"], data["fixed"]["fn"]], dtype=np.int64)
        p = data["pair"]
        pair = NeighbouringPair(p["d"], p["d_prime"], p["relation"], p.get("description", ""))
        metadata = {k: data[k] for k in ("mechanism", "attack", "pair", "versions", "random")}
        for key in ("sequential", "band_shapes"):
            if data.get(key) is not None:
                metadata[key] = data[key]
        return cls(
            mechanism=None,
            pair=pair,
            attack=None,
            name=data["name"],
            trials=int(data["trials"]),
            selection_trials=int(data["selection_trials"]),
            pilot_trials=int(data["pilot_trials"]),
            fit_trials=int(data["fit_trials"]),
            seed=int(data["seed"]),
            confidence=float(data["confidence"]),
            strategy=data["strategy"],
            elapsed_seconds=float(data["elapsed_seconds"]),
            grid=grid,
            counts=counts,
            selection_counts=selection,
            privacy_loss=loss,
            fixed_thresholds=fixed_t,
            fixed_counts=fixed_c,
            chunk_size=int(data["chunk_size"]),
            gamma_share=float(data.get("gamma_share", 1.0)),
            metadata=metadata,
        )

    @classmethod
    def from_json(cls, text_or_path: str) -> AuditResult:
        """Rebuild a result from :meth:`to_json` text or from the path of a file holding it."""
        text = text_or_path
        if not text_or_path.lstrip().startswith("{"):
            with open(text_or_path, encoding="utf-8") as fh:
                text = fh.read()
        return cls.from_dict(json.loads(text))

    def __repr__(self) -> str:
        return (
            f"<AuditResult {self.name}: trials={self.trials}, strategy={self.strategy}, "
            f"confidence={self.confidence}>"
        )
