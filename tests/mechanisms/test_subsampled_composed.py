"""Theory of subsampled compositions (one subsample serves every run) against independent values:
brute-force enumeration of the output space, binomial laws, the subsampled single Gaussian and
Monte Carlo, in both orders of the pair."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import logsumexp
from scipy.stats import binom

import dpaudit
from dpaudit.mechanisms import FixedSizeSubsampled, Gaussian, Laplace, PoissonSubsampled
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.composed import Composed
from dpaudit.mechanisms.randomized_response import RandomizedResponse

ORDERS = np.array([1.5, 2.0, 3.0, 7.5, 10.0, 32.0])


def _brute_force_laws(mech):
    """``log P`` and ``log Q`` of every output of the mechanism on its worst-case pair,
    enumerated (``k^t`` report vectors) and evaluated with the mechanism's own mixture density."""
    pair = mech.worst_case_pair()
    rr = mech.base.atoms()[0][0]
    times = mech.base.times
    outputs = np.array(list(itertools.product(range(rr.k), repeat=times)))[:, :, None]
    return mech.log_density(pair.d, outputs), mech.log_density(pair.d_prime, outputs)


def _deltas(log_p, log_q, eps):
    """``delta`` of ``P||Q`` and of ``Q||P`` at ``eps``: ``sum (p - e^eps q)_+`` and back."""
    p, q = np.exp(log_p), np.exp(log_q)
    return np.maximum(p - np.exp(eps) * q, 0).sum(), np.maximum(q - np.exp(eps) * p, 0).sum()


def _renyi(log_p, log_q, orders):
    """``D_lambda(Q||P)`` and ``D_lambda(P||Q)`` by summing over the outputs."""
    lam = orders[:, None]
    qp = logsumexp(lam * log_q + (1 - lam) * log_p, axis=1) / (orders - 1)
    pq = logsumexp(lam * log_p + (1 - lam) * log_q, axis=1) / (orders - 1)
    return qp, pq


def _epsilon(log_p, log_q, delta):
    """Smallest eps whose larger delta of the two orders is at most ``delta``."""

    def gap(e):
        return max(_deltas(log_p, log_q, e)) - delta

    return 0.0 if gap(0.0) <= 0 else brentq(gap, 0.0, 50.0, xtol=1e-13, rtol=1e-12)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("times", [1, 3, 5])
@pytest.mark.parametrize("rate", [0.05, 0.3, 0.9])
def test_composed_randomized_response_theory_matches_brute_force(k, times, rate):
    """RDP (both orders, fractional and integer orders) and the exact curve's eps agree with the
    enumeration of all ``k^t`` outputs to 1e-9 relative; each PLD order's delta is an upper
    bound within 1% of the enumerated one. Deterministic."""
    mech = PoissonSubsampled(Composed(RandomizedResponse(1.5, k=k), times), rate)
    log_p, log_q = _brute_force_laws(mech)
    qp, pq = _renyi(log_p, log_q, ORDERS)
    np.testing.assert_allclose(mech.rdp(orders=ORDERS).eps, np.maximum(qp, pq), rtol=1e-9)
    pld = mech.pld()
    for eps in (0.0, 0.2, 1.0):
        d_pq, d_qp = _deltas(log_p, log_q, eps)
        for part, exact in ((pld.pq, d_pq), (pld.qp, d_qp)):
            assert exact * (1 - 1e-12) - 1e-15 <= part.delta(eps) <= exact * 1.01 + 1e-12
    for delta in (1e-5, 1e-2):
        exact = _epsilon(log_p, log_q, delta)
        assert mech.epsilon(delta, method="exact") == pytest.approx(exact, rel=1e-9, abs=1e-12)
        assert mech.epsilon(delta, method="pld") == pytest.approx(exact, rel=0.01, abs=1e-6)
    assert mech.pure_epsilon == pytest.approx(max(np.max(log_q - log_p), np.max(log_p - log_q)))


@pytest.mark.parametrize("rate", [0.01, 0.2])
def test_thousand_runs_of_binary_randomized_response_match_the_binomial_law(rate):
    """``t = 1000`` runs: the statistic ``S = 2 B - t`` with ``B ~ Binomial(t, 1/(1 + e^eps))``
    (scipy's pmf, an independent computation); RDP to 1e-9 and each PLD order's delta within
    1%. Deterministic."""
    eps0, times = 0.05, 1000
    mech = PoissonSubsampled(Composed(RandomizedResponse(eps0), times), rate)
    b = np.arange(times + 1)
    log_p = binom.logpmf(b, times, 1 / (1 + np.exp(eps0)))
    log_q = log_p + np.logaddexp(np.log1p(-rate), np.log(rate) + eps0 * (2 * b - times))
    qp, pq = _renyi(log_p, log_q, ORDERS)
    np.testing.assert_allclose(mech.rdp(orders=ORDERS).eps, np.maximum(qp, pq), rtol=1e-9)
    pld = mech.pld()
    for eps in (0.1, 0.5):
        d_pq, d_qp = _deltas(log_p, log_q, eps)
        assert pld.pq.delta(eps) == pytest.approx(d_pq, rel=0.01, abs=1e-12)
        assert pld.qp.delta(eps) == pytest.approx(d_qp, rel=0.01, abs=1e-12)
    exact = _epsilon(log_p, log_q, 1e-5)
    assert mech.epsilon(1e-5, method="exact") == pytest.approx(exact, rel=1e-6)


def test_fixed_size_composed_randomized_response_uses_the_same_pair_at_rate_size_over_n():
    fixed = FixedSizeSubsampled(Composed(RandomizedResponse(1.0, k=3), 4), 2, 10)
    poisson = PoissonSubsampled(Composed(RandomizedResponse(1.0, k=3), 4), 0.2)
    for method in ("exact", "pld", "rdp"):
        assert fixed.epsilon(1e-5, method=method) == pytest.approx(
            poisson.epsilon(1e-5, method=method), rel=1e-12
        )


def test_single_randomized_response_rdp_bound_is_the_exact_divergence_of_the_larger_order():
    """The binomial RDP formula used for one report equals ``D_lambda(Q||P)`` at integer orders
    (binomial expansion of ``E_P[(1 - q + q L)^lambda]``) and is at least ``D_lambda(P||Q)``;
    one run as a composition gives the exact larger order, the same values."""
    integers = np.array([2.0, 3.0, 5.0, 10.0, 32.0])
    for rate in (0.05, 0.3, 0.9):
        single = PoissonSubsampled(RandomizedResponse(1.5, k=3), rate)
        once = PoissonSubsampled(Composed(RandomizedResponse(1.5, k=3), 1), rate)
        log_p, log_q = _brute_force_laws(once)
        qp, pq = _renyi(log_p, log_q, integers)
        bound = single.rdp(orders=integers).eps
        np.testing.assert_allclose(bound, qp, rtol=1e-9)
        assert np.all(bound >= pq * (1 - 1e-12))
        np.testing.assert_allclose(once.rdp(orders=integers).eps, bound, rtol=1e-9)


def test_composed_randomized_response_audit_band_contains_the_exact_deltas():
    """The audit's Monte Carlo delta interval (95%, empirical Bernstein) contains the
    enumerated delta in both orders, and its certified eps is below the exact largest privacy
    loss (each fails with probability at most 5%; fixed seed)."""
    mech = PoissonSubsampled(Composed(RandomizedResponse(1.0), 3), 0.3)
    log_p, log_q = _brute_force_laws(mech)
    result = dpaudit.audit_mechanism(mech, trials=100_000, seed=0, privacy_loss=True)
    for eps in (0.2, 0.6):
        pq, qp = _deltas(log_p, log_q, eps)
        est = result.delta_estimate(eps)
        assert est["lower_d_d_prime"] <= pq <= est["upper_d_d_prime"]
        assert est["lower_d_prime_d"] <= qp <= est["upper_d_prime_d"]
    exact = mech.epsilon(0.0, method="exact")
    assert exact == pytest.approx(np.log1p(0.3 * np.expm1(3.0)), rel=1e-9)
    assert result.epsilon_lower_bound(0.0) <= exact


@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_composed_gaussian_is_the_subsampled_gaussian_with_sqrt_t_shift(sampling):
    """``t`` Gaussian runs with ``sigma`` on one subsample have the theory of one Gaussian with
    ``sigma / sqrt(t)`` (shift ``sqrt(t) Delta`` in units of ``sigma``); so do Gaussian runs with
    different ``sigma_i`` and ``(sum 1/sigma_i^2)^(-1/2)``. Both PLD orders agree. Deterministic."""

    def build(base, **kw):
        if sampling == "poisson":
            return PoissonSubsampled(base, 0.2, **kw)
        return FixedSizeSubsampled(base, 5, 25, **kw)

    cases = [
        (build(Composed(Gaussian(2.0, 0.5), 4), reference=0.0), build(Gaussian(1.0, 0.5))),
        (
            build(Composed([Gaussian(1.0), Gaussian(2.0), Gaussian(2.0)]), reference=0.0),
            build(Gaussian(1 / np.sqrt(1 + 1 / 4 + 1 / 4))),
        ),
    ]
    for composed, single in cases:
        assert composed.theory_methods == ("exact", "pld", "rdp")
        for method in composed.theory_methods:
            assert composed.epsilon(1e-5, method=method) == pytest.approx(
                single.epsilon(1e-5, method=method), rel=1e-12
            )
        eps = np.array([0.1, 0.5, 1.0])
        a, b = composed.pld(), single.pld()
        np.testing.assert_allclose(a.pq.delta(eps), b.pq.delta(eps), rtol=1e-12)
        np.testing.assert_allclose(a.qp.delta(eps), b.qp.delta(eps), rtol=1e-12)


def test_composed_gaussian_theory_matches_monte_carlo_of_the_full_outputs():
    """delta of each order estimated from 100,000 outputs of the real sampler with the exact
    privacy loss of the full ``t``-dimensional mixture density (``E_P[(1 - e^{eps - L})_+]``)
    is within 5 standard errors plus the PLD's 1% grid slack of the theory (false failure below
    1e-5 per comparison); the audit's certified eps is below the theory (fails with probability
    at most 5%; fixed seed)."""
    mech = PoissonSubsampled(Composed(Gaussian(3.0), 9), 0.3, reference=0.0)
    # a reference record, with and without the target 1: P = N(0, 9)^9 vs (1 - q) P + q N(1, 9)^9
    pair = NeighbouringPair(np.zeros(1), np.array([0.0, 1.0]), "add_remove")
    pld = mech.pld()
    rng = np.random.default_rng(1)
    n = 100_000
    for source, other, part in ((pair.d, pair.d_prime, pld.pq), (pair.d_prime, pair.d, pld.qp)):
        y = mech.sample(source, n, rng)
        loss = mech.log_density(source, y) - mech.log_density(other, y)
        for eps in (0.0, 0.3):
            values = np.maximum(0.0, 1.0 - np.exp(eps - loss))
            se = values.std() / np.sqrt(n)
            theory = part.delta(eps)
            assert abs(values.mean() - theory) <= 5 * se + 0.01 * theory
    result = dpaudit.audit_mechanism(mech, pair, trials=100_000, seed=0)
    assert result.epsilon_lower_bound(1e-3) <= mech.epsilon(1e-3, method="exact")


def test_bases_without_theory_say_which_are_covered():
    for mech, methods, valid in (
        (PoissonSubsampled(Composed(Laplace(1.0), 3), 0.1, reference=0.0), ("rdp",), "'rdp'"),
        (FixedSizeSubsampled(Composed(Laplace(1.0), 3), 1, 10, reference=0.0), (), "none"),
        (PoissonSubsampled(Composed(Gaussian(1.0), 3), 0.1, reference=0.5), (), "none"),
    ):
        assert mech.theory_methods == methods
        with pytest.raises(ValueError, match="compositions of one randomized-response"):
            mech.pld()
        with pytest.raises(ValueError, match=f"valid methods: {valid}"):
            mech.epsilon(1e-5, method="pld")


def _rdp_both_orders_by_quadrature(scale, rate, orders):
    """``D_lambda(Q||P)`` and ``D_lambda(P||Q)`` for ``P = Lap(0, b)``, ``Q = (1-q) P + q Lap(1,
    b)`` by numerical integration (log densities; pieces on which they are smooth, tails beyond
    ``60 b`` below 1e-20 of the total)."""
    from scipy.integrate import quad

    def log_p(y):
        return -abs(y) / scale - np.log(2 * scale)

    def log_q(y):
        return np.logaddexp(np.log1p(-rate) + log_p(y), np.log(rate) + log_p(y - 1))

    def power(y, lam, top, bottom):
        return np.exp(lam * top(y) + (1 - lam) * bottom(y))

    pieces = [(-60 * scale, 0.0), (0.0, 1.0), (1.0, 1 + 60 * scale)]
    out = []
    for lam in orders:
        qp = sum(quad(power, a, b, args=(lam, log_q, log_p), epsabs=0)[0] for a, b in pieces)
        pq = sum(quad(power, a, b, args=(lam, log_p, log_q), epsabs=0)[0] for a, b in pieces)
        out.append((np.log(qp) / (lam - 1), np.log(pq) / (lam - 1)))
    return np.array(out).T


def test_the_binomial_formula_bounds_the_reverse_order_too():
    """``rdp_poisson_subsampled`` (Steinke 2022, Theorem 34) bounds ``D_lambda(P||Q)`` as well
    as ``D_lambda(Q||P)`` (his Theorem 35: the reverse order is never the larger): checked for a
    Laplace base (exact values by quadrature) and for randomized response (enumeration) at
    three rates; deterministic."""
    from dpaudit.bounds.rdp import rdp_laplace, rdp_poisson_subsampled

    integers = np.array([2.0, 3.0, 5.0, 10.0, 20.0])
    base = rdp_laplace(1.0, 1.0, orders=np.arange(2.0, 21.0))
    for rate in (0.01, 0.1, 0.5):
        _, pq = _rdp_both_orders_by_quadrature(1.0, rate, integers)
        bound = rdp_poisson_subsampled(
            lambda k: base.eps[int(k) - 2], rate=rate, orders=integers
        ).eps
        assert np.all(bound >= pq * (1 - 1e-9))
    rr = RandomizedResponse(1.5, k=3)
    curve = rr.rdp(orders=np.arange(2.0, 21.0))
    for rate in (0.05, 0.3, 0.9):
        once = PoissonSubsampled(Composed(rr, 1), rate)
        _, pq = _renyi(*_brute_force_laws(once), integers)
        bound = rdp_poisson_subsampled(
            lambda k: curve.eps[int(k) - 2], rate=rate, orders=integers
        ).eps
        assert np.all(bound >= pq * (1 - 1e-9))


def test_any_base_with_an_rdp_curve_gets_a_subsampled_rdp_bound_in_both_orders():
    """A composition of two different randomized-response mechanisms (no exact theory) gets
    RDP from its curve: at least the enumerated divergences of both orders at integer and
    fractional orders, and amplified (eps at 1e-5 below a quarter of the unsubsampled one at
    rate 0.05). On one report the generic bound is at least the single-report result (which
    equals the larger exact order) and at most 1.5 times it. Deterministic."""
    base = Composed([RandomizedResponse(1.0), RandomizedResponse(2.0, k=3)])
    for rate in (0.05, 0.3, 0.9):
        mech = PoissonSubsampled(base, rate)
        assert mech.theory_methods == ("rdp",)
        pair = mech.worst_case_pair()
        outputs = np.array(list(itertools.product(range(2), range(3))), dtype=float)
        log_p, log_q = mech.log_density(pair.d, outputs), mech.log_density(pair.d_prime, outputs)
        qp, pq = _renyi(log_p, log_q, ORDERS)
        curve = mech.rdp(orders=ORDERS).eps
        assert np.all(curve >= np.maximum(qp, pq) * (1 - 1e-9))
    amplified = PoissonSubsampled(base, 0.05).epsilon(1e-5, method="rdp")
    assert amplified < 0.25 * base.epsilon(1e-5, method="rdp")
    for rate in (0.01, 0.3, 0.9):
        single = PoissonSubsampled(RandomizedResponse(1.5, k=3), rate)
        integers = np.array([2.0, 3.0, 10.0, 32.0])
        generic = single._generic_rdp_curve(integers).eps
        special = single.rdp(orders=integers).eps
        assert np.all(generic >= special * (1 - 1e-12))
        assert np.all(generic <= 1.5 * special)


def test_composed_laplace_rdp_is_above_the_audit():
    """Three Laplace runs on one Poisson subsample: the RDP theory's eps is above the audit's
    certified eps (fails with probability at most 5%; fixed seed) and below the unsubsampled
    composition's RDP eps."""
    base = Composed(Laplace(1.0), 3)
    mech = PoissonSubsampled(base, 0.2, reference=0.0)
    pair = NeighbouringPair(np.zeros(1), np.array([0.0, 1.0]), "add_remove")
    theory = mech.epsilon(1e-3, method="rdp")
    assert theory < base.epsilon(1e-3, method="rdp")
    result = dpaudit.audit_mechanism(mech, pair, trials=100_000, seed=0)
    assert result.epsilon_lower_bound(1e-3) <= theory
