"""Audit code we did not write: any release function wrapped as a :class:`Mechanism`.

``BlackBox(fn)`` turns a callable ``fn(dataset, rng) -> output`` into a mechanism the engine can
run. Outputs may be scalars, vectors, integers, booleans or tuples of numbers; every call's output
is flattened into one row of a float array of shape ``(size, k)``, and each batch is checked:
same ``k`` on every call, no NaN, no infinities, with an error that names the mechanism.

Foreign code usually draws one output per call, so the default path calls ``fn`` once per trial.
That loop is the one per-trial Python loop in dpaudit, and it cannot be avoided without changing
the foreign code; it is kept to a single list comprehension. Code that can draw many outputs at
once is called as ``fn(dataset, size, rng)`` once per chunk: declared with ``vectorised=True``,
or detected from its signature (a parameter named ``size``) when ``vectorised`` is not given.
An audit draws at most ``2 * 1.5 * (trials + selection_trials)`` outputs in all, plus a
two-output shape probe (:func:`dpaudit.audit.engine.most_outputs`); a black box's default
selection sample is never larger than ``trials``
(:func:`dpaudit.audit.engine.selection_trials_for`), so that is at most ``6 * trials + 2``
outputs (from 4 trials on), each one call when the function is called once per output.
:meth:`BlackBox.cost` words that number before a run, and the result records what the audit
drew (``result.metadata["random"]["outputs_drawn"]``, and per stream
``["outputs_per_dataset"]``). A function whose probe is slow is also timed on fewer than two
chunks per dataset before the fit and the pilot (:data:`dpaudit.audit.engine.PRE_CHECK_SECONDS`),
draws that are not part of the result.

The randomness comes from the ``numpy.random.Generator`` the engine hands to every chunk, so an
audit is reproducible exactly when ``fn`` draws all its randomness from ``rng``. Foreign code with
its own generator (a system CSPRNG, say) still gives valid bounds, since every trial is a fresh
independent draw, but not bit-identical reruns.

A black box knows neither its density nor its privacy; the implementer's **claim** (a trade-off
curve such as ``approx_dp(eps, delta)``) becomes its theory under ``method="claim"``, so reports
compare the audit with what the code promises. The neighbouring pair comes from the user:
given to the box (``dataset`` and ``neighbour``, then it is :meth:`BlackBox.worst_case_pair`),
or left out and given to the audit instead (``pair=``, a spec's ``pair``, or the candidates of
:func:`dpaudit.audit.pair_search.search_pairs`, which can search for a better one).

Spec form (``mechanism = { kind = "blackbox", ... }``): ``callable = "package.module:function"``
is imported with :mod:`importlib`, from the spec file's own folder first when the module's file
lies there (no ``PYTHONPATH`` needed, and ``sys.path`` is left as it was); with
``params = { ... }`` the callable is a factory called as
``factory(**params)`` that returns the release function.
"""

from __future__ import annotations

import importlib
import inspect
import numbers
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._core.validation import check_choice
from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.mechanisms.base import (
    RELATIONS,
    CurveProfile,
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
    check_rng,
    check_size,
)

__all__ = ["BlackBox", "describe_outputs", "load_callable"]


def _beside(directory: Path, module_name: str) -> bool:
    """Whether the top-level package or module of ``module_name`` is a file in ``directory``."""
    top = module_name.split(".")[0]
    return (directory / f"{top}.py").is_file() or (directory / top / "__init__.py").is_file()


def _import_beside(directory: Path, module_name: str) -> Any:
    """Import ``module_name`` from ``directory`` without leaving a trace: ``sys.path`` is
    restored, and the modules loaded from ``directory`` are taken out of ``sys.modules`` again
    (any module of the same name imported before is put back). Another spec's module of the
    same name is therefore never mistaken for this one, and functions of such a module are
    pickled by value when they are sent to worker processes."""
    top = module_name.split(".")[0]
    own = [n for n in sys.modules if n == top or n.startswith(f"{top}.")]
    saved = {n: sys.modules.pop(n) for n in own}
    sys.path.insert(0, str(directory))
    try:
        return importlib.import_module(module_name)
    finally:
        sys.path.remove(str(directory))
        for name in [n for n in sys.modules if n == top or n.startswith(f"{top}.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def load_callable(spec: str, directory: str | Path | None = None) -> Callable[..., Any]:
    """Import ``"package.module:function"`` (attribute paths such as ``module:Class.method``
    work too) and return the callable; any problem raises ``ValueError`` naming ``spec``.

    With ``directory`` (a spec file's folder), a module whose file lies in that folder is
    imported from there first, without changing ``sys.path`` or ``sys.modules`` for anything
    else (the module is dropped from ``sys.modules`` again, so its functions are pickled by
    value for worker processes); other modules are imported as usual.
    """
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ValueError(f"callable must look like 'package.module:function', got {spec!r}")
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"callable must look like 'package.module:function', got {spec!r}")
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise ValueError(
            f"callable {spec!r}: {module_name!r} is not an absolute module name "
            "(dotted identifiers, such as 'package.module'; relative names are not accepted)"
        )
    try:
        if directory is not None and _beside(Path(directory), module_name):
            obj: Any = _import_beside(Path(directory), module_name)
        else:
            obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"callable {spec!r}: cannot import module {module_name!r} ({exc})"
        ) from None
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(
                f"callable {spec!r}: {module_name!r} has no attribute {attribute!r}"
            ) from None
    if not callable(obj):
        raise ValueError(f"callable {spec!r} names a {type(obj).__name__}, not a callable")
    return obj


def _is_number(value: object) -> bool:
    """A real number (Python, numpy or a 0-d array of one); strings and ``None`` are not."""
    return isinstance(value, numbers.Real) or (
        isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf"
    )


#: What :func:`_first_non_number` returns when every value is a number.
_NUMBERS_ONLY = object()


def _first_non_number(raw: object) -> object:
    """The first value in ``raw`` (nested lists, tuples and arrays) that is not a real number,
    or :data:`_NUMBERS_ONLY`; walked without recursion."""
    stack = [raw]
    while stack:
        value = stack.pop()
        if isinstance(value, list | tuple):
            stack.extend(reversed(value))
        elif isinstance(value, np.ndarray) and value.ndim > 0:
            stack.extend(reversed(list(value.flat)))
        elif not _is_number(value):
            return value
    return _NUMBERS_ONLY


def _callable_name(fn: Callable[..., Any]) -> str:
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:
        name = type(fn).__name__
    return f"{module}:{name}" if module else name


def describe_outputs(name: str, outputs: int, calls_per_output: bool) -> str:
    """``outputs`` outputs drawn from the foreign code ``name``, in words: ``"at most N calls
    into NAME (one per output)"`` when every output costs a call, else ``"at most N outputs from
    NAME (one call per chunk of outputs)"``."""
    if calls_per_output:
        return f"at most {outputs:,} calls into {name} (one per output)"
    return f"at most {outputs:,} outputs from {name} (one call per chunk of outputs)"


def _takes_size(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` has a parameter named ``size`` (then it draws many outputs per call)."""
    try:
        return "size" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class BlackBox(Mechanism):
    """A mechanism given only as a release function.

    Parameters
    ----------
    fn:
        ``fn(dataset, rng) -> output`` (one output per call) or, with ``vectorised=True``,
        ``fn(dataset, size, rng) -> outputs`` with ``size`` outputs along axis 0. ``rng`` is a
        ``numpy.random.Generator``.
    claim:
        The implementer's guarantee: a :class:`~dpaudit.bounds.tradeoff.TradeoffCurve` (e.g.
        ``approx_dp(1.0, 1e-6)``) or any :class:`~dpaudit.mechanisms.base.PrivacyProfile`. It
        becomes the theory ``method="claim"``; ``None``: no theory.
    vectorised:
        Call ``fn(dataset, size, rng)`` once per chunk instead of once per trial. ``None``
        (default): yes when ``fn`` has a parameter named ``size``.
    dataset, neighbour:
        The neighbouring pair returned by :meth:`worst_case_pair`, given together or not at
        all: without them the pair comes from the audit (``pair=`` of
        :func:`~dpaudit.audit.engine.audit_mechanism`, a spec's ``pair``, or the candidates of
        :func:`~dpaudit.audit.pair_search.search_pairs`). Both are handed to ``fn`` as numpy
        arrays.
    relation:
        ``"add_remove"`` or ``"replace_one"``; default: inferred from the two sizes.
    name:
        Label in results; default ``BlackBox(<module:function>)``.
    calls_per_output:
        Whether every output costs one call into the foreign code, which is how
        :meth:`cost` words an audit's size; default ``not vectorised``. A vectorised ``fn``
        that loops over a library's one-output function (the diffprivlib adapters) passes
        ``True``.
    """

    #: Every ``sample`` call runs code outside dpaudit: the engine learns the output shape from
    #: its first draw (the probe) instead of an extra call to :meth:`output_shape`.
    calls_foreign_code = True

    def __init__(
        self,
        fn: Callable[..., Any],
        claim: TradeoffCurve | PrivacyProfile | None = None,
        *,
        vectorised: bool | None = None,
        dataset: object = None,
        neighbour: object = None,
        relation: str | None = None,
        name: str | None = None,
        calls_per_output: bool | None = None,
    ) -> None:
        if not callable(fn):
            raise ValueError(f"fn must be callable, got {type(fn).__name__}")
        if vectorised is None:
            vectorised = _takes_size(fn)
        if not isinstance(vectorised, bool):
            raise ValueError(f"vectorised must be None, True or False, got {vectorised!r}")
        if claim is not None and not isinstance(claim, TradeoffCurve | PrivacyProfile):
            raise ValueError(
                "claim must be None, a TradeoffCurve (e.g. dpaudit.bounds.approx_dp(eps, delta)) "
                f"or a PrivacyProfile, got {type(claim).__name__}"
            )
        if (dataset is None) != (neighbour is None):
            missing = "neighbour" if neighbour is None else "dataset"
            raise ValueError(
                f"{missing} is missing: dataset and neighbour are given together, or neither "
                "(then the audit gives the pair)"
            )
        if calls_per_output is None:
            calls_per_output = not vectorised
        if not isinstance(calls_per_output, bool):
            raise ValueError(
                f"calls_per_output must be None, True or False, got {calls_per_output!r}"
            )
        if relation is not None:
            check_choice("relation", relation, RELATIONS)
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        self.fn = fn
        self.claim = claim
        self.vectorised = vectorised
        #: Whether every output costs one call into the foreign code.
        self.calls_per_output = calls_per_output
        #: How the release function is named in results: ``module:qualname``, or for a spec's
        #: factory the spec's callable with its arguments.
        self.callable_name = _callable_name(fn)
        self.label = name or f"BlackBox({self.callable_name})"
        self.relation = relation or "replace_one"
        self._pair: NeighbouringPair | None = None
        if dataset is not None:
            d, d_prime = np.asarray(dataset), np.asarray(neighbour)
            if relation is None:
                nd = d.shape[0] if d.ndim else 1
                ndp = d_prime.shape[0] if d_prime.ndim else 1
                self.relation = "add_remove" if abs(nd - ndp) == 1 else "replace_one"
            self._pair = NeighbouringPair(
                d, d_prime, self.relation, description="dataset and neighbour given by the user"
            )
        self._width: int | None = None

    @classmethod
    def from_spec(
        cls,
        target: str,
        *,
        dataset: object = None,
        neighbour: object = None,
        vectorised: bool | None = None,
        relation: str | None = None,
        params: Mapping[str, Any] | None = None,
        claim: TradeoffCurve | PrivacyProfile | None = None,
        name: str | None = None,
        directory: str | Path | None = None,
    ) -> BlackBox:
        """Build from the spec form; ``target`` is the spec's ``callable``
        (``"package.module:function"``). With ``params`` it names a factory and
        ``factory(**params)`` is the release function. ``directory`` (the spec's folder) is
        searched first for the module (:func:`load_callable`)."""
        fn = load_callable(target, directory)
        if params is not None:
            if not isinstance(params, Mapping):
                raise ValueError(f"params must be a table of keyword arguments, got {params!r}")
            try:
                fn = fn(**params)
            except TypeError as exc:
                raise ValueError(
                    f"callable {target!r} rejected params {dict(params)!r}: {exc}"
                ) from None
            if not callable(fn):
                raise ValueError(
                    f"callable {target!r} called with params must return the release function, "
                    f"got {type(fn).__name__}"
                )
        shown = target
        if params is not None:
            shown += "(" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + ")"
        box = cls(
            fn,
            claim,
            vectorised=vectorised,
            dataset=dataset,
            neighbour=neighbour,
            relation=relation,
            name=name or f"BlackBox({shown})",
        )
        box.callable_name = shown
        return box

    @property
    def name(self) -> str:
        """The label given at construction (default ``BlackBox(<module:function>)``)."""
        return self.label

    def params(self) -> dict[str, Any]:
        """``{"callable": ..., "vectorised": ..., "claim": ...}`` (JSON-ready)."""
        claim = None
        if isinstance(self.claim, TradeoffCurve):
            claim = self.claim.name
        elif self.claim is not None:
            claim = type(self.claim).__name__
        return {"callable": self.callable_name, "vectorised": self.vectorised, "claim": claim}

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``claim``: the implementer's stated guarantee, when given."""
        if self.claim is None:
            return {}
        if isinstance(self.claim, TradeoffCurve):
            curve = self.claim
            return {"claim": lambda: CurveProfile(curve)}
        profile = self.claim
        return {"claim": lambda: profile}

    @property
    def has_pair(self) -> bool:
        """Whether ``dataset`` and ``neighbour`` were given (then :meth:`worst_case_pair` is
        that pair)."""
        return self._pair is not None

    def worst_case_pair(self) -> NeighbouringPair:
        """The user's ``(dataset, neighbour)``; a black box cannot know its worst case."""
        if self._pair is None:
            raise ValueError(
                f"{self.name} has no neighbouring pair: pass dataset= and neighbour= to "
                "BlackBox, or pair= to the audit (search_pairs gives each candidate as pair=)"
            )
        return self._pair

    def cost(self, outputs: int) -> str:
        """``outputs`` drawn from this box in words (:func:`describe_outputs`): the calls into
        the release function when each output costs one, e.g. ``"at most 1,802 calls into
        mymech:release (one per output)"``."""
        return describe_outputs(self.callable_name, outputs, self.calls_per_output)

    def _rows(self, raw: object, size: int) -> np.ndarray:
        """Validate and convert one batch of outputs to a float array ``(size, k)``.

        Only numbers pass: a string such as ``"1.5"`` is refused, not read as a number, and an
        output with no values at all is refused too."""
        try:
            y = np.asarray(raw)
            found = _first_non_number(raw) if y.dtype.kind not in "biuf" else _NUMBERS_ONLY
            if found is not _NUMBERS_ONLY:
                kind = "the string" if isinstance(found, str) else type(found).__name__
                raise TypeError(f"got {kind} {str(found)[:40]!r}")
            y = y.astype(float)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{self.name} returned outputs that are not numbers or equal-length tuples of "
                f"numbers ({' '.join(str(exc).split())})"
            ) from None
        if y.ndim == 0 or y.shape[0] != size:
            got = "a scalar" if y.ndim == 0 else f"{y.shape[0]} outputs"
            raise ValueError(f"{self.name} must return {size} outputs on axis 0, got {got}")
        if y.size == 0:
            raise ValueError(f"{self.name} returned empty outputs (no values)")
        y = y.reshape(size, -1)
        if np.isnan(y).any():
            raise ValueError(f"{self.name} returned NaN outputs")
        if np.isinf(y).any():
            raise ValueError(f"{self.name} returned infinite outputs")
        if self._width is None:
            self._width = y.shape[1]
        elif y.shape[1] != self._width:
            raise ValueError(
                f"{self.name} returned outputs of {y.shape[1]} values, earlier ones had "
                f"{self._width}; every output must have the same number of values"
            )
        return y

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` outputs as a float array ``(size, k)``: one ``fn`` call per trial, or one
        vectorised call."""
        size = check_size(size)
        rng = check_rng(rng)
        if self.vectorised:
            return self._rows(self.fn(dataset, size, rng), size)
        if size == 0:
            width = self._width if self._width is not None else self.output_shape(dataset)[0]
            return np.empty((0, width))
        fn = self.fn
        return self._rows([fn(dataset, rng) for _ in range(size)], size)

    def output_shape(self, dataset: np.ndarray) -> tuple[int, ...]:
        """``(k,)``: the number of values per output, from one draw if not yet known."""
        if self._width is None:
            self.sample(dataset, 1, np.random.default_rng(0))
        return (self._width,)
