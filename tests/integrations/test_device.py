"""Audits on a PyTorch device (``device="cpu"`` here; CUDA runs the same code on another device).

Checks on torch's CPU device: reproducibility (same seed, same counts; any batch size, same
counts), the law of the device samplers against exact probabilities, the device twins against
their numpy methods, the float64 normal tails, agreement of the bounds with the numpy engine,
coverage of the bounds, specs and the command line, and the refusal of what has no device path.
Every statistical check states its false-failure probability; all seeds are fixed. The choice of
a device and its seeds, which need no torch, are tested in tests/audit/test_device_choice.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

import dpaudit
from dpaudit.attacks import LikelihoodRatio, Threshold
from dpaudit.audit.confidence import clopper_pearson_lower, clopper_pearson_upper
from dpaudit.audit.grid import ScoreGrid
from dpaudit.mechanisms import (
    BlackBox,
    FixedSizeSubsampled,
    Gaussian,
    Laplace,
    PoissonSubsampled,
    RandomizedResponse,
)
from tests.audit.test_device_choice import GAUSSIAN, SPEC

torch = pytest.importorskip("torch", reason="the device path needs PyTorch (the torch extra)")

import dpaudit.audit.device as device_module  # noqa: E402
from dpaudit._core.device import torch_generators  # noqa: E402


def _counts(result):
    return result.counts, result.selection_counts


def test_same_seed_same_counts_and_batch_size_changes_nothing(monkeypatch):
    mechanism = Laplace(1.0)
    kwargs = dict(trials=20_000, selection_trials=12_000, chunk_size=1000, seed=3, device="cpu")
    runs = []
    for values in (1000, 7000, 2**23):  # one chunk per batch, seven, everything in one
        monkeypatch.setattr(device_module, "CPU_BATCH_VALUES", values)
        runs.append(_counts(dpaudit.audit_mechanism(mechanism, **kwargs)))
    for counts, selection in runs[1:]:
        np.testing.assert_array_equal(counts, runs[0][0])
        np.testing.assert_array_equal(selection, runs[0][1])
    other = dpaudit.audit_mechanism(mechanism, **{**kwargs, "seed": 4})
    assert not np.array_equal(other.counts, runs[0][0])
    assert runs[0][0].sum() == 2 * 20_000 and runs[0][1].sum() == 2 * 12_000


def test_result_records_the_device():
    result = dpaudit.audit_mechanism(RandomizedResponse(1.0, k=3), trials=5000, device="cpu")
    assert result.metadata["random"]["device"] == "cpu"
    assert result.metadata["random"]["bit_generator"] == "torch Mersenne Twister"
    assert "torch" in result.metadata["versions"]
    assert result.chunk_size == device_module.default_chunk_size(1)


# Law of the samplers: counts at fixed thresholds against exact probabilities. Each count is
# Binomial(n, p); a two-sided exact binomial test at level 1e-7 per count, at most 20 counts per
# case and 6 cases: the file's false-failure probability from this test is below 2e-5.
P_LAW = 1e-7
N_LAW = 200_000


def _laplace_sf(t):
    return np.where(t >= 0, 0.5 * np.exp(-np.abs(t)), 1 - 0.5 * np.exp(-np.abs(t)))


def _rr_keep(eps, k):
    return np.exp(eps) / (np.exp(eps) + k - 1)


LAW_CASES = {
    # name: (mechanism, thresholds, P(y > t | D), P(y <= t | D_prime))
    "gaussian": (
        Gaussian(1.0),
        np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]),
        lambda t: stats.norm.sf(t),
        lambda t: stats.norm.cdf(t - 1.0),
    ),
    "gaussian_sigma": (
        Gaussian(2.5, sensitivity=0.5),
        np.array([-3.0, 0.0, 2.0, 6.0]),
        lambda t: stats.norm.sf(t / 2.5),
        lambda t: stats.norm.cdf((t - 0.5) / 2.5),
    ),
    "laplace": (
        Laplace(0.7),
        np.array([-1.0, 0.0, 0.5, 1.0, 3.0, 6.0]),
        lambda t: _laplace_sf(t / 0.7),
        lambda t: 1 - _laplace_sf((t - 1.0) / 0.7),
    ),
    "rr2": (
        RandomizedResponse(1.0),
        np.array([0.5]),
        lambda t: np.full_like(t, 1 - _rr_keep(1.0, 2)),
        lambda t: np.full_like(t, 1 - _rr_keep(1.0, 2)),
    ),
    "rr3": (
        RandomizedResponse(0.5, k=3),
        np.array([0.5, 1.5]),
        lambda t: np.array([1 - _rr_keep(0.5, 3), (1 - _rr_keep(0.5, 3)) / 2]),
        lambda t: np.array(
            [(1 - _rr_keep(0.5, 3)) / 2, _rr_keep(0.5, 3) + 0.5 * (1 - _rr_keep(0.5, 3))]
        ),
    ),
}


LAW_CASES["poisson_gaussian"] = (
    PoissonSubsampled(Gaussian(1.0), rate=0.3),
    np.array([-1.0, 0.0, 1.0, 2.5]),
    lambda t: stats.norm.sf(t),
    lambda t: 0.7 * stats.norm.cdf(t) + 0.3 * stats.norm.cdf(t - 1.0),
)


@pytest.mark.parametrize("case", sorted(LAW_CASES))
def test_device_samplers_have_the_exact_law(case):
    mechanism, thresholds, fp, fn = LAW_CASES[case]
    result = dpaudit.audit_mechanism(
        mechanism,
        attack=Threshold(),
        trials=N_LAW,
        seed=11,
        strategy="fixed",
        threshold=thresholds,
        device="cpu",
    )
    expected = np.stack([fp(thresholds), fn(thresholds)])
    for observed, p in zip(result.fixed_counts.ravel(), expected.ravel(), strict=True):
        assert stats.binomtest(int(observed), N_LAW, float(p)).pvalue > P_LAW, (case, observed, p)


TWIN_CASES = {
    "gaussian": (Gaussian(1.3), None),
    "gaussian_vector": (Gaussian(0.8, sensitivity=2.0), np.array([[0.5, -1.0, 2.0], [3.0, 0, 1]])),
    "laplace": (Laplace(0.6), None),
    "laplace_vector": (Laplace(1.5), np.array([[0.2, -0.4], [1.0, 1.0]])),
    "rr3": (RandomizedResponse(0.7, k=3), None),
    "poisson_gaussian": (PoissonSubsampled(Gaussian(1.0), rate=0.2), np.array([0.5, 1.0, 1.0])),
    "poisson_laplace": (PoissonSubsampled(Laplace(1.0), rate=0.6), None),
}


@pytest.mark.parametrize("case", sorted(TWIN_CASES))
def test_device_twins_compute_what_numpy_computes(case):
    # The same outputs (drawn on the device) scored by the numpy methods and by their device
    # twins: the same log likelihood ratios to rounding, and the same bins on every kind of grid.
    mechanism, d_prime = TWIN_CASES[case]
    pair = mechanism.worst_case_pair()
    if d_prime is not None:
        pair = dpaudit.mechanisms.NeighbouringPair(d_prime[:-1], d_prime, "add_remove")
    generators = torch_generators(torch.device("cpu"), 1, "evaluation", range(2))
    outputs = mechanism.torch_sample(pair.d_prime, [3000, 2000], generators)
    attack = LikelihoodRatio(mechanism, pair)
    assert attack.runs_on_device()
    expected = attack.score(outputs.numpy())
    scores = attack.torch_score(outputs)
    np.testing.assert_allclose(scores.numpy(), expected, rtol=1e-12, atol=1e-12)
    for grid in (
        ScoreGrid.from_scores(expected[:500], bins=64),
        ScoreGrid.uniform(-1.0, 0.37, 9),
        ScoreGrid.uniform(-1.5, 1.0, 3, kind="lattice"),
        ScoreGrid("discrete", np.array([-0.5, 0.0, 0.25])),
    ):
        index, _ = grid.locate(expected)
        np.testing.assert_array_equal(grid.torch_locate(torch.as_tensor(expected)).numpy(), index)


def test_float64_normal_tails_follow_phi():
    # 2 * 10^7 standard normals from the Gaussian device sampler, in 5 chunks. Counts beyond
    # 4, 4.5 and 5 sigma (two-sided; about 1267, 136 and 11.5 expected) must lie inside their
    # two-sided Clopper-Pearson intervals at level 1e-6 each: false failure below 3e-6.
    n_chunks, size = 5, 4 * 10**6
    mechanism = Gaussian(1.0)
    generators = torch_generators(torch.device("cpu"), 5, "evaluation", range(n_chunks))
    z = mechanism.torch_sample(np.zeros(0), [size] * n_chunks, generators)
    assert z.dtype == torch.float64 and z.shape == (n_chunks * size,)
    n = z.numel()
    far = z.abs()
    for t in (4.0, 4.5, 5.0):
        k = int((far > t).sum())
        p = 2 * stats.norm.sf(t)
        lo = clopper_pearson_lower(k, n, 0.5e-6)
        hi = clopper_pearson_upper(k, n, 0.5e-6)
        assert lo <= p <= hi, (t, k, n * p)


def device_mu_bounds_agreeing_with_numpy(mechanism, trials: int) -> list[float]:
    """The mu lower bounds of 8 seeds on torch's CPU, after a two-sample t-test of equal means
    against numpy's 8 at level 1e-4 (the bounds are smooth functions of many counts, so their
    mean is close to normal at 8 seeds: false failure about 1e-4)."""
    bounds = {
        device: [
            dpaudit.audit_mechanism(
                mechanism, trials=trials, seed=seed, device=device
            ).mu_lower_bound()
            for seed in range(8)
        ]
        for device in (None, "cpu")
    }
    assert stats.ttest_ind(bounds[None], bounds["cpu"], equal_var=False).pvalue > 1e-4
    return bounds["cpu"]


def test_device_bounds_agree_with_numpy_in_law():
    # The mu lower bound of the Gaussian likelihood-ratio audit.
    bounds = device_mu_bounds_agreeing_with_numpy(Gaussian(1.0), 100_000)
    assert 0.8 < np.mean(bounds) <= 1.0


def test_device_bounds_cover_the_truth():
    # Gaussian(1): mu = 1 exactly. 30 audits on fixed seeds; valid 95% bounds exceed the truth
    # at most Binomial(30, 0.05) times, and 7 or more exceedances have probability 1.1e-3. The
    # bound must also be informative (mean above 0.9: about 0.97 at 50,000 trials).
    mechanism = Gaussian(1.0)
    bounds = np.array(
        [
            dpaudit.audit_mechanism(
                mechanism, trials=50_000, seed=seed, device="cpu"
            ).mu_lower_bound()
            for seed in range(30)
        ]
    )
    assert stats.binom.sf(6, 30, 0.05) < 1.2e-3
    assert (bounds > mechanism.mu).sum() <= 6
    assert bounds.mean() > 0.9


class _ShiftedGaussian(Gaussian):
    """Changes the numpy sampler without its device twin: must be refused, not run as its
    parent."""

    def sample(self, dataset, size, rng):
        return super().sample(dataset, size, rng) + 1.0


def _release(dataset, size, rng):
    return rng.normal(float(np.sum(dataset)), 1.0, size)


@pytest.mark.parametrize(
    ("mechanism", "kwargs", "message"),
    [
        (
            BlackBox(_release, dataset=np.zeros(0), neighbour=np.ones(1)),
            {},
            "mechanism BlackBox.* has no device sampler",
        ),
        (_ShiftedGaussian(1.0), {}, "mechanism _ShiftedGaussian.* has no device sampler"),
        (
            FixedSizeSubsampled(Gaussian(1.0), size=2, population=10),
            {},
            "mechanism FixedSizeSubsampled.* has no device sampler",
        ),
        (
            PoissonSubsampled(RandomizedResponse(1.0), rate=0.5),
            {},
            "mechanism PoissonSubsampled.* has no device sampler",
        ),
        (Gaussian(1.0), {"privacy_loss": True}, "does not keep privacy_loss=True"),
        (Gaussian(1.0), {"store": "somewhere"}, "does not keep store="),
        (Gaussian(1.0), {"n_jobs": 2}, "leave n_jobs=None"),
    ],
)
def test_what_has_no_device_path_is_refused(mechanism, kwargs, message):
    with pytest.raises(ValueError, match=f"^device='cpu'.*{message}"):
        dpaudit.audit_mechanism(mechanism, trials=1000, device="cpu", **kwargs)


def test_chunk_size_too_small_for_the_seeds_is_refused():
    with pytest.raises(ValueError, match="^chunk_size = 1 cuts 200,000,000 trials into more"):
        dpaudit.audit_mechanism(Gaussian(1.0), trials=2 * 10**8, chunk_size=1, device="cpu")


def test_attacks_without_device_score_are_refused():
    from dpaudit.attacks import Learned

    with pytest.raises(ValueError, match="^device='cpu': attack Learned.* has no device score"):
        dpaudit.audit_mechanism(Gaussian(1.0), attack=Learned(), trials=1000, device="cpu")

    class Plain(Gaussian):
        def log_density_ratio(self, d, d_prime, outputs):
            return super().log_density_ratio(d, d_prime, outputs)

    mechanism = Plain(1.0)
    with pytest.raises(ValueError, match="attack LikelihoodRatio on Plain.* has no device score"):
        dpaudit.audit_mechanism(
            mechanism, attack=LikelihoodRatio(mechanism), trials=1000, device="cpu"
        )


def test_missing_gpu_is_refused_naming_device():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="device='cuda' names a GPU this machine lacks"):
        dpaudit.audit_mechanism(Gaussian(1.0), trials=1000, device="cuda")


def test_command_line_device_reaches_the_results(tmp_path):
    from dpaudit.cli import main

    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(mechanism=GAUSSIAN, device='"cpu"'))
    assert main(["run", str(spec), "-o", str(tmp_path / "cpu"), "--quiet"]) == 0
    assert main(["run", str(spec), "-o", str(tmp_path / "np"), "--quiet", "--device", "numpy"]) == 0
    on_cpu, on_numpy = (
        json.loads((tmp_path / name / "results.json").read_text())["audits"][0]
        for name in ("cpu", "np")
    )
    assert on_cpu["random"]["device"] == "cpu"
    assert "device" not in on_numpy["random"]
    assert on_numpy["spec"]["device"] == "numpy"
