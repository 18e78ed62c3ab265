"""The verdict and the reported bounds are one family of tests (AuditResult.verdict)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import dpaudit as dpa
from dpaudit.audit.lower_bounds import epsilon_from_errors, mu_from_errors
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.bounds.rdp import ZCDP, ApproxZCDP
from dpaudit.bounds.tradeoff import PiecewiseLinearTradeoff, approx_dp
from dpaudit.mechanisms import Mechanism, NeighbouringPair
from dpaudit.mechanisms.flawed import flawed

DELTAS = (0.0, 1e-6, 1e-3)


def _audit(mechanism, seed, trials=3000, confidence=0.95):
    pair = mechanism.worst_case_pair()
    attack = dpa.attacks.LikelihoodRatio(mechanism, pair)
    return dpa.audit_mechanism(
        mechanism, pair, attack, trials=trials, seed=seed, confidence=confidence
    )


@pytest.mark.parametrize("seed", range(6))
def test_no_reported_bound_beyond_the_claim_beside_a_consistent_verdict(seed):
    """Property over seeds, mechanisms and claims near the truth: whenever a reported eps bound
    exceeds the claim's eps at its delta, or the mu bound a GDP claim's mu, the verdict is
    violated (deterministic: holds for every sample)."""
    mechanisms = [dpa.mechanisms.Laplace(1.0), dpa.mechanisms.Gaussian(1.0)]
    mechanisms.append(dpa.mechanisms.RandomizedResponse(1.0))
    checked = 0
    for mechanism in mechanisms:
        result = _audit(mechanism, seed)
        for eps in np.linspace(0.2, 2.0, 10):
            claims = [approx_dp(eps, 0.0), approx_dp(eps, 1e-3), gdp(eps)]
            for claim in claims:
                v = result.verdict(claim, DELTAS)
                beyond = any(v["epsilon_lower_bounds"][repr(d)] > claim.epsilon(d) for d in DELTAS)
                if isinstance(claim, type(gdp(1.0))):
                    beyond |= v["mu_lower_bound"] > claim.mu
                if beyond:
                    checked += 1
                    assert v["verdict"] == "violated", (mechanism.name, claim.name)
                    assert result.violates(claim, DELTAS) is not None
    assert checked > 0  # the property was exercised


def test_family_splits_the_confidence():
    result = _audit(dpa.mechanisms.Laplace(1.0), 0)
    v = result.verdict(approx_dp(1.0, 0.0), DELTAS)
    assert v["family"]["tests"] == len(DELTAS) + 2
    assert v["family"]["gamma_per_test"] == pytest.approx(0.05 / 5)
    # Each family bound is the single-test bound read at the split level.
    lone = result.epsilon_lower_bound(0.0)
    assert v["epsilon_lower_bounds"]["0.0"] <= lone
    assert result.verdict(None, DELTAS)["verdict"] is None


def _cp_upper(k, n: int, g: float) -> float:
    """Clopper-Pearson upper bound straight from scipy's beta quantile (1 at k = n)."""
    return 1.0 if k >= n else float(stats.beta.ppf(1 - g, k + 1, n - k))


def test_every_test_of_the_family_is_read_at_gamma_over_m():
    """The family's level, pinned on every member: each witness reports confidence
    1 - gamma/m and gamma/(2mJ) per bound (holdout, J thresholds; 10^4 selection trials keep no
    reserve), and its bounds are Clopper-Pearson bounds of the evaluation counts recomputed
    from scipy at that level. The claim is false, so the claim's own test is reported too.
    Reading the members at the full confidence passed the earlier tests (they only compare
    with the lone bound by <=)."""
    result = _audit(dpa.mechanisms.Laplace(1.0), 0)
    v = result.verdict(approx_dp(0.3, 0.0), DELTAS)
    m = len(DELTAS) + 2
    gamma_each = (1 - 0.95) / m
    assert v["family"]["tests"] == m
    assert v["family"]["gamma_per_test"] == pytest.approx(gamma_each, rel=1e-12)
    assert v["family"]["confidence_per_test"] == pytest.approx(1 - gamma_each, rel=1e-12)
    assert v["verdict"] == "violated" and v["witness"]["test"] == "claim"
    ev = result.tradeoff
    members = [*v["epsilon_witnesses"].values(), v["mu_witness"], v["witness"]]
    for w in members:
        assert w["confidence"] == pytest.approx(1 - gamma_each, rel=1e-12)
        assert w["strategy"] == "holdout" and w["candidates"] in (1, 2)
        g = gamma_each / (2 * w["candidates"])
        assert w["gamma_per_bound"] == pytest.approx(g, rel=1e-12)
        j = int(np.flatnonzero(result.edges == w["threshold"])[0])
        assert w["alpha_upper"] == pytest.approx(_cp_upper(ev.fp[j], ev.n_d, g), rel=1e-9)
        assert w["beta_upper"] == pytest.approx(_cp_upper(ev.fn[j], ev.n_d_prime, g), rel=1e-9)
    for d in DELTAS:
        w = v["epsilon_witnesses"][repr(d)]
        assert v["epsilon_lower_bounds"][repr(d)] == float(
            epsilon_from_errors(w["alpha_upper"], w["beta_upper"], d)
        )
    mu = v["mu_witness"]
    assert v["mu_lower_bound"] == float(mu_from_errors(mu["alpha_upper"], mu["beta_upper"]))


class _Coin(Mechanism):
    """One biased coin: heads with probability 0.1 on D and 0.5 on D_prime. Its trade-off
    curve T(D, D') has the vertex (0.1, 0.5) and the reverse T(D', D) the vertex (0.5, 0.1)."""

    def sample(self, dataset, size, rng):
        heads = 0.5 if len(dataset) else 0.1
        return (rng.random(size) < heads).astype(float)

    def worst_case_pair(self):
        return NeighbouringPair(np.zeros(0), np.array([1.0]))


def _half(x):
    return 0.5 * (1.0 - np.asarray(x, dtype=float))


def test_an_asymmetric_claim_is_refuted_in_the_reverse_order_only():
    """The claim f(alpha) = (1 - alpha)/2 is not symmetric (its inverse is 1 - 2 beta): the
    coin satisfies it in the order (D, D') (0.5 >= f(0.1) = 0.45) but not in the order
    (D', D) (0.1 < f(0.5) = 0.25). Its eps is infinite at every delta < 1/2 and it is no GDP
    claim, so only the margin in the reverse order can refute it. The verdict must say
    violated, by the claim's own test, in the order d_prime_d; on the swapped pair (tails
    pointing to D_prime) the same refutation appears in the order d_d_prime. Deterministic
    for this seed (refuting margins of about 0.12, the other order's below -0.06)."""
    claim = PiecewiseLinearTradeoff(np.array([0.0, 1.0]), np.array([0.5, 0.0]), name="half")
    x = np.array([0.1, 0.5])
    assert not np.allclose(claim(x), claim.inverse()(x))  # asymmetric
    assert all(np.isinf(claim.epsilon(d)) for d in DELTAS)
    coin = _Coin()
    pair = coin.worst_case_pair()
    # On the swapped pair tails point to D_prime: the test is "D_prime iff -output >= t".
    cases = (
        (pair, dpa.attacks.Threshold(), "d_prime_d"),
        (pair.swapped(), dpa.attacks.Threshold([-1.0]), "d_d_prime"),
    )
    for p, attack, order in cases:
        result = dpa.audit_mechanism(coin, p, attack, trials=5000, seed=0)
        v = result.verdict(claim, DELTAS)
        assert v["verdict"] == "violated" and "claim" in v["refuted_by"], order
        w = result.violates(claim, DELTAS)
        assert w is not None and w["order"] == order and w["test"] == "claim"
        a, b = w["alpha_upper"], w["beta_upper"]
        forward, reverse = float(_half(a) - b), float(_half(b) - a)
        refuting, other = (reverse, forward) if order == "d_prime_d" else (forward, reverse)
        assert refuting > 0.05 and other < 0.0, order
        assert w["margin"] == pytest.approx(refuting, rel=1e-12)
        claimed = _half(b) if order == "d_prime_d" else _half(a)
        assert w["claimed_beta"] == pytest.approx(float(claimed), rel=1e-12)


def test_verdict_false_alarm_rate_on_correct_claims_is_at_most_the_level():
    """Coverage: Laplace(scale 1) is exactly (1, 0)-DP; at confidence 0.8 (gamma = 0.2) the
    verdict may refute the true claim in at most a fraction gamma of independent audits. With
    80 audits the count is checked against the Binomial(80, 0.2) upper 0.999 quantile, so the
    test fails falsely with probability <= 1e-3 when the verdict is valid."""
    mechanism = dpa.mechanisms.Laplace(1.0)
    claim = approx_dp(1.0, 0.0)
    runs, gamma = 80, 0.2
    alarms = sum(
        _audit(mechanism, seed, trials=2000, confidence=1 - gamma).violates(claim, DELTAS)
        is not None
        for seed in range(runs)
    )
    assert alarms <= stats.binom.ppf(0.999, runs, gamma)


@pytest.mark.slow
def test_sparse_vector_from_dp_auditorium_is_violated_when_its_bound_exceeds_the_claim():
    """The reveal-records SVT (claim (1, 0)-DP, true eps up to 1.75) with the learned attack
    and 2e4 trials: its eps bound at delta = 0 exceeds 1 and the verdict says violated."""
    from dpaudit.attacks.learned import Learned

    mechanism = flawed("dpa_svt_reveal_records", 1.0)
    pair = mechanism.worst_case_pair()
    attack = Learned.for_mechanism(mechanism, pair, seed=0)
    result = dpa.audit_mechanism(mechanism, pair, attack, trials=20_000, seed=0)
    v = result.verdict(approx_dp(1.0, 0.0), (0.0,))
    assert result.epsilon_lower_bound(0.0) > 1.0
    assert v["epsilon_lower_bounds"]["0.0"] > 1.0
    assert v["verdict"] == "violated"


def test_claim_test_on_an_uninformative_threshold_cannot_hide_a_refuting_bound(monkeypatch):
    """The reported case: the claim's own test lands on an extreme threshold (alpha+ ~ 0.9998,
    margin slightly negative) while the eps witness certifies more than the claim. The verdict
    must follow the eps test (deterministic; the margin test alone says consistent here)."""
    mechanism = dpa.mechanisms.Laplace(0.8)  # exactly 1.25-DP
    result = _audit(mechanism, 0, trials=20_000)
    claim = approx_dp(1.0, 0.0)

    def uninformative(self, claim):
        return self._witness(lambda a, b: -np.abs(a - 0.9998))

    monkeypatch.setattr(type(result), "_margin_witness", uninformative)
    v = result.verdict(claim, (0.0,))
    assert v["epsilon_lower_bounds"]["0.0"] > 1.0
    assert "claim" not in v["refuted_by"]
    assert v["verdict"] == "violated" and "epsilon@0.0" in v["refuted_by"]
    assert v["witness"]["claimed_epsilon"] == pytest.approx(1.0)


def test_a_zcdp_claim_never_calls_a_correct_gaussian_violated():
    """A Gaussian with sigma is exactly 1/(2 sigma^2)-zCDP. Deterministically, the claim's curve
    lies below the Gaussian's exact curve and its eps at every delta above the exact one, so
    the verdict can only refute it when a confidence bound fails; over 4 seeds and two noise
    levels it never does. The twin (half the noise, four times the rho) is refuted every time,
    so the check has power: a verdict read off point estimates would also pass the first half,
    but not the deterministic part."""
    for sigma in (0.7, 2.0):
        mechanism = dpa.mechanisms.Gaussian(sigma)
        claim = ZCDP(0.5 / sigma**2)
        curve = claim.tradeoff()
        alpha = np.linspace(0.0, 1.0, 101)
        assert (curve(alpha) <= mechanism.tradeoff("exact")(alpha) + 1e-12).all()
        for d in DELTAS[1:]:
            assert curve.epsilon(d) >= mechanism.epsilon(d)
        for seed in range(4):
            assert _audit(mechanism, seed, trials=20_000).verdict(claim)["verdict"] == "consistent"
        loud = _audit(dpa.mechanisms.Gaussian(sigma / 2), 0, trials=20_000)
        assert loud.verdict(claim)["verdict"] == "violated"


def test_claims_in_other_forms_are_read_through_their_curve():
    result = _audit(dpa.mechanisms.Gaussian(1.0), 0)
    by_object = result.verdict(ZCDP(0.5), DELTAS)
    by_curve = result.verdict(ZCDP(0.5).tradeoff(), DELTAS)
    assert by_object["verdict"] == by_curve["verdict"] == "consistent"
    assert by_object["epsilon_lower_bounds"] == by_curve["epsilon_lower_bounds"]
    assert result.violates(ApproxZCDP(0.05, approx_delta=1e-6), DELTAS) is not None
    with pytest.raises(ValueError, match="claim"):
        result.verdict("0.5-zCDP", DELTAS)
