"""Audit specifications: TOML files that say what to audit, with which attack, against which claim.

A spec file holds one or more ``[[audit]]`` tables::

    [[audit]]
    name = "laplace-overclaimed"
    mechanism = { kind = "laplace", scale = 0.5 }
    attack = { kind = "likelihood_ratio" }
    claim = { kind = "approx_dp", eps = 1.0, delta = 0.0 }
    trials = 100_000          # per dataset
    seed = 1
    confidence = 0.95
    deltas = [0.0, 1e-5]

Keys of an ``[[audit]]`` table (see :data:`AUDIT_KEYS`): ``name`` (required, unique in the file),
``description``, ``mechanism`` (required; a table with ``kind``), ``pair`` (``d``, ``d_prime``,
``relation``, ``description``; default: the mechanism's worst-case pair, which a black box has
only when given ``dataset`` and ``neighbour``), ``attack`` (a table with ``kind``; default
``likelihood_ratio`` when the mechanism has the density of the pair's outputs, else
``delta_leak``, e.g. for black boxes: the engine's rule, the same as the Python API's),
``trials`` (required, per dataset), ``seed``, ``confidence``, ``strategy``, ``threshold``,
``selection_trials``, ``claim`` (a table with ``kind``; default: the mechanism's own tightest
valid accountant), ``deltas`` (the delta values at which epsilon is reported), ``n_jobs``,
``device`` (``"numpy"``, the default, or a PyTorch device ``"cpu"``, ``"cuda"``, ``"cuda:N"``)
and ``expect`` (``"consistent"`` or ``"violated"``: the verdict the audit is meant to reach,
e.g. for a deliberately flawed mechanism).

A black box's ``callable = "mymech:release"`` is looked up first in the spec file's folder
(``mymech.py`` beside the spec), without ``PYTHONPATH`` and without changing ``sys.path`` for
other specs; modules that are not there are imported as usual.

A dataset (a black box's or an adapter's ``dataset`` and ``neighbour``, a pair's ``d`` and
``d_prime``) is an array or the path of a ``.npy`` or ``.csv`` file, relative to the spec file's
folder (:func:`read_dataset_file`; docs/guide/blackbox.md#dataset-files): ``.npy`` keeps its dtype
and every bit, ``.csv`` values are read as float64 by Python's ``float``, exact for values
written with 17 significant digits (``repr`` or ``"%.17g"``).

Kinds of mechanisms, attacks and claims live in registries (:data:`MECHANISM_KINDS`,
:data:`ATTACK_KINDS`, :data:`CLAIM_KINDS`) that map a kind to its builder and the keys it takes;
:func:`register_mechanism`, :func:`register_attack` and :func:`register_claim` add kinds.

Every problem is reported as a :class:`SpecError` (a ``ValueError``) whose one-line message names
the file, the audit, the key and what was expected; numeric constraints are checked by the
constructors of the objects built, whose messages name the parameter and its allowed range.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit import attacks, mechanisms
from dpaudit._core.device import check_device
from dpaudit._core.heartbeat import doing
from dpaudit._core.jsonvalues import to_json_value
from dpaudit._core.validation import (
    check_choice,
    check_input_file,
    check_n_jobs,
    check_probability,
    check_seed,
)
from dpaudit.attacks.base import Attack
from dpaudit.audit.accountant import AccountantAuditSpec
from dpaudit.audit.device import check_support
from dpaudit.audit.engine import (
    FIRST_PHASE_TRIALS,
    audit_mechanism,
    audit_sequential,
    most_outputs,
    selection_trials_for,
)
from dpaudit.audit.limits import check_trials
from dpaudit.audit.strategies import STRATEGIES
from dpaudit.bounds.gaussian_dp import gdp
from dpaudit.bounds.rdp import ApproxZCDP, RDPCurve
from dpaudit.bounds.tradeoff import TradeoffCurve, approx_dp
from dpaudit.mechanisms.base import METHOD_KINDS, Mechanism, NeighbouringPair

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "SpecError",
    "Param",
    "DATASET_FILE_SUFFIXES",
    "read_dataset_file",
    "Kind",
    "AuditSpec",
    "AUDIT_KEYS",
    "MECHANISM_KINDS",
    "ATTACK_KINDS",
    "CLAIM_KINDS",
    "VERDICTS",
    "MAX_NAME_LENGTH",
    "MAX_DEPTH",
    "MAX_DELTAS",
    "MAX_RDP_ORDERS",
    "register_mechanism",
    "register_attack",
    "register_claim",
    "build_mechanism",
    "default_claim_method",
    "load",
    "loads",
    "parse",
    "suite",
    "SUITE_TOML",
    "ACCOUNTANT_AUDIT_KEYS",
    "parse_accountant_audits",
    "load_accountant_audits",
]

#: The two verdicts of an audit: the claim held against every test, or a test refuted it.
VERDICTS = ("consistent", "violated")

#: Longest audit name: names label reports, figures, file names and store directories.
MAX_NAME_LENGTH = 200

#: Deepest nesting of tables and arrays in a spec (a composed, subsampled mechanism needs a few).
MAX_DEPTH = 64

#: Most orders of an ``rdp`` claim: the time to draw its curve grows with them (3,000 kept a run
#: busy for minutes); Opacus' default has 151 orders and dp_accounting's 156.
MAX_RDP_ORDERS = 256

#: Most ``deltas`` of an audit: each is an eps bound to select and test, and a report row (3,000
#: of them took four minutes).
MAX_DELTAS = 64


class SpecError(ValueError):
    """A spec that cannot be used; its one-line message names file, key and what was expected."""


@dataclass(frozen=True)
class Param:
    """One key of a spec table.

    ``expected`` is one of :data:`EXPECTED`; a key that is not ``required`` takes ``default``
    when it is absent.
    """

    expected: str
    required: bool = True
    default: Any = None
    help: str = ""


@dataclass(frozen=True)
class Kind:
    """A kind of mechanism, attack or claim: its builder and the keys of its table.

    Builders receive the validated keys as keyword arguments (nested mechanisms already built).
    Mechanism builders return a :class:`~dpaudit.mechanisms.base.Mechanism`; attack builders
    are called as ``build(mechanism, pair, **keys)``; claim builders as ``build(mechanism, **keys)``
    and return a :class:`~dpaudit.bounds.tradeoff.TradeoffCurve`.
    """

    build: Callable[..., Any]
    params: Mapping[str, Param]
    summary: str


def _describe(value: object) -> str:
    kind = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "table",
    }.get(type(value), type(value).__name__)
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{text} ({kind})"


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError
    return float(value)


def _integer(value: object) -> int:
    if isinstance(value, bool):
        raise TypeError
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise TypeError


def _seed(value: object) -> int:
    # A whole float (seed = 0.0, seed = 1e300) is refused: a seed is an exact integer.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError
    return value


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError
    return value


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError
    return value


def _numbers(value: object) -> tuple[float, ...]:
    if not isinstance(value, list) or not value:
        raise TypeError
    return tuple(_number(v) for v in value)


def _array(value: object) -> np.ndarray:
    if not isinstance(value, list | int | float) or isinstance(value, bool):
        raise TypeError
    try:
        out = np.asarray(value, dtype=float)
    except ValueError as exc:  # ragged or non-numeric nested arrays
        raise TypeError from exc
    return out


#: The folder of the spec file being read: black-box callables are looked up there first, and
#: dataset files are read from there.
_SPEC_DIRECTORY: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "spec_directory", default=None
)

#: The files a spec may read a dataset from (``dataset = "d.npy"``), by suffix.
DATASET_FILE_SUFFIXES = (".npy", ".csv")


def _csv_dataset(text: str) -> np.ndarray:
    """The records of a CSV text: one per line, values separated by commas, each read by Python's
    ``float`` (correctly rounded, so any value written with 17 significant digits comes back
    bit for bit); blank lines and lines starting with ``#`` are skipped."""
    rows: list[list[float]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        row = []
        for cell in line.split(","):
            try:
                row.append(float(cell))
            except ValueError:
                raise ValueError(f"line {number}: {cell.strip()!r} is not a number") from None
        if rows and len(row) != len(rows[0]):
            raise ValueError(
                f"line {number} has {len(row)} values, the lines before it {len(rows[0])}"
            )
        rows.append(row)
    if not rows:
        return np.empty(0)
    out = np.array(rows, dtype=np.float64)
    return out[:, 0] if out.shape[1] == 1 else out


def _npy_dataset(path: Path) -> np.ndarray:
    """The one array of a ``.npy`` file, with its dtype, if it holds numbers (no pickles)."""
    with open(path, "rb") as handle:
        try:
            out = np.lib.format.read_array(handle, allow_pickle=False)
        except (ValueError, EOFError) as exc:
            raise ValueError(
                f"not a .npy array of numbers ({' '.join(str(exc).split())})"
            ) from None
    if out.dtype.kind not in "biuf":
        raise ValueError(f"holds {out.dtype} values, not real numbers")
    return out


def read_dataset_file(path: str | Path) -> np.ndarray:
    """A dataset from a file: a ``.npy`` array (read without pickles, dtype kept: integers stay
    integers) or a ``.csv`` text (one record per line, values separated by commas; one value per
    line gives an array of shape ``(n,)``, ``k`` values ``(n, k)``; read as float64, exact for
    values written with 17 significant digits, such as ``repr`` or ``"%.17g"``; blank lines and
    lines starting with ``#`` are skipped). Any problem raises ``ValueError`` naming the file."""
    path = check_input_file(path, "dataset file")
    suffix = path.suffix.lower()
    if suffix not in DATASET_FILE_SUFFIXES:
        kind = repr(suffix) if suffix else "(no suffix)"
        raise ValueError(
            f"{path}: unknown file type {kind}; expected {' or '.join(DATASET_FILE_SUFFIXES)}"
        )
    try:
        if suffix == ".npy":
            return _npy_dataset(path)
        return _csv_dataset(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the dataset file ({exc})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _dataset(value: object) -> np.ndarray:
    """An array, or a string naming a dataset file relative to the spec's folder."""
    if not isinstance(value, str):
        return _array(value)
    path = Path(value)
    directory = _SPEC_DIRECTORY.get()
    if directory is not None and not path.is_absolute():
        path = directory / path
    return read_dataset_file(path)


def _number_or_numbers(value: object) -> float | tuple[float, ...]:
    return _numbers(value) if isinstance(value, list) else _number(value)


def _integer_or_numbers(value: object) -> int | tuple[float, ...]:
    if isinstance(value, list):
        return _numbers(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError


def _table(value: object) -> dict:
    if not isinstance(value, dict):
        raise TypeError
    return value


def _tables(value: object) -> list[dict]:
    if not isinstance(value, list) or not value:
        raise TypeError
    return [_table(v) for v in value]


#: What a :class:`Param` may expect, with the converter that checks it (``TypeError`` = wrong type,
#: ``ValueError`` = a value that cannot be used, such as a dataset file that cannot be read).
#: ``mechanism`` and ``list of mechanisms`` are nested mechanism tables, built recursively.
EXPECTED: dict[str, Callable[[object], Any]] = {
    "number": _number,
    "integer": _integer,
    "integer seed": _seed,
    "string": _string,
    "boolean": _boolean,
    "non-empty array of numbers": _numbers,
    "number or array of numbers": _number_or_numbers,
    "integer or array of numbers": _integer_or_numbers,
    "array": _array,
    "array or .npy/.csv file": _dataset,
    "table": _table,
    "mechanism": _table,
    "list of mechanisms": _tables,
}


def _an(expected: str) -> str:
    article = "an" if expected[0] in "aeiou" else "a"
    return expected if expected.startswith(("non-", "list")) else f"{article} {expected}"


class _Context:
    """Where in which file a value sits, to prefix error messages."""

    def __init__(self, source: str, audit: str) -> None:
        self.source = source
        self.audit = audit

    def error(self, key: str, message: str) -> SpecError:
        if key and message.startswith(f"{key} "):
            key = ""  # the message already starts with the key's name
        where = f"{self.audit}: {key}" if self.audit and key else (self.audit or key)
        parts = [p for p in (self.source, where, message) if p]
        # Keys and values come from the file: escape control characters to keep one line.
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in ": ".join(parts))
        return SpecError(text)


def _read_table(
    table: Mapping[str, Any],
    params: Mapping[str, Param],
    ctx: _Context,
    prefix: str,
    *,
    ignore: Sequence[str] = (),
    what: str = "",
) -> dict[str, Any]:
    """Check a table against ``params``: unknown keys, missing keys and types; fill defaults."""
    allowed = [*ignore, *params]
    for key in table:
        if key not in params and key not in ignore:
            raise ctx.error(
                f"{prefix}{key}",
                f"unknown key{what}; expected one of: {', '.join(allowed)}",
            )
    out: dict[str, Any] = {}
    for key, param in params.items():
        if key not in table:
            if param.required:
                raise ctx.error(f"{prefix}{key}", f"missing; expected {_an(param.expected)}")
            out[key] = param.default
            continue
        value = table[key]
        try:
            converted = EXPECTED[param.expected](value)
        except TypeError:
            raise ctx.error(
                f"{prefix}{key}", f"expected {_an(param.expected)}, got {_describe(value)}"
            ) from None
        except ValueError as exc:
            raise ctx.error(f"{prefix}{key}", str(exc)) from None
        except OverflowError:  # an integer such as 10**400 where a float is read
            raise ctx.error(
                f"{prefix}{key}",
                f"{_describe(value)} is beyond the float range (below 1.8e308 in magnitude)",
            ) from None
        if param.expected == "mechanism":
            converted = _build_mechanism(converted, ctx, f"{prefix}{key}")
        elif param.expected == "list of mechanisms":
            converted = [
                _build_mechanism(item, ctx, f"{prefix}{key}[{i}]")
                for i, item in enumerate(converted)
            ]
        out[key] = converted
    return out


def _check_depth(data: object, ctx: _Context) -> None:
    """Refuse tables and arrays nested more than :data:`MAX_DEPTH` deep (walked without
    recursion, so that no depth can exhaust the stack)."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping | list | tuple):
            if depth >= MAX_DEPTH:
                raise ctx.error("", f"tables or arrays are nested more than {MAX_DEPTH} deep")
            items = value.values() if isinstance(value, Mapping) else value
            stack.extend((item, depth + 1) for item in items)


def _check_name(name: str, ctx: _Context) -> None:
    """An audit name: non-empty printable text of at most :data:`MAX_NAME_LENGTH` characters."""
    if not name.strip():
        raise ctx.error("name", "must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise ctx.error(
            "name", f"has {len(name):,} characters; at most {MAX_NAME_LENGTH} are allowed"
        )
    if not name.isprintable():
        raise ctx.error("name", "must be printable text (no line breaks or control characters)")


def _label(kind: str, index: int, table: object) -> str:
    """``audit 2 (name)`` for messages; a long name is cut."""
    label = f"{kind} {index + 1}"
    if isinstance(table, dict) and isinstance(table.get("name"), str):
        name = table["name"]
        label += f" ({name[:40]}…)" if len(name) > 40 else f" ({name})"
    return label


def _kind_of(
    table: Mapping[str, Any], registry: Mapping[str, Kind], ctx: _Context, key: str
) -> str:
    if "kind" not in table:
        raise ctx.error(f"{key}.kind", f"missing; expected one of: {', '.join(registry)}")
    kind = table["kind"]
    if not isinstance(kind, str) or kind not in registry:
        raise ctx.error(
            f"{key}.kind", f"unknown kind {kind!r}; expected one of: {', '.join(registry)}"
        )
    return kind


def _call(ctx: _Context, key: str, build: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a builder; its ``ValueError`` (parameter, value, allowed range) gets file and key, and
    so does an arithmetic failure (e.g. a theory overflowing for a composition of 3^30 runs)."""
    try:
        return build(*args, **kwargs)
    except SpecError:
        raise
    except ValueError as exc:
        raise ctx.error(key, str(exc)) from None
    except ArithmeticError as exc:
        raise ctx.error(key, f"cannot be computed ({type(exc).__name__}: {exc})") from None


def _build_kind(
    table: Mapping[str, Any], registry: Mapping[str, Kind], ctx: _Context, key: str, *args: Any
) -> Any:
    """Build ``table`` (``{kind = ..., <keys>}``) with its kind's builder of ``registry``:
    ``build(*args, **keys)``."""
    kind = _kind_of(table, registry, ctx, key)
    spec = registry[kind]
    values = _read_table(
        table, spec.params, ctx, f"{key}.", ignore=("kind",), what=f" for kind {kind!r}"
    )
    return _call(ctx, f"{key} ({kind})", spec.build, *args, **values)


def _build_mechanism(table: Mapping[str, Any], ctx: _Context, key: str) -> Mechanism:
    return _build_kind(table, MECHANISM_KINDS, ctx, key)


def build_mechanism(table: Mapping[str, Any], *, source: str = "") -> Mechanism:
    """Build a mechanism from a spec table such as ``{"kind": "gaussian", "sigma": 1.0}``."""
    if not isinstance(table, Mapping):
        raise SpecError(f"{source + ': ' if source else ''}mechanism: expected a table")
    ctx = _Context(source, "")
    _check_depth(table, ctx)
    return _build_mechanism(table, ctx, "mechanism")


# --- registries ---------------------------------------------------------------------------------

#: Mechanism kind -> builder and keys. Kinds are the class names in snake case.
MECHANISM_KINDS: dict[str, Kind] = {}
#: Attack kind -> builder and keys.
ATTACK_KINDS: dict[str, Kind] = {}
#: Claim kind -> builder and keys.
CLAIM_KINDS: dict[str, Kind] = {}


def _register(
    registry: dict[str, Kind],
    kind: str,
    build: Callable[..., Any],
    params: Mapping[str, Param],
    summary: str,
    replace: bool,
) -> None:
    if not isinstance(kind, str) or not kind.isidentifier() or kind != kind.lower():
        raise ValueError(f"kind must be a lower-case identifier such as 'gaussian', got {kind!r}")
    if kind in registry and not replace:
        raise ValueError(f"kind {kind!r} is already registered; pass replace=True to replace it")
    for name, param in params.items():
        if name == "kind":
            raise ValueError("params must not contain 'kind' (it selects the builder)")
        check_choice(f"params[{name!r}].expected", param.expected, tuple(EXPECTED))
    registry[kind] = Kind(build=build, params=dict(params), summary=summary)


def register_mechanism(
    kind: str,
    build: Callable[..., Mechanism],
    params: Mapping[str, Param],
    summary: str = "",
    *,
    replace: bool = False,
) -> None:
    """Make ``mechanism = { kind = "<kind>", ... }`` available in specs.

    ``build(**keys)`` receives the keys of ``params`` (validated, defaults filled).
    """
    _register(MECHANISM_KINDS, kind, build, params, summary, replace)


def register_attack(
    kind: str,
    build: Callable[..., Attack],
    params: Mapping[str, Param],
    summary: str = "",
    *,
    replace: bool = False,
) -> None:
    """Make ``attack = { kind = "<kind>", ... }`` available: ``build(mechanism, pair, **keys)``."""
    _register(ATTACK_KINDS, kind, build, params, summary, replace)


def register_claim(
    kind: str,
    build: Callable[..., TradeoffCurve],
    params: Mapping[str, Param],
    summary: str = "",
    *,
    replace: bool = False,
) -> None:
    """Make ``claim = { kind = "<kind>", ... }`` available: ``build(mechanism, **keys)``."""
    _register(CLAIM_KINDS, kind, build, params, summary, replace)


def _composed(
    base: Mechanism | None = None,
    times: int | None = None,
    components: list[Mechanism] | None = None,
) -> Mechanism:
    if components is not None:
        if base is not None or times is not None:
            raise ValueError("composed takes either 'base' and 'times' or 'components', not both")
        return mechanisms.Composed(components)
    if base is None or times is None:
        raise ValueError("composed needs 'base' and 'times', or 'components'")
    return mechanisms.Composed(base, times)


def default_claim_method(mechanism: Mechanism) -> str | None:
    """The mechanism's first theory method that states a valid guarantee (``exact`` or ``bound``).

    Approximations such as the GDP central limit are never chosen by default.
    """
    for method in mechanism.theory_methods:
        if METHOD_KINDS.get(method) in ("exact", "bound"):
            return method
    return None


def _accountant_claim(mechanism: Mechanism, method: str | None = None) -> TradeoffCurve:
    if method is None:
        method = default_claim_method(mechanism)
        if method is None:
            raise ValueError(f"{mechanism.name} has no theory method to take the claim from")
    return mechanism.tradeoff(method)


register_mechanism(
    "gaussian",
    lambda sigma, sensitivity: mechanisms.Gaussian(sigma, sensitivity=sensitivity),
    {"sigma": Param("number"), "sensitivity": Param("number", False, 1.0)},
    "Gaussian noise N(0, sigma^2) added to a query of the given l2-sensitivity",
)
register_mechanism(
    "laplace",
    lambda scale, sensitivity: mechanisms.Laplace(scale, sensitivity=sensitivity),
    {"scale": Param("number"), "sensitivity": Param("number", False, 1.0)},
    "Laplace noise Lap(0, scale) added to a query of the given l1-sensitivity",
)
register_mechanism(
    "randomized_response",
    lambda eps, k: mechanisms.RandomizedResponse(eps, k=k),
    {"eps": Param("number"), "k": Param("integer", False, 2)},
    "k-ary randomized response with privacy parameter eps",
)
register_mechanism(
    "poisson_subsampled",
    lambda base, rate: mechanisms.PoissonSubsampled(base, rate),
    {"base": Param("mechanism"), "rate": Param("number")},
    "base mechanism run on a Poisson subsample with the given rate (add/remove)",
)
register_mechanism(
    "fixed_size_subsampled",
    lambda base, size, population: mechanisms.FixedSizeSubsampled(base, size, population),
    {"base": Param("mechanism"), "size": Param("integer"), "population": Param("integer")},
    "base mechanism run on a uniformly drawn subset of fixed size (replace-one)",
)
register_mechanism(
    "composed",
    _composed,
    {
        "base": Param("mechanism", False),
        "times": Param("integer", False),
        "components": Param("list of mechanisms", False),
    },
    "'times'-fold composition of 'base', or the composition of 'components'",
)

register_attack(
    "likelihood_ratio",
    lambda mechanism, pair: attacks.LikelihoodRatio(mechanism, pair),
    {},
    "Neyman-Pearson optimal score log q(y)/p(y) (needs the mechanism's density)",
)
register_attack(
    "threshold",
    lambda mechanism, pair, projection: attacks.Threshold(
        list(projection) if isinstance(projection, tuple) else projection
    ),
    {"projection": Param("integer or array of numbers", False, None)},
    "the scalar output, coordinate 'projection', or the projection on weights 'projection'",
)


def _dpsgd(**keys: Any) -> Mechanism:
    from dpaudit.mechanisms.dpsgd import DPSGD

    return DPSGD(**keys)


register_mechanism(
    "dpsgd",
    _dpsgd,
    {
        "model": Param("string", False, "logistic", "'logistic' or 'mlp'"),
        "dataset": Param("string", False, "synthetic", "'synthetic' or 'goog'"),
        "sigma": Param("number", help="noise multiplier: N(0, sigma^2 clip^2) on the sum"),
        "steps": Param("integer", help="training steps T"),
        "rate": Param("number", False, None, "Poisson rate q (other batches: m = rate * n)"),
        "batch_size": Param("integer", False, None, "batch size m ('fixed' or 'shuffled')"),
        "clip": Param("number", False, 1.0, "per-example gradient clipping norm C"),
        "learning_rate": Param("number", False, 0.5, "step size"),
        "sampling": Param(
            "string", False, "poisson", "'poisson' (add/remove), 'fixed' or 'shuffled'"
        ),
        "canary": Param("string", False, "dirac", "'dirac' (gradient) or 'input' (outlier)"),
        "observe": Param(
            "string",
            False,
            "final",
            "'final' model, canary 'updates', or 'final_canary' (drawn from its exact law)",
        ),
        "hidden": Param("integer", False, 16, "hidden units of the MLP"),
        "seed": Param("integer seed", False, 0, "seed of the synthetic data and the MLP's start"),
        "canary_every": Param("integer", False, 1, "Dirac gradients at steps 0, k, 2k, ..."),
        "init": Param("string", False, "default", "'default' or 'worst_case' initialisation"),
    },
    "DP-SGD trained many times on a small dataset with a canary: final model or canary updates",
)

register_mechanism(
    "noisy_mean",
    lambda **keys: mechanisms.NoisyMean(**keys),
    {
        "d": Param("integer", help="dimension of the records in {-1, +1}^d"),
        "n": Param("integer", help="number of records averaged"),
        "noise": Param("string", False, "gaussian", "'gaussian' or 'laplace'"),
        "sigma": Param("number", False, None, "Gaussian noise per coordinate"),
        "scale": Param("number", False, None, "Laplace scale per coordinate"),
        "mu": Param("number", False, None, "calibrate Gaussian noise to mu-GDP"),
        "eps": Param("number", False, None, "calibrate to (eps, delta), or pure eps (Laplace)"),
        "delta": Param("number", False, None, "delta of the Gaussian (eps, delta) calibration"),
        "calibration": Param("string", False, "release", "'release' or 'coordinate' (flawed)"),
        "population": Param("array", False, None, "population mean p (default: uniform)"),
        "seed": Param(
            "integer seed", False, 0, "seed of p, the dataset, the target, the references"
        ),
    },
    "mean of n population records in {-1, +1}^d plus noise per coordinate (replace-one)",
)
register_attack(
    "tracing",
    lambda mechanism, pair, game, center, references: attacks.Tracing.for_game(
        mechanism, game, center=center, references=references
    ),
    {
        "game": Param("string", False, "fixed", "'fixed' dataset, or a 'fresh' one every trial"),
        "center": Param("string", False, "population", "'population', 'learned' or 'reference'"),
        "references": Param("integer", False, 100, "reference records (center 'reference')"),
    },
    "tracing statistic <y - p, z - p> on a noisy_mean; its game defines the pair (attack.pair)",
)
register_attack(
    "membership_inference",
    lambda mechanism, pair, calibrated: attacks.MembershipInference.for_mechanism(
        mechanism, pair, calibrated=calibrated
    ),
    {"calibrated": Param("boolean", False, False, "likelihood ratio of fitted normal laws")},
    "the target's loss under the released model (mechanism.membership_loss), or its LiRA score",
)


# --- foreign code: black boxes, adapters, flawed mechanisms, learned attacks ------------------


def _blackbox(**keys: Any) -> Mechanism:
    from dpaudit.mechanisms.blackbox import BlackBox

    return BlackBox.from_spec(keys.pop("callable"), directory=_SPEC_DIRECTORY.get(), **keys)


def _flawed(name: str, eps: float, **optional: Any) -> Mechanism:
    from dpaudit.mechanisms.flawed import flawed

    return flawed(name, eps, **{k: v for k, v in optional.items() if v is not None})


def _adapter(library: str, **keys: Any) -> Mechanism:
    from dpaudit.mechanisms import adapters

    if library == "diffprivlib":
        return adapters.diffprivlib_mechanism(**keys)
    return adapters.opendp_mechanism(**keys)


def _learned(mechanism: Mechanism, pair: NeighbouringPair, **keys: Any) -> Attack:
    from dpaudit.attacks.learned import Learned

    return Learned.for_mechanism(mechanism, pair, **keys)


def _flawed_names() -> str:
    from dpaudit.mechanisms.flawed import FLAWED

    return ", ".join(FLAWED)


register_mechanism(
    "blackbox",
    _blackbox,
    {
        "callable": Param("string", help="'package.module:function', fn(dataset, rng) -> output"),
        "dataset": Param(
            "array or .npy/.csv file",
            False,
            None,
            "D, handed to the function (without it, the audit's pair gives D and D_prime)",
        ),
        "neighbour": Param(
            "array or .npy/.csv file", False, None, "D_prime, handed to the function"
        ),
        "vectorised": Param(
            "boolean",
            False,
            None,
            "call fn(dataset, size, rng) once per chunk (default: when fn has a 'size' parameter)",
        ),
        "relation": Param("string", False, None, "'add_remove' or 'replace_one' (default: sizes)"),
        "params": Param("table", False, None, "the callable is a factory: factory(**params)"),
        "name": Param("string", False, None, "label in results"),
    },
    "any release function, imported from 'callable' (one call per trial unless vectorised)",
)
register_mechanism(
    "flawed",
    _flawed,
    {
        "name": Param("string", help=f"one of: {_flawed_names()}"),
        "eps": Param("number", False, 0.1, "the claimed eps"),
        "k": Param("integer", False, None, "number of queries (length of the datasets)"),
        "c": Param("integer", False, None, "sparse vector: cutoff"),
        "threshold": Param("number", False, None, "sparse vector: threshold"),
        "leak": Param("number", False, None, "laplace_skipped_noise: probability of no noise"),
        "m": Param("integer", False, None, "randomized_response_binary_formula: categories"),
        "batch_size": Param("integer", False, None, "dpsgd_shuffled_claims_poisson: batch size"),
        "epochs": Param("integer", False, None, "dpsgd_shuffled_claims_poisson: epochs"),
    },
    f"a mechanism from the DP-violation literature claiming eps-DP; names: {_flawed_names()}",
)
register_mechanism(
    "diffprivlib",
    lambda **keys: _adapter("diffprivlib", **keys),
    {
        "mechanism": Param("string", False, "laplace", "laplace, gaussian, gaussian_analytic"),
        "epsilon": Param("number"),
        "delta": Param("number", False, 0.0),
        "sensitivity": Param("number", False, 1.0),
        "dataset": Param("array or .npy/.csv file", False, [0.0], "records summed by the query"),
        "neighbour": Param("array or .npy/.csv file", False, [1.0], "records summed by the query"),
    },
    "diffprivlib's Laplace or Gaussian mechanism on the sum of the records (optional package)",
)
register_mechanism(
    "opendp",
    lambda **keys: _adapter("opendp", **keys),
    {
        "mechanism": Param("string", False, "laplace", "'laplace' or 'gaussian'"),
        "scale": Param("number", help="OpenDP's noise scale"),
        "sensitivity": Param("number", False, 1.0),
        "dataset": Param("array or .npy/.csv file", False, [0.0], "records summed by the query"),
        "neighbour": Param("array or .npy/.csv file", False, [1.0], "records summed by the query"),
    },
    "OpenDP's Laplace or Gaussian measurement on the sum of the records (optional package)",
)
register_attack(
    "learned",
    _learned,
    {
        "model": Param("string", False, "auto", "'auto', 'discrete', 'histogram', ..."),
        "features": Param("string", False, "mechanism", "'mechanism' statistic or 'none'"),
        "train_trials": Param("integer", False, 2**17, "extra training outputs per dataset"),
        "seed": Param(
            "integer seed", False, 0, "seed of the training outputs and of the CV splits"
        ),
    },
    "log-likelihood ratio learned from independent training outputs (foreign code)",
)

register_attack(
    "delta_leak",
    lambda mechanism, pair, train_trials, min_count, seed: attacks.DeltaLeak(
        mechanism=mechanism, pair=pair, train_trials=train_trials, min_count=min_count, seed=seed
    ),
    {
        "train_trials": Param("integer", False, 2**17, "extra training outputs per dataset"),
        "min_count": Param("integer", False, 2, "occurrences that make an exact output an event"),
        "seed": Param(
            "integer seed", False, 0, "seed of the training outputs and of the CV splits"
        ),
    },
    "learned score plus tests on exact output events (the default for black boxes)",
)


def _zcdp_claim(mechanism: Mechanism, rho: float, xi: float, delta: float) -> TradeoffCurve:
    delta = check_probability("delta", delta, high_open=True)
    return ApproxZCDP(rho, xi, delta).tradeoff()


def _approx_dp_claim(mechanism: Mechanism, eps: float, delta: float) -> TradeoffCurve:
    """The claim ``(eps, delta)``-DP; ``delta >= 1`` is refused: every mechanism satisfies it,
    so no audit could ever refute it."""
    if delta >= 1:
        raise ValueError(
            f"delta must be below 1, got {delta!r}: (eps, 1)-DP holds for every mechanism, so "
            "the claim could never be refuted"
        )
    return approx_dp(eps, delta)


register_claim(
    "approx_dp",
    _approx_dp_claim,
    {"eps": Param("number"), "delta": Param("number", False, 0.0)},
    "(eps, delta)-DP",
)
register_claim(
    "gdp",
    lambda mechanism, mu: gdp(mu),
    {"mu": Param("number")},
    "mu-Gaussian differential privacy",
)
register_claim(
    "pure_dp",
    lambda mechanism, eps: approx_dp(eps, 0.0),
    {"eps": Param("number")},
    "pure eps-DP",
)
register_claim(
    "zcdp",
    _zcdp_claim,
    {
        "rho": Param("number"),
        "xi": Param("number", False, 0.0, "offset of approximate (xi, rho)-zCDP"),
        "delta": Param("number", False, 0.0, "delta of delta-approximate zCDP, in [0, 1)"),
    },
    "rho-zCDP, or delta-approximate (xi, rho)-zCDP (Bun & Steinke 2016)",
)


def _rdp_claim(
    mechanism: Mechanism, orders: tuple[float, ...], eps: tuple[float, ...]
) -> TradeoffCurve:
    """The claimed RDP curve; more than :data:`MAX_RDP_ORDERS` orders are refused."""
    if len(orders) > MAX_RDP_ORDERS:
        raise ValueError(
            f"orders has {len(orders):,} values; at most {MAX_RDP_ORDERS} are allowed (every "
            "point of the claim's trade-off curve is a bisection against each order)"
        )
    return RDPCurve(orders, eps, name="claimed RDP").tradeoff()


register_claim(
    "rdp",
    _rdp_claim,
    {
        "orders": Param("non-empty array of numbers", help="the orders lambda > 1"),
        "eps": Param("non-empty array of numbers", help="eps(lambda) at each order"),
    },
    "Renyi DP: eps(lambda) at the given orders",
)
register_claim(
    "accountant",
    _accountant_claim,
    {"method": Param("string", False, None)},
    "the mechanism's own theory by 'method' (default: its tightest valid method)",
)


# --- audit tables -------------------------------------------------------------------------------

#: Keys of an ``[[audit]]`` table.
AUDIT_KEYS: dict[str, Param] = {
    "name": Param("string", help="unique label of the audit"),
    "description": Param("string", False, "", "free text shown in the report"),
    "mechanism": Param("table", help="the mechanism audited: { kind = ..., ... }"),
    "pair": Param(
        "table",
        False,
        None,
        "{ d, d_prime (arrays or .npy/.csv files), relation }; default: the mechanism's own",
    ),
    "attack": Param(
        "table",
        False,
        None,
        "{ kind = ... }; default: likelihood_ratio when the mechanism has the density of "
        "the pair's outputs, else delta_leak (as in the Python API)",
    ),
    "trials": Param("integer", help="Monte Carlo trials per dataset"),
    "seed": Param("integer seed", False, 0, "root seed of the trials"),
    "confidence": Param("number", False, 0.95, "confidence level of the bounds"),
    "strategy": Param("string", False, "holdout", "how the threshold is chosen"),
    "threshold": Param("number or array of numbers", False, None, "thresholds of strategy 'fixed'"),
    "selection_trials": Param("integer", False, None, "trials per dataset to select on"),
    "claim": Param("table", False, None, "{ kind = ... }; default: the mechanism's accountant"),
    "deltas": Param(
        "non-empty array of numbers",
        False,
        (1e-5,),
        f"delta values to report (at most {MAX_DELTAS})",
    ),
    "n_jobs": Param("integer", False, None, "parallel workers (-1: all cores; default: automatic)"),
    "device": Param("string", False, None, "where trials run: numpy (default), cpu, cuda, cuda:N"),
    "expect": Param("string", False, "consistent", "the verdict the audit is meant to reach"),
}

_PAIR_KEYS: dict[str, Param] = {
    "d": Param("array or .npy/.csv file"),
    "d_prime": Param("array or .npy/.csv file"),
    "relation": Param("string", False, "add_remove"),
    "description": Param("string", False, ""),
}


@dataclass(frozen=True)
class AuditSpec:
    """One audit, read from a spec: the objects built and the run's settings.

    ``table`` is the ``[[audit]]`` table as written (after command-line overrides), kept for the
    results file; ``origin`` says where it came from (``file.toml: audit 2 (name)``).
    """

    name: str
    mechanism: Mechanism
    pair: NeighbouringPair
    attack: Attack | None
    claim: TradeoffCurve | None
    trials: int
    seed: int = 0
    confidence: float = 0.95
    strategy: str = "holdout"
    threshold: float | None = None
    selection_trials: int | None = None
    deltas: tuple[float, ...] = (1e-5,)
    n_jobs: int | None = None
    expect: str = "consistent"
    description: str = ""
    table: dict[str, Any] = field(default_factory=dict, compare=False)
    origin: str = ""
    device: str | None = None

    def with_overrides(
        self,
        *,
        trials: int | None = None,
        seed: int | None = None,
        n_jobs: int | None = None,
        device: str | None = None,
    ) -> AuditSpec:
        """The same audit with some settings replaced (the command line's ``--trials`` etc.;
        ``device="numpy"`` replaces a spec's torch device by numpy)."""
        changes: dict[str, Any] = {}
        written: dict[str, Any] = {}
        if trials is not None:
            changes["trials"] = check_trials("trials", trials)
        if seed is not None:
            changes["seed"] = check_seed("seed", seed)
        if n_jobs is not None:
            changes["n_jobs"] = check_n_jobs("n_jobs", n_jobs)
        if device is not None:
            changes["device"] = check_device("device", device)
            written["device"] = device
        if not changes:
            return self
        table = {**self.table, **changes, **written}
        return dataclasses.replace(self, table=table, **changes)

    def claim_table(self) -> dict[str, Any] | None:
        """The claim as written in the spec (or the default accountant claim), JSON-ready."""
        if self.claim is None:
            return None
        written = self.table.get("claim")
        if written is not None:
            return dict(written)
        return {"kind": "accountant", "method": default_claim_method(self.mechanism)}

    def most_outputs(self) -> int:
        """The most outputs the audit draws from its mechanism, both datasets and the shape
        probe together (:func:`dpaudit.audit.engine.most_outputs`, with the default selection
        sample when the spec gives none): for a black box called once per output, the most
        calls into its function."""
        selection = self.selection_trials
        if selection is None:
            selection = selection_trials_for(self.mechanism, self.trials)
        return most_outputs(self.trials, selection)

    def tested_claim(self) -> TradeoffCurve | None:
        """The claim the audit tests: the spec's, else the mechanism's own stated claim (theory
        method ``"claim"``), else ``None``."""
        if self.claim is not None:
            return self.claim
        if "claim" in getattr(self.mechanism, "theory_methods", ()):
            return self.mechanism.tradeoff("claim")
        return None

    def sequential_conflicts(self) -> list[str]:
        """The settings a sequential audit (``--until-decided``) cannot honour: it chooses its
        thresholds and selection sample itself and runs on numpy."""
        conflicts = []
        if self.strategy != "holdout":
            conflicts.append(f"strategy = {self.strategy!r}")
        for key in ("threshold", "selection_trials", "device"):
            if getattr(self, key) is not None:
                conflicts.append(f"{key} = {getattr(self, key)!r}")
        return conflicts

    def run(
        self,
        *,
        progress: Any = None,
        store: str | Path | None = None,
        until_decided: bool = False,
    ) -> Any:
        """Run the audit with :func:`dpaudit.audit`; returns its ``AuditResult``.

        ``store`` is a directory that keeps finished batches, so that a rerun resumes. With
        ``until_decided`` an audit with a claim (:meth:`tested_claim`) runs sequentially
        (:func:`dpaudit.audit.engine.audit_sequential`, at level ``1 - confidence``, phases from
        ``min(FIRST_PHASE_TRIALS, trials)`` up to ``trials`` per dataset) and stops as soon as
        the evidence decides; the result is its last phase's, with ``metadata["sequential"]``
        saying when and why it stopped.
        """
        claim = self.tested_claim() if until_decided else None
        if claim is not None:
            audit = audit_sequential(
                self.mechanism,
                claim,
                self.pair,
                self.attack,
                level=1.0 - self.confidence,
                trials=min(FIRST_PHASE_TRIALS, self.trials),
                max_trials=self.trials,
                seed=self.seed,
                deltas=self.deltas,
                n_jobs=1 if self.n_jobs is None else self.n_jobs,
                progress=bool(progress),
            )
            return audit.results[audit.pair]
        return audit_mechanism(
            self.mechanism,
            self.pair,
            self.attack,
            trials=self.trials,
            seed=self.seed,
            confidence=self.confidence,
            strategy=self.strategy,
            threshold=self.threshold,
            selection_trials=self.selection_trials,
            n_jobs=self.n_jobs,
            progress=progress,
            store=store,
            device=self.device,
        )


def _open_table(
    table: object,
    what: str,
    index: int,
    source: str,
    names: set[str],
    keys: Mapping[str, Param],
    ignore: Sequence[str] = (),
) -> tuple[_Context, dict[str, Any]]:
    """Check one ``[[<what>]]`` table's keys and its unique, non-empty name; return the context
    of its error messages and its values (defaults filled)."""
    label = _label(what, index, table)
    ctx = _Context(source, label)
    if not isinstance(table, dict):
        raise ctx.error("", f"expected a table, got {_describe(table)}")
    values = _read_table(table, keys, ctx, "", ignore=ignore)
    name = values["name"]
    _check_name(name, ctx)
    if name in names:
        raise ctx.error("name", f"{name!r} is used by an earlier audit; names must be unique")
    names.add(name)
    return ctx, values


def _read_pair(values: Mapping[str, Any], ctx: _Context) -> NeighbouringPair | None:
    """The pair written in the table, or ``None`` when it has none."""
    if values["pair"] is None:
        return None
    p = _read_table(values["pair"], _PAIR_KEYS, ctx, "pair.")
    return _call(ctx, "pair", NeighbouringPair, **p)


def _check_key(
    values: Mapping[str, Any],
    ctx: _Context,
    key: str,
    fn: Callable[..., Any],
    *args: Any,
    **kw: Any,
) -> Any:
    """``fn(key, values[key], *args, **kw)``, a check whose error names the key of the table."""
    return _call(ctx, key, fn, key, values[key], *args, **kw)


def _run_settings(
    values: Mapping[str, Any], ctx: _Context, *, min_trials: int = 1
) -> dict[str, Any]:
    """``trials``, ``seed``, ``confidence`` and ``n_jobs`` of an ``[[audit]]`` or
    ``[[accountant_audit]]`` table, checked."""
    n_jobs = values["n_jobs"]
    return {
        "trials": _check_key(values, ctx, "trials", check_trials, minimum=min_trials),
        "seed": _check_key(values, ctx, "seed", check_seed),
        "confidence": _check_key(
            values, ctx, "confidence", check_probability, low_open=True, high_open=True
        ),
        "n_jobs": None if n_jobs is None else _check_key(values, ctx, "n_jobs", check_n_jobs),
    }


def _check_settings(values: Mapping[str, Any], ctx: _Context) -> dict[str, Any]:
    """The run settings of an ``[[audit]]`` table, checked."""
    settings = {
        **_run_settings(values, ctx),
        "expect": _check_key(values, ctx, "expect", check_choice, VERDICTS),
        "strategy": _check_key(values, ctx, "strategy", check_choice, STRATEGIES),
    }
    if (settings["strategy"] == "fixed") != (values["threshold"] is not None):
        raise ctx.error("threshold", "is needed with strategy 'fixed' and only then")
    if values["selection_trials"] is not None:
        _check_key(values, ctx, "selection_trials", check_trials, minimum=2)
    if values["device"] is not None:
        settings["device"] = _check_key(values, ctx, "device", check_device)
    if len(values["deltas"]) > MAX_DELTAS:
        raise ctx.error(
            "deltas",
            f"has {len(values['deltas']):,} values; at most {MAX_DELTAS} are allowed (each is "
            "a bound computed and a row of the report)",
        )
    for i, delta in enumerate(values["deltas"]):
        _call(ctx, f"deltas[{i}]", check_probability, "delta", delta, high_open=True)
    return settings


def _audited_objects(
    values: Mapping[str, Any], ctx: _Context
) -> tuple[Mechanism, NeighbouringPair, Attack | None, TradeoffCurve | None]:
    """The mechanism, pair, attack and claim of an ``[[audit]]`` table, with their defaults: the
    mechanism's worst-case pair (or the attack's own game pair), no attack (the engine then
    chooses, as for the Python API), and the accountant claim of its tightest valid theory."""
    mechanism = _build_mechanism(values["mechanism"], ctx, "mechanism")
    pair = _read_pair(values, ctx)
    if pair is None and isinstance(mechanism, mechanisms.BlackBox) and not mechanism.has_pair:
        raise ctx.error(
            "pair",
            "missing: a blackbox mechanism has no pair of its own; give the audit "
            "pair = { d = ..., d_prime = ... }, or the mechanism dataset and neighbour",
        )
    if pair is None:
        pair = _call(ctx, "pair", mechanism.worst_case_pair)
    attack_table = values["attack"]
    # Without an attack table the engine chooses, as for the Python API (one rule, one place).
    attack: Attack | None = None
    if attack_table is not None:
        attack = _build_kind(attack_table, ATTACK_KINDS, ctx, "attack", mechanism, pair)
    if values["pair"] is None and isinstance(getattr(attack, "pair", None), NeighbouringPair):
        # An attack that plays a game on its own pair (tracing) defines the pair audited.
        pair = attack.pair
    claim: TradeoffCurve | None = None
    if values["claim"] is not None:
        claim = _build_kind(values["claim"], CLAIM_KINDS, ctx, "claim", mechanism)
    elif default_claim_method(mechanism) is not None:
        claim = _call(ctx, "claim", _accountant_claim, mechanism)
    return mechanism, pair, attack, claim


def _parse_audit(table: object, index: int, source: str, names: set[str]) -> AuditSpec:
    ctx, values = _open_table(table, "audit", index, source, names, AUDIT_KEYS)
    settings = _check_settings(values, ctx)
    with doing(f"reading {source or 'the spec'}: building {ctx.audit}"):
        mechanism, pair, attack, claim = _audited_objects(values, ctx)
    if settings.get("device") is not None:
        _call(ctx, "device", check_support, mechanism, attack, settings["device"])
    return AuditSpec(
        name=values["name"],
        mechanism=mechanism,
        pair=pair,
        attack=attack,
        claim=claim,
        **settings,
        threshold=values["threshold"],
        selection_trials=values["selection_trials"],
        deltas=tuple(values["deltas"]),
        description=values["description"],
        table=to_json_value(table, unknown="str"),
        origin=f"{source}: {ctx.audit}" if source else ctx.audit,
    )


def _tables_of(data: Mapping[str, Any], kind: str, source: str, expected: str) -> list[Any]:
    """The ``[[<kind>]]`` tables of a parsed spec document, after checking its depth and its
    top-level keys (``expected`` ends the message on an unknown key)."""
    ctx = _Context(source, "")
    _check_depth(data, ctx)
    commands = {"audit": "dpaudit run", "accountant_audit": "dpaudit audit-accountant"}
    for key in data:
        if key in commands and key != kind:
            # Never skipped in silence: the other command's tables would not run.
            raise ctx.error(
                key,
                f"[[{key}]] tables are run by '{commands[key]}', not by '{commands[kind]}'; "
                "give them a spec of their own",
            )
        if key != kind:
            raise ctx.error(key, f"unknown top-level key; {expected}")
    tables = data.get(kind)
    if tables is None:
        raise ctx.error(kind, f"no [[{kind}]] table found")
    if not isinstance(tables, list):
        raise ctx.error(
            kind, f"expected [[{kind}]] tables (an array of tables), got a single table"
        )
    if not tables:
        raise ctx.error(kind, f"an empty array; expected at least one [[{kind}]] table")
    return tables


def parse(data: Mapping[str, Any], *, source: str = "") -> list[AuditSpec]:
    """Build the audits of a parsed spec document (``{"audit": [ {...}, ... ]}``)."""
    tables = _tables_of(data, "audit", source, "expected [[audit]] tables only")
    names: set[str] = set()
    return [_parse_audit(table, i, source, names) for i, table in enumerate(tables)]


def _toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML; a syntax error or a document nested too deep for the parser is a
    :class:`SpecError`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: invalid TOML: {exc}") from None
    except RecursionError:
        raise SpecError(
            f"{source}: invalid spec: tables or arrays are nested more than {MAX_DEPTH} deep"
        ) from None


def loads(
    text: str, *, source: str = "<string>", directory: str | Path | None = None
) -> list[AuditSpec]:
    """Read audits from TOML text; ``source`` names it in error messages. A black box's
    ``callable`` whose module is a file in ``directory`` is imported from there, and dataset
    files are read relative to ``directory`` (default: the working directory)."""
    data = _toml(text, source)
    with _spec_directory(directory):
        return parse(data, source=source)


@contextlib.contextmanager
def _spec_directory(directory: str | Path | None) -> Iterator[None]:
    """Meanwhile, ``directory`` is the folder of the spec being read (:data:`_SPEC_DIRECTORY`)."""
    token = _SPEC_DIRECTORY.set(None if directory is None else Path(directory))
    try:
        yield
    finally:
        _SPEC_DIRECTORY.reset(token)


def _read_spec_file(path: Path) -> str:
    try:
        check_input_file(path, "spec file")
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    try:
        # "utf-8-sig": a byte-order mark, as some editors write, is not part of the TOML.
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read spec file ({exc})") from None


def load(path: str | Path) -> list[AuditSpec]:
    """Read audits from a TOML spec file."""
    path = Path(path)
    text = _read_spec_file(path)
    return loads(text, source=str(path), directory=path.resolve().parent)


#: The battery of reference audits run by ``dpaudit suite``: each reference mechanism against its
#: own tightest accountant, plus one deliberately over-claimed mechanism that must be caught.
SUITE_TOML = """\
# The dpaudit reference battery (`dpaudit suite`). Copy it and run it with `dpaudit run`.

[[audit]]
name = "gaussian"
description = "Gaussian mechanism, sigma = 1: exactly 1-GDP."
mechanism = { kind = "gaussian", sigma = 1.0 }
trials = 2_000_000
seed = 1
deltas = [1e-5, 1e-3]

[[audit]]
name = "laplace"
description = "Laplace mechanism, scale 1: exactly 1-DP."
mechanism = { kind = "laplace", scale = 1.0 }
trials = 400_000
seed = 2
deltas = [0.0, 1e-5]

[[audit]]
name = "randomized-response"
description = "Binary randomized response with eps = 1: exactly (1, 0)-DP."
mechanism = { kind = "randomized_response", eps = 1.0 }
trials = 400_000
seed = 3
deltas = [0.0, 1e-5]

[[audit]]
name = "poisson-subsampled-gaussian"
description = "Gaussian (sigma = 0.8) on a Poisson subsample with rate 0.2."
mechanism = { kind = "poisson_subsampled", base = { kind = "gaussian", sigma = 0.8 }, rate = 0.2 }
trials = 2_000_000
seed = 4
deltas = [1e-5, 1e-3]

[[audit]]
name = "fixed-size-subsampled-gaussian"
description = "Gaussian (sigma = 2) on a uniformly drawn subset of 20 out of 100 (replace-one)."
trials = 2_000_000
seed = 8
deltas = [1e-5, 1e-3]
[audit.mechanism]
kind = "fixed_size_subsampled"
base = { kind = "gaussian", sigma = 2.0 }
size = 20
population = 100

[[audit]]
name = "composed-gaussian"
description = "16-fold composition of the Gaussian mechanism with sigma = 4: exactly 1-GDP."
mechanism = { kind = "composed", base = { kind = "gaussian", sigma = 4.0 }, times = 16 }
trials = 1_000_000
seed = 5
deltas = [1e-5, 1e-3]

[[audit]]
name = "composed-randomized-response"
description = "10-fold composition of binary randomized response with eps = 0.3."
mechanism = { kind = "composed", base = { kind = "randomized_response", eps = 0.3 }, times = 10 }
trials = 1_000_000
seed = 6
deltas = [1e-5, 1e-3]

[[audit]]
name = "laplace-overclaimed"
description = "Laplace with scale 0.5 is 2-DP; the claim says 1-DP, and the audit must refute it."
mechanism = { kind = "laplace", scale = 0.5 }
claim = { kind = "approx_dp", eps = 1.0, delta = 0.0 }
expect = "violated"
trials = 100_000
seed = 7
deltas = [0.0, 1e-5]
"""


def suite() -> list[AuditSpec]:
    """The audits of :data:`SUITE_TOML`."""
    return loads(SUITE_TOML, source="<suite>")


# --- accountant audits (``dpaudit audit-accountant``) ---------------------------------------------

#: Keys of an ``[[accountant_audit]]`` table; ``accountants`` (a non-empty array of accountant
#: names, :data:`dpaudit.accountants.NAMES`) is read separately, as no ``Param`` type holds strings.
ACCOUNTANT_AUDIT_KEYS: dict[str, Param] = {
    "name": Param("string", help="unique label of the accountant audit"),
    "description": Param("string", False, "", "free text shown in the report"),
    "mechanism": Param("table", help="the mechanism: { kind = ..., ... }"),
    "pair": Param(
        "table",
        False,
        None,
        "{ d, d_prime (arrays or .npy/.csv files), relation }; default: the mechanism's own",
    ),
    "epsilons": Param("non-empty array of numbers", False, None, "eps grid (default: automatic)"),
    "trials": Param("integer", help="privacy-loss samples per order"),
    "seed": Param("integer seed", False, 0, "root seed of the samples"),
    "confidence": Param("number", False, 0.95, "simultaneous confidence level of the bounds"),
    "importance": Param("boolean", False, None, "importance sampling (default: where possible)"),
    "n_jobs": Param("integer", False, 1, "parallel workers (-1: all cores)"),
    "expect": Param(
        "table",
        False,
        None,
        "accountant name -> { verdict, reason }: a verdict other than consistent, and why",
    ),
}

#: Keys of one entry of an ``[[accountant_audit]]``'s ``expect`` table.
_EXPECT_KEYS: dict[str, Param] = {
    "verdict": Param("string", help="the verdict the accountant is meant to get"),
    "reason": Param("string", help="why, in words the report shows beside the verdict"),
}


def _read_expectations(
    values: Mapping[str, Any], listed: Sequence[str], ctx: _Context
) -> dict[str, dict[str, str]]:
    """The ``expect`` table of an ``[[accountant_audit]]``: for some of its accountants the
    verdict (:data:`VERDICTS`) they are meant to get, with the reason."""
    out: dict[str, dict[str, str]] = {}
    for name, entry in (values["expect"] or {}).items():
        key = f'expect."{name}"'
        if name not in listed:
            raise ctx.error(key, f"{name!r} is not one of this table's accountants")
        if not isinstance(entry, dict):
            raise ctx.error(key, f"expected a table {{ verdict, reason }}, got {_describe(entry)}")
        read = _read_table(entry, _EXPECT_KEYS, ctx, f"{key}.")
        verdict = _call(
            ctx, f"{key}.verdict", check_choice, f"{key}.verdict", read["verdict"], VERDICTS
        )
        if not read["reason"].strip():
            raise ctx.error(f"{key}.reason", "is empty; say why the verdict is expected")
        out[name] = {"verdict": verdict, "reason": " ".join(read["reason"].split())}
    return out


def _parse_accountant_audit(
    table: object, index: int, source: str, names: set[str]
) -> AccountantAuditSpec:
    from dpaudit.accountants import NAMES as ACCOUNTANT_NAMES

    ctx, values = _open_table(
        table, "accountant_audit", index, source, names, ACCOUNTANT_AUDIT_KEYS, ("accountants",)
    )
    listed = table.get("accountants")
    if not isinstance(listed, list) or not listed or not all(isinstance(a, str) for a in listed):
        raise ctx.error(
            "accountants",
            f"expected a non-empty array of accountant names ({', '.join(ACCOUNTANT_NAMES)})",
        )
    for i, accountant in enumerate(listed):
        if accountant not in ACCOUNTANT_NAMES:
            expected = ", ".join(ACCOUNTANT_NAMES)
            raise ctx.error(
                f"accountants[{i}]",
                f"unknown accountant {accountant!r}; expected one of: {expected}",
            )
    settings = _run_settings(values, ctx, min_trials=2)
    epsilons = values["epsilons"]
    if epsilons is not None and any(e < 0 or not math.isfinite(e) for e in epsilons):
        raise ctx.error("epsilons", "must be finite numbers >= 0")
    mechanism = _build_mechanism(values["mechanism"], ctx, "mechanism")
    pair = _read_pair(values, ctx)
    return AccountantAuditSpec(
        name=values["name"],
        mechanism=mechanism,
        accountants=tuple(listed),
        epsilons=epsilons,
        pair=pair,
        **settings,
        importance="auto" if values["importance"] is None else values["importance"],
        expect=_read_expectations(values, listed, ctx),
        description=values["description"],
        table=to_json_value(table, unknown="str"),
        origin=f"{source}: {ctx.audit}" if source else ctx.audit,
    )


def parse_accountant_audits(
    data: Mapping[str, Any], *, source: str = ""
) -> list[AccountantAuditSpec]:
    """Build the accountant audits of a parsed spec document
    (``{"accountant_audit": [ {...}, ... ]}``; ``[[audit]]`` tables are ignored here)."""
    expected = "expected [[accountant_audit]] tables"
    tables = _tables_of(data, "accountant_audit", source, expected)
    names: set[str] = set()
    return [_parse_accountant_audit(t, i, source, names) for i, t in enumerate(tables)]


def load_accountant_audits(path: str | Path) -> list[AccountantAuditSpec]:
    """Read the ``[[accountant_audit]]`` tables of a TOML spec file."""
    path = Path(path)
    text = _read_spec_file(path)
    with _spec_directory(path.resolve().parent):
        return parse_accountant_audits(_toml(text, str(path)), source=str(path))
