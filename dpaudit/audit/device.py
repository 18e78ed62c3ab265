"""The engine's draws, scores and counts on a PyTorch device
(``audit_mechanism(..., device="cuda")``).

The audit is the same as on numpy (:mod:`dpaudit.audit.engine`): the same pilot, score grid,
selection and evaluation streams and the same statistics; only where the trials are drawn and
counted changes.

- **Streams**: chunk ``i`` of stream ``s`` draws from a torch generator on the device seeded
  by :func:`~dpaudit._core.streams.chunk_seeds`; it draws the chunk's outputs
  under ``D``, then under ``D_prime``. Chunks are larger than on numpy
  (:func:`default_chunk_size`, about ``2^22`` values) so that the device is busy between two
  calls from Python. The numbers differ from numpy's (another generator), their law does not.
- **Batches**: a batch is a group of consecutive chunks drawn into one tensor per dataset,
  scored (the attack's ``torch_score``), binned on the audit's grid
  (:meth:`~dpaudit.audit.grid.ScoreGrid.torch_locate`) and counted on the device; only the
  counts come back. On CUDA a batch fills at most :data:`MEMORY_FRACTION` of the free device
  memory (``torch.cuda.mem_get_info``), on the CPU it holds :data:`CPU_BATCH_VALUES` values.
  Every chunk draws from its own generator, so the counts, integers summed exactly, do not
  depend on the batch size: a result is reproducible on the same device and software.
- **Float64** throughout: outputs, scores and binning (float32 normals on CUDA end near
  6.7 sigma, which would cut the tails that tight ``eps`` bounds are made of).

Only reference mechanisms with a ``torch_sample`` twin (Gaussian, Laplace, randomized response,
Poisson-subsampled Gaussian and Laplace, DP-SGD with Poisson batches) and attacks with a
``torch_score`` twin (the likelihood ratio of those mechanisms, the threshold attack, membership
inference on DP-SGD's final models) run here; anything else is refused before anything is drawn
(:func:`check_support`), never run on numpy halfway through.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit._core.device import torch_generators
from dpaudit._core.streams import MAX_SEEDED_CHUNKS
from dpaudit.audit.limits import SMALLEST_CHUNK

__all__ = [
    "CHUNK_VALUES",
    "CPU_BATCH_VALUES",
    "MEMORY_FRACTION",
    "BYTES_PER_VALUE",
    "default_chunk_size",
    "check_support",
    "check_chunks",
    "batch_chunks",
    "pilot_scores",
    "tally",
]

#: Output values per chunk and dataset (chunk size = this / values per output, a power of two).
CHUNK_VALUES = 2**22

#: Output values per batch and dataset on the CPU.
CPU_BATCH_VALUES = 2**23

#: Largest fraction of the free CUDA memory one batch may fill.
MEMORY_FRACTION = 0.5

#: Device bytes a batch holds per output value at its peak (the outputs and the sampler's
#: float64 temporaries), and per trial besides (score, bin position, bin index).
BYTES_PER_VALUE = 24
_BYTES_PER_TRIAL = 32


def default_chunk_size(values_per_output: int) -> int:
    """Trials per chunk on a device: about :data:`CHUNK_VALUES` values, as a power of two of at
    least ``SMALLEST_CHUNK``."""
    target = max(CHUNK_VALUES // max(1, values_per_output), 1)
    return int(max(SMALLEST_CHUNK, 2 ** int(math.floor(math.log2(target)))))


def check_support(mechanism: Any, attack: Any, device: str) -> None:
    """Refuse, with one ``ValueError`` naming ``device``, a mechanism or attack that has no
    device twin (``attack=None``: only the mechanism is checked)."""
    name = getattr(mechanism, "name", type(mechanism).__name__)
    ready = getattr(mechanism, "runs_on_device", None)
    if not (callable(ready) and ready()):
        raise ValueError(
            f"device={device!r}: mechanism {name} has no device sampler (torch_sample); "
            "audit it with device=None"
        )
    if attack is not None and not attack.runs_on_device():
        raise ValueError(
            f"device={device!r}: attack {attack.name} on {name} has no device score "
            "(torch_score; learned attacks never do); audit it with device=None"
        )


def check_chunks(chunk_size: int, trials: int) -> None:
    """Refuse a ``chunk_size`` that cuts a stream of ``trials`` into more chunks than the
    seeds keep apart (:data:`~dpaudit._core.streams.MAX_SEEDED_CHUNKS`)."""
    if -(-trials // chunk_size) > MAX_SEEDED_CHUNKS:
        raise ValueError(
            f"chunk_size = {chunk_size:,} cuts {trials:,} trials into more than "
            f"{MAX_SEEDED_CHUNKS:,} chunks, the most a device stream seeds apart; "
            "use a larger chunk_size"
        )


def batch_chunks(target: Any, chunk_size: int, values_per_output: int) -> int:
    """Chunks per batch: as many as :data:`MEMORY_FRACTION` of the free CUDA memory holds
    (``torch.cuda.mem_get_info``), or :data:`CPU_BATCH_VALUES` values on the CPU; at least one."""
    if target.type == "cuda":
        import torch

        free, _ = torch.cuda.mem_get_info(target)
        per_trial = BYTES_PER_VALUE * values_per_output + _BYTES_PER_TRIAL
        trials = int(MEMORY_FRACTION * free) // per_trial
    else:
        trials = CPU_BATCH_VALUES // values_per_output
    return max(1, trials // chunk_size)


def _scores(job: Any, target: Any, stream: str, first: int, n_chunks: int, total: int) -> tuple:
    """Scores under ``D`` and ``D_prime`` of chunks ``first .. first + n_chunks - 1`` of a
    stream of ``total`` trials: each chunk's generator draws under ``D``, then ``D_prime``."""
    import torch

    chunks = range(first, first + n_chunks)
    sizes = [min(job.chunk_size, total - chunk * job.chunk_size) for chunk in chunks]
    generators = torch_generators(target, job.seed, stream, chunks)
    where = f"({stream} chunks {first} to {first + n_chunks - 1})"
    scores = []
    for dataset in (job.pair.d, job.pair.d_prime):
        s = job.attack.torch_score(job.mechanism.torch_sample(dataset, sizes, generators))
        if tuple(s.shape) != (sum(sizes),) or s.dtype != torch.float64:
            raise ValueError(
                f"attack {job.attack.name} must return one float64 score per output, shape "
                f"({sum(sizes)},), got {tuple(s.shape)} {s.dtype} {where}"
            )
        if bool(torch.isnan(s).any()):
            raise ValueError(f"attack {job.attack.name} returned NaN scores {where}")
        scores.append(s)
    return tuple(scores)


def pilot_scores(job: Any, target: Any, trials: int) -> np.ndarray:
    """The pilot scores under both datasets (stream ``"pilot"``), back on the host."""
    n_chunks = -(-trials // job.chunk_size)
    s0, s1 = _scores(job, target, "pilot", 0, n_chunks, trials)
    return np.concatenate([s0.cpu().numpy(), s1.cpu().numpy()])


def tally(
    job: Any, target: Any, stream: str, total: int, per_batch: int, progress: Any
) -> tuple[np.ndarray, np.ndarray | None]:
    """Counts per grid bin (shape ``(2, n_bins)``) of a stream of ``total`` trials per dataset,
    and on stream ``"evaluation"`` with fixed thresholds the counts per gap between them; in
    batches of ``per_batch`` chunks, ``progress.update`` told the trials of each batch."""
    import torch

    fixed = job.fixed_thresholds if stream == "evaluation" else None
    edges = None if fixed is None else torch.as_tensor(fixed, dtype=torch.float64, device=target)
    counts = np.zeros((2, job.grid.n_bins), dtype=np.int64)
    fixed_counts = None if fixed is None else np.zeros((2, fixed.size + 1), dtype=np.int64)
    n_chunks = -(-total // job.chunk_size)
    for first in range(0, n_chunks, per_batch):
        n = min(per_batch, n_chunks - first)
        for side, s in enumerate(_scores(job, target, stream, first, n, total)):
            bins = torch.bincount(job.grid.torch_locate(s), minlength=job.grid.n_bins)
            counts[side] += bins.cpu().numpy()
            if edges is not None:
                below = torch.searchsorted(edges, s, right=False)
                fixed_counts[side] += torch.bincount(below, minlength=fixed.size + 1).cpu().numpy()
        progress.update(min(total, (first + n) * job.chunk_size) - first * job.chunk_size)
    return counts, fixed_counts
