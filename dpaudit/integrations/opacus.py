"""Audit an Opacus training run with canaries (extra ``dpaudit[opacus]``; needs PyTorch).

Two kinds of canaries, each included independently with probability 1/2 (the one-run design of
Steinke, Nasr & Jagielski 2023):

- **Input-space canaries** (:func:`mislabelled_canaries`, :func:`out_of_distribution_canaries`):
  examples added to the user's training data. After training, a canary's score is minus its
  loss under the trained model (:func:`loss_scores`; larger = "was trained on"). Black-box: only
  the final model's outputs are used.
- **Gradient (Dirac) canaries** (:class:`DiracCanaries`, white-box): canary ``i`` owns one model
  coordinate ``j_i``; at every optimizer step each included canary takes part with the sampling
  rate of the data loader and adds the per-example gradient ``-C e_{j_i}`` (norm exactly the
  clipping norm ``C``) to the batch *before* Opacus clips and noises it. The score is the sum
  over steps of the update's projection on ``e_{j_i}``: ``theta_T[j_i] - theta_0[j_i]``. This is
  the strongest canary DP-SGD allows, so the audit approaches the accountant's bound.

The user keeps their own model, data loader and ``PrivacyEngine``; this module adds canaries,
scores them and hands the scores to :func:`dpaudit.audit.one_run.audit_one_run`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = [
    "InputCanaries",
    "mislabelled_canaries",
    "out_of_distribution_canaries",
    "with_canaries",
    "loss_scores",
    "DiracCanaries",
]


@dataclass(frozen=True)
class InputCanaries:
    """``m`` canary examples ``x``, labels ``y``, and which of them are trained on."""

    x: np.ndarray
    y: np.ndarray
    included: np.ndarray
    kind: str


def _included(m: int, rng: np.random.Generator) -> np.ndarray:
    return (rng.random(m) < 0.5).astype(np.int8)


def mislabelled_canaries(
    x: np.ndarray, y: np.ndarray, m: int, *, n_classes: int, seed: int = 0
) -> InputCanaries:
    """``m`` examples drawn without replacement from ``(x, y)`` (a pool **not** otherwise used
    for training) with each label replaced by a different class chosen at random."""
    x, y = np.asarray(x), np.asarray(y)
    if not 1 <= m <= len(x):
        raise ValueError(f"m must be in [1, {len(x)}] (the pool's size), got {m}")
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(x), size=m, replace=False)
    shift = rng.integers(1, n_classes, size=m)
    labels = (y[pick] + shift) % n_classes
    return InputCanaries(x[pick], labels.astype(y.dtype), _included(m, rng), "mislabelled")


def out_of_distribution_canaries(
    shape: tuple[int, ...],
    m: int,
    *,
    n_classes: int,
    low: float = 0.0,
    high: float = 1.0,
    seed: int = 0,
) -> InputCanaries:
    """``m`` inputs uniform on ``[low, high]^shape`` with random labels."""
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=(m, *shape)).astype(np.float32)
    y = rng.integers(0, n_classes, size=m)
    return InputCanaries(x, y, _included(m, rng), "out-of-distribution")


def with_canaries(
    x: np.ndarray, y: np.ndarray, canaries: InputCanaries
) -> tuple[np.ndarray, np.ndarray]:
    """The training data with the included canaries appended."""
    keep = canaries.included.astype(bool)
    return (
        np.concatenate([np.asarray(x), canaries.x[keep].astype(np.asarray(x).dtype)]),
        np.concatenate([np.asarray(y), canaries.y[keep].astype(np.asarray(y).dtype)]),
    )


@torch.no_grad()
def loss_scores(model: torch.nn.Module, canaries: InputCanaries) -> np.ndarray:
    """Minus the cross-entropy loss of every canary under ``model`` (larger = "included")."""
    model.eval()
    logits = model(torch.as_tensor(canaries.x, dtype=torch.float32))
    target = torch.as_tensor(canaries.y, dtype=torch.long)
    loss = torch.nn.functional.cross_entropy(logits, target, reduction="none")
    return -loss.numpy().astype(float)


class DiracCanaries:
    """White-box gradient canaries for an Opacus ``DPOptimizer``.

    Parameters
    ----------
    model:
        The model being trained (its parameters, in ``model.parameters()`` order, are the
        coordinates canaries are placed on; at least ``m`` of them must be trainable).
    m:
        Number of canaries.
    sample_rate:
        Probability that a canary takes part in a step (the data loader's Poisson rate).
    seed:
        Seed of the coordinates, of the inclusion and of the per-step participation.
    """

    def __init__(self, model: torch.nn.Module, m: int, *, sample_rate: float, seed: int = 0):
        self.params = [p for p in model.parameters() if p.requires_grad]
        sizes = [p.numel() for p in self.params]
        total = int(sum(sizes))
        if not 1 <= m <= total:
            raise ValueError(f"m must be in [1, {total}] (the model's trainable values), got {m}")
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
        self.rng = np.random.default_rng(seed)
        self.coordinates = np.sort(self.rng.choice(total, size=m, replace=False))
        self.included = _included(m, self.rng)
        self.sample_rate = float(sample_rate)
        self._offsets = np.concatenate([[0], np.cumsum(sizes)])
        self._start = self._flat().copy()
        self.steps = 0

    def _flat(self) -> np.ndarray:
        with torch.no_grad():
            flat = torch.cat([p.detach().reshape(-1) for p in self.params]).numpy()
        return flat[self.coordinates].astype(float)

    def attach(self, optimizer: Any) -> None:
        """Insert the included canaries' gradients into every step of ``optimizer`` (an Opacus
        ``DPOptimizer``), before its clipping and noise.

        Assumes one ``clip_and_accumulate`` call per step (no virtual steps, e.g. Opacus'
        ``BatchMemoryManager``, which would insert the canaries once per physical batch)."""
        original = optimizer.clip_and_accumulate
        clip = float(optimizer.max_grad_norm)
        members = np.flatnonzero(self.included)

        def clip_and_accumulate() -> None:
            active = members[self.rng.random(members.size) < self.sample_rate]
            if active.size:
                for k, p in enumerate(self.params):
                    lo, hi = self._offsets[k], self._offsets[k + 1]
                    extra = torch.zeros((active.size, p.numel()), dtype=p.grad_sample.dtype)
                    for row, i in enumerate(active):
                        j = self.coordinates[i]
                        if lo <= j < hi:
                            # Gradient descent moves theta[j] by -lr * grad: -C e_j pushes it up.
                            extra[row, j - lo] = -clip
                    p.grad_sample = torch.cat([p.grad_sample, extra.reshape(-1, *p.shape)])
            self.steps += 1
            original()

        optimizer.clip_and_accumulate = clip_and_accumulate

    def scores(self) -> np.ndarray:
        """``theta_T[j_i] - theta_0[j_i]``: the sum of the updates' projections, per canary."""
        return self._flat() - self._start
