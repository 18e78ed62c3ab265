"""What a function accepts, and the candidates a search tries on it.

A function of a DP library is a family of mechanisms: what it releases depends on the bounds it is
given, how many records it sees, their type and its privacy parameter, and so does where its
implementation breaks. The rounding of a floating-point sum matters only when the values are
large against the width of the bounds and the records are many; an integer accumulator wraps
around only at large bounds; a NaN record matters only to a function that accepts one.

- :class:`Setting`: one point of that family: bounds, number of records, dtype of the records,
  ``epsilon``.
- :class:`InputSpace`: the values of each axis a search may try (bounds as offsets from zero
  and widths, sizes, dtypes, ``epsilon``), the special record values the function accepts, the
  neighbouring relations it may mean, the pair generators that apply to it and what one output
  costs. :meth:`InputSpace.settings` enumerates its settings, the declared default first.
- :class:`Candidate`: a setting and a neighbouring pair of datasets for it, made on demand (a
  dataset of a million records exists only while it is audited).

The generators that turn a space into candidates are
:func:`dpaudit.mechanisms.pairs.space_candidates`; the search that screens and confirms them is
:func:`dpaudit.audit.pair_search.search_inputs`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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

__all__ = [
    "DTYPES",
    "GENERATORS",
    "SPECIALS",
    "Candidate",
    "InputSpace",
    "Setting",
    "powers_of_two",
    "shown_number",
]

#: Record types a setting may have: numpy's names.
DTYPES = ("float64", "int64", "int32")

#: Special record values a function may accept: NaN, the infinities, negative zero, the smallest
#: subnormal, and values outside the bounds (far above the upper, far below the lower).
SPECIALS = ("nan", "inf", "-inf", "-0", "subnormal", "outside")

#: The pair generators of :func:`dpaudit.mechanisms.pairs.space_candidates`.
GENERATORS = ("boundary", "rounding", "overflow", "special", "random")


def powers_of_two(exponents: Sequence[int], *, signed: bool = False) -> tuple[float, ...]:
    """``2.0**k`` for each ``k`` (and ``-2.0**k`` too with ``signed``), for the offsets of an
    input space."""
    values = [2.0**k for k in exponents]
    return tuple(values + [-v for v in values] if signed else values)


def _is_power_of_two(x: float) -> bool:
    m, _ = math.frexp(abs(x))
    return x != 0 and m == 0.5


def shown_number(x: float) -> str:
    """A number as settings and pair descriptions show it: exactly (six digits when they are
    exact, else every digit), powers of two far from one as ``2^k``."""
    if isinstance(x, int | np.integer) and not isinstance(x, bool):
        x = int(x)
        if abs(x) >= 2**16 and _is_power_of_two(float(x)):
            return ("-" if x < 0 else "") + f"2^{abs(x).bit_length() - 1}"
        return f"{x:,}" if abs(x) >= 10**4 else str(x)
    x = float(x)
    if _is_power_of_two(x) and abs(math.frexp(x)[1] - 1) >= 16:
        return ("-" if x < 0 else "") + f"2^{math.frexp(x)[1] - 1}"
    if x.is_integer() and abs(x) < 2**53:
        return shown_number(int(x))
    short = f"{x:.6g}"
    return short if float(short) == x or not math.isfinite(x) else repr(x)


@dataclass(frozen=True)
class Setting:
    """One setting of a function: what is fixed before any data is given.

    Parameters
    ----------
    bounds:
        ``(lower, upper)`` as the function is given them (for a mechanism on one value: the
        range its input moves in, ``upper - lower`` its sensitivity). Whole numbers for an
        integer ``dtype`` (kept as Python integers, exact beyond ``2**53``).
    size:
        Records of the dataset ``D`` (``D_prime`` has one more under ``add_remove``).
    dtype:
        Type of the records (one of :data:`DTYPES`).
    epsilon:
        The privacy parameter the function is called with (a library whose parameter is a noise
        scale maps it to the scale that makes its claim this ``epsilon``).
    """

    bounds: tuple[float, float] = (0.0, 1.0)
    size: int = 10
    dtype: str = "float64"
    epsilon: float = 1.0

    def __post_init__(self) -> None:
        check_choice("dtype", self.dtype, DTYPES)
        object.__setattr__(self, "size", check_integer("size", self.size, minimum=1))
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))
        if not isinstance(self.bounds, tuple | list) or len(self.bounds) != 2:
            raise ValueError(f"bounds must be a pair (lower, upper), got {self.bounds!r}")
        lo, hi = self.bounds
        if self.integer:
            info = np.iinfo(self.dtype)
            for name, b in (("lower", lo), ("upper", hi)):
                if isinstance(b, bool) or not (
                    isinstance(b, int | np.integer) or (isinstance(b, float) and b.is_integer())
                ):
                    raise ValueError(f"{self.dtype} bounds must be whole numbers, {name} is {b!r}")
            lo, hi = int(lo), int(hi)
            if not info.min <= lo < hi <= info.max:
                raise ValueError(
                    f"{self.dtype} bounds need {info.min} <= lower < upper <= {info.max}, "
                    f"got ({lo}, {hi})"
                )
        else:
            lo, hi = check_real("lower bound", lo), check_real("upper bound", hi)
            if not lo < hi:
                raise ValueError(f"bounds need lower < upper, got ({lo!r}, {hi!r})")
        object.__setattr__(self, "bounds", (lo, hi))

    @property
    def integer(self) -> bool:
        """Whether the records are integers."""
        return self.dtype.startswith("int")

    @property
    def width(self) -> float:
        """``upper - lower`` (exact for integer bounds)."""
        lo, hi = self.bounds
        return hi - lo

    @property
    def magnitude(self) -> float:
        """``max(|lower|, |upper|)``: how far from zero the records may lie."""
        return float(max(abs(self.bounds[0]), abs(self.bounds[1])))

    def describe(self) -> str:
        """The setting in words, e.g. ``bounds [2^30, 2^30 + 4 ulp], 1,000 float64 records,
        eps = 1``."""
        lo, hi = self.bounds
        upper = shown_number(hi)
        if lo != 0 and (hi - lo) < 1e-3 * abs(lo):  # far from zero: the upper as lower + width
            width = shown_number(hi - lo)
            if not self.integer:
                ulps = (hi - lo) / float(np.spacing(abs(lo)))
                width = f"{ulps:.0f} ulp" if ulps.is_integer() and ulps <= 2**20 else width
            upper = f"{shown_number(lo)} + {width}"
        records = "record" if self.size == 1 else "records"
        return (
            f"bounds [{shown_number(lo)}, {upper}], {self.size:,} {self.dtype} {records}, "
            f"eps = {self.epsilon:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: bounds (integers as integers), size, dtype, epsilon."""
        return {
            "bounds": list(self.bounds),
            "size": self.size,
            "dtype": self.dtype,
            "epsilon": self.epsilon,
        }


def _setting_or_none(**values: Any) -> Setting | None:
    """The setting of ``values``, or ``None`` where they make none (e.g. ``lower + width``
    rounds back to ``lower``, integer bounds that are not whole, a bound beyond the dtype)."""
    try:
        return Setting(**values)
    except (ValueError, OverflowError):
        return None


@dataclass(frozen=True)
class InputSpace:
    """What a function accepts: the axes a search enumerates, declared beside its claim. Every
    axis left empty holds the default's value only.

    Parameters
    ----------
    default:
        The setting audited when nothing is searched (and enumerated first).
    offsets, widths, width_ulps:
        Bounds tried: ``(offset, offset + width)`` for every offset and width, and
        ``(offset, offset + k * ulp(offset))`` for every ``k`` in ``width_ulps`` (widths down to
        a few units in the last place of the offset). Integer dtypes keep the whole-numbered
        ones within their range; a bound pair that rounds to ``lower == upper`` is dropped.
    bounds:
        Bounds tried as given (on top of the offsets and widths).
    sizes, dtypes, epsilons:
        Numbers of records, record dtypes (:data:`DTYPES`) and ``epsilon`` tried.
    specials:
        Special record values the function accepts (:data:`SPECIALS`); the ``special``
        generator puts each into a dataset.
    relations:
        The neighbouring relations the function may mean (its claims say what it promises under
        each).
    generators:
        The pair generators that apply (:data:`GENERATORS`).
    accumulate:
        The summation the function uses (e.g. ``numpy.sum``) for the ``rounding`` generator.
    records_per_output:
        What one output costs, in records: an output on ``n`` records costs as much as
        ``max(1, n / records_per_output)`` outputs on few (:meth:`weight`; below that many
        records a call costs what calling costs), so budgets count a call on a million records
        as more than one on ten.
    """

    default: Setting = field(default_factory=Setting)
    offsets: tuple[float, ...] = ()
    widths: tuple[float, ...] = ()
    width_ulps: tuple[int, ...] = ()
    bounds: tuple[tuple[float, float], ...] = ()
    sizes: tuple[int, ...] = ()
    dtypes: tuple[str, ...] = ()
    epsilons: tuple[float, ...] = ()
    specials: tuple[str, ...] = ()
    relations: tuple[str, ...] = RELATIONS
    generators: tuple[str, ...] = ("boundary", "random")
    accumulate: Callable[[np.ndarray], Any] | None = None
    records_per_output: float = 10_000.0

    def __post_init__(self) -> None:
        if not isinstance(self.default, Setting):
            raise ValueError(f"default must be a Setting, got {type(self.default).__name__}")
        for name, values, choices in (
            ("dtypes", self.dtypes, DTYPES),
            ("specials", self.specials, SPECIALS),
            ("relations", self.relations, RELATIONS),
            ("generators", self.generators, GENERATORS),
        ):
            for value in values:
                check_choice(name, value, choices)
        for k in self.width_ulps:
            check_integer("width_ulps", k)
        for n in self.sizes:
            check_integer("sizes", n)
        for eps in self.epsilons:
            check_positive("epsilons", eps)
        check_positive("records_per_output", self.records_per_output)
        if "rounding" in self.generators and not callable(self.accumulate):
            raise ValueError("the rounding generator needs accumulate, the function's summation")

    def weight(self, setting: Setting) -> float:
        """The cost of one output at ``setting``, in outputs on few records."""
        return max(1.0, setting.size / self.records_per_output)

    def _bounds(self) -> list[tuple[float, float]]:
        """Every bounds pair of the space, the default's first (before any dtype filter)."""
        out: list[tuple[float, float]] = [self.default.bounds]
        for offset in self.offsets:
            out += [(offset, offset + w) for w in self.widths]
            spacing = float(np.spacing(abs(float(offset))))
            out += [(offset, float(offset) + k * spacing) for k in self.width_ulps]
        out += [tuple(b) for b in self.bounds]  # type: ignore[misc]
        return list(dict.fromkeys(out))

    def settings(self, *, seed: int = 0) -> list[Setting]:
        """Every setting of the space, each once: the default first, then the settings that move
        one axis away from it alternating with all the others in a random order drawn from
        ``seed`` (so a prefix of the list, which is what a budget buys, covers every axis value
        and mixes them)."""
        seed = check_seed("seed", seed)
        d = self.default
        axes: dict[str, list[Any]] = {
            "bounds": self._bounds(),
            "size": list(dict.fromkeys([d.size, *self.sizes])),
            "dtype": list(dict.fromkeys([d.dtype, *self.dtypes])),
            "epsilon": list(dict.fromkeys([d.epsilon, *self.epsilons])),
        }
        one_axis = [
            _setting_or_none(**{**_values(d), axis: value})
            for axis, values in axes.items()
            for value in values[1:]
        ]
        product = [
            _setting_or_none(bounds=b, size=n, dtype=t, epsilon=e)
            for b, n, t, e in itertools.product(*axes.values())
        ]
        order = np.random.default_rng(seed).permutation(len(product))
        mixed = [product[int(i)] for i in order]
        interleaved = [d]
        for pair in itertools.zip_longest(one_axis, mixed):
            interleaved += [s for s in pair if s is not None]
        return list(dict.fromkeys(interleaved))

    def pinned(
        self,
        *,
        bounds: Sequence[tuple[float, float]] | None = None,
        sizes: Sequence[int] | None = None,
        epsilons: Sequence[float] | None = None,
        relations: Sequence[str] | None = None,
    ) -> InputSpace | None:
        """This space with the axes given pinned to the values given (the first that makes a
        setting becomes the default's); ``None`` leaves an axis as declared. Integer dtypes keep
        the pinned bounds that are whole numbers within their range. ``None`` when the pins
        leave the function no setting at all (e.g. fractional bounds for integer records)."""
        default = self.default
        changes: dict[str, Any] = {}
        if bounds is not None:
            dtypes = dict.fromkeys([default.dtype, *self.dtypes])
            fits = [
                s
                for t in dtypes
                for b in bounds
                if (s := _setting_or_none(**{**_values(default), "dtype": t, "bounds": tuple(b)}))
            ]
            if not fits:
                return None
            default = fits[0]
            changes.update(offsets=(), widths=(), width_ulps=(), bounds=tuple(map(tuple, bounds)))
        if sizes is not None:
            default = replace(default, size=sizes[0])
            changes["sizes"] = tuple(sizes)
        if epsilons is not None:
            default = replace(default, epsilon=epsilons[0])
            changes["epsilons"] = tuple(epsilons)
        if relations is not None:
            changes["relations"] = tuple(r for r in self.relations if r in relations)
        return replace(self, default=default, **changes)


def _returns(pair: NeighbouringPair) -> NeighbouringPair:
    return pair


def _values(setting: Setting) -> dict[str, Any]:
    return {
        "bounds": setting.bounds,
        "size": setting.size,
        "dtype": setting.dtype,
        "epsilon": setting.epsilon,
    }


@dataclass(frozen=True)
class Candidate:
    """A setting of a function and a neighbouring pair of datasets for it.

    The pair is made on demand by ``make`` (:meth:`pair`), so a list of candidates costs little
    to hold however large their datasets. ``setting`` is ``None`` for a pair of a function whose
    setting is fixed; ``weight`` is the cost of one output (:meth:`InputSpace.weight`).
    """

    setting: Setting | None
    relation: str
    generator: str
    make: Callable[[], NeighbouringPair]
    weight: float = 1.0

    @classmethod
    def given(cls, pair: NeighbouringPair, generator: str = "given") -> Candidate:
        """A candidate of a pair given as it is: no setting, weight 1."""
        return cls(None, str(pair.relation), generator, partial(_returns, pair))

    def pair(self) -> NeighbouringPair:
        """The neighbouring pair (made anew on every call: generators are deterministic)."""
        return self.make()

    def describe(self, pair: NeighbouringPair | None = None) -> str:
        """``generator at setting: pair description`` (the pair's part when it is given)."""
        text = self.generator
        if self.setting is not None:
            text += f" at {self.setting.describe()}"
        if pair is not None and pair.description:
            text += f": {pair.description}"
        return text
