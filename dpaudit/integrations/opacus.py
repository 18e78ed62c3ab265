"""Audit an Opacus training run with canaries (extra ``dpaudit[opacus]``; needs PyTorch).

Two kinds of canaries, each included independently with probability 1/2 (the one-run design of
Steinke, Nasr & Jagielski 2023):

- **Input-space canaries** (:func:`mislabelled_canaries`, :func:`out_of_distribution_canaries`):
  examples added to the user's training data. After training, a canary's score is minus its
  loss under the trained model (:func:`loss_scores`; larger = "was trained on"). Black-box: only
  the final model's outputs are used.
- **Gradient (Dirac) canaries** (:class:`DiracCanaries`): canary ``i`` owns one coordinate
  ``j_i``, a model coordinate or, with :class:`CanaryCoordinates`, one that no example's
  gradient touches; at every optimizer step each included canary takes part with the sampling
  rate of the data loader and adds the per-example gradient ``-C e_{j_i}`` (norm exactly the
  clipping norm ``C``) to the clipped batch sum before Opacus noises it. Scored in the final
  model (``theta_T[j_i] - theta_0[j_i]``) or white-box, from every step's noisy gradient seen
  through the optimizer's hooks. This is the strongest canary DP-SGD allows: on dedicated
  coordinates the white-box audit can meet the composition of every step, the final-model
  audit the last iterate.

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
    "CanaryCoordinates",
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


class CanaryCoordinates(torch.nn.Module):
    """``model`` plus ``m`` trainable coordinates that no example's gradient touches.

    The coordinates are the weights of a bias-free ``Linear(m, 1)`` whose input is always zero
    and whose output is added to the model's: the forward pass is the model's, every example's
    per-sample gradient along these coordinates is exactly 0 (Opacus computes, clips and noises
    them like any other parameter), and only gradient canaries (:class:`DiracCanaries`) move
    them. Each canary then has a coordinate of its own, as the Dirac canary of
    :mod:`dpaudit.mechanisms.dpsgd` has: its updates and its final value follow that law, and
    different canaries' scores are independent.
    """

    def __init__(self, model: torch.nn.Module, m: int) -> None:
        super().__init__()
        if not isinstance(m, int) or m < 1:
            raise ValueError(f"m must be an integer >= 1, got {m!r}")
        self.model = model
        self.canary = torch.nn.Linear(m, 1, bias=False)
        torch.nn.init.zeros_(self.canary.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The model's output (plus the canary layer's, which is 0)."""
        out = self.model(x)
        return out + self.canary(out.new_zeros((out.shape[0], self.canary.in_features)))


def _dedicated(model: torch.nn.Module) -> torch.nn.Parameter | None:
    """The coordinates of the :class:`CanaryCoordinates` inside ``model`` (possibly wrapped by
    Opacus), or ``None``."""
    for module in model.modules():
        if isinstance(module, CanaryCoordinates):
            return module.canary.weight
    return None


class DiracCanaries:
    """White-box gradient canaries for an Opacus ``DPOptimizer``.

    Canary ``i`` owns one coordinate ``j_i``: on a model with :class:`CanaryCoordinates` the
    ``i``-th of those (which no example's gradient touches), otherwise a model coordinate drawn
    at random. At every optimizer step each included canary takes part with the sampling rate of
    the data loader and adds the per-example gradient ``-C e_{j_i}`` (norm exactly the clipping
    norm ``C``) to the batch: it is added to the sum of the clipped per-example gradients, before
    the noise, which is what clipping would leave of it (Opacus's clipping factor
    ``C / (||g|| + 1e-6)`` would shrink it by a relative ``1e-6``).

    Two observations:

    - :meth:`scores`, the final model: ``theta_T[j_i] - theta_0[j_i]``.
    - :meth:`whitebox_scores`, every step through the optimizer's hooks: the noisy gradient
      along ``j_i`` after the noise, in units of ``C``, ``y_t = -grad[j_i] B / C`` (``B`` the
      expected batch size Opacus divides by), scored by the likelihood ratio of Poisson
      participation, ``sum_t log(1 - q + q exp((2 y_t - 1) / (2 sigma^2)))``.

    On dedicated coordinates both follow DP-SGD's Dirac law exactly (``y_t`` is ``N(0,
    sigma^2)`` for an excluded canary, ``(1 - q) N(0, sigma^2) + q N(1, sigma^2)`` for an
    included one, independently over steps), so the white-box audit meets the composition of
    every step and the final-model audit the last iterate
    (:mod:`dpaudit.mechanisms.dirac`).

    Parameters
    ----------
    model:
        The model being trained (its parameters, in ``model.parameters()`` order, are the
        coordinates canaries are placed on; at least ``m`` of them must be trainable, or ``m``
        dedicated ones with :class:`CanaryCoordinates`).
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
        self._offsets = np.concatenate([[0], np.cumsum(sizes)])
        dedicated = _dedicated(model)
        self.rng = np.random.default_rng(seed)
        if dedicated is not None:
            if not 1 <= m <= dedicated.numel():
                raise ValueError(
                    f"m must be in [1, {dedicated.numel()}] (the dedicated coordinates), got {m}"
                )
            first = self._offsets[next(i for i, p in enumerate(self.params) if p is dedicated)]
            self.coordinates = first + np.arange(m)
        else:
            if not 1 <= m <= total:
                raise ValueError(
                    f"m must be in [1, {total}] (the model's trainable values), got {m}"
                )
            self.coordinates = np.sort(self.rng.choice(total, size=m, replace=False))
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
        self.included = _included(m, self.rng)
        self.sample_rate = float(sample_rate)
        self._start = self._flat().copy()
        self._whitebox = np.zeros(m)
        self.steps = 0

    def _flat(self) -> np.ndarray:
        with torch.no_grad():
            return self._gather([p.detach() for p in self.params])

    def _gather(self, tensors: list[torch.Tensor]) -> np.ndarray:
        """The values at the canaries' coordinates of the flattened ``tensors`` (one per
        parameter), float64."""
        out = np.empty(self.coordinates.size)
        for k, t in enumerate(tensors):
            lo, hi = self._offsets[k], self._offsets[k + 1]
            sel = np.flatnonzero((self.coordinates >= lo) & (self.coordinates < hi))
            if sel.size:
                index = torch.as_tensor(self.coordinates[sel] - lo)
                out[sel] = t.reshape(-1)[index].double().numpy()
        return out

    def attach(self, optimizer: Any) -> None:
        """Insert the included canaries' gradients into every step of ``optimizer`` (an Opacus
        ``DPOptimizer``) and observe the noisy gradients along their coordinates.

        Assumes one ``clip_and_accumulate`` call per step (no virtual steps, e.g. Opacus'
        ``BatchMemoryManager``, which would insert the canaries once per physical batch)."""
        clip_and_accumulate = optimizer.clip_and_accumulate
        scale_grad = optimizer.scale_grad
        clip = float(optimizer.max_grad_norm)
        sigma = float(optimizer.noise_multiplier)
        q = self.sample_rate
        members = np.flatnonzero(self.included)

        def insert() -> None:
            clip_and_accumulate()
            active = self.coordinates[members[self.rng.random(members.size) < q]]
            for k, p in enumerate(self.params):
                lo, hi = self._offsets[k], self._offsets[k + 1]
                here = active[(active >= lo) & (active < hi)] - lo
                if here.size:
                    # Gradient descent moves theta[j] by -lr * grad: -C e_j pushes it up.
                    flat = p.summed_grad.view(-1)
                    index = torch.as_tensor(here, device=flat.device)
                    flat.index_add_(0, index, torch.full_like(index, -clip, dtype=flat.dtype))
            self.steps += 1

        def observe() -> None:
            scale_grad()
            batch = optimizer.expected_batch_size * optimizer.accumulated_iterations
            y = -self._gather([p.grad for p in self.params]) * batch / clip
            z = (2.0 * y - 1.0) / (2.0 * sigma * sigma)
            self._whitebox += np.logaddexp(np.log1p(-q), np.log(q) + z) if q < 1 else z

        optimizer.clip_and_accumulate = insert
        optimizer.scale_grad = observe

    def scores(self) -> np.ndarray:
        """``theta_T[j_i] - theta_0[j_i]``: the final model's score, per canary."""
        return self._flat() - self._start

    def whitebox_scores(self) -> np.ndarray:
        """The likelihood ratio of every step's noisy gradient along ``j_i`` (class docstring),
        per canary: the white-box score."""
        return self._whitebox.copy()
