"""DP-SGD (NoisySGD, Dong, Roth & Su 2022, "Gaussian differential privacy", Algorithm 1), trained
many times at once so that its privacy can be audited by Monte Carlo.

One call ``sample(dataset, size, rng)`` trains ``size`` independent models on ``dataset``; the
models sit side by side in an array of shape ``(size, P)`` and every step is a handful of
vectorised numpy operations over all runs and all sampled examples together.

Step ``t`` of every run (docs/theory.md#dpsgd):

1. **sample a batch**: Poisson sampling, each record independently with probability ``q``
   (``sampling="poisson"``, neighbouring relation ``add_remove``); exactly ``m`` of the ``n``
   records uniformly without replacement (``sampling="fixed"``, relation ``replace_one``); or
   shuffled batches (``sampling="shuffled"``, relation ``add_remove``): every epoch a fresh
   uniform permutation of the records is cut into ``b = n_ref // m`` consecutive batches of ``m``
   and the records left over sit the epoch out (PyTorch's ``DataLoader(shuffle=True,
   drop_last=True)``), epoch after epoch until ``T`` steps are done;
2. **clip** every per-example gradient to l2 norm at most ``C``;
3. **sum** the clipped gradients and add ``N(0, sigma^2 C^2 I_P)``;
4. **step**: ``theta <- theta - lr * (noisy sum) / B`` with the constant ``B = q n_ref``
   (Poisson, ``n_ref`` the size of the mechanism's own dataset) or ``B = m`` (fixed size,
   shuffled). ``B`` never depends on the dataset being trained on, so the scaling reveals nothing.

A Dirac canary's gradient can be inserted at every step (``canary_every=1``) or only at steps
``0, k, 2k, ...`` (``canary_every=k``; Cebere, Bellet & Papernot 2025 study both): at the other
steps Dirac records add nothing. ``init="worst_case"`` starts every run from the parameters of a
non-private model fitted to the mechanism's own dataset (Annamalai & De Cristofaro 2024, "Nearly
tight black-box auditing of differentially private machine learning": the other examples'
gradients are then small, and an input canary's stands out).

Models (``P`` parameters, the last one the canary coordinate ``theta_c``, see below):

- ``"logistic"``: ``logit(x) = w . x + b``; parameters ``[w (k), b, theta_c]``, ``P = k + 2``;
  initial parameters 0.
- ``"mlp"``: one hidden layer of ``hidden`` tanh units, ``logit(x) = w2 . tanh(W1 x + b1) + b2``;
  parameters ``[W1 (hidden x k, row-major), b1, w2, b2, theta_c]``; initial ``W1 ~ N(0, 1/k)``,
  ``w2 ~ N(0, 1/hidden)``, biases 0, drawn once from ``seed`` (every run starts from the same
  parameters, which only strengthens the adversary).

The loss of an ordinary example is the logistic loss ``log(1 + e^z) - y z`` of its logit ``z``.
A **Dirac canary** (record layout in :mod:`dpaudit.mechanisms.datasets`: canary coefficient
``c != 0``) has the linear loss ``c C theta_c``: its gradient is ``c C`` along ``theta_c`` and zero
elsewhere, and no ordinary example's gradient ever touches ``theta_c`` (Nasr et al. 2023, "Tight
auditing of differentially private machine learning", gradient canaries). The **input canary**
is an ordinary record: an outlier with the wrong label
(:func:`~dpaudit.mechanisms.datasets.input_canary`).

What is observed:

- ``observe="final"`` (black box): the final parameters, shape ``(size, P)``. With the Dirac
  canary the final canary coordinate has a known law (:mod:`dpaudit.mechanisms.dirac`, the
  last iterate of Steinke et al. 2025) and the other coordinates do not depend on Dirac records,
  so :meth:`DPSGD.log_density` is the density of the canary coordinate.
- ``observe="final_canary"`` (Dirac canary): the final canary coordinate alone, shape
  ``(size, 1)``, drawn directly from its exact law (no model is trained: the coordinate does not
  depend on the rest of the model), which makes 10^8 final-model trials a matter of minutes.
- ``observe="updates"`` (white box, Dirac canary): for every step ``t`` the noisy clipped
  gradient sum along the canary coordinate in units of ``C``, shape ``(size, T)``:
  ``y_t = (sum_{i in B_t} g_i + sigma C xi_t)[theta_c] / C = sum_{i in B_t} c_i + sigma xi_t``,
  equivalently ``y_t = -(B / (lr C)) (theta_c after step t - theta_c before)``. So ``y_t`` is
  exactly one draw of the Poisson- (or fixed-size-) subsampled Gaussian mechanism with noise
  ``sigma`` on the records' coefficients ``c_i`` (docs/theory.md#pld), independently across
  steps: that is :meth:`DPSGD.log_density`, and the likelihood-ratio attack on it is the
  Neyman-Pearson score ``sum_t log(1 - q + q exp((2 y_t - 1) / (2 sigma^2)))`` of
  docs/theory.md#dpsgd.

Theory (``epsilon``, ``delta``, ``tradeoff`` with ``method=`` ``"pld"``, ``"rdp"``,
``"berry_esseen"``, ``"gdp_clt"``; a single step also ``"exact"``; and ``"last_iterate"``, see
below): every step is a subsampled Gaussian mechanism with sensitivity ``C`` (add/remove) or
``2C`` (replace-one) and noise ``sigma C`` on the sum, whatever the model and the data, and
the ``T`` steps compose adaptively (DRS Theorem 10: ``C_p(f)^{tensor T}``). The accountant is
:attr:`DPSGD.accountant`, ``Composed(PoissonSubsampled(Gaussian(sigma, 1), q), T)`` or
``Composed(FixedSizeSubsampled(Gaussian(sigma, 1), m, n), T)`` in units of ``C``. DRS add noise
``2 sigma C`` to the sum of a fixed-size batch (their ``sigma`` is relative to the replace-one
sensitivity), hence their ``f = G_{1/sigma}``; with noise ``sigma C`` here, ``f = G_{2/sigma}``.

Shuffled batches: a record takes part in at most one step per epoch, and adding it moves at
most one step's sum, by at most ``2C`` (couple the epochs: drop the added record from its
slot and put there a uniformly chosen record of those that sit the epoch out; the batches of the
smaller dataset are then as likely as ever, and differ in that slot only), so the
``E = ceil(T / b)`` epochs compose ``E`` Gaussian mechanisms of sensitivity 2: ``pld`` and
``rdp`` of ``Composed(Gaussian(sigma, 2), E)``, a bound. The Poisson accountant at rate
``m / n`` (sensitivity 1), which implementations that shuffle often report, is no bound for
them (:class:`~dpaudit.mechanisms.flawed.DPSGDShuffledClaimsPoisson`).

``last_iterate``: the exact privacy curve of the final model for the Dirac canary (constant
clipped gradient along its own coordinate), the final canary coordinate's pair of laws on the
worst-case Dirac pair (:func:`dpaudit.bounds.pld.last_iterate`,
:func:`~dpaudit.bounds.pld.gaussian_mixture`). Only the final model is released in that threat
model; for other losses the curve is a prediction of what a final-model audit can reach, not a
bound.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse
from scipy.special import expit

from dpaudit._core.device import has_twin
from dpaudit._core.validation import (
    check_choice,
    check_integer,
    check_positive,
    check_probability,
    check_seed,
)
from dpaudit.bounds import pld as pld_lib
from dpaudit.bounds.pld import MAX_COMPOSITIONS, PLD
from dpaudit.bounds.rdp import RDPCurve
from dpaudit.mechanisms.base import (
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
    check_outputs,
    check_rng,
    check_size,
)
from dpaudit.mechanisms.composed import Composed
from dpaudit.mechanisms.datasets import (
    Dataset,
    dirac_canary,
    input_canary,
    load,
    split_records,
)
from dpaudit.mechanisms.dirac import (
    FinalLaw,
    Schedule,
    final_law,
    shuffled_updates_log_density,
)
from dpaudit.mechanisms.gaussian import Gaussian
from dpaudit.mechanisms.subsampled import FixedSizeSubsampled, PoissonSubsampled

__all__ = [
    "DPSGD",
    "TargetLoss",
    "MODELS",
    "SAMPLINGS",
    "CANARIES",
    "OBSERVATIONS",
    "INITIALISATIONS",
]

#: Model families.
MODELS = ("logistic", "mlp")
#: Batch sampling schemes (and their neighbouring relations).
SAMPLINGS = ("poisson", "fixed", "shuffled")
#: Canary kinds that define :meth:`DPSGD.worst_case_pair`.
CANARIES = ("dirac", "input")
#: What one training run releases.
OBSERVATIONS = ("final", "updates", "final_canary")
#: Initial parameters of every run.
INITIALISATIONS = ("default", "worst_case")

# Full-batch gradient-descent steps (and their step size) of the worst-case initialisation.
_PRETRAIN_STEPS = 500
_PRETRAIN_RATE = 1.0

# Sampled (run, record) pairs per block of steps: bounds the memory of the batch draws.
_BLOCK_ENTRIES = 2**20

# Geometric gaps drawn per block of steps on a device: bounds the memory of the batch draws.
_DEVICE_BLOCK_ENTRIES = 2**24


class _Pairs(NamedTuple):
    """``K`` (run, example) pairs sorted by run: each pair's run, the example's design row, label
    and ``sq = ||x||^2 + 1``."""

    run: np.ndarray
    rows: np.ndarray
    y: np.ndarray
    sq: np.ndarray

    def indptr(self, size: int) -> np.ndarray:
        """Where each of the ``size`` runs' pairs start (and, last, ``K``)."""
        return np.searchsorted(self.run, np.arange(size + 1))


class _Model(ABC):
    """Parameters ``[model parameters (P - 1), theta_c]`` and clipped gradient sums.

    Examples enter through the model's *design* rows (:meth:`design`, one row per example) and
    ``sq = ||x||^2 + 1``. A batch of ``S`` runs is ``K`` (run, example) pairs sorted by run.
    """

    #: Most (run, example) pairs per step handed to :meth:`gradient_sums` at once.
    pairs_per_step = 2**18

    def __init__(self, dim: int) -> None:
        self.dim = dim

    @property
    @abstractmethod
    def n_params(self) -> int:
        """``P``, the canary coordinate included."""

    @abstractmethod
    def initial(self) -> np.ndarray:
        """Initial parameters, shape ``(P,)``."""

    @abstractmethod
    def design(self, x: np.ndarray) -> np.ndarray:
        """Per-example rows the model reads, from the features ``x`` (``(n, k)``)."""

    @abstractmethod
    def logits(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Logit of design row ``rows[i]`` under ``theta[i]`` (``(K, P)``): shape ``(K,)``."""

    @abstractmethod
    def gradient_sums(self, theta: np.ndarray, pairs: _Pairs, clip: float) -> np.ndarray:
        """For each run ``s`` (parameters ``theta[s]``, ``(S, P)``), the sum over its ``pairs``
        of the logistic loss gradient scaled down to l2 norm at most ``clip`` (``inf``:
        unclipped). Shape ``(S, P)``; the canary coordinate is 0."""

    @abstractmethod
    def torch_logits(self, theta: Any, rows: Any) -> Any:
        """The device twin of :meth:`logits` on float64 tensors."""

    @abstractmethod
    def torch_gradient_sums(self, theta: Any, rows: Any, y: Any, sq: Any, clip: float) -> Any:
        """The device twin of :meth:`gradient_sums` on padded batches: run ``s`` (parameters
        ``theta[s]``, ``(S, P)``) holds the examples of design rows ``rows[s]`` (``(S, W, .)``),
        labels ``y[s]`` and ``sq[s]`` (``(S, W)``, 0 in empty slots, which count for nothing).
        Float64 ``(S, P)``; the canary coordinate is 0."""


def _clip_factor(norm_sq: np.ndarray, clip: float) -> np.ndarray:
    """``min(1, clip / norm)``, 1 for a zero gradient."""
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, clip / np.sqrt(norm_sq))


def _torch_clip_factor(norm_sq: Any, clip: float) -> Any:
    """The device twin of :func:`_clip_factor` (float64 division by 0 gives ``inf``)."""
    return (clip / norm_sq.sqrt()).clamp_(max=1.0)


class _Logistic(_Model):
    """``logit = w . x + b``; gradient ``(s(z) - y) (x, 1)`` with ``s`` the logistic function.

    Design rows are ``(x, 1, 0)``: the logit is their dot product with the parameters, and the
    gradient is a multiple of them (0 in the canary coordinate).
    """

    @property
    def n_params(self) -> int:
        return self.dim + 2

    def initial(self) -> np.ndarray:
        return np.zeros(self.n_params)

    def design(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros((x.shape[0], self.n_params))
        out[:, : self.dim] = x
        out[:, self.dim] = 1.0
        return out

    def logits(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", rows, theta)

    def gradient_sums(self, theta: np.ndarray, pairs: _Pairs, clip: float) -> np.ndarray:
        run, rows, y, sq = pairs
        size = theta.shape[0]
        r = expit(self.logits(np.take(theta, run, axis=0), rows)) - y
        # ||(s(z) - y)(x, 1)|| = |s(z) - y| sqrt(||x||^2 + 1)
        coef = r * _clip_factor(r * r * sq, clip)
        indptr = pairs.indptr(size)
        sums = sparse.csr_array((coef, np.arange(run.size), indptr), shape=(size, run.size))
        return sums @ rows

    def torch_logits(self, theta: Any, rows: Any) -> Any:
        return (rows * theta).sum(dim=-1)

    def torch_gradient_sums(self, theta: Any, rows: Any, y: Any, sq: Any, clip: float) -> Any:
        import torch

        r = torch.sigmoid(torch.matmul(rows, theta.unsqueeze(-1)).squeeze(-1)) - y
        coef = r * _torch_clip_factor(r * r * sq, clip) * (sq > 0.0)
        return torch.matmul(coef.unsqueeze(1), rows).squeeze(1)


class _MLP(_Model):
    """One hidden tanh layer: ``logit = w2 . tanh(W1 x + b1) + b2``; design rows are ``x``.

    Gradient sums work on padded batches, ``(S, width, k)`` with zero-weight empty slots, so
    that every product is a stack of small matrix products on the runs' own parameters.
    """

    pairs_per_step = 2**16

    def __init__(self, dim: int, hidden: int, seed: int) -> None:
        super().__init__(dim)
        self.hidden = hidden
        self.seed = seed

    @property
    def n_params(self) -> int:
        return self.hidden * (self.dim + 2) + 2

    def initial(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        h, k = self.hidden, self.dim
        theta = np.zeros(self.n_params)
        theta[: h * k] = rng.normal(0.0, 1.0 / math.sqrt(k), size=h * k)
        theta[h * k + h : h * k + 2 * h] = rng.normal(0.0, 1.0 / math.sqrt(h), size=h)
        return theta

    def design(self, x: np.ndarray) -> np.ndarray:
        return x

    def _split(self, theta: np.ndarray) -> tuple[np.ndarray, ...]:
        h, k = self.hidden, self.dim
        w1 = theta[:, : h * k].reshape(-1, h, k)
        return w1, theta[:, h * k : h * k + h], theta[:, h * k + h : h * k + 2 * h], theta[:, -2]

    def _forward(self, theta: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hidden units ``(S, width, h)`` and logits ``(S, width)`` of padded ``x``."""
        w1, b1, w2, b2 = self._split(theta)
        hidden = np.tanh(np.matmul(x, w1.transpose(0, 2, 1)) + b1[:, None, :])
        return hidden, np.matmul(hidden, w2[:, :, None])[..., 0] + b2[:, None]

    def logits(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self._forward(theta, rows[:, None, :])[1][:, 0]

    def gradient_sums(self, theta: np.ndarray, pairs: _Pairs, clip: float) -> np.ndarray:
        run, rows, y, sq = pairs
        h, k = self.hidden, self.dim
        size = theta.shape[0]
        indptr = pairs.indptr(size)
        width = max(1, int(np.diff(indptr).max()))
        slot = run * width + (np.arange(run.size) - indptr[run])
        padded = np.zeros((3, size * width))
        padded[0, slot] = y
        padded[1, slot] = sq
        padded[2, slot] = 1.0
        yp, sqp, valid = padded.reshape(3, size, width)
        xp = np.zeros((size * width, k))
        xp[slot] = rows
        xp = xp.reshape(size, width, k)
        w2 = self._split(theta)[2]
        hidden, z = self._forward(theta, xp)
        r = expit(z) - yp
        d_hidden = (r[..., None] * w2[:, None, :]) * (1.0 - hidden * hidden)
        # ||dW1||^2 = ||d_hidden||^2 ||x||^2 (an outer product); the biases add the rest.
        norm_sq = r * r * (np.einsum("skh,skh->sk", hidden, hidden) + 1.0)
        norm_sq += np.einsum("skh,skh->sk", d_hidden, d_hidden) * sqp
        scale = _clip_factor(norm_sq, clip) * valid
        d_hidden *= scale[..., None]
        rs = r * scale
        out = np.zeros((size, self.n_params))
        out[:, : h * k] = np.matmul(d_hidden.transpose(0, 2, 1), xp).reshape(size, h * k)
        out[:, h * k : h * k + h] = d_hidden.sum(axis=1)
        out[:, h * k + h : h * k + 2 * h] = np.matmul(rs[:, None, :], hidden)[:, 0, :]
        out[:, h * k + 2 * h] = rs.sum(axis=1)
        return out

    def _torch_forward(self, theta: Any, x: Any) -> tuple[Any, Any]:
        """The device twin of :meth:`_forward`: hidden units ``(S, width, h)`` and logits
        ``(S, width)`` of padded ``x``."""
        import torch

        w1, b1, w2, b2 = self._split(theta)
        hidden = torch.tanh(torch.matmul(x, w1.transpose(1, 2)) + b1.unsqueeze(1))
        return hidden, torch.matmul(hidden, w2.unsqueeze(-1)).squeeze(-1) + b2.unsqueeze(1)

    def torch_logits(self, theta: Any, rows: Any) -> Any:
        return self._torch_forward(theta, rows.unsqueeze(1))[1][:, 0]

    def torch_gradient_sums(self, theta: Any, rows: Any, y: Any, sq: Any, clip: float) -> Any:
        import torch

        h, k = self.hidden, self.dim
        size = theta.shape[0]
        w2 = self._split(theta)[2]
        hidden, z = self._torch_forward(theta, rows)
        r = torch.sigmoid(z) - y
        d_hidden = (r.unsqueeze(-1) * w2.unsqueeze(1)) * (1.0 - hidden * hidden)
        norm_sq = r * r * ((hidden * hidden).sum(dim=-1) + 1.0)
        norm_sq += (d_hidden * d_hidden).sum(dim=-1) * sq
        scale = _torch_clip_factor(norm_sq, clip) * (sq > 0.0)
        d_hidden *= scale.unsqueeze(-1)
        rs = r * scale
        out = theta.new_zeros((size, self.n_params))
        out[:, : h * k] = torch.matmul(d_hidden.transpose(1, 2), rows).reshape(size, h * k)
        out[:, h * k : h * k + h] = d_hidden.sum(dim=1)
        out[:, h * k + h : h * k + 2 * h] = torch.matmul(rs.unsqueeze(1), hidden).squeeze(1)
        out[:, h * k + 2 * h] = rs.sum(dim=1)
        return out


def _poisson_cells(rng: np.random.Generator, q: float, cells: int) -> np.ndarray:
    """Sorted indices of the successes among ``cells`` independent Bernoulli(q) trials, drawn
    as cumulative sums of geometric gaps (work proportional to the successes, not the cells).

    A gap that alone passes the last cell is cut to ``cells + 1``: the successes are the same, and
    the sums cannot overflow, as the gaps of a tiny ``q`` (numpy caps them at ``2^63 - 1``) would.
    """
    if cells == 0:
        return np.zeros(0, dtype=np.int64)
    if q == 1.0:
        return np.arange(cells, dtype=np.int64)
    expected = cells * q
    draw = int(expected + 6.0 * math.sqrt(expected) + 16)

    def gaps() -> np.ndarray:
        return np.cumsum(np.minimum(rng.geometric(q, size=draw), cells + 1))

    pos = gaps() - 1
    while pos[-1] < cells:
        pos = np.concatenate([pos, pos[-1] + gaps()])
    return pos[: np.searchsorted(pos, cells)]


def _torch_poisson_batches(
    generator: Any, q: float, n: int, shape: tuple[int, int], width: int
) -> Any:
    """Poisson batches on ``generator``'s device: for each of the ``shape`` (step, run) rows the
    sorted indices of the records sampled (each of ``range(n)`` with probability ``q``), padded
    with ``n`` to a common width; int64, ``shape + (W,)``.

    The positions are cumulative sums of geometric gaps ``floor(E / -log(1 - q)) + 1`` (``E``
    standard exponential, so ``P(gap > k) = (1 - q)^k``), ``width`` per row at first; rows whose
    gaps all fall inside ``range(n)`` draw ``width`` more until every row has passed ``n``. The
    width is then cut to the largest batch. ``q = 1``: every record, no draws.
    """
    import torch

    device = generator.device
    if q == 1.0:
        return torch.arange(n, device=device).expand(*shape, n)
    scale = -1.0 / math.log1p(-q)
    steps = torch.arange(1, width + 1, dtype=torch.float64, device=device)

    def positions(rows: tuple[int, ...]) -> Any:
        """Cumulative sums of ``width`` gaps per row."""
        gaps = torch.empty((*rows, width), dtype=torch.float64, device=device)
        gaps.exponential_(generator=generator).mul_(scale).floor_()
        return gaps.cumsum_(dim=-1).add_(steps)

    pos = positions(shape).sub_(1.0)
    short = pos[..., -1] < n
    while bool(short.any()):
        more = torch.full_like(pos[..., :width], float(n))
        more[short] = pos[short][:, -1:] + positions((int(short.sum()),))
        pos = torch.cat([pos, more], dim=-1)
        short = pos[..., -1] < n
    largest = int((pos < n).sum(dim=-1).max())
    return pos[..., : max(1, largest)].clamp_(max=float(n)).long()


def _fixed_batches(rng: np.random.Generator, m: int, n: int, shape: tuple[int, int]) -> np.ndarray:
    """``shape + (m,)`` record indices: for each entry a uniform ``m``-subset of ``range(n)``.

    Small ``m`` (``m^2 <= 4n``): Floyd's algorithm, vectorised over the entries (``m`` rounds of
    one draw each). Otherwise the ``m`` smallest of ``n`` uniform keys, a few thousand entries
    at a time so that the keys stay within :data:`_BLOCK_ENTRIES` numbers.
    """
    if m * m <= 4 * n:
        chosen = np.empty((*shape, m), dtype=np.int64)
        for i, j in enumerate(range(n - m, n)):
            t = rng.integers(0, j + 1, size=shape)
            taken = (chosen[..., :i] == t[..., None]).any(axis=-1)
            chosen[..., i] = np.where(taken, j, t)
        return chosen
    entries = shape[0] * shape[1]
    chosen = np.empty((entries, m), dtype=np.int64)
    rows = max(1, _BLOCK_ENTRIES // n)
    for first in range(0, entries, rows):
        keys = rng.random((min(rows, entries - first), n))
        chosen[first : first + keys.shape[0]] = np.argpartition(keys, m - 1, axis=1)[:, :m]
    return chosen.reshape(*shape, m)


class DPSGD(Mechanism):
    """NoisySGD on a small classification set, vectorised across independent training runs.

    See the module docstring for the algorithm, the canaries and what is observed.

    Parameters
    ----------
    model:
        ``"logistic"`` or ``"mlp"`` (one hidden tanh layer of ``hidden`` units).
    dataset:
        ``"synthetic"`` (:func:`~dpaudit.mechanisms.datasets.synthetic`, 1000 examples, 20
        features, from ``seed``), ``"goog"`` (:func:`~dpaudit.mechanisms.datasets.goog`), or a
        :class:`~dpaudit.mechanisms.datasets.Dataset`. It defines the worst-case pair, the
        feature dimension, ``n`` and the batch normaliser ``B``.
    sigma:
        Noise multiplier: the noise on the gradient sum is ``N(0, sigma^2 C^2 I)``.
    steps:
        Number of steps ``T``.
    rate:
        Poisson sampling rate ``q`` in ``(0, 1]``. With ``sampling="fixed"`` or ``"shuffled"`` it
        may give the batch size instead of ``batch_size``: ``m = round(rate * n)`` (at least 1).
    batch_size:
        Batch size ``m`` in ``[1, n]`` (``sampling="fixed"`` or ``"shuffled"``).
    clip:
        Clipping norm ``C > 0``.
    learning_rate:
        Step size ``lr > 0``.
    sampling:
        ``"poisson"`` (add/remove), ``"fixed"`` (replace-one) or ``"shuffled"`` (add/remove).
    canary:
        ``"dirac"`` or ``"input"``: the target of :meth:`worst_case_pair`.
    observe:
        ``"final"`` (parameters), ``"updates"`` (canary-coordinate updates) or
        ``"final_canary"`` (the final canary coordinate, drawn from its exact law); the last two
        need the Dirac canary.
    hidden:
        Hidden units of the MLP (ignored by the logistic model).
    seed:
        Seed of the synthetic data and of the MLP's initial parameters (not of the training
        randomness, which comes from the ``rng`` of :meth:`sample`).
    canary_every:
        Dirac records' gradients are inserted at steps ``0, k, 2k, ...`` only (``k =
        canary_every``; 1: every step).
    init:
        ``"default"`` or ``"worst_case"`` (the parameters of a non-private model fitted to the
        mechanism's dataset; module docstring).
    """

    def __init__(
        self,
        model: str = "logistic",
        dataset: str | Dataset = "synthetic",
        *,
        sigma: float,
        steps: int,
        rate: float | None = None,
        batch_size: int | None = None,
        clip: float = 1.0,
        learning_rate: float = 0.5,
        sampling: str = "poisson",
        canary: str = "dirac",
        observe: str = "final",
        hidden: int = 16,
        seed: int = 0,
        canary_every: int = 1,
        init: str = "default",
    ) -> None:
        self.model = check_choice("model", model, MODELS)
        self.sampling = check_choice("sampling", sampling, SAMPLINGS)
        self.canary = check_choice("canary", canary, CANARIES)
        self.observe = check_choice("observe", observe, OBSERVATIONS)
        if self.observe != "final" and self.canary != "dirac":
            raise ValueError(
                f"observe={self.observe!r} records the Dirac canary's coordinate; "
                f"it needs canary='dirac', got canary={canary!r}"
            )
        self.canary_every = check_integer("canary_every", canary_every, minimum=1)
        self.init = check_choice("init", init, INITIALISATIONS)
        self.sigma = check_positive("sigma", sigma)
        self.steps = check_integer("steps", steps, minimum=1, maximum=MAX_COMPOSITIONS)
        self.clip = check_positive("clip", clip)
        self.learning_rate = check_positive("learning_rate", learning_rate)
        self.hidden = check_integer("hidden", hidden, minimum=1)
        self.seed = check_seed("seed", seed)
        if isinstance(dataset, Dataset):
            self.dataset, self.dataset_name = dataset, dataset.name
        elif dataset == "synthetic":
            self.dataset, self.dataset_name = load("synthetic", seed=self.seed), dataset
        else:
            self.dataset, self.dataset_name = load(dataset), dataset
        n = self.dataset.n
        if self.sampling == "poisson":
            if batch_size is not None:
                raise ValueError(
                    f"batch_size is for sampling='fixed'; Poisson sampling takes rate, "
                    f"got batch_size={batch_size!r}"
                )
            if rate is None:
                raise ValueError("sampling='poisson' needs rate, a probability in (0, 1]")
            self.rate = check_probability("rate", rate, low_open=True)
            self.batch_size: int | None = None
            self.relation = "add_remove"
            self.batch_scale = self.rate * n
        else:
            if (rate is None) == (batch_size is None):
                raise ValueError(
                    f"sampling={self.sampling!r} needs exactly one of batch_size (an integer in "
                    f"[1, {n}]) and rate, got rate={rate!r}, batch_size={batch_size!r}"
                )
            if batch_size is None:
                q = check_probability("rate", rate, low_open=True)
                batch_size = max(1, round(q * n))
            self.batch_size = check_integer("batch_size", batch_size, minimum=1, maximum=n)
            self.rate = self.batch_size / n
            self.relation = "replace_one" if self.sampling == "fixed" else "add_remove"
            self.batch_scale = float(self.batch_size)
        #: Batches per epoch of shuffled sampling (``n // m``; 0 for the other samplings).
        self.batches = n // self.batch_size if self.sampling == "shuffled" else 0
        if self.model == "logistic":
            self._model: _Model = _Logistic(self.dataset.dim)
        else:
            self._model = _MLP(self.dataset.dim, self.hidden, self.seed)

    # ------------------------------------------------------------------ description
    @property
    def n_params(self) -> int:
        """``P``: model parameters plus the canary coordinate (the last one)."""
        return self._model.n_params

    @property
    def canary_index(self) -> int:
        """Index of the canary coordinate ``theta_c`` in a parameter vector."""
        return self.n_params - 1

    def initial_params(self) -> np.ndarray:
        """The initial parameters of every run, shape ``(P,)``: the model's own, or with
        ``init="worst_case"`` those reached from them by :data:`_PRETRAIN_STEPS` full-batch,
        unclipped, noiseless gradient-descent steps of size :data:`_PRETRAIN_RATE` on the
        mechanism's dataset (the mean logistic loss), computed once. The canary coordinate
        starts at 0 either way."""
        if self.init == "default":
            return self._model.initial()
        cached = self.__dict__.get("_pretrained")
        if cached is None:
            x, y = self.dataset.features, self.dataset.labels
            design = self._model.design(x)
            pairs = _Pairs(
                np.zeros(x.shape[0], dtype=np.int64),
                design,
                y,
                np.einsum("ij,ij->i", x, x) + 1.0,
            )
            theta = self._model.initial()[None, :]
            for _ in range(_PRETRAIN_STEPS):
                grad = self._model.gradient_sums(theta, pairs, math.inf) / x.shape[0]
                theta = theta - _PRETRAIN_RATE * grad
            cached = self.__dict__["_pretrained"] = theta[0]
        return cached.copy()

    @property
    def name(self) -> str:
        """Short label, e.g. ``DPSGD(logistic, synthetic, sigma=1, q=0.01, T=100, C=1, poisson,
        input, final)``; a canary inserted every ``k`` steps and the worst-case initialisation
        add ``every k`` and ``worst-case init``."""
        batch = f"q={self.rate:g}" if self.sampling == "poisson" else f"m={self.batch_size}"
        extra = f", every {self.canary_every}" if self.canary_every > 1 else ""
        extra += ", worst-case init" if self.init == "worst_case" else ""
        return (
            f"DPSGD({self.model}, {self.dataset_name}, sigma={self.sigma:g}, {batch}, "
            f"T={self.steps}, C={self.clip:g}, {self.sampling}, {self.canary}, "
            f"{self.observe}{extra})"
        )

    def params(self) -> dict[str, Any]:
        """The constructor parameters, JSON-ready (``dataset`` as its name)."""
        out: dict[str, Any] = {
            "model": self.model,
            "dataset": self.dataset_name,
            "sigma": self.sigma,
            "steps": self.steps,
        }
        if self.sampling == "poisson":
            out["rate"] = self.rate
        else:
            out["batch_size"] = self.batch_size
        out.update(
            clip=self.clip,
            learning_rate=self.learning_rate,
            sampling=self.sampling,
            canary=self.canary,
            observe=self.observe,
        )
        if self.model == "mlp":
            out["hidden"] = self.hidden
        out["seed"] = self.seed
        if self.canary_every > 1:
            out["canary_every"] = self.canary_every
        if self.init != "default":
            out["init"] = self.init
        return out

    # ------------------------------------------------------------------ theory
    @property
    def accountant(self) -> Composed:
        """The ``T``-fold subsampled Gaussian mechanism in units of ``C`` (module docstring).

        With Poisson and fixed-size batches it is also the exact law of the
        ``observe="updates"`` outputs on the records' canary coefficients (a canary inserted at
        every step), which is why :meth:`log_density` delegates to it. With shuffled batches it
        is the bound ``Composed(Gaussian(sigma, 2), ceil(T / b))`` of the module docstring.
        """
        cached = self.__dict__.get("_accountant")
        if cached is None:
            base = Gaussian(self.sigma, 1.0)
            if self.sampling == "poisson":
                step: Mechanism = PoissonSubsampled(base, self.rate)
            elif self.sampling == "fixed":
                step = FixedSizeSubsampled(base, self.batch_size, self.dataset.n)
            else:
                epochs = -(-self.steps // self.batches)
                cached = self.__dict__["_accountant"] = Composed(Gaussian(self.sigma, 2.0), epochs)
                return cached
            cached = self.__dict__["_accountant"] = Composed(step, self.steps)
        return cached

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """The accountant's methods, ``pld``, ``rdp``, ``berry_esseen``, ``gdp_clt`` (and
        ``exact`` for ``T = 1``); with shuffled batches ``pld`` and ``rdp`` (bounds: the
        Gaussian composition is not the exact curve there); then ``last_iterate``."""
        acc = self.accountant
        methods = acc.theory_methods
        if self.sampling == "shuffled":
            methods = tuple(m for m in methods if m in ("pld", "rdp"))
        out: dict[str, Callable[[], PrivacyProfile]] = {
            m: (lambda m=m: acc.theory(m)) for m in methods
        }
        out["last_iterate"] = self.last_iterate
        return out

    def schedule(self) -> Schedule:
        """When the canary is inserted and how batches are drawn
        (:class:`~dpaudit.mechanisms.dirac.Schedule`)."""
        return Schedule(
            steps=self.steps,
            every=self.canary_every,
            sampling=self.sampling,
            rate=self.rate,
            batch_size=self.batch_size or 0,
            batches=self.batches,
        )

    def last_iterate(self) -> PLD:
        """The exact privacy curve of the final model for the Dirac canary: the PLD of the final
        canary coordinate's laws on the worst-case Dirac pair (:meth:`worst_case_pair` with
        ``canary="dirac"``), both orders, certified like the accountant's
        (:func:`dpaudit.bounds.pld.last_iterate`; shuffled batches:
        :func:`dpaudit.bounds.pld.gaussian_mixture` of the law of
        :func:`~dpaudit.mechanisms.dirac.final_law`). A prediction, not a bound, for other
        canaries and losses."""
        inserted = self.schedule().inserted
        label = f"last iterate of {self.name}"
        if self.sampling == "poisson":
            out = pld_lib.last_iterate(self.sigma, self.steps, rate=self.rate, insertions=inserted)
        elif self.sampling == "fixed":
            rate = self.batch_size / self.dataset.n
            out = pld_lib.last_iterate(
                self.sigma, self.steps, rate=rate, sensitivity=2.0, insertions=inserted
            )
        else:
            law = self._final_law(self._dirac_pair().d_prime[:, -1])
            atoms, weights = law.pmf()
            out = pld_lib.gaussian_mixture(atoms - law.offset, weights, sigma=law.noise)
        out.name = label
        return out

    def _final_law(self, c: np.ndarray) -> FinalLaw:
        """The law of the canary statistic ``u`` on records with canary coefficients ``c``."""
        return final_law(np.asarray(c, dtype=float), self.schedule(), self.sigma)

    def pld(self, step: float | None = None) -> PLD:
        """The accountant's privacy loss distribution (:meth:`Composed.pld`), so that a
        composition of DP-SGD runs with other mechanisms convolves it like any other."""
        return self.accountant.pld(step=step)

    def rdp(self, orders: object = None) -> RDPCurve:
        """The accountant's RDP curve (:meth:`Composed.rdp`)."""
        return self.accountant.rdp(orders=orders)

    # ------------------------------------------------------------------ data and canaries
    def canary_record(self) -> np.ndarray:
        """The target record of :meth:`worst_case_pair` (record layout of
        :mod:`dpaudit.mechanisms.datasets`)."""
        if self.canary == "dirac":
            return dirac_canary(self.dataset.dim, 1.0)
        return input_canary(self.dataset)

    def worst_case_pair(self) -> NeighbouringPair:
        """The canary pair audited by default.

        - Poisson (``add_remove``): ``D`` is the dataset, ``D_prime`` the dataset plus the canary.
          With the Dirac canary the updates along ``theta_c`` are ``N(0, sigma^2)`` against
          ``(1 - q) N(0, sigma^2) + q N(1, sigma^2)`` per step: the dominating pair itself.
        - Fixed size, input canary (``replace_one``): the last example replaced by the canary.
        - Fixed size, Dirac canary: every record a Dirac canary with coefficient ``-1`` in ``D``,
          the last one ``+1`` in ``D_prime``. Then ``y_t`` is ``N(-m, sigma^2)`` against
          ``(1 - p) N(-m, sigma^2) + p N(2 - m, sigma^2)``, the dominating pair of the
          replace-one bound (shift ``2C``), attained exactly. With ordinary records in the
          dataset ``D``'s updates would be a mixture too, and the pair less distinguishable.
        - Shuffled (``add_remove``), input canary: the dataset, and the dataset plus the canary.
        - Shuffled, Dirac canary: every record a Dirac canary with coefficient ``-1`` in ``D``,
          and ``D_prime`` adds one with ``+1``. Every batch of ``D`` sums to ``-m``; in
          ``D_prime`` the added record takes a slot of a ``-1`` record, so its batch sums to
          ``2 - m``: the shift ``2C`` of the bound, at exactly one step per epoch (or none, when
          it sits the epoch out).
        """
        if self.canary == "dirac":
            return self._dirac_pair()
        name = self.dataset_name
        return self._pair(
            self.dataset.records(),
            self.canary_record(),
            f"{name} vs {name} plus the input canary",
            f"{name}: last example vs the input canary",
        )

    def _dirac_pair(self) -> NeighbouringPair:
        """The worst-case pair of the Dirac canary (:meth:`worst_case_pair`), whatever
        :attr:`canary` says: the pair of the :meth:`last_iterate` curve."""
        records = self.dataset.records()
        target = dirac_canary(self.dataset.dim, 1.0)
        if self.sampling == "poisson":
            name = self.dataset_name
            return self._pair(records, target, f"{name} vs {name} plus the dirac canary", "")
        records[:, -1] = -1.0
        every = "every record a Dirac canary with coefficient -1"
        return self._pair(
            records, target, f"{every}; plus one with +1", f"{every}; the last one -1 vs +1"
        )

    def _pair(
        self, records: np.ndarray, target: np.ndarray, added: str, replaced: str
    ) -> NeighbouringPair:
        """``records`` against ``records`` plus ``target`` (add/remove: Poisson and shuffled
        batches, description ``added``), or with the last record replaced by ``target``
        (fixed-size batches, replace-one, description ``replaced``)."""
        if self.sampling != "fixed":
            return NeighbouringPair(
                records, np.vstack([records, target]), "add_remove", description=added
            )
        d_prime = records.copy()
        d_prime[-1] = target
        return NeighbouringPair(records, d_prime, "replace_one", description=replaced)

    def output_shape(self, dataset: np.ndarray) -> tuple[int, ...]:
        """``(P,)`` for ``observe="final"``, ``(T,)`` for ``observe="updates"``, ``(1,)`` for
        ``observe="final_canary"``."""
        return {"final": (self.n_params,), "updates": (self.steps,), "final_canary": (1,)}[
            self.observe
        ]

    def _records(self, dataset: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x, y, c = split_records(dataset, self.dataset.dim)
        if self.sampling == "fixed" and x.shape[0] != self.dataset.n:
            raise ValueError(
                f"dataset must hold exactly n={self.dataset.n} records with fixed-size "
                f"batches (replace-one), got {x.shape[0]}"
            )
        if self.sampling == "shuffled" and x.shape[0] < self.batches * self.batch_size:
            raise ValueError(
                f"dataset must hold at least {self.batches * self.batch_size} records to fill "
                f"{self.batches} shuffled batches of {self.batch_size}, got {x.shape[0]}"
            )
        return x, y, c

    def final_canary_scale(self) -> float:
        """``lr C / B``: the final canary coordinate is ``theta_c(0) - scale * u``
        (:mod:`dpaudit.mechanisms.dirac`)."""
        return self.learning_rate * self.clip / self.batch_scale

    # ------------------------------------------------------------------ training
    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """Train ``size`` models on ``dataset`` (float64 outputs, see :meth:`output_shape`).

        ``dataset`` is a record array ``(n, k + 2)`` (:mod:`dpaudit.mechanisms.datasets`); with
        fixed-size batches it must hold exactly the mechanism's ``n`` records. With
        ``observe="final_canary"`` nothing is trained: the final canary coordinate is drawn from
        its exact law on the dataset's canary coefficients (:mod:`dpaudit.mechanisms.dirac`).
        """
        size = check_size(size)
        rng = check_rng(rng)
        x, y, c = self._records(dataset)
        if self.observe == "final_canary":
            u = self._final_law(c).sample(size, rng)
            start = self.initial_params()[-1]
            return (start - self.final_canary_scale() * u)[:, None]
        # runs are independent: train them in groups that keep one step's arrays small
        width = {"poisson": x.shape[0] * self.rate, "fixed": self.batch_size}.get(
            self.sampling,
            float(x.shape[0]),  # shuffled: a permutation of every record per run
        )
        group = max(1, int(self._model.pairs_per_step // max(width, 1.0)))
        parts = [
            self._train(x, y, c, min(group, size - first), rng)
            for first in range(0, max(size, 1), group)
        ]
        return np.concatenate([part[0 if self.observe == "final" else 1] for part in parts])

    def _train(
        self,
        x: np.ndarray,
        y: np.ndarray,
        c: np.ndarray,
        size: int,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Final parameters ``(size, P)`` and canary-coordinate updates ``(size, T)``."""
        n, p = x.shape[0], self.n_params
        theta = np.tile(self.initial_params(), (size, 1))
        updates = np.empty((self.steps, size))
        if size == 0:
            return theta, updates.T
        design = self._model.design(x)
        sq = np.einsum("ij,ij->i", x, x) + 1.0
        noise_scale = self.sigma * self.clip
        step_size = self.learning_rate / self.batch_scale
        width = n * self.rate if self.sampling == "poisson" else self.batch_size
        block = max(1, min(self.steps, int(_BLOCK_ENTRIES // (size * max(width, 1.0)))))
        noise = np.empty((size, p))
        inserted = self.schedule().insertions()
        shuffle: dict[str, Any] = {}
        for first in range(0, self.steps, block):
            steps = min(block, self.steps - first)
            batches = self._batches(rng, first, steps, size, n, c, shuffle)
            for s, (run, rec, canary) in enumerate(batches):
                ordinary = ~canary
                if ordinary.all():
                    grad = self._sum_gradients(theta, run, rec, design, y, sq)
                else:
                    grad = self._sum_gradients(theta, run[ordinary], rec[ordinary], design, y, sq)
                    if inserted[first + s]:
                        grad[:, -1] = self.clip * np.bincount(
                            run[canary], weights=c[rec[canary]], minlength=size
                        )
                grad += rng.standard_normal((size, p), out=noise) * noise_scale
                updates[first + s] = grad[:, -1]
                grad *= step_size
                theta -= grad
        return theta, np.ascontiguousarray(updates.T) / self.clip

    def _sum_gradients(
        self,
        theta: np.ndarray,
        run: np.ndarray,
        rec: np.ndarray,
        design: np.ndarray,
        y: np.ndarray,
        sq: np.ndarray,
    ) -> np.ndarray:
        """Clipped gradient sums of ordinary examples per run, ``(S, P)``."""
        if run.size == 0:
            return np.zeros_like(theta)
        pairs = _Pairs(run, np.take(design, rec, axis=0), np.take(y, rec), np.take(sq, rec))
        return self._model.gradient_sums(theta, pairs, self.clip)

    def _batches(
        self,
        rng: np.random.Generator,
        first: int,
        steps: int,
        size: int,
        n: int,
        c: np.ndarray,
        shuffle: dict[str, Any],
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The batches of steps ``first, ..., first + steps - 1`` of ``size`` runs: per step the
        sampled (run, record) pairs sorted by run, and which of them are Dirac canaries.

        Shuffled batches cut the epoch's permutations, which ``shuffle`` keeps from one call to
        the next (``"epoch"``, ``"order"``: one permutation of the ``n`` records per run)."""
        if self.sampling == "shuffled":
            m, b = self.batch_size, self.batches
            run = np.repeat(np.arange(size), m)
            out = []
            for step in range(first, first + steps):
                epoch, j = divmod(step, b)
                if shuffle.get("epoch") != epoch:
                    shuffle["epoch"] = epoch
                    shuffle["order"] = rng.permuted(np.tile(np.arange(n), (size, 1)), axis=1)
                rec = shuffle["order"][:, j * m : (j + 1) * m].ravel()
                out.append((run, rec, c[rec] != 0.0))
            return out
        if self.sampling == "fixed":
            chosen = _fixed_batches(rng, self.batch_size, n, (steps, size))
            canary = c[chosen] != 0.0
            run = np.repeat(np.arange(size), self.batch_size)
            return [(run, chosen[s].ravel(), canary[s].ravel()) for s in range(steps)]
        cells = _poisson_cells(rng, self.rate, steps * size * n)
        group = cells // max(n, 1)  # step * size + run
        rec = cells - group * n
        canary = c[rec] != 0.0
        bounds = np.searchsorted(group, np.arange(steps + 1) * size)
        return [
            (group[a:b] - s * size, rec[a:b], canary[a:b])
            for s, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))
        ]

    # ------------------------------------------------------------------ on a device
    def runs_on_device(self) -> bool:
        """Whether :meth:`torch_sample` applies: Poisson sampling (fixed-size and shuffled
        batches have no device sampler), either model, ``observe="final"`` or ``"updates"``."""
        return (
            super().runs_on_device()
            and self.sampling == "poisson"
            and self.observe != "final_canary"
        )

    def torch_sample(
        self, dataset: np.ndarray, sizes: Sequence[int], generators: Sequence[Any]
    ) -> Any:
        """The device twin of :meth:`sample` (Poisson sampling): ``sum(sizes)`` trainings as one
        float64 tensor of outputs (:meth:`output_shape`) on the generators' device.

        Block ``i`` (``sizes[i]`` runs) is trained alone on randomness from ``generators[i]``
        alone, so its outputs never depend on the blocks trained with it. The training is
        :meth:`sample`'s, in float64 on the device; batches are drawn as there, as the
        cumulative sums of geometric gaps between sampled records, one row per (step, run).
        """
        import torch

        x, y, c = self._records(dataset)
        device = generators[0].device
        data = self._torch_data(x, y, c, device)
        parts = [
            self._torch_train(data, size, generator)
            for size, generator in zip(sizes, generators, strict=True)
        ]
        return torch.cat(parts)

    def _torch_data(self, x: np.ndarray, y: np.ndarray, c: np.ndarray, device: Any) -> Any:
        """One row per record on ``device``: its design row, label, ``sq`` and canary
        coefficient side by side (one gather per step fetches them all), and one row more, the
        empty slot of padded batches (all 0, so ``sq = 0``). Dirac canaries have ``sq = 0`` too:
        they only move the canary coordinate, by their coefficient."""
        import torch

        ordinary = c == 0.0
        design = self._model.design(x)
        table = np.zeros((x.shape[0] + 1, design.shape[1] + 3))
        table[:-1, :-3] = design
        table[:-1, -3] = np.where(ordinary, y, 0.0)
        table[:-1, -2] = np.where(ordinary, np.einsum("ij,ij->i", x, x) + 1.0, 0.0)
        table[:-1, -1] = c
        return torch.as_tensor(table, dtype=torch.float64, device=device)

    def _torch_train(self, data: Any, size: int, generator: Any) -> Any:
        """Outputs of ``size`` runs trained on ``data`` (:meth:`_torch_data`) with randomness
        from ``generator``: per block of steps the batches, then per step the noise."""
        import torch

        n, p, columns = data.shape[0] - 1, self.n_params, data.shape[1]
        device = generator.device
        initial = torch.as_tensor(self.initial_params(), dtype=torch.float64, device=device)
        theta = initial.expand(size, p).clone()
        updates = torch.empty((size, self.steps), dtype=torch.float64, device=device)
        if size == 0:
            return theta if self.observe == "final" else updates
        noise = torch.empty((size, p), dtype=torch.float64, device=device)
        expected = n * self.rate
        width = int(expected + 5.0 * math.sqrt(expected) + 5)
        block = max(1, min(self.steps, _DEVICE_BLOCK_ENTRIES // max(1, size * width)))
        step_size = self.learning_rate / self.batch_scale
        inserted = self.schedule().insertions()
        for first in range(0, self.steps, block):
            steps = min(block, self.steps - first)
            batches = _torch_poisson_batches(generator, self.rate, n, (steps, size), width)
            for s in range(steps):
                picked = data.index_select(0, batches[s].reshape(-1)).view(size, -1, columns)
                grad = self._model.torch_gradient_sums(
                    theta, picked[..., :-3], picked[..., -3], picked[..., -2], self.clip
                )
                if inserted[first + s]:
                    grad[:, -1] = self.clip * picked[..., -1].sum(dim=1)
                grad += noise.normal_(0.0, self.sigma * self.clip, generator=generator)
                updates[:, first + s] = grad[:, -1]
                theta -= grad.mul_(step_size)
        return theta if self.observe == "final" else updates.div_(self.clip)

    def torch_log_density(self, dataset: np.ndarray, outputs: Any) -> Any:
        """The device twin of :meth:`log_density` for ``observe="updates"`` with the canary at
        every step: the accountant's step density on the records' canary coefficients, summed
        over the steps; float64 ``(size,)``."""
        if self.observe != "updates" or self.canary_every > 1:
            raise NotImplementedError(
                f"{self.name}: only observe='updates' with the canary at every step has a "
                "device log density"
            )
        import torch

        _, _, c = self._records(dataset)
        step = self.accountant.base
        # A few runs at a time: the mixture's temporaries hold several values per output value.
        runs = max(1, _DEVICE_BLOCK_ENTRIES // self.steps)
        parts = [
            step.torch_log_density(c, block.reshape(-1)).reshape(-1, self.steps).sum(dim=1)
            for block in outputs.split(runs)
        ]
        return torch.cat(parts)

    def ratio_on_device(self) -> bool:
        """Whether the likelihood ratio scores on a device: ``observe="updates"`` with the
        canary at every step (the final model's density has no device twin) and a step density
        with its device twin."""
        if self.observe != "updates" or self.canary_every > 1 or self.sampling == "shuffled":
            return False
        step = self.accountant.base
        return (
            super().ratio_on_device()
            and has_twin(step, "log_density", "torch_log_density")
            and step.runs_on_device()
        )

    # ------------------------------------------------------------------ densities and losses
    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Exact log density of the outputs on ``dataset``, shape ``(size,)``.

        - ``observe="updates"``: ``y_t = g_t sum_{i in B_t} c_i + sigma xi_t``
          (:mod:`dpaudit.mechanisms.dirac`). Poisson and fixed-size batches draw the steps
          independently, so at the insertion steps this is the accountant's step density on the
          records' canary coefficients ``c_i`` (a mixture over which Dirac records the batch
          holds) and ``N(0, sigma^2)`` elsewhere; shuffled batches tie the steps of an epoch
          together (:func:`~dpaudit.mechanisms.dirac.shuffled_updates_log_density`). Ordinary
          records (``c_i = 0``) never move ``y_t``.
        - ``observe="final"`` and ``"final_canary"``: the density of the final canary
          coordinate, a lattice mixture of normals (:class:`~dpaudit.mechanisms.dirac.FinalLaw`).
          No other coordinate depends on a Dirac record; with ordinary records, Poisson batches
          draw them independently of the Dirac records and fixed-size pairs replace one Dirac
          record by another, so the ratio of two such densities is the likelihood ratio of the
          whole final model. With shuffled batches an added record takes an ordinary record's
          slot, and the ratio is the likelihood ratio of the canary coordinate alone (the
          worst-case Dirac pair has no ordinary record).

        Datasets whose law is not covered (the mixture would run over subsets of Dirac records;
        :mod:`dpaudit.mechanisms.dirac`) raise ``NotImplementedError``; so do final models with
        the input canary, whose law is unknown.
        """
        _, _, c = self._records(dataset)
        if self.observe == "updates":
            y = check_outputs(outputs, (self.steps,))
            return self._updates_log_density(c, y)
        if self.canary != "dirac":
            raise NotImplementedError(
                f"{self.name}: the law of the final model is unknown for the input canary; "
                "the Dirac canary's final coordinate has one"
            )
        law = self._final_law(c)
        theta = check_outputs(outputs, self.output_shape(dataset))[:, -1]
        scale = self.final_canary_scale()
        u = (self.initial_params()[-1] - theta) / scale
        return law.log_density(u) - math.log(scale)

    def _updates_log_density(self, c: np.ndarray, y: np.ndarray) -> np.ndarray:
        """:meth:`log_density` of ``observe="updates"`` outputs ``y`` (``(size, T)``)."""
        schedule = self.schedule()
        if self.sampling == "shuffled":
            return shuffled_updates_log_density(c, y, schedule, self.sigma)
        if self.canary_every == 1:
            return self.accountant.log_density(c, y)
        inserted = schedule.insertions()
        step = self.accountant.base
        at = y[:, inserted]
        out = step.log_density(c, at.reshape(-1)).reshape(at.shape).sum(axis=1)
        rest = y[:, ~inserted] / self.sigma
        return out - (0.5 * rest**2 + 0.5 * math.log(2.0 * math.pi) + math.log(self.sigma)).sum(
            axis=1
        )

    def gradients(
        self, params: np.ndarray, dataset: np.ndarray, clipped: bool = True
    ) -> np.ndarray:
        """Per-example gradients of every record's loss at ``params`` (shape ``(P,)``), clipped
        to norm ``C`` unless ``clipped=False``: shape ``(n, P)``. Dirac canaries give
        ``c C e_c``; ordinary examples have 0 in the canary coordinate."""
        theta = self._params(params)
        if theta.shape[0] != 1:
            raise ValueError(f"params must be one parameter vector, got shape {np.shape(params)}")
        x, y, c = split_records(dataset, self.dataset.dim)
        out = np.zeros((x.shape[0], self.n_params))
        ordinary = np.flatnonzero(c == 0.0)
        if ordinary.size:
            x = x[ordinary]
            pairs = _Pairs(
                np.arange(ordinary.size),
                self._model.design(x),
                y[ordinary],
                np.einsum("ij,ij->i", x, x) + 1.0,
            )
            out[ordinary] = self._model.gradient_sums(
                np.repeat(theta, ordinary.size, axis=0), pairs, self.clip if clipped else math.inf
            )
        out[:, -1] = self.clip * c
        return out

    def loss(self, params: np.ndarray, record: np.ndarray) -> np.ndarray:
        """Loss of one ``record`` under each parameter vector, shape ``(size,)``.

        ``params`` has shape ``(size, P)`` (or ``(P,)``). Ordinary record: the logistic loss
        ``log(1 + e^z) - y z`` of its logit ``z``. Dirac canary: ``c C theta_c``.
        """
        theta = self._params(params)
        x, y, c = split_records(
            np.reshape(np.asarray(record, dtype=float), (1, -1)), self.dataset.dim
        )
        if c[0] != 0.0:
            return self.clip * c[0] * theta[:, -1]
        row = self._model.design(x)
        z = self._model.logits(theta, np.broadcast_to(row, (theta.shape[0], row.shape[1])))
        return np.logaddexp(0.0, z) - y[0] * z

    def torch_loss(self, params: Any, record: np.ndarray) -> Any:
        """The device twin of :meth:`loss`: the loss of one ``record`` under each parameter
        vector of the float64 tensor ``params`` (``(size, P)``), shape ``(size,)``."""
        import torch

        x, y, c = split_records(
            np.reshape(np.asarray(record, dtype=float), (1, -1)), self.dataset.dim
        )
        if c[0] != 0.0:
            return self.clip * c[0] * params[:, -1]
        row = torch.as_tensor(self._model.design(x), dtype=torch.float64, device=params.device)
        z = self._model.torch_logits(params, row.expand(params.shape[0], -1))
        return torch.logaddexp(torch.zeros_like(z), z) - y[0] * z

    def membership_loss(self, pair: NeighbouringPair) -> Callable[[np.ndarray], np.ndarray]:
        """The statistic of :class:`~dpaudit.attacks.MembershipInference` on final models: the
        loss of the pair's target record, ``outputs (size, P) -> (size,)``.

        The target is the record ``D_prime`` holds and ``D`` does not (the added or the
        replacing record). When only ``D`` holds an extra record (an add/remove pair given in
        the other order) the statistic is minus its loss, so that a small value still means
        "``D_prime``". Needs ``observe="final"``.
        """
        if self.observe != "final":
            raise ValueError(
                f"membership_loss needs final models (observe='final'), got {self.observe!r}"
            )
        if not isinstance(pair, NeighbouringPair):
            raise ValueError(f"pair must be a NeighbouringPair, got {type(pair).__name__}")
        extra = _extra_rows(pair.d_prime, pair.d)
        if extra.shape[0] == 1:
            return TargetLoss(self, extra[0], 1.0)
        missing = _extra_rows(pair.d, pair.d_prime)
        if extra.shape[0] == 0 and missing.shape[0] == 1:
            return TargetLoss(self, missing[0], -1.0)
        raise ValueError(
            "pair must differ in exactly one record (the target); got "
            f"{extra.shape[0]} records only in d_prime and {missing.shape[0]} only in d"
        )

    def _params(self, params: object) -> np.ndarray:
        theta = np.asarray(params, dtype=float)
        if theta.ndim == 1:
            theta = theta[None, :]
        if theta.ndim != 2 or theta.shape[1] != self.n_params:
            raise ValueError(
                f"params must have shape (size, {self.n_params}) or ({self.n_params},), "
                f"got {np.shape(params)}"
            )
        if np.isnan(theta).any():
            raise ValueError("params must not contain NaN")
        return theta


def _extra_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rows of ``a`` not matched by a row of ``b`` (multiset difference, rows as records)."""
    a = np.atleast_2d(np.asarray(a, dtype=float))
    b = np.atleast_2d(np.asarray(b, dtype=float))
    if b.size == 0 or a.shape[1] != b.shape[1]:
        return a
    values, inverse, counts = np.unique(
        np.vstack([a, b]), axis=0, return_inverse=True, return_counts=True
    )
    inverse = inverse.ravel()
    in_a = np.bincount(inverse[: a.shape[0]], minlength=values.shape[0])
    in_b = counts - in_a
    surplus = np.maximum(in_a - in_b, 0)
    return np.repeat(values, surplus, axis=0)


class TargetLoss:
    """``outputs -> sign * mechanism.loss(outputs, record)``: the picklable statistic that
    :meth:`DPSGD.membership_loss` returns (``sign`` is +1, or -1 for a pair given in the other
    order)."""

    def __init__(self, mechanism: DPSGD, record: np.ndarray, sign: float) -> None:
        self.mechanism = mechanism
        self.record = record
        self.sign = sign

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        """The statistic of every output, shape ``(size,)``."""
        return self.sign * self.mechanism.loss(outputs, self.record)

    def torch_call(self, outputs: Any) -> Any:
        """The device twin of :meth:`__call__` on a float64 tensor of final models."""
        return self.sign * self.mechanism.torch_loss(outputs, self.record)
