"""Neighbouring pairs, generated: the candidates an audit of foreign code tries.

Every generator returns a list of :class:`~dpaudit.mechanisms.base.NeighbouringPair` for the
relation asked for (``"replace_one"``: one record changed, sizes equal; ``"add_remove"``: one
record more in ``D_prime``), each with a description of what it changes. None calls a mechanism:
they only look at the data and, for the rounding and overflow pairs, at the accumulator the
audited code uses, so their candidates cost nothing to make. Choosing among them with pilot
audits is :func:`dpaudit.audit.pair_search.search_pairs`'s job.

- :func:`record_pairs`: every record position of a given dataset changed to given values.
- :func:`answer_pairs`: every answer pattern of a query vector (report noisy max, sparse vector).
- :func:`boundary_pairs`: datasets of records at the declared bounds, one record moved to the
  other bound (or added at either bound).
- :func:`rounding_pairs`: a search for datasets whose floating-point sum moves most when one
  record changes (Casacuberta et al. 2022, "Widespread underestimation of sensitivity in
  differentially private libraries"): random tries and a bisection on staircases of records at
  the two bounds; the exact change never exceeds the bounds' width, the rounded one may.
- :func:`overflow_pairs`: records at the upper bound, as many as it takes for an integer
  accumulator to wrap around (or saturate) in ``D_prime`` but not in ``D``.
- :func:`special_pairs`: a record that is NaN, an infinity, ``-0.0``, a subnormal or outside
  the bounds, against the record clipping should make of it.
- :func:`random_pairs`: random datasets within the bounds, one random record changed.
- :func:`subsample`: at most ``budget`` of a list of candidates, chosen at random from a seed.

:func:`space_candidates` runs these generators over every setting of a function's declared
input space (:class:`~dpaudit.mechanisms.inputs.InputSpace`: bounds far from zero and down to a
few ulps wide, sizes up to a million, integer and float records, ``epsilon``, special values),
as :class:`~dpaudit.mechanisms.inputs.Candidate` entries, each a setting and a pair made on
demand; :func:`dpaudit.audit.pair_search.search_inputs` screens and confirms them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from dpaudit._core.validation import (
    check_choice,
    check_integer,
    check_positive,
    check_real,
    check_seed,
)
from dpaudit.mechanisms.base import RELATIONS, NeighbouringPair
from dpaudit.mechanisms.inputs import (
    DTYPES,
    SPECIALS,
    Candidate,
    InputSpace,
    Setting,
    shown_number,
)

__all__ = [
    "UNITS",
    "answer_pairs",
    "boundary_pairs",
    "overflow_pairs",
    "random_pairs",
    "record_pairs",
    "rounding_pairs",
    "space_candidates",
    "special_pairs",
    "subsample",
    "unit_pairs",
]


def _records(dataset: object) -> np.ndarray:
    d = np.asarray(dataset, dtype=float)
    if d.ndim not in (1, 2) or not np.isfinite(d).all():
        raise ValueError(
            f"dataset must be a finite array of shape (n,) or (n, d), got shape {d.shape}"
        )
    return d


def record_pairs(
    dataset: object,
    values: Sequence[Any],
    *,
    relation: str = "replace_one",
    random_pairs: int = 0,
    low: float | None = None,
    high: float | None = None,
    seed: int = 0,
) -> list[NeighbouringPair]:
    """Candidate pairs around a dataset of records.

    ``replace_one``: every position replaced by every boundary value in ``values`` (unchanged
    datasets are skipped). ``add_remove``: every record removed (``D`` = dataset without it,
    ``D_prime`` = dataset) and every value in ``values`` added. ``random_pairs`` more pairs replace
    (or add) a random position by a value drawn uniformly from ``[low, high]``.
    """
    check_choice("relation", relation, RELATIONS)
    d = _records(dataset)
    random_pairs = check_integer("random_pairs", random_pairs, minimum=0)
    seed = check_seed("seed", seed)
    vals = [np.asarray(v, dtype=float) for v in values]
    for v in vals:
        if v.shape != d.shape[1:]:
            raise ValueError(
                f"values must be records of shape {d.shape[1:]} like the dataset's, got {v.shape}"
            )
    if random_pairs and (low is None or high is None or not low < high):
        raise ValueError(f"random_pairs needs low < high, got low={low!r}, high={high!r}")
    pairs: list[NeighbouringPair] = []
    n = d.shape[0]
    if relation == "replace_one":
        for i in range(n):
            for v in vals:
                if np.array_equal(d[i], v):
                    continue
                d_prime = d.copy()
                d_prime[i] = v
                pairs.append(NeighbouringPair(d, d_prime, relation, f"record {i} -> {v.tolist()}"))
    else:
        for i in range(n):
            pairs.append(
                NeighbouringPair(np.delete(d, i, axis=0), d, relation, f"record {i} removed")
            )
        for v in vals:
            pairs.append(
                NeighbouringPair(d, np.concatenate([d, v[None]]), relation, f"{v.tolist()} added")
            )
    rng = np.random.default_rng(seed)
    for _ in range(random_pairs):
        v = rng.uniform(low, high, size=d.shape[1:])
        if relation == "replace_one":
            i = int(rng.integers(n))
            d_prime = d.copy()
            d_prime[i] = v
            pairs.append(
                NeighbouringPair(d, d_prime, relation, f"random: record {i} -> {v.tolist()}")
            )
        else:
            pairs.append(
                NeighbouringPair(
                    d, np.concatenate([d, v[None]]), relation, f"random: {v.tolist()} added"
                )
            )
    return pairs


def answer_pairs(k: int, *, base: float = 1.0, shift: float = 1.0) -> list[NeighbouringPair]:
    """Pairs of query-answer vectors of length ``k`` whose entries differ by at most ``shift``
    (the neighbouring notion of report noisy max and sparse vector; Ding et al. 2018, Section
    5.1): all answers up; all down; the first half up and the second down (and the reverse);
    for every position, that answer up and the others down, that answer up alone, that answer
    down alone. The first dataset is always ``[base] * k``."""
    k = check_integer("k", k, minimum=1)
    base = check_real("base", base)
    shift = check_positive("shift", shift)
    a = np.full(k, base)
    patterns: list[tuple[np.ndarray, str]] = [
        (np.full(k, shift), "all up"),
        (np.full(k, -shift), "all down"),
    ]
    if k > 1:
        h = k // 2
        half = np.concatenate([np.full(h, shift), np.full(k - h, -shift)])
        patterns += [(half, "first half up, rest down"), (-half, "first half down, rest up")]
    for i in range(k):
        one = np.zeros(k)
        one[i] = shift
        others = np.full(k, -shift)
        others[i] = shift
        patterns += [
            (one, f"answer {i} up"),
            (-one, f"answer {i} down"),
        ]
        if k > 1:
            patterns.append((others, f"answer {i} up, others down"))
    return [NeighbouringPair(a, a + delta, "replace_one", text) for delta, text in patterns]


def _bounds(low: object, high: object) -> tuple[float, float]:
    lo, hi = check_real("low", low), check_real("high", high)
    if not lo < high:
        raise ValueError(f"low must be below high, got low={lo!r}, high={hi!r}")
    return lo, hi


def _neighbour(
    d: np.ndarray, relation: str, position: int, value: Any, description: str
) -> NeighbouringPair:
    """``d`` against ``d`` with record ``position`` set to ``value`` (``replace_one``) or with
    ``value`` inserted before ``position`` (``add_remove``)."""
    if relation == "replace_one":
        d_prime = d.copy()
        d_prime[position] = value
    else:
        d_prime = np.insert(d, position, value)
    return NeighbouringPair(d, d_prime, relation, description)


def boundary_pairs(
    n: int, low: float, high: float, *, relation: str = "replace_one", integer: bool = False
) -> list[NeighbouringPair]:
    """Datasets of ``n`` records all at one bound, and a neighbour at the other.

    ``replace_one``: ``[low] * n`` with one record moved to ``high``, and ``[high] * n`` with one
    moved to ``low`` (2 pairs). ``add_remove``: ``[low] * n`` and ``[high] * n``, each with a
    record at ``low`` or at ``high`` added (4 pairs). These are the pairs on which a clipped sum,
    mean or count moves by its full declared sensitivity. ``integer``: integer records.
    """
    check_choice("relation", relation, RELATIONS)
    n = check_integer("n", n, minimum=1)
    lo, hi = _bounds(low, high)
    dtype = np.int64 if integer else float
    if integer and (lo != int(lo) or hi != int(hi)):
        raise ValueError(f"integer records need integer bounds, got low={lo!r}, high={hi!r}")
    if integer:  # exact beyond 2**53, where the floats above have rounded them
        lo, hi = int(low), int(high)  # type: ignore[call-overload]
    pairs = []
    for base in (lo, hi):
        d = np.full(n, base, dtype=dtype)
        for value in (lo, hi):
            if relation == "replace_one" and value == base:
                continue
            verb = "one moved to" if relation == "replace_one" else "one added at"
            pairs.append(
                _neighbour(
                    d,
                    relation,
                    0,
                    value,
                    f"{n} records at {shown_number(base)}, {verb} {shown_number(value)}",
                )
            )
    return pairs


def _mixed_records(rng: np.random.Generator, n: int, lo: float, hi: float) -> np.ndarray:
    """``n`` records in ``[lo, hi]`` of mixed magnitudes: bounds, uniform values, and values of
    random binary magnitude ``2^-k`` times a bound (where rounding of a sum happens)."""
    kind = rng.integers(4, size=n)
    scale = np.where(rng.random(n) < 0.5, lo, hi)
    tiny = scale * np.exp2(-rng.integers(0, 60, size=n).astype(float))
    values = np.select(
        [kind == 0, kind == 1, kind == 2],
        [np.full(n, hi), np.full(n, lo), rng.uniform(lo, hi, n)],
        tiny,
    )
    return np.clip(values, lo, hi)


#: Most records the random tries of :func:`rounding_pairs` draw in all (fewer tries on large
#: datasets, so a search over sizes up to a million stays quick).
ROUNDING_RECORDS = 2**22


def _staircase(n: int, lo: float, hi: float) -> Callable[[int], np.ndarray]:
    """``t ->`` the dataset of ``n`` records, the first ``t`` at ``hi`` and the rest at ``lo``."""

    def dataset(t: int) -> np.ndarray:
        d = np.full(n, lo)
        d[:t] = hi
        return d

    return dataset


def _staircase_tries(
    n: int, lo: float, hi: float, relation: str, accumulate: Callable[[np.ndarray], Any]
) -> list[tuple[float, np.ndarray, int, float]]:
    """Tries on the staircase datasets ``t`` records at ``hi``, ``n - t`` at ``lo``.

    ``replace_one``: the sum of a staircase never falls as ``t`` grows, and at large values its
    floating-point result moves in steps of the result's ulp, which may be far above
    ``hi - lo``. A bisection in each of 8 stretches of ``t`` finds a step there (where the sum
    rises at all) in ``log2(n)`` sums: the pair is the staircase at ``t`` and at ``t + 1``
    (record ``t`` moved from ``lo`` to ``hi``). ``add_remove``: the staircase against the same
    with one more record at ``hi``, at 33 values of ``t``. Each try is ``(moved, D, position,
    value)``.
    """
    dataset = _staircase(n, lo, hi)

    def total(t: int) -> float:
        return float(accumulate(dataset(t)))

    tries = []
    if relation == "add_remove":
        for t in np.unique(np.linspace(0, n, 33).astype(int)):
            d = dataset(int(t))
            moved = abs(float(accumulate(np.insert(d, int(t), hi))) - float(accumulate(d)))
            tries.append((moved, d, int(t), hi))
        return tries
    if n < 2:
        return tries
    edges = np.unique(np.linspace(0, n - 1, 9).astype(int))
    for a, b in itertools.pairwise(int(e) for e in edges):
        at_a, at_b = total(a), total(b)
        if not at_b > at_a:
            continue
        while b - a > 1:
            middle = (a + b) // 2
            at_middle = total(middle)
            if at_middle > at_a:
                b, at_b = middle, at_middle
            else:
                a, at_a = middle, at_middle
        tries.append((at_b - at_a, dataset(a), a, hi))
    return tries


def rounding_pairs(
    n: int,
    low: float,
    high: float,
    *,
    relation: str = "replace_one",
    accumulate: Callable[[np.ndarray], Any] = np.sum,
    budget: int = 256,
    keep: int = 1,
    seed: int = 0,
) -> list[NeighbouringPair]:
    """The pairs whose floating-point sum moves most beyond what the bounds allow.

    Two kinds of tries, ranked together by how far ``accumulate`` (the summation the audited
    code uses, e.g. ``numpy.sum``, whose pairwise order differs from a loop's) moves, minus
    what the bounds allow (``high - low`` for a replacement, ``max(|low|, |high|)`` for an
    addition):

    - ``budget`` random tries (fewer on large datasets: at most :data:`ROUNDING_RECORDS`
      records drawn in all), each ``n`` records in ``[low, high]`` of mixed magnitudes with one
      record changed to a bound (``replace_one``) or a record at a bound added in a random
      position (``add_remove``);
    - the staircases of records at the two bounds (:func:`_staircase_tries`): where the values
      are large against the width of the bounds, the sum moves in steps of its own ulp, and a
      step is found by bisection, not by chance.

    The best ``keep`` are returned, each described with its excess. Exact arithmetic never
    exceeds the bounds; a positive excess is the rounding that a sensitivity computed from the
    bounds leaves out (Casacuberta et al. 2022, "Widespread underestimation of sensitivity in
    differentially private libraries").
    """
    check_choice("relation", relation, RELATIONS)
    n = check_integer("n", n, minimum=1)
    lo, hi = _bounds(low, high)
    budget = check_integer("budget", budget, minimum=1)
    keep = check_integer("keep", keep, minimum=1, maximum=budget)
    seed = check_seed("seed", seed)
    if not callable(accumulate):
        raise ValueError(f"accumulate must be callable, got {type(accumulate).__name__}")
    allowed = hi - lo if relation == "replace_one" else max(abs(lo), abs(hi))
    rng = np.random.default_rng(seed)
    tries: list[tuple[float, np.ndarray, int, float, str]] = []
    for _ in range(min(budget, max(ROUNDING_RECORDS // n, 4))):
        d = _mixed_records(rng, n, lo, hi)
        value = lo if rng.random() < 0.5 else hi
        position = int(rng.integers(n if relation == "replace_one" else n + 1))
        d_prime = d.copy()
        if relation == "replace_one":
            d_prime[position] = value
        else:
            d_prime = np.insert(d, position, value)
        moved = abs(float(accumulate(d_prime)) - float(accumulate(d)))
        tries.append((moved - allowed, d, position, value, "mixed records"))
    for moved, d, position, value in _staircase_tries(n, lo, hi, relation, accumulate):
        where = f"{position} records at {shown_number(hi)}, {n - position} at {shown_number(lo)}"
        tries.append((moved - allowed, d, position, value, where))
    tries.sort(key=lambda t: -t[0])
    return [
        _neighbour(
            d,
            relation,
            position,
            value,
            f"rounding search ({where}): the float sum moves {excess:+.3g} beyond the bounds' "
            f"{allowed:.3g}",
        )
        for excess, d, position, value, where in tries[:keep]
    ]


def overflow_pairs(
    low: int,
    high: int,
    *,
    relation: str = "replace_one",
    dtype: Any = np.int64,
    max_records: int = 10_000,
) -> list[NeighbouringPair]:
    """Pairs on which an integer accumulator of ``dtype`` overflows in ``D_prime`` only.

    ``D`` holds ``k`` records at ``high``, the most whose sum fits in ``dtype``; ``D_prime`` has
    one more at ``high``: added (``add_remove``) or in place of a record at ``low``
    (``replace_one``). The same at ``low`` when ``low < 0``. An empty list when the bounds need
    more than ``max_records`` records to overflow.
    """
    check_choice("relation", relation, RELATIONS)
    max_records = check_integer("max_records", max_records, minimum=1)
    try:
        info = np.iinfo(dtype)
    except ValueError:
        raise ValueError(f"dtype must be an integer type, got {dtype!r}") from None
    if not (isinstance(low, int | np.integer) and isinstance(high, int | np.integer)):
        raise ValueError(f"low and high must be integers, got {low!r} and {high!r}")
    if not low < high or low < info.min or high > info.max:
        raise ValueError(f"need {info.min} <= low < high <= {info.max}, got {low} and {high}")
    pairs = []
    for bound, other, limit in ((int(high), int(low), info.max), (int(low), int(high), info.min)):
        if bound == 0 or (bound > 0) != (limit > 0):
            continue
        k = limit // bound
        if k + 1 > max_records:
            continue
        base = [bound] * k + ([other] if relation == "replace_one" else [])
        d = np.array(base, dtype=dtype)
        name = np.dtype(dtype).name
        text = f"{k} records at {shown_number(bound)} fit in {name}, one more overflows"
        pairs.append(_neighbour(d, relation, k, bound, text))
    return pairs


def random_pairs(
    n: int,
    low: float,
    high: float,
    *,
    relation: str = "replace_one",
    budget: int = 8,
    integer: bool = False,
    seed: int = 0,
) -> list[NeighbouringPair]:
    """``budget`` random datasets of ``n`` records uniform in ``[low, high]`` (integers with
    ``integer``), each with a random record replaced by, or a record added at, a uniform value."""
    check_choice("relation", relation, RELATIONS)
    n = check_integer("n", n, minimum=1)
    lo, hi = _bounds(low, high)
    budget = check_integer("budget", budget, minimum=1)
    seed = check_seed("seed", seed)
    rng = np.random.default_rng(seed)

    def draw(size: int) -> np.ndarray:
        if integer:
            return rng.integers(math.ceil(lo), math.floor(hi) + 1, size=size)
        return rng.uniform(lo, hi, size=size)

    pairs = []
    for j in range(budget):
        d = draw(n)
        value = draw(1)[0]
        position = int(rng.integers(n if relation == "replace_one" else n + 1))
        pairs.append(_neighbour(d, relation, position, value, f"random pair {j}"))
    return pairs


def _special_records(name: str, lo: Any, hi: Any, dtype: str) -> list[tuple[Any, Any, str]]:
    """``(special record, the record in bounds it is compared with, words)`` for special value
    ``name`` (:data:`~dpaudit.mechanisms.inputs.SPECIALS`): what clipping to the bounds should
    turn it into (for NaN, the bound farther from zero). Integer records have only values
    outside the bounds (within the dtype's range)."""
    width = hi - lo
    if dtype.startswith("int"):
        if name != "outside":
            return []
        info = np.iinfo(dtype)
        step = max(int(width), 1)
        out = []
        if hi + step <= info.max:
            out.append((hi + step, hi, f"{shown_number(hi + step)} (above the bounds)"))
        if lo - step >= info.min:
            out.append((lo - step, lo, f"{shown_number(lo - step)} (below the bounds)"))
        return out
    zero = min(max(0.0, lo), hi)
    if name == "nan":
        return [(math.nan, lo if abs(lo) > abs(hi) else hi, "NaN")]
    if name == "inf":
        return [(math.inf, hi, "inf")]
    if name == "-inf":
        return [(-math.inf, lo, "-inf")]
    if name == "-0":
        return [(-0.0, zero, "-0.0")]
    if name == "subnormal":
        return [(5e-324, zero, "5e-324 (subnormal)")]
    top = np.finfo(float).max
    above = min(hi + max(abs(hi), width), top)
    below = max(lo - max(abs(lo), width), -top)
    return [
        (above, hi, f"{shown_number(above)} (above the bounds)"),
        (below, lo, f"{shown_number(below)} (below the bounds)"),
    ]


def special_pairs(
    n: int,
    low: float,
    high: float,
    *,
    values: Sequence[str] = SPECIALS,
    relation: str = "replace_one",
    dtype: str = "float64",
) -> list[NeighbouringPair]:
    """Datasets of ``n`` records at ``low`` with a special record: NaN, an infinity, ``-0.0``,
    a subnormal, or values outside the bounds (``values``, from
    :data:`~dpaudit.mechanisms.inputs.SPECIALS`).

    ``replace_one``: record 0 is the special value in ``D`` and, in ``D_prime``, the record in
    bounds it should be clipped to (for NaN, the bound farther from zero, which moves a sum
    that drops NaN the most); a correct clipped statistic gives the two the same output, or
    outputs as close as its noise allows. ``add_remove``: the special record added to ``D``.
    Integer ``dtype`` records have only the values outside the bounds.
    """
    check_choice("relation", relation, RELATIONS)
    check_choice("dtype", dtype, DTYPES)
    n = check_integer("n", n, minimum=1)
    for value in values:
        check_choice("values", value, SPECIALS)
    lo, hi = _bounds(low, high)
    if dtype.startswith("int"):
        lo, hi = int(low), int(high)  # type: ignore[call-overload]
    base = np.full(n, lo, dtype=dtype)
    pairs = []
    for name in values:
        for special, partner, words in _special_records(name, lo, hi, dtype):
            if relation == "replace_one":
                d, d_prime = base.copy(), base.copy()
                d[0], d_prime[0] = special, partner
                text = (
                    f"{n} records at {shown_number(lo)}, record 0 {words} against "
                    f"{shown_number(partner)}"
                )
                pairs.append(NeighbouringPair(d, d_prime, relation, text))
            else:
                text = f"{n} records at {shown_number(lo)}, one {words} added"
                pairs.append(_neighbour(base, relation, 0, special, text))
    return pairs


#: Most records of an overflow pair in a search (a million and a bit).
OVERFLOW_RECORDS = 2**20


def _overflow_count(setting: Setting, relation: str) -> list[int]:
    """The dataset sizes of the overflow pairs of ``setting`` (none for float records), as
    :func:`overflow_pairs` makes them, without making them."""
    if not setting.integer:
        return []
    info = np.iinfo(setting.dtype)
    lo, hi = setting.bounds
    sizes = []
    for bound, limit in ((hi, int(info.max)), (lo, int(info.min))):
        if bound == 0 or (bound > 0) != (limit > 0):
            continue
        k = limit // bound
        if k + 1 <= OVERFLOW_RECORDS:
            sizes.append(k + (1 if relation == "replace_one" else 0))
    return sizes


def _setting_pairs(
    generator: str,
    setting: Setting,
    relation: str,
    specials: Sequence[str],
    accumulate: Callable[[np.ndarray], Any] | None,
    seed: int,
) -> list[NeighbouringPair]:
    """Every pair ``generator`` makes at ``setting``."""
    lo, hi = setting.bounds
    n = setting.size
    if generator == "boundary":
        return boundary_pairs(n, lo, hi, relation=relation, integer=setting.integer)
    if generator == "rounding":
        assert accumulate is not None
        return rounding_pairs(n, lo, hi, relation=relation, accumulate=accumulate, seed=seed)
    if generator == "overflow":
        return overflow_pairs(
            int(lo), int(hi), relation=relation, dtype=setting.dtype, max_records=OVERFLOW_RECORDS
        )
    if generator == "special":
        return special_pairs(n, lo, hi, values=specials, relation=relation, dtype=setting.dtype)
    return random_pairs(n, lo, hi, relation=relation, budget=1, integer=setting.integer, seed=seed)


def _one_pair(
    generator: str,
    setting: Setting,
    relation: str,
    index: int,
    specials: Sequence[str],
    accumulate: Callable[[np.ndarray], Any] | None,
    seed: int,
) -> NeighbouringPair:
    return _setting_pairs(generator, setting, relation, specials, accumulate, seed)[index]


def _count(generator: str, setting: Setting, relation: str, specials: Sequence[str]) -> int:
    """How many pairs ``generator`` makes at ``setting`` (without making them)."""
    if generator == "boundary":
        return 2 if relation == "replace_one" else 4
    if generator == "rounding":
        return 0 if setting.integer else 1
    if generator == "overflow":
        return len(_overflow_count(setting, relation))
    if generator == "special":
        lo, hi = setting.bounds
        return sum(len(_special_records(v, lo, hi, setting.dtype)) for v in specials)
    return 1


def space_candidates(
    space: InputSpace, relation: str, *, seed: int = 0
) -> dict[str, list[Candidate]]:
    """The candidates of every generator of ``space`` (its ``generators``) under ``relation``:
    for each setting of :meth:`~dpaudit.mechanisms.inputs.InputSpace.settings` in its order,
    the pairs the generator makes there, each a :class:`~dpaudit.mechanisms.inputs.Candidate`
    made on demand.

    - ``boundary``: :func:`boundary_pairs`; ``random``: one of :func:`random_pairs`;
    - ``rounding`` (float records): the best of :func:`rounding_pairs` with the space's
      ``accumulate``;
    - ``overflow`` (integer records): :func:`overflow_pairs` in the records' dtype (their size is
      what the bounds need, so settings that differ only in size give one candidate);
    - ``special``: :func:`special_pairs` of the space's ``specials``.

    An empty dictionary when ``space`` does not hold ``relation``.
    """
    check_choice("relation", relation, RELATIONS)
    seed = check_seed("seed", seed)
    if relation not in space.relations:
        return {}
    settings = space.settings(seed=seed)
    out: dict[str, list[Candidate]] = {}
    for generator in space.generators:
        candidates: list[Candidate] = []
        seen: set[Setting] = set()
        for position, setting in enumerate(settings):
            if generator == "overflow":
                sizes = _overflow_count(setting, relation)
                if not sizes:
                    continue
                # the size is the overflow's own: one candidate per bounds, dtype and epsilon
                setting = replace(setting, size=sizes[0])
            if setting in seen:
                continue
            seen.add(setting)
            for index in range(_count(generator, setting, relation, space.specials)):
                make = partial(
                    _one_pair,
                    generator,
                    setting,
                    relation,
                    index,
                    space.specials,
                    space.accumulate,
                    seed + position,
                )
                candidates.append(
                    Candidate(setting, relation, generator, make, space.weight(setting))
                )
        if candidates:
            out[generator] = candidates
    return out


def subsample(
    pairs: Sequence[NeighbouringPair], budget: int, *, seed: int = 0
) -> list[NeighbouringPair]:
    """At most ``budget`` of ``pairs``, a uniformly random subset drawn from ``seed`` (in their
    original order); all of them when there are no more than ``budget``."""
    pairs = list(pairs)
    budget = check_integer("budget", budget, minimum=1)
    if len(pairs) <= budget:
        return pairs
    keep = np.sort(np.random.default_rng(seed).choice(len(pairs), size=budget, replace=False))
    return [pairs[int(i)] for i in keep]


#: Numbers of privacy units in a partition of the partition selection pairs: each against one
#: unit more.
UNITS = (1, 2, 4, 8, 12, 16, 24, 32)


def unit_pairs(units: Sequence[int], what: str) -> list[NeighbouringPair]:
    """``add_remove`` pairs of ``k`` records (integer zeros: all alike) against ``k + 1``, for
    each ``k`` in ``units``: what a count of privacy units, and the threshold on it, sees."""
    return [
        NeighbouringPair(
            np.zeros(k, dtype=np.int64),
            np.zeros(k + 1, dtype=np.int64),
            "add_remove",
            f"{k} {what}, one added",
        )
        for k in units
    ]
