"""DP-SGD reference trainings on a PyTorch device (``device="cpu"`` here; CUDA runs the same code).

Checks on torch's CPU device: the device training computes what numpy computes when nothing is
random (every record in every batch, negligible noise), its Poisson batches (read off Dirac
records with coefficients ``2^-(i+1)``, and the sampler alone with its refill path forced), the
law of its final models and its bounds against numpy's, the device twins of the density and of
the target's loss, reproducibility whatever the batch size, and the refusal of what has no
device path. Every
statistical check states its false-failure probability; all seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpaudit
from dpaudit.attacks import LikelihoodRatio, MembershipInference
from dpaudit.mechanisms import datasets as ds
from dpaudit.mechanisms import dpsgd as dpsgd_module
from dpaudit.mechanisms.dpsgd import DPSGD
from tests.integrations.test_device import device_mu_bounds_agreeing_with_numpy
from tests.mechanisms.test_dpsgd import (
    TINY,
    _coded_records,
    _decode,
    assert_independent_bernoulli_batches,
)

torch = pytest.importorskip("torch", reason="the device path needs PyTorch (the torch extra)")

import dpaudit.audit.device as device_module  # noqa: E402
from dpaudit._core.device import torch_generators  # noqa: E402
from dpaudit.mechanisms.dpsgd import _torch_poisson_batches  # noqa: E402

CPU = torch.device("cpu")
SMALL = ds.synthetic(n=50, dim=5, seed=1)


def _device_sample(mechanism, dataset, sizes, seed=1):
    generators = torch_generators(CPU, seed, "evaluation", range(len(sizes)))
    return mechanism.torch_sample(dataset, sizes, generators).numpy()


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_device_training_computes_what_numpy_computes(model):
    # Rate 1 (every record in every batch) and noise 1e-13: both trainings are deterministic up
    # to the noise, so the final models agree to rounding. The clipping norm is small enough
    # that most gradients are clipped, and the dataset holds the input canary and a Dirac
    # canary, so every branch of the gradient sums is exercised.
    mechanism = DPSGD(model, SMALL, sigma=TINY, rate=1.0, steps=6, clip=0.3, hidden=4)
    records = np.vstack([mechanism.worst_case_pair().d, mechanism.canary_record()])
    records[-1, -1] = 0.5
    records = np.vstack([records, ds.input_canary(SMALL)])
    expected = mechanism.sample(records, 3, np.random.default_rng(0))
    gradients = mechanism.gradients(mechanism.initial_params(), records, clipped=False)
    assert (np.linalg.norm(gradients[:-2], axis=1) > 0.3).mean() > 0.5
    out = _device_sample(mechanism, records, [2, 1])
    np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-11)


def test_device_training_inserts_the_canary_every_k_steps_from_the_worst_case_start():
    # Deterministic as above (every record in every batch, noise 1e-13): the Dirac canary's
    # gradient only at steps 0 and 3, every run from the pre-trained parameters, on both paths.
    mechanism = DPSGD(
        "logistic", SMALL, sigma=TINY, rate=1.0, steps=6, canary_every=3, init="worst_case"
    )
    records = np.vstack([SMALL.records(), mechanism.canary_record()])
    expected = mechanism.sample(records, 3, np.random.default_rng(0))
    np.testing.assert_allclose(_device_sample(mechanism, records, [2, 1]), expected, atol=1e-11)
    updates = DPSGD(sigma=TINY, rate=1.0, steps=6, canary_every=3, observe="updates")
    out = _device_sample(updates, updates.worst_case_pair().d_prime, [2])
    np.testing.assert_allclose(out, [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]] * 2, atol=1e-9)


def test_device_batches_are_independent_bernoulli():
    # The records held by each batch, decoded from the updates of 10 Dirac records: the same
    # checks as for numpy's batches (tests/mechanisms/test_dpsgd.py): each frequency and each
    # pair's joint frequency within 5.5 standard errors (55 checks) and a chi-square test of the
    # batch sizes at 1e-6: false failure below 1e-5.
    n, q = 10, 0.3
    mechanism = DPSGD(sigma=TINY, rate=q, steps=20, observe="updates")
    held = _decode(_device_sample(mechanism, _coded_records(n, 20), [1200, 800]), n)
    assert_independent_bernoulli_batches(held, q)


@pytest.mark.parametrize(("q", "width"), [(0.05, 1), (0.05, 20), (0.5, 3), (1.0, 2)])
def test_poisson_batches_are_sorted_distinct_and_binomial(q, width):
    # Widths far below the batch sizes force the refill path. Rows hold strictly increasing
    # record indices, then the padding n. Each record's frequency is within 5.5 standard errors
    # (30 records, 4 cases: false failure below 5e-6).
    n, shape = 30, (7, 3000)
    generator = torch.Generator(device=CPU)
    generator.manual_seed(5)
    batches = _torch_poisson_batches(generator, q, n, shape, width).numpy()
    assert batches.shape[:2] == shape and batches.dtype == np.int64
    held = batches < n
    assert np.all(held[..., :-1] >= held[..., 1:])  # records first, then the padding
    assert np.all(np.diff(batches, axis=-1)[held[..., 1:]] > 0)
    assert np.all(batches[~held] == n)
    assert held.sum(axis=-1).max() == batches.shape[-1]
    inclusion = np.zeros((*shape, n + 1), dtype=bool)
    np.put_along_axis(inclusion, batches, True, axis=-1)
    freq = inclusion[..., :n].reshape(-1, n).mean(axis=0)
    draws = shape[0] * shape[1]
    assert np.all(np.abs(freq - q) <= 5.5 * math.sqrt(q * (1 - q) / draws))


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_device_final_models_have_the_numpy_law(model):
    # Final models of the input-canary pair's D_prime, 6,000 runs per engine: two-sample
    # Kolmogorov-Smirnov tests of three statistics (a weight, the last bias, the canary's loss)
    # at level 1e-5 each: false failure below 6e-5 over both models.
    mechanism = DPSGD(model, SMALL, sigma=1.0, rate=0.2, steps=8, canary="input", hidden=4)
    dataset = mechanism.worst_case_pair().d_prime
    on_numpy = mechanism.sample(dataset, 6000, np.random.default_rng(2))
    on_device = _device_sample(mechanism, dataset, [4096, 1904])
    loss = mechanism.membership_loss(mechanism.worst_case_pair())
    for statistic in (lambda t: t[:, 0], lambda t: t[:, -2], loss):
        assert stats.ks_2samp(statistic(on_numpy), statistic(on_device)).pvalue > 1e-5


def test_device_log_density_is_the_numpy_one(monkeypatch):
    # Blocks of 64 values: one step per block in training, 12 runs per block in the density.
    monkeypatch.setattr(dpsgd_module, "_DEVICE_BLOCK_ENTRIES", 64)
    mechanism = DPSGD(sigma=0.8, rate=0.1, steps=5, observe="updates")
    pair = mechanism.worst_case_pair()
    generators = torch_generators(CPU, 1, "evaluation", range(2))
    outputs = mechanism.torch_sample(pair.d_prime, [300, 200], generators)
    attack = LikelihoodRatio(mechanism, pair)
    assert attack.runs_on_device()
    expected = attack.score(outputs.numpy())
    np.testing.assert_allclose(
        attack.torch_score(outputs).numpy(), expected, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize(
    ("model", "canary"), [("logistic", "input"), ("mlp", "input"), ("mlp", "dirac")]
)
def test_device_membership_loss_is_the_numpy_one(model, canary):
    # The loss of the target under final models drawn on the device, by the numpy statistic
    # and by its device twin, in both orders of the pair (the sign flips).
    mechanism = DPSGD(model, SMALL, sigma=1.0, rate=0.2, steps=4, canary=canary, hidden=4)
    pair = mechanism.worst_case_pair()
    outputs = torch.as_tensor(_device_sample(mechanism, pair.d_prime, [300, 200]))
    for audited in (pair, pair.swapped()):
        attack = MembershipInference.for_mechanism(mechanism, audited)
        assert attack.runs_on_device()
        expected = attack.score(outputs.numpy())
        scores = attack.torch_score(outputs)
        assert scores.dtype == torch.float64
        np.testing.assert_allclose(scores.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_device_bounds_agree_with_numpy_in_law():
    # The mu lower bound of the white-box (updates, likelihood ratio) audit.
    mechanism = DPSGD("logistic", SMALL, sigma=1.0, rate=0.2, steps=3, observe="updates")
    assert np.mean(device_mu_bounds_agreeing_with_numpy(mechanism, 20_000)) > 0.2


@pytest.mark.parametrize("observe", ["updates", "final"])
def test_same_seed_same_counts_whatever_the_batch_size(monkeypatch, observe):
    canary = "dirac" if observe == "updates" else "input"
    mechanism = DPSGD(
        "logistic", SMALL, sigma=1.0, rate=0.2, steps=3, observe=observe, canary=canary
    )
    pair = mechanism.worst_case_pair()
    attack = None if observe == "updates" else MembershipInference.for_mechanism(mechanism, pair)
    kwargs = dict(trials=3000, selection_trials=2000, chunk_size=500, seed=3, device="cpu")
    values = mechanism.output_shape(mechanism.worst_case_pair().d)[0]
    runs = []
    for chunks in (1, 3, 100):  # one chunk per batch, three, everything in one
        monkeypatch.setattr(device_module, "CPU_BATCH_VALUES", chunks * 500 * values)
        result = dpaudit.audit_mechanism(mechanism, attack=attack, **kwargs)
        runs.append((result.counts, result.selection_counts))
    for counts, selection in runs[1:]:
        np.testing.assert_array_equal(counts, runs[0][0])
        np.testing.assert_array_equal(selection, runs[0][1])
    other = dpaudit.audit_mechanism(mechanism, attack=attack, **{**kwargs, "seed": 4})
    assert not np.array_equal(other.counts, runs[0][0])


def test_what_has_no_device_path_is_refused():
    fixed = DPSGD("logistic", SMALL, sigma=1.0, batch_size=5, steps=2, sampling="fixed")
    with pytest.raises(ValueError, match=r"^device='cpu': mechanism DPSGD\(.* no device sampler"):
        dpaudit.audit_mechanism(fixed, trials=1000, device="cpu")
    final = DPSGD("logistic", SMALL, sigma=1.0, rate=0.2, steps=2, canary="input")
    pair = final.worst_case_pair()
    for attack, name in (
        (None, "DeltaLeak"),
        (
            MembershipInference.for_mechanism(final, pair, calibrated=True),
            r"MembershipInference\(loss, calibrated\)",
        ),
        (LikelihoodRatio(final, pair), "LikelihoodRatio"),
    ):
        with pytest.raises(ValueError, match=f"^device='cpu': attack {name}.* no device score"):
            dpaudit.audit_mechanism(final, attack=attack, trials=1000, device="cpu")
