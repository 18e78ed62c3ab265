"""Flawed-mechanism benchmark: samplers against closed forms and quadrature, the documented true
eps, and the audit verdicts.

The probabilities of sparse-vector answer patterns are one-dimensional integrals over the
threshold noise, computed here with scipy's adaptive quadrature, independently of the module.
Monte Carlo frequencies are compared with tolerance ``6 sqrt(p(1-p)/N)`` (false-failure
probability below 2e-9 per comparison); KS tests assert ``p > 1e-4``.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.audit.benchmark import run_benchmark
from dpaudit.mechanisms.flawed import (
    FLAWED,
    PUBLISHED,
    FlawedMechanism,
    claimed_curve,
    flawed,
)

KS_LEVEL = 1e-4


def _rng(seed=0):
    return np.random.default_rng(seed)


def _cdf(x, b):
    """Laplace(0, b) CDF."""
    return np.where(
        x < 0, 0.5 * np.exp(np.minimum(x, 0) / b), 1 - 0.5 * np.exp(-np.maximum(x, 0) / b)
    )


def _pdf(x, b):
    return np.exp(-np.abs(x) / b) / (2 * b)


def _integrate(g, kinks, scale):
    edges = [min(kinks) - 60 * scale, *sorted(set(kinks)), max(kinks) + 60 * scale]
    return sum(
        integrate.quad(g, lo, hi, epsabs=0, epsrel=1e-11, limit=200)[0]
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    )


def _pattern_probability(bits, a, t, rho_b, nu_b):
    """P(the first len(bits) comparisons a_i + nu_i >= t + rho give ``bits``)."""

    def g(r):
        p = _pdf(r, rho_b)
        for bit, ai in zip(bits, a, strict=False):
            below = _cdf(r + t - ai, nu_b)
            p = p * ((1 - below) if bit else below)
        return p

    return _integrate(g, [ai - t for ai in a] + [0.0], rho_b)


def _frequency_ok(count, n, p):
    return abs(count / n - p) <= 6 * math.sqrt(p * (1 - p) / n) + 1e-12


def _codes_pattern(first_above, k):
    """Codes of "first above at query j" (1-based; j = k + 1: none above), cutoff 1."""
    if first_above > k:
        return [0] * k
    return [0] * (first_above - 1) + [1] + [-1] * (k - first_above)


# ----------------------------------------------------------------------------- registry


@pytest.mark.parametrize("name", list(FLAWED))
def test_every_mechanism_is_documented_and_samples(name):
    mech = flawed(name)
    assert isinstance(mech, FlawedMechanism) and mech.registry_name == name
    assert mech.citation and type(mech).__doc__
    lower, upper = mech.epsilon_bounds()
    assert 0.0 <= lower <= upper
    assert mech.correct == (upper <= mech.eps * (1 + 1e-12))
    assert mech.true_epsilon == (lower if lower == upper else None)
    assert name in PUBLISHED
    json.dumps(mech.params())
    pair = mech.worst_case_pair()
    for dataset in (pair.d, pair.d_prime):
        out = mech.sample(dataset, 64, _rng())
        assert out.shape[0] == 64 and out.dtype == np.float64 and np.isfinite(out).all()
    assert mech.theory_methods == ("claim",)
    claimed_delta = getattr(mech, "claimed_delta", 0.0)
    assert mech.epsilon(claimed_delta, method="claim") == pytest.approx(mech.eps)


def test_claimed_curve_is_the_approximate_dp_curve_of_kind_claim():
    curve = claimed_curve(0.3)
    alpha = np.linspace(0, 1, 11)
    expected = np.maximum.reduce(
        [np.zeros(11), 1 - math.exp(0.3) * alpha, math.exp(-0.3) * (1 - alpha)]
    )
    np.testing.assert_allclose(curve(alpha), expected, atol=1e-12)
    assert curve.kind == "claim"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: flawed("nope"), "name must be one of"),
        (lambda: flawed("svt", eps=0.0), "eps"),
        (lambda: flawed("svt", c=0), "c must be"),
        (lambda: flawed("noisy_hist", k=0), "k must be"),
        # k = 10^12 ended in a MemoryError while building the worst-case pair
        (lambda: flawed("noisy_hist", k=10**12), r"k must be an integer in \[1, 1048576\]"),
        (lambda: flawed("laplace_skipped_noise", leak=1.5), "leak"),
        (lambda: flawed("noisy_hist", leak=0.1), "does not take"),
        (lambda: flawed("noisy_hist").sample(np.zeros(3), 5, _rng()), "vector of 5"),
        (lambda: flawed("randomized_response").sample(np.array([2.0]), 5, _rng()), "category"),
        (lambda: flawed("noisy_hist").sample(np.zeros(5), -1, _rng()), "size"),
    ],
)
def test_bad_input_is_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ----------------------------------------------------------------------------- histograms


@pytest.mark.parametrize("name, scale", [("noisy_hist", 10.0), ("noisy_hist_wrong_scale", 0.1)])
def test_noisy_histograms_add_laplace_noise_of_the_stated_scale(name, scale):
    mech = flawed(name)
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    out = mech.sample(a, 20_000, _rng(1))
    for j in range(5):
        assert stats.kstest(out[:, j], stats.laplace(a[j], scale).cdf).pvalue > KS_LEVEL
    assert mech.epsilon_bounds() == (1 / scale, 1 / scale)


@pytest.mark.parametrize("name", ["prefix_sum", "noisy_prefix_sums"])
def test_prefix_sums(name):
    mech = flawed(name)
    a = np.arange(10.0)
    out = mech.sample(a, 20_000, _rng(2))
    noise = np.diff(out, axis=1, prepend=0.0) - a if name == "prefix_sum" else out - np.cumsum(a)
    for j in (0, 4, 9):
        assert stats.kstest(noise[:, j], stats.laplace(0, 10.0).cdf).pvalue > KS_LEVEL
    assert mech.true_epsilon == pytest.approx(0.1 if name == "prefix_sum" else 1.0)


# ----------------------------------------------------------------------------- noisy max


def test_report_noisy_max_index_probabilities_match_quadrature():
    mech = flawed("report_noisy_max")
    pair = mech.worst_case_pair()
    n = 200_000
    for a in (pair.d, pair.d_prime):
        counts = np.bincount(mech.sample(a, n, _rng(3)).astype(int), minlength=5)
        for i in range(5):
            others = [x for j, x in enumerate(a) if j != i]

            def g(x, top=a[i], others=others):
                return _pdf(x - top, 20.0) * np.prod([_cdf(x - o, 20.0) for o in others])

            p = _integrate(g, list(a), 20.0)
            assert _frequency_ok(counts[i], n, p)


def test_report_noisy_max_value_law_and_true_epsilon():
    mech = flawed("report_noisy_max_value")
    a = np.zeros(5)
    out = mech.sample(a, 20_000, _rng(4))
    assert stats.kstest(out, lambda y: _cdf(y, 20.0) ** 5).pvalue > KS_LEVEL
    # on {y < 0} the ratio of the densities of the maxima is exactly e^(k eps / 2)
    y = np.linspace(-50, -0.01, 7)

    def dens(y, loc):
        return 5 * _cdf(y - loc, 20.0) ** 4 * _pdf(y - loc, 20.0)

    np.testing.assert_allclose(np.log(dens(y, 0.0) / dens(y, 1.0)), 0.25, atol=1e-12)
    assert mech.true_epsilon == pytest.approx(0.25)


def test_report_noisy_max_exponential_value_has_disjoint_supports():
    mech = flawed("report_noisy_max_exponential_value")
    pair = mech.worst_case_pair()
    n = 200_000
    y0 = mech.sample(pair.d, n, _rng(5))
    y1 = mech.sample(pair.d_prime, n, _rng(6))
    assert (
        stats.kstest(y0[:20_000], lambda y: (1 - np.exp(-np.maximum(y - 1, 0) / 20)) ** 5).pvalue
        > KS_LEVEL
    )
    assert y1.min() >= 2.0  # impossible under D_prime: outputs in [1, 2)
    p = (1 - math.exp(-1 / 20)) ** 5
    assert _frequency_ok(int(((y0 >= 1) & (y0 < 2)).sum()), n, p)
    assert mech.true_epsilon == math.inf


# ----------------------------------------------------------------------------- sparse vector


@pytest.mark.parametrize("name", ["svt", "svt_lee_clifton", "svt_outputs_noisy_value"])
def test_sparse_vector_patterns_match_quadrature(name):
    mech = flawed(name)
    pair = mech.worst_case_pair()
    rho_b = 1 / mech.eps1
    nu_b = {"svt": 2 * mech.c / mech.eps2, "svt_lee_clifton": 1 / mech.eps2}.get(
        name, mech.c / mech.eps2
    )
    n = 100_000
    for a in (pair.d, pair.d_prime):
        codes = mech.sample(a, n, _rng(7))[:, :10]
        for j in (1, 2, 6, 11):
            target = _codes_pattern(j, 10)
            count = int((codes == target).all(axis=1).sum())
            bits = ([0] * (j - 1) + [1]) if j <= 10 else [0] * 10
            assert _frequency_ok(
                count, n, _pattern_probability(bits, a, mech.threshold, rho_b, nu_b)
            )


def test_sparse_vector_outputs_noisy_value_releases_values_where_above():
    mech = flawed("svt_outputs_noisy_value")
    out = mech.sample(mech.worst_case_pair().d, 5000, _rng(8))
    codes, values = out[:, :10], out[:, 10:]
    assert np.all(values[codes != 1] == 0.0)
    assert np.all(values[codes == 1] >= -200)  # noisy answers, finite


def test_documented_lower_bounds_are_reproduced_by_quadrature():
    # svt_lee_clifton: "first above at query 6" on the default pair
    m = flawed("svt_lee_clifton")
    d, dp = m.worst_case_pair().d, m.worst_case_pair().d_prime
    bits = [0] * 5 + [1]
    p = _pattern_probability(bits, d, 1.0, 1 / m.eps1, 1 / m.eps2)
    q = _pattern_probability(bits, dp, 1.0, 1 / m.eps1, 1 / m.eps2)
    assert m.epsilon_bounds()[0] <= math.log(p / q) <= m.epsilon_bounds()[1]
    assert math.log(p / q) == pytest.approx(0.17247, abs=1e-4)
    # svt_no_cutoff: all 2^10 patterns at once by composite Gauss-Legendre quadrature over rho
    # (panels split at the kinks -1 and 0); the largest ratio, "first half below, second half
    # above", is checked again with adaptive quadrature.
    m = flawed("svt_no_cutoff")
    d, dp = m.worst_case_pair().d, m.worst_case_pair().d_prime
    nodes, weights = np.polynomial.legendre.leggauss(40)
    breaks = np.concatenate([np.linspace(-1500, -1, 301), np.linspace(0, 1500, 301)])
    lo, hi = breaks[:-1], breaks[1:]
    r = (0.5 * (hi - lo)[:, None] * nodes + 0.5 * (hi + lo)[:, None]).ravel()
    w = (0.5 * (hi - lo)[:, None] * weights).ravel() * _pdf(r, 20.0)
    bits = np.array(list(itertools.product([0, 1], repeat=10)), dtype=bool)

    def probabilities(a):
        below = _cdf(r[None, :] + 1.0 - np.asarray(a)[:, None], 20.0)  # (10, nodes)
        factors = np.where(bits[:, :, None], 1.0 - below[None], below[None])
        return np.prod(factors, axis=1) @ w

    p, q = probabilities(d), probabilities(dp)
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    ratios = np.abs(np.log(p / q))
    best = int(np.argmax(ratios))
    assert list(bits[best]) == [False] * 5 + [True] * 5
    assert ratios[best] == pytest.approx(0.41448, abs=1e-4)
    exact = math.log(
        _pattern_probability(bits[best], d, 1.0, 20.0, 20.0)
        / _pattern_probability(bits[best], dp, 1.0, 20.0, 20.0)
    )
    assert abs(exact) == pytest.approx(ratios[best], abs=1e-9)
    assert m.epsilon_bounds()[0] <= ratios[best] <= m.epsilon_bounds()[1]
    # svt_outputs_noisy_value: density of "first above at query 6 with value z = 1"
    m = flawed("svt_outputs_noisy_value")
    pair = m.worst_case_pair()

    def density(a, z=1.0):
        def g(r):
            return _pdf(r, 20.0) * np.prod([_cdf(r + 1.0 - ai, 20.0) for ai in a[:5]])

        inner = sum(
            integrate.quad(g, lo, hi, epsabs=0, epsrel=1e-12)[0]
            for lo, hi in [(-2000.0, -1.0), (-1.0, 0.0)]
        )
        return _pdf(z - a[5], 20.0) * inner

    assert math.log(density(pair.d) / density(pair.d_prime)) == pytest.approx(0.3, abs=1e-9)
    assert m.epsilon_bounds()[0] == pytest.approx(0.3)


def test_sparse_vector_without_threshold_noise_closed_form():
    mech = flawed("svt_no_threshold_noise")
    pair = mech.worst_case_pair()
    n = 200_000
    b = 2 * mech.c / mech.eps  # 20
    for a, x in ((pair.d, 0.0), (pair.d_prime, -1.0)):
        codes = mech.sample(a, n, _rng(9))
        below = float(_cdf(np.array(x), b))
        for j in (1, 3, 11):
            count = int((codes == _codes_pattern(j, 10)).all(axis=1).sum())
            p = below**10 if j == 11 else below ** (j - 1) * (1 - below)
            assert _frequency_ok(count, n, p)
    # "all below": ratio e^(k/b) exactly
    assert math.log((0.5**10) / float(_cdf(np.array(-1.0), b)) ** 10) == pytest.approx(
        mech.true_epsilon
    )


def test_sparse_vector_threshold_noise_only_has_impossible_patterns():
    mech = flawed("svt_threshold_noise_only")
    pair = mech.worst_case_pair()
    n = 200_000
    split = [1] * 5 + [0] * 5
    c0 = mech.sample(pair.d, n, _rng(10))
    c1 = mech.sample(pair.d_prime, n, _rng(11))
    assert not (c1 == split).all(axis=1).any()
    # under d the split appears iff 0 < t + rho <= 2, i.e. -1 < rho <= 1, rho ~ Lap(20)
    p = float(_cdf(np.array(1.0), 20.0) - _cdf(np.array(-1.0), 20.0))
    assert _frequency_ok(int((c0 == split).all(axis=1).sum()), n, p)


def test_dwork_roth_sparse_vector_structure():
    mech = flawed("svt_dwork_roth")
    codes = mech.sample(mech.worst_case_pair().d, 20_000, _rng(12))
    ones = (codes == 1).sum(axis=1)
    assert ones.max() <= mech.c
    # after the c-th "above" every later answer is aborted
    done = np.cumsum(codes == 1, axis=1) >= mech.c
    later = np.roll(done, 1, axis=1)
    later[:, 0] = False
    assert np.all(codes[later] == -1)


@pytest.mark.parametrize("name", ["svt", "svt_lee_clifton", "svt_no_cutoff", "svt_dwork_roth"])
def test_sparse_vector_answer_pattern_is_one_category_per_pattern(name):
    mech = flawed(name)
    pair = mech.worst_case_pair()
    codes = mech.sample(pair.d, 20_000, _rng(21))
    pattern = mech.features(pair)(codes)
    assert pattern.shape == (codes.shape[0],)
    # equal patterns give equal categories and distinct ones distinct categories
    _, by_row = np.unique(codes, axis=0, return_inverse=True)
    _, by_pattern = np.unique(pattern, return_inverse=True)
    pairs = np.unique(np.c_[by_row.ravel(), by_pattern.ravel()], axis=0)
    assert len(pairs) == by_row.max() + 1 == by_pattern.max() + 1 > 1


def test_sparse_vector_with_noisy_values_has_no_pattern_statistic():
    mech = flawed("svt_outputs_noisy_value")
    assert mech.features(mech.worst_case_pair()) is None


# ----------------------------------------------------------------------------- Laplace variants


def test_laplace_float_samples_laplace_and_its_support_test_is_exact_on_own_outputs():
    mech = flawed("laplace_float")
    pair = mech.worst_case_pair()
    y0 = mech.sample(pair.d, 100_000, _rng(13))
    y1 = mech.sample(pair.d_prime, 100_000, _rng(14))
    assert stats.kstest(y0, stats.laplace(0, 10).cdf).pvalue > KS_LEVEL
    assert mech.in_support(0.0, y0).all() and mech.in_support(1.0, y1).all()
    unproducible = 1.0 - mech.in_support(0.0, y1).mean()
    assert unproducible > 0.5  # observed 0.81
    feature = mech.features(pair)(y1)
    assert set(np.unique(feature)) <= {0.0, 1.0}
    assert set(np.unique(mech.features(pair)(y0))) <= {-1.0, 0.0}


def test_laplace_skipped_noise_atom_frequency():
    mech = flawed("laplace_skipped_noise", leak=0.01)
    n = 200_000
    y = mech.sample(np.array([3.0]), n, _rng(15))
    assert _frequency_ok(int((y == 3.0).sum()), n, 0.01)


def test_randomized_response_variants():
    n = 200_000
    rr = flawed("randomized_response", eps=1.0)
    keep = math.e / (1 + math.e)
    assert _frequency_ok(int((rr.sample(np.array([1.0]), n, _rng(16)) == 1).sum()), n, keep)
    bad = flawed("randomized_response_binary_formula", eps=1.0, m=4)
    out = bad.sample(np.array([0.0]), n, _rng(17))
    assert _frequency_ok(int((out == 0).sum()), n, keep)
    assert _frequency_ok(int((out == 2).sum()), n, (1 - keep) / 3)
    assert bad.true_epsilon == pytest.approx(math.log(keep / ((1 - keep) / 3)))


# ----------------------------------------------------------------------------- bounded float sums


def test_bounded_float_sum_moves_sixteen_widths_on_its_pair_in_any_float_loop():
    from fractions import Fraction

    mech = flawed("bounded_float_sum")
    pair = mech.worst_case_pair()
    width = mech.high - mech.low
    assert width == 2.0**-50 and Fraction(mech.high) - Fraction(mech.low) == Fraction(2) ** -50

    def loop(records):  # Python floats, one rounded addition at a time
        total = 0.0
        for x in records:
            total += float(x)
        return total

    exact = [sum(map(Fraction, map(float, x)), Fraction(0)) for x in (pair.d, pair.d_prime)]
    assert exact[1] - exact[0] == Fraction(width)  # exact sums: one width apart
    moved = loop(pair.d_prime) - loop(pair.d)
    assert moved == 16 * width  # float sums: sixteen
    assert mech.pair_epsilon(pair) == pytest.approx(16 * mech.eps, rel=1e-12)
    swapped = type(pair)(pair.d_prime, pair.d, pair.relation, pair.description)
    assert mech.pair_epsilon(swapped) == mech.pair_epsilon(pair)
    lower, upper = mech.epsilon_bounds()
    assert lower == pytest.approx(1.6, rel=1e-12) and not mech.correct
    # Higham's recursive-summation bound, 2 gamma_99 * 100 * 1.1, written out by hand
    u = 2.0**-53
    allowance = 2 * (99 * u / (1 - 99 * u)) * 100 * mech.high
    assert upper == pytest.approx(mech.eps * (width + allowance) / width, rel=1e-12)


def test_the_rounding_allowance_covers_every_replacement_tried():
    from dpaudit.mechanisms.flawed.bounded_sums import float_sum, rounding_allowance

    # Random datasets of 100 records in [1.1, 1.1 + 2^-50] and random replacements: the float
    # sums never move by more than the width plus the allowance (the largest seen is 16 widths).
    rng = _rng(40)
    low, high = 1.1, 1.1 + 2.0**-50
    bound = (high - low) + rounding_allowance(100, low, high)
    largest = 0.0
    for _ in range(2000):
        d = np.where(rng.random(100) < 0.5, low, high)
        d_prime = d.copy()
        d_prime[rng.integers(100)] = low if rng.random() < 0.5 else high
        largest = max(largest, abs(float_sum(d_prime) - float_sum(d)))
    assert 0 < largest <= bound


@pytest.mark.parametrize("name", ["bounded_float_sum", "bounded_float_sum_padded"])
def test_bounded_float_sums_add_laplace_noise_of_their_scale(name):
    from dpaudit.mechanisms.flawed.bounded_sums import float_sum

    mech = flawed(name)
    d = mech.worst_case_pair().d
    out = mech.sample(d, 20_000, _rng(41))
    centre = float_sum(d) - mech.k * mech.low
    assert stats.kstest(out - centre, stats.laplace(0, mech.scale).cdf).pvalue > KS_LEVEL


def test_the_padded_bounded_float_sum_is_correct_and_bad_bounds_are_refused():
    mech = flawed("bounded_float_sum_padded")
    lower, upper = mech.epsilon_bounds()
    assert mech.correct and lower < upper == mech.eps
    with pytest.raises(ValueError, match="need finite low < high"):
        flawed("bounded_float_sum", low=1.0, high=1.0)
    with pytest.raises(ValueError, match=r"records in \[low, high\]"):
        flawed("bounded_float_sum", k=2).sample(np.array([1.1, 5.0]), 3, _rng())


# ----------------------------------------------------------------------------- audits


def test_benchmark_flags_broken_mechanisms_and_spares_correct_ones():
    names = [
        "noisy_hist",
        "noisy_hist_wrong_scale",
        "randomized_response",
        "randomized_response_binary_formula",
        "report_noisy_max_exponential_value",
        "svt_threshold_noise_only",
        "laplace_float",
        "laplace_skipped_noise",
        "bounded_float_sum",
        "bounded_float_sum_padded",
    ]
    frame = run_benchmark(
        200_000,
        names=names,
        train_trials=2**14,
        trials_for={"noisy_hist_wrong_scale": 1_000_000},
    )
    assert list(frame["name"]) == names
    assert (frame["flagged"] == ~frame["correct"]).all()
    # every certified bound lies below the proven upper bound on the true eps
    assert (frame["certified"] <= frame["true_upper"] + 1e-9).all()
    # the eps = 10 leak is certified far beyond log(0.99/0.01) = 4.6
    row = frame.set_index("name").loc["noisy_hist_wrong_scale"]
    assert 4.6 < row["certified"] <= 10.0


@pytest.mark.slow
def test_full_benchmark_verdicts():
    frame = run_benchmark(1_000_000, n_jobs=2, trials_for={"svt_outputs_noisy_value": 4_000_000})
    assert (frame["flagged"] == ~frame["correct"]).all()
    assert (frame["certified"] <= frame["true_upper"] + 1e-9).all()


def test_the_catalogue_is_split_by_family_and_exported_from_the_package():
    import importlib

    import dpaudit.mechanisms.flawed as package

    families = {cls.__module__ for cls in FLAWED.values()}
    assert "dpaudit.mechanisms.flawed" not in families
    assert "dpaudit.mechanisms.flawed.base" not in families
    for name in package.__all__:
        obj = getattr(package, name)
        home = getattr(obj, "__module__", None)
        if home is not None and home != package.__name__:
            assert getattr(importlib.import_module(home), name) is obj
    assert {cls.__name__ for cls in FLAWED.values()} <= set(package.__all__)
