"""Every random stream dpaudit derives from a user's seed, in one table.

Chunk ``i`` of stream ``s`` draws from ``SeedSequence(seed, spawn_key=(STREAMS[s], i))``
(:func:`chunk_generator`), so a result depends on the seed, the sizes and nothing else (not the
number of workers). Generators that are not cut into chunks mix a tag of :data:`TAGS` into the
entropy, ``SeedSequence([seed, TAGS[name], ...])``, which can never equal a spawned stream.
A new stream or tag gets a new number here; numbers are never reused, so that old seeds keep
reproducing old results.

A torch device cannot run numpy's generators: there chunk ``i`` of stream ``s`` draws from a
torch generator seeded by :func:`chunk_seeds` (the same ``SeedSequence`` spawn key), so device
results too depend on the seed and the sizes only, never on how chunks are grouped.

Randomness that belongs to an object's own ``seed`` parameter rather than to an audit's seed
draws from ``default_rng(seed)`` (the same generator as ``SeedSequence(seed)``): the synthetic
datasets, DP-SGD's data and start, the one-run simulation, the selection split of ``dpaudit
scores`` and the cross-validation splits of the learned attack. An object that needs several
independent generators from its own seed takes them from :data:`OBJECT_STREAMS` through
:func:`object_generator`.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "OBJECT_STREAMS",
    "STREAMS",
    "TAGS",
    "chunk_generator",
    "derived_seed",
    "MAX_SEEDED_CHUNKS",
    "chunk_seeds",
    "object_generator",
]

#: Stream ids of ``spawn_key=(id, chunk)``: the engine's fit sample, pilot, selection and
#: evaluation trials, output-shape probe and timing draws; the accountant audit's two orders of
#: the pair and its probe; the root seed of each phase of a sequential audit on each pair
#: (:func:`dpaudit.audit.engine.audit_sequential`, by :func:`derived_seed`). Id 19 seeded the
#: fixed looks of ``assert_private`` before it became sequential; it is retired, never reused.
STREAMS = {
    "fit": 0,
    "pilot": 1,
    "selection": 2,
    "evaluation": 3,
    "probe": 4,
    "timing": 5,
    "accountant_d_d_prime": 16,
    "accountant_d_prime_d": 17,
    "accountant_probe": 18,
    "sequential_phase": 20,
}

#: Entropy tags: the learned attack's extra training outputs (``"learn"``), the pilot audits
#: of the pair search (``"pilot"``), and a one-run audit's random halves (``"split"``), order
#: among tied scores (``"ties"``) and thinning of its pools (``"thin"``), as ASCII.
TAGS = {
    "learned_training": 0x6C6561726E,
    "pair_search_pilot": 0x70696C6F74,
    "one_run_split": 0x73706C6974,
    "one_run_ties": 0x74696573,
    "one_run_thinning": 0x7468696E,
}


#: Stream ids of ``spawn_key=(id,)`` under an object's own ``seed`` (never an audit's seed):
#: :class:`~dpaudit.mechanisms.NoisyMean`'s population, dataset and reference records.
OBJECT_STREAMS = {
    "noisy_mean_population": 0,
    "noisy_mean_data": 1,
    "noisy_mean_reference": 2,
}


def object_generator(seed: int, stream: str) -> np.random.Generator:
    """The generator of ``stream`` (a key of :data:`OBJECT_STREAMS`) under an object's seed."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(OBJECT_STREAMS[stream],)))


def chunk_generator(seed: int, stream: str, chunk: int) -> np.random.Generator:
    """The generator of chunk ``chunk`` of ``stream`` (a key of :data:`STREAMS`)."""
    ss = np.random.SeedSequence(seed, spawn_key=(STREAMS[stream], int(chunk)))
    return np.random.default_rng(ss)


def derived_seed(seed: int, stream: str, *key: int) -> int:
    """A 128-bit root seed for a whole audit run as part of a larger design (a look of a
    sequential test on one pair): the entropy of ``SeedSequence(seed, spawn_key=(STREAMS[stream],
    *key))``, so distinct keys give independent audits and never one of ``seed``'s own chunks."""
    ss = np.random.SeedSequence(seed, spawn_key=(STREAMS[stream], *(int(k) for k in key)))
    words = ss.generate_state(4, dtype=np.uint32)
    return sum(int(w) << (32 * i) for i, w in enumerate(words))


#: Most chunks per stream :func:`chunk_seeds` keeps apart in its low 32 bits (``2^27``; stream
#: ids stay below ``2^5``).
MAX_SEEDED_CHUNKS = 2**27


def chunk_seeds(seed: int, stream: str, chunks: range) -> list[int]:
    """The 64-bit seeds of torch generators for chunks ``chunks`` of ``stream``.

    For chunk ``i`` the high 32 bits are the first word of ``SeedSequence(seed,
    spawn_key=(STREAMS[stream], i))``, as for :func:`chunk_generator`. The low 32 bits are the
    first word of ``SeedSequence(seed)`` XOR ``STREAMS[stream] * 2^27 + i``: distinct for every
    chunk of every stream of one seed, so that even a generator that keeps only the low 32 bits
    of its seed (torch's CPU Mersenne Twister) never runs two chunks of an audit on the same
    stream. CUDA's Philox generator keys on all 64 bits.
    """
    if chunks.step != 1 or not 0 <= chunks.start <= chunks.stop <= MAX_SEEDED_CHUNKS:
        raise ValueError(
            f"chunks must be a range of step 1 within [0, {MAX_SEEDED_CHUNKS}], got {chunks}"
        )
    base = int(np.random.SeedSequence(seed).generate_state(1, np.uint32)[0])
    seeds = []
    for chunk in chunks:
        spawned = np.random.SeedSequence(seed, spawn_key=(STREAMS[stream], chunk))
        high = int(spawned.generate_state(1, np.uint32)[0])
        seeds.append((high << 32) | (base ^ (STREAMS[stream] * MAX_SEEDED_CHUNKS + chunk)))
    return seeds
