"""Auditing accountants: tilted samplers, delta(eps) intervals, coverage, detection power.

Every Monte Carlo test uses fixed seeds, so it is deterministic; the comments give the
probability that a correct implementation would fail it for a random seed.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

import dpaudit as dpa
from dpaudit.audit.accountant import (
    AccountantAudit,
    Claim,
    as_claim,
    audit_accountant,
)
from dpaudit.audit.importance import log_conversion_factor, loss_tilt
from dpaudit.bounds.composition import OptimalComposition
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.bounds.tradeoff import laplace_tradeoff as laplace_curve
from tests.reference import rows

M = dpa.mechanisms


def _orders(mechanism):
    pair = mechanism.worst_case_pair()
    return [(pair.d, pair.d_prime), (pair.d_prime, pair.d)]


# ------------------------------------------------------------------------------ tilted samplers
def _interpolated_cdf(grid, cdf):
    return lambda x: np.interp(x, grid, cdf)


ONE_D = [
    (M.Gaussian(1.3), 1.7),
    (M.Gaussian(0.5, sensitivity=2.0), 0.3),
    (M.Laplace(0.8), 0.9),
    (M.Laplace(0.8, sensitivity=2.0), 2.5),
]


@pytest.mark.parametrize(("mechanism", "lam"), ONE_D, ids=lambda x: getattr(x, "name", str(x)))
@pytest.mark.parametrize("order", [0, 1])
def test_tilt_normalizer_and_law_match_quadrature(mechanism, lam, order):
    """log Z = log of the integral of a^(1+lam) b^(-lam) (quadrature), and the samples follow
    that density (Kolmogorov-Smirnov; a correct sampler fails with probability 1e-3)."""
    a, b = _orders(mechanism)[order]
    tilt = loss_tilt(mechanism, a, b)
    log_z = float(tilt.log_normalizer(lam))

    def unnormalised(y: float) -> float:
        yy = np.array([y])
        la, lb = mechanism.log_density(a, yy)[0], mechanism.log_density(b, yy)[0]
        return math.exp((1 + lam) * la - lam * lb)

    kinks = [0.0, float(mechanism.sensitivity)]
    z = integrate.quad(unnormalised, -60, 60, points=kinks, limit=400, epsabs=0, epsrel=1e-11)[0]
    assert log_z == pytest.approx(math.log(z), abs=1e-9)

    grid = np.linspace(-40, 40, 160_001)
    dens = np.exp(
        (1 + lam) * mechanism.log_density(a, grid) - lam * mechanism.log_density(b, grid) - log_z
    )
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(grid))])
    y = tilt.sample(lam, 20_000, np.random.default_rng(11))
    assert stats.kstest(y, _interpolated_cdf(grid, cdf)).pvalue > 1e-3


@pytest.mark.parametrize(
    "mechanism",
    [M.PoissonSubsampled(M.Gaussian(1.0), 0.3), M.FixedSizeSubsampled(M.Gaussian(2.0), 3, 10)],
    ids=lambda m: m.name,
)
def test_subsampled_gaussian_tilt(mechanism):
    """Order D_prime || D has the binomial mixture tilt (integer orders): its normalizer is the
    integral of a^m b^(1-m) by quadrature, and its samples follow it (KS, false failure 1e-3).
    Order D || D_prime has none."""
    pair = mechanism.worst_case_pair()
    assert loss_tilt(mechanism, pair.d, pair.d_prime) is None
    a, b = pair.d_prime, pair.d
    tilt = loss_tilt(mechanism, a, b)
    assert tilt.integer_orders
    with pytest.raises(ValueError, match="integer"):
        tilt.sample(1.5, 3, np.random.default_rng(0))
    for lam in (1.0, 3.0):
        log_z = float(tilt.log_normalizer(lam))
        y0 = float(np.mean(mechanism.sample(b, 1000, np.random.default_rng(0))))

        def unnormalised(y: float, lam: float = lam) -> float:
            yy = np.array([y])
            la, lb = mechanism.log_density(a, yy)[0], mechanism.log_density(b, yy)[0]
            return math.exp((1 + lam) * la - lam * lb)

        z = integrate.quad(unnormalised, y0 - 80, y0 + 80, limit=400, epsrel=1e-11)[0]
        assert log_z == pytest.approx(math.log(z), abs=1e-8)
        grid = np.linspace(y0 - 60, y0 + 60, 200_001)
        dens = np.exp(
            (1 + lam) * mechanism.log_density(a, grid) - lam * mechanism.log_density(b, grid)
        ) / math.exp(log_z)
        cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(grid))])
        y = tilt.sample(lam, 20_000, np.random.default_rng(12))
        assert stats.kstest(y, _interpolated_cdf(grid, cdf)).pvalue > 1e-3


@pytest.mark.parametrize("k", [2, 4])
def test_randomized_response_tilt_is_exact(k):
    """Brute force over the k outcomes: tilted masses a^(1+lam) b^(-lam) / Z, and a chi-square
    test of 100 000 draws (false failure 1e-3)."""
    mechanism = M.RandomizedResponse(1.0, k=k)
    for a, b in _orders(mechanism):
        tilt = loss_tilt(mechanism, a, b)
        lam = 2.0
        cats = np.arange(k)[:, None]
        masses = np.exp(
            (1 + lam) * mechanism.log_density(a, cats) - lam * mechanism.log_density(b, cats)
        )
        assert float(tilt.log_normalizer(lam)) == pytest.approx(math.log(masses.sum()), abs=1e-12)
        y = tilt.sample(lam, 100_000, np.random.default_rng(k))[:, 0]
        observed = np.bincount(y, minlength=k)
        expected = masses / masses.sum() * y.size
        assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_composed_tilts_multiply_and_keep_the_layout():
    """log Z of T runs is T times one run's; a list adds its components'; samples have the
    shape mechanism.sample returns."""
    rng = np.random.default_rng(0)
    base = M.Gaussian(2.0)
    composed = M.Composed(base, 5)
    pair = composed.worst_case_pair()
    t1 = loss_tilt(base, pair.d, pair.d_prime)
    t5 = loss_tilt(composed, pair.d, pair.d_prime)
    assert float(t5.log_normalizer(0.7)) == pytest.approx(5 * float(t1.log_normalizer(0.7)))
    assert t5.sample(0.7, 3, rng).shape == composed.sample(pair.d, 3, rng).shape
    listed = M.Composed([M.Gaussian(2.0), M.Laplace(1.0)])
    tl = loss_tilt(listed, pair.d, pair.d_prime)
    parts = [loss_tilt(m, pair.d, pair.d_prime) for m in listed.components]
    assert float(tl.log_normalizer(0.4)) == pytest.approx(
        sum(float(p.log_normalizer(0.4)) for p in parts)
    )
    assert tl.sample(0.4, 3, rng).shape == listed.sample(pair.d, 3, rng).shape
    rr = M.Composed(M.RandomizedResponse(1.0), 4)
    prr = rr.worst_case_pair()
    assert loss_tilt(rr, prr.d, prr.d_prime).sample(1.0, 2, rng).shape == (2, 4, 1)
    no_tilt = M.Composed(M.PoissonSubsampled(M.Laplace(1.0), 0.5), 2)
    assert loss_tilt(no_tilt, pair.d, pair.d_prime) is None


def test_conversion_factor():
    """max over x > 0 of e^(-lam x)(1 - e^(-x)), by brute force on a fine grid."""
    x = np.linspace(1e-6, 30, 2_000_001)
    for lam in (0.1, 1.0, 7.5):
        best = np.max(np.exp(-lam * x) * (-np.expm1(-x)))
        assert float(np.exp(log_conversion_factor(lam))) == pytest.approx(best, rel=1e-9)
    assert float(log_conversion_factor(0.0)) == 0.0


# ------------------------------------------------------------------------------ estimates
def _reference_delta(item: str, setting: str) -> tuple[np.ndarray, np.ndarray]:
    rs = [r for r in rows(item=item, quantity="delta") if r["setting"] == setting]
    return np.array([r["query"] for r in rs]), np.array([r["value"] for r in rs])


@pytest.mark.parametrize(
    ("mechanism", "item", "setting"),
    [
        (M.Gaussian(2.0), "1", "sigma=2.0"),
        (M.Laplace(0.5), "2", "b=0.5"),
        (M.Composed(M.RandomizedResponse(0.5), 10), "3", "eps0=0.5,k=10"),
    ],
    ids=["gaussian", "laplace", "rr-x10"],
)
def test_intervals_contain_the_reference_values(mechanism, item, setting):
    """The simultaneous 95% intervals contain the exact delta(eps) of tests/reference (60-digit
    closed forms) at every eps (false failure at most 5%; fixed seed)."""
    eps, exact = _reference_delta(item, setting)
    assert eps.size >= 3
    result = audit_accountant(mechanism, gdp(1.0), trials=200_000, seed=5, epsilons=eps)
    grid = result.epsilons
    truth = np.interp(grid, eps, exact)
    assert np.all(result.delta.lower <= truth)
    assert np.all(truth <= result.delta.upper)
    # and the intervals are informative where delta is not tiny
    big = truth > 1e-2
    assert np.all(result.delta.upper[big] - result.delta.lower[big] < 0.05 * truth[big] + 2e-3)


REFERENCE_FAMILIES = [
    M.Gaussian(1.0),
    M.Laplace(1.0),
    M.RandomizedResponse(1.0),
    M.RandomizedResponse(0.7, k=3),
    M.Composed(M.Gaussian(3.0), 9),
    M.Composed(M.Laplace(4.0), 6),
    M.Composed(M.RandomizedResponse(0.5), 12),
    M.Composed([M.Gaussian(2.0), M.Laplace(2.0)]),
    M.PoissonSubsampled(M.Gaussian(0.8), 0.2),
    M.PoissonSubsampled(M.Laplace(0.5), 0.3),
    M.FixedSizeSubsampled(M.Gaussian(2.0), 20, 100),
    M.Composed(M.PoissonSubsampled(M.Gaussian(1.0), 0.1), 8),
]


@pytest.mark.parametrize("mechanism", REFERENCE_FAMILIES, ids=lambda m: m.name)
def test_own_pld_accountant_is_audited(mechanism):
    """dpaudit's PLD accountant on every reference mechanism family: its pessimistic delta is
    never below the 95% lower bound (consistent), and its optimistic delta is never above the
    upper bound (the bracket holds the truth). False failure at most 5% per family."""
    result = audit_accountant(mechanism, "dpaudit:pld", trials=60_000, seed=21)
    check = result.claims["dpaudit:pld"]
    assert check.status == "consistent", result.summary()
    pld = mechanism.theory("pld")
    assert np.all(pld.delta(result.epsilons, "lower") <= result.delta.upper)
    for order, weights in result.weight_check.items():
        if weights is not None:
            assert weights[1] <= 1.0 <= weights[2], order


def test_dpsgd_updates_are_audited_through_the_accountant():
    """DP-SGD observing its Dirac canary's updates: the privacy loss is its accountant's; no
    model is trained, and our PLD accountant is consistent with it."""
    from dpaudit.mechanisms.dpsgd import DPSGD

    mech = DPSGD(sigma=1.0, steps=6, rate=0.2, observe="updates", canary="dirac")
    result = audit_accountant(mech, "dpaudit:pld", trials=20_000, seed=2)
    assert result.claims["dpaudit:pld"].status == "consistent"
    exact = mech.accountant.delta(result.epsilons, "pld")
    assert np.all(result.delta.lower <= exact)


def test_events_staircase_stays_informative_near_ten_over_n():
    """Plain sampling at delta = 20/n: the empirical Bernstein bound is vacuous (its
    7 log(2/gamma)/(3n) term alone is of the size of delta) while the event staircase still gives
    a lower bound within a factor 5 of the truth."""
    trials = 100_000
    mech = M.Gaussian(1.0)
    eps = gdp(1.0).epsilon(20.0 / trials)
    result = audit_accountant(
        mech, gdp(1.0), trials=trials, seed=3, epsilons=[eps], importance=False
    )
    truth = float(gdp(1.0).delta(eps))
    per = result.estimators
    assert all(per[o]["plain_bernstein"][1][0] == 0.0 for o in per)
    best = max(per[o]["plain_events"][1][0] for o in per)
    assert truth / 5 < best <= truth


def test_importance_sampling_resolves_delta_far_below_one_over_n():
    """delta = 1e-9 with 10^6 samples per order: importance sampling brackets it within 10%;
    plain sampling cannot tell it from 0."""
    mech = M.Gaussian(1.0)
    eps = gdp(1.0).epsilon(1e-9)
    tilted = audit_accountant(mech, gdp(1.0), trials=10**6, seed=4, epsilons=[eps])
    assert tilted.delta.lower[0] > 0.9e-9 and tilted.delta.upper[0] < 1.1e-9
    assert tilted.delta.lower_source[0].startswith("importance_bernstein")
    plain = audit_accountant(mech, gdp(1.0), trials=10**6, seed=4, epsilons=[eps], importance=False)
    assert plain.delta.lower[0] == 0.0


# ------------------------------------------------------------------------------ detection
def _wrong_gaussian_claim(mechanism):
    """The exact delta(eps) the mechanism would have with sigma 10% larger."""
    if isinstance(mechanism, M.Gaussian):
        return M.Gaussian(1.1 * mechanism.sigma).theory("exact")
    if isinstance(mechanism, M.Composed):
        return M.Composed(_scaled(mechanism.base), mechanism.times).theory("pld")
    return _scaled(mechanism).theory("pld")


def _scaled(m):
    if isinstance(m, M.Gaussian):
        return M.Gaussian(1.1 * m.sigma, m.sensitivity)
    return M.PoissonSubsampled(_scaled(m.base), m.rate)


WRONG_TARGETS = [
    M.Gaussian(1.0),
    M.Composed(M.Gaussian(3.0), 9),
    M.PoissonSubsampled(M.Gaussian(0.8), 0.2),
]


@pytest.mark.parametrize("mechanism", WRONG_TARGETS, ids=lambda m: m.name)
def test_wrong_accountant_is_flagged(mechanism):
    """sigma understated by 10%: flagged at 95% with 10^6 samples per order; the correct
    accountant is not (false failure at most 5%)."""
    result = audit_accountant(
        mechanism,
        {"wrong": _wrong_gaussian_claim(mechanism), "right": "dpaudit:pld"},
        trials=10**6,
        seed=8,
    )
    assert result.claims["wrong"].is_violated
    assert result.claims["wrong"].to_dict()["min_p_value"] < 0.05
    assert result.claims["right"].status == "consistent"


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", WRONG_TARGETS, ids=lambda m: m.name)
def test_wrong_accountant_is_flagged_with_ten_million_samples(mechanism):
    """The acceptance setting: 10^7 privacy-loss samples per order, 95% confidence."""
    result = audit_accountant(
        mechanism,
        {"wrong": _wrong_gaussian_claim(mechanism), "right": "dpaudit:pld"},
        trials=10**7,
        seed=9,
        n_jobs=2,
    )
    assert result.claims["wrong"].is_violated
    assert result.claims["right"].status == "consistent"


@pytest.mark.slow
def test_two_fold_error_at_one_in_a_billion_with_ten_million_samples():
    """A claim half the true delta = 1e-9 is detected at 95% with 10^7 samples (importance
    sampling); the exact claim is not flagged."""
    mech = M.Gaussian(1.0)
    eps = gdp(1.0).epsilon(1e-9)
    exact = gdp(1.0)
    result = audit_accountant(
        mech,
        {"half": lambda e: exact.delta(e) / 2.0, "exact": exact},
        trials=10**7,
        seed=10,
        epsilons=[eps],
        n_jobs=2,
    )
    assert result.claims["half"].is_violated
    assert result.claims["exact"].status == "consistent"


def test_two_fold_error_at_one_in_a_billion_is_detected():
    """Same with 10^6 samples (the relative precision of the tilted estimator does not depend
    on delta, so 10^6 already suffice)."""
    mech = M.Gaussian(1.0)
    exact = gdp(1.0)
    eps = exact.epsilon(1e-9)
    result = audit_accountant(
        mech, {"half": lambda e: exact.delta(e) / 2.0}, trials=10**6, seed=10, epsilons=[eps]
    )
    check = result.claims["half"]
    assert check.is_violated and check.ratio[0] > 1.5


COVERAGE = [
    (M.Gaussian(1.0), gdp(1.0), 0.95),
    (M.Gaussian(1.0), gdp(1.0), 0.5),
    (M.Composed(M.RandomizedResponse(0.5), 10), OptimalComposition(0.5, 0.0, 10), 0.5),
    (M.Laplace(1.0), laplace_curve(1.0), 0.5),
]


@pytest.mark.parametrize(("mechanism", "exact", "confidence"), COVERAGE)
def test_coverage_of_the_simultaneous_intervals(mechanism, exact, confidence):
    """200 independent audits of the exact delta(eps) at small sample sizes: the intervals miss
    the truth somewhere on the grid (which includes every false flag of the exact claim) in at
    most a fraction 1 - confidence of them. One-sided binomial test: the test fails only if the
    count exceeds the 0.999 quantile of Binomial(200, 1 - confidence) (false failure <= 1e-3)."""
    runs = 200
    misses = flags = 0
    eps = np.array([exact.epsilon(d) for d in (0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3)])
    for seed in range(runs):
        result = audit_accountant(
            mechanism, exact, trials=3_000, seed=1000 + seed, confidence=confidence, epsilons=eps
        )
        truth = np.asarray(exact.delta(result.epsilons), dtype=float)
        tol = 1e-12
        miss = np.any(result.delta.lower > truth + tol) or np.any(result.delta.upper < truth - tol)
        misses += bool(miss)
        flags += next(iter(result.claims.values())).is_violated
    limit = stats.binom.ppf(0.999, runs, 1.0 - confidence)
    assert flags <= misses <= limit


# ------------------------------------------------------------------------------ reproducibility
def test_bit_identical_for_any_number_of_workers():
    mech = M.Composed(M.PoissonSubsampled(M.Gaussian(1.0), 0.3), 3)
    kwargs = {"trials": 40_000, "seed": 7, "chunk_size": 1024}
    one = audit_accountant(mech, "dpaudit:pld", n_jobs=1, **kwargs).to_dict()
    two = audit_accountant(mech, "dpaudit:pld", n_jobs=2, **kwargs).to_dict()
    for d in (one, two):
        d.pop("elapsed_seconds")
    assert one == two
    other = audit_accountant(mech, "dpaudit:pld", n_jobs=1, **{**kwargs, "seed": 8}).to_dict()
    assert other["delta"]["estimate"] != one["delta"]["estimate"]


def test_to_dict_is_json_and_frame_has_every_claim():
    result = audit_accountant(M.Gaussian(1.0), {"a": gdp(1.0), "b": gdp(0.5)}, trials=5_000, seed=0)
    text = json.dumps(result.to_dict(), allow_nan=False)
    back = json.loads(text)
    assert back["claims"]["b"]["status"] == "violated"
    assert back["delta"]["lower_source"][0]
    frame = result.to_frame()
    assert {"eps", "lower", "upper", "claim[a]", "violated[b]"} <= set(frame.columns)
    assert "VIOLATED" in result.summary() and isinstance(result, AccountantAudit)


def test_p_value_is_the_confidence_at_which_the_violation_appears():
    """At family-wise confidence just below 1 - p the lower bound is above the claim, just above
    it it is not (bisection is exact to a factor 1 + 1e-10 or so)."""
    exact = gdp(1.0)
    result = audit_accountant(
        M.Gaussian(1.0), lambda e: 0.9 * exact.delta(e), trials=20_000, seed=1
    )
    check = next(iter(result.claims.values()))
    i = check.worst
    p = float(check.p_value[i])
    assert 1e-8 < p < 0.05
    eps = result.epsilons
    assert result.lower_bound(np.full(eps.size, 1 - p * 1.01))[i] > check.claimed[i]
    assert result.lower_bound(np.full(eps.size, 1 - p * 0.99))[i] <= check.claimed[i]


# ------------------------------------------------------------------------------ claims and input
def test_claim_forms():
    exact = gdp(1.0)
    eps = np.array([0.5, 1.0, 2.0])
    assert as_claim(exact).delta(eps) == pytest.approx(exact.delta(eps))
    scalar_only = as_claim(lambda e: float(exact.delta(float(e))), name="scalar")
    assert scalar_only.delta(eps) == pytest.approx(exact.delta(eps))
    table = as_claim([(1.0, 0.2), (2.0, 0.01), (0.5, 0.3)])
    # (eps_i, delta_i)-DP implies delta(eps) <= min over eps_i <= eps of delta_i
    assert table.delta(np.array([0.2, 0.5, 1.5, 3.0])).tolist() == [1.0, 0.3, 0.2, 0.01]
    assert table.epsilon(0.2) == pytest.approx(1.0)
    claim = Claim(lambda e: np.full(e.shape, 0.1), name="flat")
    assert claim.epsilon(0.1) == 0.0 and claim.epsilon(0.05) == math.inf


def test_table_claim_sets_the_default_grid_and_bad_claims_are_errors():
    result = audit_accountant(M.Gaussian(1.0), [(1.0, 0.13), (2.0, 0.03)], trials=2_000, seed=0)
    assert result.epsilons.tolist() == [1.0, 2.0]
    bad = audit_accountant(
        M.Gaussian(1.0),
        {"nan": lambda e: np.full(np.shape(e), np.nan)},
        trials=2_000,
        epsilons=[1.0],
    )
    assert bad.claims["nan"].status == "error"
    assert "outside [0, 1]" in bad.claims["nan"].reason


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"trials": 1}, "trials"),
        ({"trials": 100, "confidence": 1.0}, "confidence"),
        ({"trials": 100, "epsilons": [-1.0]}, "epsilons"),
        ({"trials": 100, "epsilons": []}, "epsilons"),
        ({"trials": 100, "importance": "yes"}, "importance"),
        ({"trials": 100, "n_jobs": 0}, "n_jobs"),
        ({"trials": 100, "seed": -1}, "seed"),
        ({"trials": 100, "pair": (0, 1)}, "pair"),
    ],
)
def test_wrong_input_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        audit_accountant(M.Gaussian(1.0), gdp(1.0), **kwargs)


@pytest.mark.parametrize("wrap", [lambda m: m, lambda m: M.PoissonSubsampled(m, 0.2)])
def test_gaussians_of_extreme_sigma_are_audited_or_refused_in_one_line(wrap):
    # The tilts computed |v|^2 / (2 sigma^2): ZeroDivisionError at sigma = 1e-300 (sigma**2 is
    # 0.0) and OverflowError at 1e300, before the PLD could say what it cannot represent.
    with pytest.raises(ValueError, match=r"sensitivity/sigma must be at most 1e4"):
        audit_accountant(wrap(M.Gaussian(1e-300)), "dpaudit:pld", trials=200)
    result = audit_accountant(wrap(M.Gaussian(1e300)), "dpaudit:pld", trials=200)
    assert result.claims["dpaudit:pld"].status == "consistent"


def test_mechanisms_without_density_are_refused():
    from dpaudit.mechanisms.dpsgd import DPSGD

    with pytest.raises(ValueError, match="no log_density"):
        audit_accountant(DPSGD(sigma=1.0, steps=2, rate=0.1, canary="input"), gdp(1.0), trials=100)


def test_wrong_claims_and_missing_tilts_are_refused():
    with pytest.raises(ValueError, match="claimed"):
        audit_accountant(M.Gaussian(1.0), object(), trials=100)
    with pytest.raises(ValueError, match="delta in"):
        audit_accountant(M.Gaussian(1.0), [(1.0, 2.0)], trials=100)
    with pytest.raises(ValueError, match="accountant must be one of"):
        audit_accountant(M.Gaussian(1.0), "no_such:accountant", trials=100)
    with pytest.raises(ValueError, match="importance=True"):
        audit_accountant(
            M.PoissonSubsampled(M.Laplace(1.0), 0.5), gdp(1.0), trials=100, importance=True
        )


# ------------------------------------------------------------------------------ report
def test_report_directory_and_figure(tmp_path):
    from dpaudit.reports.accountants import (
        accountant_table,
        delta_table,
        plot_accountant_audit,
        write_accountant_report,
    )

    result = audit_accountant(
        M.Gaussian(1.0), {"right": gdp(1.0), "wrong": gdp(0.8)}, trials=5_000, seed=0
    )
    record = result.to_dict()
    record["name"] = "gaussian"
    verdicts = accountant_table(record)
    assert verdicts.set_index("accountant").loc["wrong", "verdict"] == "violated"
    assert verdicts.set_index("accountant").loc["right", "verdict"] == "consistent"
    assert len(delta_table(result)) == result.epsilons.size
    ax = plot_accountant_audit(record)
    assert ax.get_yscale() == "log"
    out = write_accountant_report([record], tmp_path / "report")
    names = {p.name for p in out.iterdir()}
    assert {"index.html", "README.md", "results.json", "figures"} <= names
    document = json.loads((out / "results.json").read_text())
    assert document["accountant_audits"][0]["claims"]["wrong"]["status"] == "violated"
    assert "wrong" in (out / "index.html").read_text()


# ------------------------------------------------------------------------------ printed results
def test_a_lower_bound_near_one_is_printed_rounded_down():
    """A lower bound of 0.99987 is printed as 0.9998, never as 0.9999 or 1."""
    result = audit_accountant(
        M.Gaussian(0.1), {"zero": lambda e: np.zeros_like(e)}, trials=100_000, epsilons=[0.0]
    )
    assert 0.99985 < result.delta.lower[0] < 0.9999  # 0.9999 to the nearest, 1 to three figures
    sentence = result.summary()
    assert "the true delta is at least 0.9998 " in sentence and "at least 1 " not in sentence
    assert "true delta >=" in str(result) and " 0.9998 " in str(result)


def test_a_refuted_claim_is_printed_below_the_bound_that_refutes_it():
    """A claim just below the lower bound: both get the digits that keep them apart, the claim
    rounded up and the bound rounded down."""
    result = audit_accountant(M.Gaussian(1.0), gdp(1.0), trials=20_000, seed=0, epsilons=[1.0])
    lower = float(result.delta.lower[0])
    claimed = lower * (1 - 3e-5)
    check = result.check(lambda e: np.full_like(e, claimed), name="close")
    assert check.is_violated
    sentence = result.summary()
    shown_claim = float(sentence.split("claims delta = ")[1].split(",")[0])
    shown_lower = float(sentence.split("at least ")[1].split(" ")[0])
    assert claimed <= shown_claim < shown_lower <= lower


def test_a_ratio_just_above_one_keeps_the_digits_that_show_it_and_a_zero_claim_reads_infinity():
    """A claim the bound exceeds by 0.04% reads "1.0004 times the claim", not "1 times"; in the
    report table a claim of 0 gives the ratio infinity (not a dash) and a p-value at the floor
    reads "< 1e-300"."""
    from dpaudit.audit.accountant.result import P_VALUE_FLOOR
    from dpaudit.reports.accountants import accountant_table
    from dpaudit.reports.tables import format_cell

    result = audit_accountant(M.Gaussian(1.0), gdp(1.0), trials=20_000, seed=0, epsilons=[1.0])
    lower = float(result.delta.lower[0])
    result.check(lambda e: np.full_like(e, lower / 1.0004), name="close")
    result.check(lambda e: np.zeros_like(e), name="zero")
    sentence = result.summary()
    close = next(line for line in sentence.splitlines() if line.startswith("close"))
    times = float(close.split("(")[1].split(" times")[0])
    assert 1.0 < times <= 1.0004
    table = accountant_table(result).set_index("accountant")
    assert table.loc["zero", "ratio"] == np.inf
    assert format_cell("ratio", table.loc["zero", "ratio"]) == "∞"
    assert format_cell("p-value", P_VALUE_FLOOR) == "< 1e-300"
    assert format_cell("p-value", 0.012345) == "0.01235"


def test_a_result_prints_as_a_table_and_its_parts_without_arrays():
    result = audit_accountant(
        M.Laplace(1.0),
        {"right": laplace_curve(1.0), "wrong": gdp(0.5), "unavailable": "opacus:rdp"},
        trials=5_000,
        seed=0,
        epsilons=[0.5, 1.0],
    )
    texts = [str(result), repr(result), repr(result.claims), repr(result.delta)]
    assert not any("array(" in t or "nan" in t for t in texts)
    lines = str(result).splitlines()
    assert lines[0] == "Accountant audit of Laplace(scale=1.0, sensitivity=1.0)"
    assert lines[1].startswith("5,000 privacy-loss samples per order, seed 0, ")
    header = ["eps", "true", "delta", ">=", "true", "delta", "<=", "right", "wrong"]
    assert lines[2].split() == header
    assert lines[3].split()[0] == "0.5" and "*" in lines[3] + lines[4]
    assert lines[-2].startswith("wrong: VIOLATED at eps = ")
    assert lines[-1].startswith("unavailable: ")  # not installed, or unsupported: no values
    wrong = result.claims["wrong"]
    assert repr(wrong) == f"<ClaimCheck wrong: violated at {wrong.violated.sum()} of 2 eps>"
    assert repr(result.claims["right"]) == "<ClaimCheck right: consistent>"
    assert repr(result.delta).startswith("<DeltaBounds at 2 eps: lower [")
