"""The engine: streams, determinism across workers and chunk order, counting, defaults, errors."""

from __future__ import annotations

import numpy as np
import pytest

import dpaudit
from dpaudit.attacks import Attack, LikelihoodRatio, Threshold
from dpaudit.audit import engine
from dpaudit.audit.engine import (
    PILOT_TRIALS,
    chunk_generator,
    default_bins,
    default_chunk_size,
)
from dpaudit.mechanisms import Gaussian, Mechanism, NeighbouringPair, RandomizedResponse


class NoDensityShift(Mechanism):
    """N(sum(dataset), 1) outputs (optionally repeated ``width`` times) without a density."""

    def __init__(self, width: int = 0) -> None:
        self.width = width

    def sample(self, dataset, size, rng):
        shape = (size,) if self.width == 0 else (size, self.width)
        return np.sum(dataset) + rng.normal(0.0, 1.0, shape)

    def worst_case_pair(self):
        return NeighbouringPair(np.zeros(0), np.array([1.0]))


class NanAttack(Attack):
    def score(self, outputs):
        out = np.asarray(outputs, dtype=float).copy()
        out[0] = np.nan
        return out


class SignLearner(Attack):
    """Learns which direction points to D_prime from the fit sample."""

    learns = True

    def __init__(self):
        self.sign = None
        self.fit_sizes = None

    def fit(self, outputs_d, outputs_d_prime):
        self.fit_sizes = (len(outputs_d), len(outputs_d_prime))
        self.sign = 1.0 if np.mean(outputs_d_prime) > np.mean(outputs_d) else -1.0
        return self

    def score(self, outputs):
        return self.sign * np.asarray(outputs, dtype=float)


def replay_counts(result, mechanism, attack, stream="evaluation", total=None, reverse=False):
    """Recount a stream chunk by chunk from its generators (brute force, any chunk order)."""
    total = result.trials if total is None else total
    counts = np.zeros((2, result.grid.n_bins), dtype=np.int64)
    scores = ([], [])
    chunks = list(range(-(-total // result.chunk_size)))
    for i in reversed(chunks) if reverse else chunks:
        size = min(result.chunk_size, total - i * result.chunk_size)
        rng = chunk_generator(result.seed, stream, i)
        for side, data in enumerate((result.pair.d, result.pair.d_prime)):
            s = attack.score(mechanism.sample(data, size, rng))
            scores[side].append(s)
            edges = result.grid.edges
            counts[side] += np.bincount(
                np.searchsorted(edges, s, side="right"), minlength=result.grid.n_bins
            )
    return counts, [np.concatenate(x) for x in scores]


def test_same_seed_is_bit_identical_for_one_and_two_workers():
    mech = Gaussian(1.0)
    kwargs = dict(
        trials=120_000, seed=7, chunk_size=2048, selection_trials=20_000, privacy_loss=True
    )
    one = dpaudit.audit_mechanism(mech, n_jobs=1, **kwargs)
    two = dpaudit.audit_mechanism(mech, n_jobs=2, **kwargs)
    np.testing.assert_array_equal(one.counts, two.counts)
    np.testing.assert_array_equal(one.selection_counts, two.selection_counts)
    for key, value in one.privacy_loss.to_dict().items():
        np.testing.assert_array_equal(value, two.privacy_loss.to_dict()[key])
    assert one.epsilon_lower_bound(1e-5) == two.epsilon_lower_bound(1e-5)
    assert one.mu_lower_bound() == two.mu_lower_bound()
    assert one.delta_estimate(1.0) == two.delta_estimate(1.0)
    other_seed = dpaudit.audit_mechanism(mech, n_jobs=1, **{**kwargs, "seed": 8})
    assert not np.array_equal(one.counts, other_seed.counts)


def test_counts_only_audits_are_cut_finer_and_count_the_same_for_any_workers():
    # Without privacy-loss sums the streams are cut into more batches (to feed many workers);
    # the pilot runs on the workers too. Integer counts do not depend on either.
    mech = Gaussian(1.0)
    kwargs = dict(trials=300_000, seed=9, chunk_size=1024, selection_trials=70_000)
    one = dpaudit.audit_mechanism(mech, n_jobs=1, **kwargs)
    two = dpaudit.audit_mechanism(mech, n_jobs=2, **kwargs)
    np.testing.assert_array_equal(one.grid.edges, two.grid.edges)
    np.testing.assert_array_equal(one.counts, two.counts)
    np.testing.assert_array_equal(one.selection_counts, two.selection_counts)


@pytest.mark.parametrize(
    ("total", "chunk", "values"),
    [(1, 64, 1), (10**6, 1024, 1), (10**8, 32768, 1), (10**9, 32768, 1), (10**5, 256, 100)],
)
def test_batches_tile_each_stream_within_their_bounds(total, chunk, values):
    n_chunks = -(-total // chunk)
    layouts = {fine: engine._batches("evaluation", total, chunk, values, fine) for fine in (0, 1)}
    for batches in layouts.values():
        sizes = [b[2] for b in batches]
        assert [b[1] for b in batches] == list(np.cumsum([0, *sizes[:-1]]))
        assert sum(sizes) == n_chunks and all(b[3] == total for b in batches)
        assert max(sizes) * chunk * values <= max(engine._BATCH_VALUES, chunk * values)
    coarse, fine = (layouts[k][0][2] for k in (0, 1))
    assert fine <= coarse
    if fine < coarse:  # cut finer, yet never below the smallest batch
        assert (fine + 1) * chunk * values > engine._FINE_BATCH_VALUES
    if fine * engine._FINE_BATCHES_PER_STREAM <= n_chunks:
        assert len(layouts[1]) >= engine._FINE_BATCHES_PER_STREAM


def test_pilot_scores_are_the_same_drawn_by_workers():
    mech = Gaussian(1.0)
    pair = mech.worst_case_pair()
    job = engine._Job(mech, pair, LikelihoodRatio(mech, pair), None, 4, 512, False, None, ())
    here, drawn, _ = engine._pilot(job, 5000, None, 1)
    there, drawn_there, seconds = engine._pilot(job, 5000, None, 2)
    np.testing.assert_array_equal(here, there)
    assert drawn == drawn_there == 5000 and seconds > 0


def test_counts_equal_a_replay_of_the_streams_in_any_chunk_order():
    mech = Gaussian(2.0)
    result = dpaudit.audit_mechanism(mech, trials=50_000, seed=3, chunk_size=4096, bins=512)
    attack = LikelihoodRatio(mech, result.pair)
    counts, _ = replay_counts(result, mech, attack, reverse=True)
    # Arithmetic binning may move a score lying on an edge (to rounding) by one bin.
    assert np.abs(counts - result.counts).sum() <= 2
    assert result.counts.sum(axis=1).tolist() == [50_000, 50_000]
    sel, _ = replay_counts(result, mech, attack, "selection", result.selection_trials)
    assert np.abs(sel - result.selection_counts).sum() <= 2


def test_fixed_thresholds_are_counted_exactly():
    mech = Gaussian(1.0)
    thresholds = [0.3, -0.2, 1.5]
    result = dpaudit.audit_mechanism(
        mech, trials=20_000, seed=1, strategy="fixed", threshold=thresholds, chunk_size=3000
    )
    _, (s0, s1) = replay_counts(result, mech, LikelihoodRatio(mech, result.pair))
    fp = [(s0 > t).sum() for t in thresholds]
    fn = [(s1 <= t).sum() for t in thresholds]
    assert result.fixed_counts[0].tolist() == fp
    assert result.fixed_counts[1].tolist() == fn
    witness = result.mu_witness()
    assert witness["threshold"] in thresholds and witness["candidates"] == 3
    assert witness["rule"] == "D_prime iff score > threshold"


def test_defaults_for_streams_grid_and_chunks():
    result = dpaudit.audit_mechanism(Gaussian(1.0), trials=1000, seed=0)
    # pilot + fit + training outputs are at most half of selection + evaluation (11,000)
    assert result.selection_trials == 10_000 and result.pilot_trials == 5500
    assert result.fit_trials == 0
    big = dpaudit.audit_mechanism(Gaussian(1.0), trials=400_000, seed=0)
    assert big.selection_trials == 100_000 and big.pilot_trials == PILOT_TRIALS
    assert default_bins(1000) == 2**10 and default_bins(10**6) == 2**14
    assert default_bins(10**9) == 2**14
    assert default_chunk_size(1) == 2**15 and default_chunk_size(1000) == 64
    assert default_chunk_size(10**7) == 64
    assert result.strategy == "holdout" and result.confidence == 0.95


def test_default_attack_is_the_likelihood_ratio_when_a_density_exists():
    result = dpaudit.audit_mechanism(RandomizedResponse(1.0), trials=2000, seed=0)
    assert result.metadata["attack"]["class"] == "LikelihoodRatio"
    assert result.metadata["attack"]["exact_privacy_loss"] is True
    assert result.grid.kind == "lattice"


def test_without_density_the_default_is_the_delta_leak_attack_for_any_output_shape():
    result = dpaudit.audit_mechanism(NoDensityShift(), trials=5000, seed=0)
    assert result.metadata["attack"]["class"] == "DeltaLeak"
    assert result.metadata["attack"]["default"] is True
    assert result.privacy_loss is None
    with pytest.raises(ValueError, match="privacy_loss=True"):
        result.delta_estimate(0.5)
    with pytest.raises(ValueError, match="privacy_loss=True needs .* exact privacy loss"):
        dpaudit.audit_mechanism(NoDensityShift(), trials=100, seed=0, privacy_loss=True)
    vector = dpaudit.audit_mechanism(NoDensityShift(width=3), trials=2000, seed=0)
    assert vector.attack.name.startswith("DeltaLeak(Learned(")
    explicit = dpaudit.audit_mechanism(
        NoDensityShift(width=3), attack=Threshold(0), trials=2000, seed=0
    )
    assert explicit.metadata["attack"]["name"] == "Threshold(projection=0)"


def test_likelihood_ratio_of_another_mechanism_is_not_an_exact_privacy_loss():
    audited = Gaussian(0.5)
    reference = Gaussian(1.0)
    result = dpaudit.audit_mechanism(
        audited, attack=LikelihoodRatio(reference), trials=2000, seed=0
    )
    assert result.privacy_loss is None
    with pytest.raises(ValueError, match="privacy_loss=True needs"):
        dpaudit.audit_mechanism(
            audited, attack=LikelihoodRatio(reference), trials=100, seed=0, privacy_loss=True
        )
    assert result.metadata["attack"]["exact_privacy_loss"] is False
    # The score is still a valid test: it orders outputs exactly like the optimal one.
    assert result.mu_lower_bound() > 0.5


def test_learning_attacks_fit_on_their_own_sample():
    attack = SignLearner()
    pair = NeighbouringPair(np.array([1.0]), np.zeros(0))  # D_prime has the smaller mean
    result = dpaudit.audit_mechanism(NoDensityShift(), pair, attack, trials=3000, seed=2)
    assert attack.sign == -1.0
    # half of the overhead budget 0.5 * (3000 + 10_000)
    assert attack.fit_sizes == (result.fit_trials, result.fit_trials) == (3250, 3250)
    assert result.mu_lower_bound() > 0.5


def test_nan_scores_are_refused():
    with pytest.raises(ValueError, match="NaN"):
        dpaudit.audit_mechanism(Gaussian(1.0), attack=NanAttack(), trials=100)


def test_progress_bar_goes_to_stderr(capsys):
    dpaudit.audit_mechanism(Gaussian(1.0), trials=2000, seed=0, progress=True)
    assert "trial" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(trials=0), "trials"),
        (dict(trials=10, confidence=1.0), "confidence"),
        (dict(trials=10, strategy="best"), "strategy"),
        (dict(trials=10, strategy="fixed"), "threshold="),
        (dict(trials=10, threshold=0.5), "threshold= is only used"),
        (dict(trials=10, strategy="fixed", threshold=[0.1, 0.1]), "repeat"),
        (dict(trials=10, strategy="fixed", threshold=[np.inf]), "threshold must be"),
        (dict(trials=10, n_jobs=0), "n_jobs"),
        (dict(trials=10, bins=1), "bins"),
        (dict(trials=10, seed=-1), "seed"),
        (dict(trials=10, chunk_size=0), "chunk_size"),
        (dict(trials=10, selection_trials=1), "selection_trials"),
        (dict(trials=10, progress="yes"), "progress"),
        (dict(trials=10, privacy_loss="yes"), "privacy_loss"),
    ],
)
def test_wrong_arguments_raise_naming_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dpaudit.audit_mechanism(Gaussian(1.0), **kwargs)


def test_wrong_pair_and_attack_types_raise():
    with pytest.raises(ValueError, match="pair must be a NeighbouringPair"):
        dpaudit.audit_mechanism(Gaussian(1.0), pair=(0, 1), trials=10)
    with pytest.raises(ValueError, match="attack must be a dpaudit Attack"):
        dpaudit.audit_mechanism(Gaussian(1.0), attack=lambda y: y, trials=10)


def test_audit_mechanism_is_the_engine_function_beside_its_subpackage():
    from dpaudit.audit.engine import audit_mechanism as engine_audit
    from dpaudit.audit.result import AuditResult

    assert dpaudit.audit_mechanism is dpaudit.audit.audit_mechanism is engine_audit
    assert dpaudit.AuditResult is AuditResult
    from dpaudit.audit import grid
    from dpaudit.audit.empirical import EmpiricalTradeoff

    assert grid.ScoreGrid.__name__ == "ScoreGrid"
    assert EmpiricalTradeoff.__module__ == "dpaudit.audit.empirical"


def test_pair_defaults_to_the_attacks_own_pair():
    mech = Gaussian(1.0)
    swapped = mech.worst_case_pair().swapped()
    attack = LikelihoodRatio(mech, swapped)
    result = dpaudit.audit_mechanism(mech, attack=attack, trials=2000, seed=0, privacy_loss=True)
    np.testing.assert_array_equal(result.pair.d, swapped.d)
    assert result.privacy_loss is not None
    default = dpaudit.audit_mechanism(mech, trials=2000, seed=0)
    assert default.pair.d.size == 0
    # The privacy-loss sums are kept only when asked for; the counts do not depend on it.
    assert default.privacy_loss is None
    assert default.metadata["attack"]["exact_privacy_loss"] is True
    with_sums = dpaudit.audit_mechanism(mech, trials=2000, seed=0, privacy_loss=True)
    np.testing.assert_array_equal(default.counts, with_sums.counts)


@pytest.mark.parametrize(
    "mechanism",
    [Gaussian(1e-3), Gaussian(1e3), RandomizedResponse(30.0), RandomizedResponse(1e-6)],
)
def test_extreme_parameters_give_finite_monotone_numbers(mechanism):
    result = dpaudit.audit_mechanism(mechanism, trials=5000, seed=0, privacy_loss=True)
    bounds = [result.mu_lower_bound(), result.epsilon_lower_bound(0.0)]
    bounds.append(result.epsilon_lower_bound(1e-5))
    assert all(np.isfinite(b) and b >= 0 for b in bounds)
    assert bounds[1] >= bounds[2]
    out = result.delta_estimate(np.array([0.0, 0.5, 1.0, 5.0, 50.0]))
    for key in ("lower", "upper"):
        assert np.all(np.isfinite(out[key])) and np.all(np.diff(out[key]) <= 1e-12)
    assert np.all(out["lower"] <= out["upper"])
    assert dpaudit.AuditResult.from_json(result.to_json()).mu_lower_bound() == bounds[0]


def test_a_single_trial_gives_trivial_but_valid_answers():
    result = dpaudit.audit_mechanism(Gaussian(1.0), trials=1, seed=0, privacy_loss=True)
    assert result.mu_lower_bound() == 0.0 and result.epsilon_lower_bound(0.0) == 0.0
    out = result.delta_estimate(0.5)
    assert out["lower"] == 0.0 and out["upper"] == 1.0


def test_stores_name_the_privacy_loss_sums_only_when_kept(tmp_path):
    """A default likelihood-ratio audit keeps the fingerprint it always had (the score is the
    exact privacy loss; no sums); with ``privacy_loss=True`` the store says so, and a rerun of
    each resumes to the identical result."""
    import json

    mech = Gaussian(1.0)
    plain = dpaudit.audit_mechanism(mech, trials=3000, seed=0, store=tmp_path / "plain")
    manifest = json.loads((tmp_path / "plain" / "manifest.json").read_text())
    assert manifest["attack"]["exact_privacy_loss"] is True
    assert "privacy_loss" not in manifest
    sums = dpaudit.audit_mechanism(
        mech, trials=3000, seed=0, store=tmp_path / "sums", privacy_loss=True
    )
    manifest = json.loads((tmp_path / "sums" / "manifest.json").read_text())
    assert manifest["privacy_loss"] is True
    again = dpaudit.audit_mechanism(mech, trials=3000, seed=0, store=tmp_path / "plain")
    np.testing.assert_array_equal(again.counts, plain.counts)
    np.testing.assert_array_equal(sums.counts, plain.counts)


def test_privacy_loss_without_an_exact_score_is_refused_before_any_fit():
    class NeverFitted(Threshold):
        learns = True

        def fit(self, y0, y1):
            raise AssertionError("fit must not run")

    with pytest.raises(ValueError, match="privacy_loss=True needs"):
        dpaudit.audit_mechanism(Gaussian(1.0), attack=NeverFitted(), trials=100, privacy_loss=True)


def test_a_long_fit_and_pilot_are_announced_before_the_progress_bar(monkeypatch, capsys):
    # The bar starts after the fit and the pilot; when the timing draws say these take at least
    # PRE_CHECK_SECONDS, one line says so first (here with the threshold lowered to any time).
    monkeypatch.setattr(engine, "PRE_CHECK_SECONDS", 1e-12)
    mechanism = Gaussian(sigma=1.0)
    dpaudit.audit_mechanism(mechanism, trials=1000, seed=0, progress=True)
    err = capsys.readouterr().err
    assert "trials per dataset to fit the attack and fix the grid first (about" in err
    assert err.index("fix the grid first") < err.index("selection + evaluation trials")
    dpaudit.audit_mechanism(mechanism, trials=1000, seed=0, progress=False)
    assert capsys.readouterr().err == ""
