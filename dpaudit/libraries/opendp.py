"""OpenDP: its noise measurements and the common clamp, sum or mean, noise pipelines.

Calls. A pipeline is a transformation followed by a noise measurement. Each release function
builds both once (per audit), and per chunk runs the transformation once on the dataset and the
*vector* form of the same noise measurement once on ``size`` copies of its output: ``size``
independent draws of the pipeline from one call into the library (OpenDP's vector measurements
add independent noise of the same sampler to every entry). That holds for a deterministic
transformation; the mean's ``resize`` keeps a random subset of a dataset larger than its size,
so on such a dataset it runs once per output (else the outputs of a chunk would share one
subset and not be independent draws).

OpenDP's generator cannot be seeded: an audit of OpenDP draws fresh randomness on every run, so
its bounds are as valid as any (every trial is an independent draw) but reruns are not identical
bit for bit.

Claims. The claim is OpenDP's own privacy map at ``d_in``, in OpenDP's own measure:
max-divergence gives ``approx_dp(eps, 0)``, zero-concentrated divergence gives ``rho``-zCDP
(:class:`~dpaudit.bounds.rdp.ZCDP`).

Relations. OpenDP states its relation through the input metric. A noise measurement on one
value with the absolute distance at ``d_in = 1`` is audited on two values one apart
(``replace_one`` of a one-record dataset). A pipeline on ``symmetric_distance`` counts added
plus removed records: ``add_remove`` neighbours are ``d_in = 1`` and ``replace_one`` neighbours
``d_in = 2``, so both relations are tried, each with its own stated claim.

Input spaces. Each measurement and pipeline declares what it accepts
(:class:`~dpaudit.mechanisms.inputs.InputSpace`, searched by the battery): bounds (or, for a
measurement on one value, the two values) at offsets from zero to ``2**1000`` (both signs; to
``2**30`` for OpenDP's 32-bit integers) and widths from 1 and ``2**20`` down to 4 ulps,
datasets of 1 to a million records, and the special records OpenDP's float domain accepts
(``nan=False``: the infinities, ``-0.0``, subnormals, values outside the bounds; NaN is refused
by the domain). OpenDP's parameter is a noise scale: a setting's ``epsilon`` is turned into the
scale that makes the claim at ``d_in = 1`` about that ``epsilon`` (the transformation's
sensitivity divided by it), and the claim is always OpenDP's own map at that scale. A setting
whose constructor or map OpenDP refuses (an overflow it foresees) is not in the space.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit.bounds.rdp import ZCDP
from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.libraries.battery import (
    EPSILONS,
    RANDOM_BUDGET,
    WIDTH_ULPS,
    WIDTHS,
    Claimed,
    Function,
    Library,
    Release,
    bounded_pairs,
)
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.inputs import InputSpace, Setting, powers_of_two
from dpaudit.mechanisms.pairs import (
    answer_pairs,
    boundary_pairs,
    overflow_pairs,
    random_pairs,
    unit_pairs,
)

__all__ = [
    "LIBRARY",
    "approximate",
    "count",
    "dispersion",
    "functions",
    "geometric",
    "laplace_threshold",
    "noisy_max",
    "private_quantile",
    "randomized_response_bool",
]

#: Records per dataset of the pipelines' pairs (and the size a mean is resized to).
N = 10
#: ``d_in`` of each relation under ``symmetric_distance``.
D_IN = {"add_remove": 1, "replace_one": 2}

#: Offsets of the bounds the search tries (float records; the integers keep those within 32
#: bits) and sizes; the widths and ``epsilon`` are the batteries' grid
#: (:data:`~dpaudit.libraries.battery.WIDTHS` and the rest).
OFFSETS = (0.0, *powers_of_two((10, 20, 30, 52, 100, 1000), signed=True))
SIZES = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
#: Special records OpenDP's float domain (``nan=False``) accepts.
FLOAT_SPECIALS = ("inf", "-inf", "-0", "subnormal", "outside")
#: What one output costs, in records: the transformation runs once per chunk of outputs on
#: every record.
RECORDS_PER_OUTPUT = 1_000.0


def _dp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _claim(measurement: Any, d_in: Any) -> Claimed:
    """OpenDP's privacy map at ``d_in``, in the measurement's own output measure:
    max-divergence, zero-concentrated divergence, or approximate max-divergence (whose map
    gives ``(eps, delta)``). ``d_in`` is a number, or a tuple for a map's own distances."""
    measure = str(measurement.output_measure)
    shown = list(d_in) if isinstance(d_in, tuple) else d_in
    if measure.startswith("Approximate(MaxDivergence"):
        eps, delta = (float(v) for v in measurement.map(d_in))
        return Claimed(
            approx_dp(eps, delta),
            {"kind": "approx_dp", "eps": eps, "delta": delta, "d_in": shown},
            (delta,),
            f"({eps:.6g}, {delta:.3g})-DP (approximate max-divergence at d_in={shown})",
        )
    stated = float(measurement.map(d_in))
    if measure.startswith("MaxDivergence"):
        return Claimed(
            approx_dp(stated, 0.0),
            {"kind": "pure_dp", "eps": stated, "d_in": shown},
            (0.0,),
            f"{stated:.6g}-DP (max-divergence at d_in={shown})",
        )
    if measure.startswith("ZeroConcentratedDivergence"):
        return Claimed(
            ZCDP(stated).tradeoff(),
            {"kind": "zcdp", "rho": stated, "d_in": shown},
            (1e-5,),
            f"{stated:.6g}-zCDP (zero-concentrated divergence at d_in={shown})",
        )
    raise ValueError(f"OpenDP measure {measure!r} has no claim kind in dpaudit")


def _noise(dp: Any, kind: str, integer: bool, scale: float) -> Any:
    """The vector form of OpenDP's noise measurement (independent noise per entry)."""
    atom = dp.atom_domain(T=int) if integer else dp.atom_domain(T=float, nan=False)
    t = int if integer else float
    metric = dp.l1_distance(T=t) if kind == "laplace" else dp.l2_distance(T=t)
    make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
    return make(dp.vector_domain(atom), metric, scale=scale)


def _release(
    transformation: Callable[[Any], Any] | None,
    noise: Any,
    integer: bool,
    random_above: int | None = None,
) -> Release:
    """Per chunk: the transformation once, the vector noise once on ``size`` copies of its
    value. A transformation that is random on datasets of more than ``random_above`` records
    (OpenDP's resize samples the records it keeps) runs once per output on those, so that every
    output is an independent draw of the whole pipeline."""

    def release(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        records = [int(x) if integer else float(x) for x in np.asarray(dataset).ravel()]
        if size == 0:
            return np.empty(0)
        if transformation is None:
            values = [records[0]] * size
        elif random_above is not None and len(records) > random_above:
            values = [transformation(records) for _ in range(size)]
        else:
            values = [transformation(records)] * size
        return np.asarray(noise(values), dtype=float)

    return release


def _measurement(
    kind: str, integer: bool, scale: float, *, value: float = 0, d_in: float = 1
) -> Function:
    """``make_laplace`` / ``make_gaussian`` on one value, absolute distance: its input moves
    from ``value`` by ``d_in`` (the claim is OpenDP's map at ``d_in``)."""
    lo, hi = value, value + d_in

    def release() -> Release:
        return _release(None, _noise(_dp(), kind, integer, scale), integer)

    def claims() -> dict[str, Claimed]:
        dp = _dp()
        atom = dp.atom_domain(T=int) if integer else dp.atom_domain(T=float, nan=False)
        make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
        metric = dp.absolute_distance(T=int if integer else float)
        return {"replace_one": _claim(make(atom, metric, scale=scale), d_in)}

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {
            "boundary": boundary_pairs(1, lo, hi, relation=relation, integer=integer),
            "random": random_pairs(
                1, lo, hi, relation=relation, budget=RANDOM_BUDGET, integer=integer
            ),
        }

    def at(setting: Setting) -> Function:
        lower, upper = setting.bounds
        width = upper - lower
        return _measurement(kind, integer, width / setting.epsilon, value=lower, d_in=width)

    space = InputSpace(
        default=Setting((lo, hi), 1, "int32" if integer else "float64", 1.0 / scale),
        offsets=OFFSETS,
        widths=(1.0, 2.0**-20, 2.0**20),
        epsilons=EPSILONS,
        relations=("replace_one",),
        records_per_output=RECORDS_PER_OUTPUT,
    )
    t = "int" if integer else "float"
    return Function(
        f"m.make_{kind}[{t}](scale={scale:g})", release, claims(), pairs, space=space, at=at
    )


def _chain(integer: bool, bounds: tuple[float, float], mean: bool, size: int) -> Any:
    """``clamp(bounds) >> sum`` (or ``>> resize(size) >> mean``) on ``symmetric_distance``."""
    dp = _dp()
    lo, hi = bounds
    atom = dp.atom_domain(T=int) if integer else dp.atom_domain(T=float, nan=False)
    chain = (dp.vector_domain(atom), dp.symmetric_distance()) >> dp.t.then_clamp(bounds)
    if mean:
        middle = (lo + hi) / 2
        return chain >> dp.t.then_resize(size=size, constant=middle) >> dp.t.then_mean()
    return chain >> dp.t.then_sum()


def _pipeline(
    kind: str,
    *,
    integer: bool,
    bounds: tuple[float, float],
    scale: float,
    mean: bool = False,
    overflow: bool = False,
    size: int = N,
    searched: bool = True,
) -> Function:
    """:func:`_chain` ``>> noise``; searched over its input space unless ``searched`` is
    false."""
    lo, hi = bounds

    def release() -> Release:
        transformation = _chain(integer, bounds, mean, size)
        noise = _noise(_dp(), kind, integer, scale)
        return _release(transformation, noise, integer, size if mean else None)

    def claims() -> dict[str, Claimed]:
        dp = _dp()
        then = dp.m.then_laplace if kind == "laplace" else dp.m.then_gaussian
        pipeline = _chain(integer, bounds, mean, size) >> then(scale=scale)
        return {relation: _claim(pipeline, d_in) for relation, d_in in D_IN.items()}

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        if overflow:
            return {"overflow": overflow_pairs(int(lo), int(hi), relation=relation, dtype=np.int32)}
        return bounded_pairs(size, lo, hi, relation, rounding=not integer, integer=integer)

    def at(setting: Setting) -> Function:
        """The pipeline at ``setting``: its bounds, its size (the resize's, for a mean), and
        the scale that makes the transformation's sensitivity at ``d_in = 1`` over the scale
        the setting's epsilon."""
        sensitivity = float(_chain(integer, setting.bounds, mean, setting.size).map(1))
        return _pipeline(
            kind,
            integer=integer,
            bounds=setting.bounds,
            scale=sensitivity / setting.epsilon,
            mean=mean,
            size=setting.size,
            searched=False,
        )

    space = None
    if searched:
        sensitivity = float(_chain(integer, bounds, mean, size).map(1))
        space = InputSpace(
            default=Setting(bounds, size, "int32" if integer else "float64", sensitivity / scale),
            offsets=OFFSETS,
            widths=WIDTHS,
            width_ulps=() if integer else WIDTH_ULPS,
            sizes=SIZES if not mean else (1, 10, 100, 1_000, 10_000),
            epsilons=EPSILONS,
            specials=("outside",) if integer else FLOAT_SPECIALS,
            relations=tuple(D_IN),
            generators=(
                "boundary",
                "overflow" if integer else "rounding",
                "special",
                "random",
            ),
            accumulate=None if integer else np.sum,
            records_per_output=RECORDS_PER_OUTPUT,
        )
    t = "int" if integer else "float"
    middle = f"resize({size}) >> mean" if mean else "sum"
    name = f"clamp({lo}, {hi}) >> {middle} >> {kind}[{t}](scale={scale:.10g})"
    return Function(name, release, claims(), pairs, space=space, at=at if searched else None)


#: OpenDP's output measures of the measurements that take one, by name.
MEASURES = ("max_divergence", "zero_concentrated_divergence")
#: Records per trial's dataset of the threshold pairs: each against one record more.
UNITS = (1, 4, 8, 12, 16, 24)
#: What a trial whose key the threshold hid releases (counts are never negative).
CENSORED = -1.0


def _kind(measure: str) -> str:
    """The noise OpenDP adds under ``measure``: Laplace (max-divergence) or Gaussian (zCDP)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    return "laplace" if measure == "max_divergence" else "gaussian"


def _repeat(call: Callable[[], Any], size: int) -> np.ndarray:
    return np.array([np.asarray(call(), dtype=float) for _ in range(size)], dtype=float)


def _one_value_pairs(low: float, high: float, integer: bool) -> Any:
    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {
            "boundary": boundary_pairs(1, low, high, relation=relation, integer=integer),
            "random": random_pairs(
                1, low, high, relation=relation, budget=RANDOM_BUDGET, integer=integer
            ),
        }

    return pairs


def _records_pairs(n: int, bounds: tuple[float, float], relations: Sequence[str]) -> Any:
    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        lo, hi = bounds
        return bounded_pairs(n, lo, hi, relation, rounding=False)

    return pairs


def approximate(kind: str, *, scale: float = 1.0, delta: float = 1e-5) -> Function:
    """A noise measurement on one float under an approximate output measure:
    ``c.make_approximate(make_laplace)`` (``(eps, 0)``) or
    ``c.make_fix_delta(c.make_zCDP_to_approxDP(make_gaussian), delta)`` (``(eps, delta)``),
    absolute distance at ``d_in = 1`` (``replace_one``). The combinators change the claim, not
    the outputs: the release is the vector form of the noise."""
    if kind not in ("laplace", "gaussian"):
        raise ValueError(f"kind must be 'laplace' or 'gaussian', got {kind!r}")

    def release() -> Release:
        return _release(None, _noise(_dp(), kind, False, scale), False)

    def measurement() -> Any:
        dp = _dp()
        space = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float))
        if kind == "laplace":
            return dp.c.make_approximate(dp.m.make_laplace(*space, scale=scale))
        cast = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=scale))
        return dp.c.make_fix_delta(cast, delta=delta)

    name = (
        f"c.make_approximate(m.make_laplace[float](scale={scale:g}))"
        if kind == "laplace"
        else f"c.make_fix_delta(c.make_zCDP_to_approxDP(m.make_gaussian[float](scale={scale:g})),"
        f" delta={delta:g})"
    )
    claims = {"replace_one": _claim(measurement(), 1.0)}
    return Function(name, release, claims, _one_value_pairs(0, 1, False))


def geometric(*, scale: float = 1.0, bounds: tuple[int, int] = (0, 10)) -> Function:
    """``m.make_geometric`` on one integer in ``bounds`` (constant-time sampling), absolute
    distance at ``d_in = 1`` (``replace_one``), in its vector form for the release."""
    lo, hi = bounds

    def release() -> Release:
        dp = _dp()
        noise = dp.m.make_geometric(
            dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale, bounds=bounds
        )
        return _release(None, noise, True)

    dp = _dp()
    scalar = dp.m.make_geometric(
        dp.atom_domain(T=int), dp.absolute_distance(T=int), scale, bounds=bounds
    )
    claims = {"replace_one": _claim(scalar, 1)}
    name = f"m.make_geometric[int](scale={scale:g}, bounds=({lo}, {hi}))"
    return Function(name, release, claims, _one_value_pairs(lo, lo + 1, True))


def noisy_max(measure: str, *, scale: float = 1.0, k: int = 3, top: int = 1) -> Function:
    """``m.make_noisy_max`` (``top = 1``) or ``m.make_noisy_top_k`` (``top`` indices) under
    ``measure``, on ``k`` integer scores under the l-infinity distance at ``d_in = 1``: score
    vectors whose entries differ by at most one (``replace_one``, every answer pattern)."""
    _kind(measure)

    def measurement() -> Any:
        dp = _dp()
        space = (dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int))
        output = getattr(dp, measure)()
        if top == 1:
            return dp.m.make_noisy_max(*space, output, scale=scale)
        return dp.m.make_noisy_top_k(*space, output, k=top, scale=scale)

    def release() -> Release:
        built = measurement()

        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            scores = [int(v) for v in np.asarray(dataset).ravel()]
            return _repeat(lambda: built(scores), size).reshape(size, -1)

        return fn

    def pairs(relation: str) -> dict[str, Sequence[NeighbouringPair]]:
        return {"answers": answer_pairs(k, base=0.0, shift=1.0)}

    name = (
        f"m.make_noisy_max({measure}, scale={scale:g}, k={k})"
        if top == 1
        else f"m.make_noisy_top_k({measure}, scale={scale:g}, k={k}, top={top})"
    )
    return Function(name, release, {"replace_one": _claim(measurement(), 1)}, pairs)


def private_quantile(
    measure: str,
    *,
    scale: float = 1.0,
    alpha: float = 0.5,
    candidates: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0),
    bounds: tuple[float, float] = (0.0, 1.0),
    n: int = N,
) -> Function:
    """``m.make_private_quantile`` under ``measure``: the ``alpha``-quantile of ``n`` floats in
    ``bounds`` among ``candidates``, on ``symmetric_distance`` (both relations, each at its own
    ``d_in``)."""
    _kind(measure)

    def measurement() -> Any:
        dp = _dp()
        return dp.m.make_private_quantile(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)),
            dp.symmetric_distance(),
            getattr(dp, measure)(),
            candidates=[float(c) for c in candidates],
            alpha=alpha,
            scale=scale,
        )

    def release() -> Release:
        built = measurement()

        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            records = [float(v) for v in np.asarray(dataset).ravel()]
            return _repeat(lambda: built(records), size)

        return fn

    built = measurement()
    claims = {relation: _claim(built, d_in) for relation, d_in in D_IN.items()}
    name = (
        f"m.make_private_quantile({measure}, alpha={alpha:g}, scale={scale:g}, "
        f"{len(candidates)} candidates in ({bounds[0]:g}, {bounds[1]:g}))"
    )
    return Function(name, release, claims, _records_pairs(n, bounds, tuple(D_IN)))


def dispersion(
    statistic: str,
    measure: str,
    *,
    scale: float = 1.0,
    bounds: tuple[float, float] = (0.0, 1.0),
    n: int = N,
) -> Function:
    """``t.make_variance`` or ``t.make_sum_of_squared_deviations`` (``statistic``) of ``n``
    floats in ``bounds`` (a sized, bounded domain), then Laplace (``max_divergence``) or Gaussian
    (``zero_concentrated_divergence``) noise. A sized domain has neighbours of one size only:
    ``replace_one`` at ``d_in = 2``."""
    if statistic not in ("variance", "sum_of_squared_deviations"):
        raise ValueError(
            f"statistic must be 'variance' or 'sum_of_squared_deviations', got {statistic!r}"
        )
    kind = _kind(measure)

    def transformation() -> Any:
        dp = _dp()
        domain = dp.vector_domain(dp.atom_domain(bounds=tuple(map(float, bounds))), size=n)
        return getattr(dp.t, f"make_{statistic}")(domain, dp.symmetric_distance())

    def release() -> Release:
        return _release(transformation(), _noise(_dp(), kind, False, scale), False)

    dp = _dp()
    then = dp.m.then_laplace if kind == "laplace" else dp.m.then_gaussian
    claims = {"replace_one": _claim(transformation() >> then(scale=scale), D_IN["replace_one"])}
    name = (
        f"t.make_{statistic}(size={n}, bounds=({bounds[0]:g}, {bounds[1]:g})) >> "
        f"{kind}(scale={scale:g})"
    )
    return Function(name, release, claims, _records_pairs(n, bounds, ("replace_one",)))


def count(measure: str, *, scale: float = 1.0, n: int = N) -> Function:
    """``t.make_count`` of float records, then integer Laplace (``max_divergence``) or Gaussian
    (``zero_concentrated_divergence``) noise, on ``symmetric_distance`` (both relations)."""
    kind = _kind(measure)

    def transformation() -> Any:
        dp = _dp()
        space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
        return space >> dp.t.then_count()

    def release() -> Release:
        counted = transformation()
        return _release(lambda records: counted(records), _noise(_dp(), kind, True, scale), False)

    dp = _dp()
    then = dp.m.then_laplace if kind == "laplace" else dp.m.then_gaussian
    pipeline = transformation() >> then(scale=scale)
    claims = {relation: _claim(pipeline, d_in) for relation, d_in in D_IN.items()}
    name = f"count >> {kind}[int](scale={scale:g})"
    return Function(name, release, claims, _records_pairs(n, (0.0, 1.0), tuple(D_IN)))


def laplace_threshold(
    *, scale: float = 1.0, threshold: int = 10, units: Sequence[int] = UNITS
) -> Function:
    """``t.make_count_by`` of integer keys, then ``m.make_laplace_threshold``: a key's noisy
    count is released only above ``threshold`` (approximate max-divergence). Each trial's
    records are one key of their own, so one call releases every trial's key with independent
    noise; the output is the count, or :data:`CENSORED` for a key not released. A key of ``k``
    records against ``k + 1`` (``add_remove``, ``d_in = 1``)."""

    def measurement() -> Any:
        dp = _dp()
        space = (dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())
        return (
            space
            >> dp.t.then_count_by()
            >> dp.m.then_laplace_threshold(scale=scale, threshold=threshold)
        )

    def release() -> Release:
        built = measurement()

        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            k = len(np.asarray(dataset).ravel())
            released = built([t for t in range(size) for _ in range(k)]) if size else {}
            out = np.full(size, CENSORED)
            for key, value in released.items():
                out[int(key)] = float(value)
            return out

        return fn

    name = f"count_by >> m.make_laplace_threshold(scale={scale:g}, threshold={threshold})"
    return Function(
        name,
        release,
        {"add_remove": _claim(measurement(), 1)},
        lambda relation: {"units": unit_pairs(units, "records of one key")},
    )


def randomized_response_bool(*, prob: float = 0.75) -> Function:
    """``m.make_randomized_response_bool(prob)`` on one boolean record (0 or 1), discrete
    distance at ``d_in = 1`` (``replace_one``)."""

    def release() -> Release:
        built = _dp().m.make_randomized_response_bool(prob=prob)

        def fn(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            value = bool(int(np.asarray(dataset).ravel()[0]))
            return _repeat(lambda: built(value), size)

        return fn

    claims = {"replace_one": _claim(_dp().m.make_randomized_response_bool(prob=prob), 1)}
    pairs = {"boundary": boundary_pairs(1, 0, 1, integer=True)}
    return Function(
        f"m.make_randomized_response_bool(prob={prob:g})", release, claims, lambda r: pairs
    )


def functions() -> list[Function]:
    """The covered measurements and pipelines of OpenDP, with the settings audited."""
    return [
        _measurement("laplace", False, 1.0),
        _measurement("laplace", True, 1.0),
        _measurement("gaussian", False, 1.0),
        _measurement("gaussian", True, 1.0),
        _pipeline("laplace", integer=False, bounds=(0.0, 1.0), scale=1.0),
        _pipeline("laplace", integer=True, bounds=(0, 10), scale=10.0),
        _pipeline("gaussian", integer=False, bounds=(0.0, 1.0), scale=1.0),
        _pipeline("laplace", integer=False, bounds=(0.0, 1.0), scale=0.1, mean=True),
        _pipeline(
            "laplace", integer=True, bounds=(0, 2**29), scale=2.0**29, overflow=True, searched=False
        ),
        approximate("laplace"),
        approximate("gaussian"),
        geometric(),
        *(noisy_max(measure) for measure in MEASURES),
        *(noisy_max(measure, top=2) for measure in MEASURES),
        *(private_quantile(measure) for measure in MEASURES),
        *(dispersion("variance", measure) for measure in MEASURES),
        *(dispersion("sum_of_squared_deviations", measure) for measure in MEASURES),
        *(count(measure) for measure in MEASURES),
        laplace_threshold(),
        randomized_response_bool(),
    ]


#: OpenDP in the battery's registry.
LIBRARY = Library("opendp", "opendp", "opendp", functions, seeded=False, one_call_per_output=False)
