"""The argument checks, at their previous path: they live in :mod:`dpaudit._core.validation`."""

from dpaudit._core import validation as _validation

__all__ = list(_validation.__all__)


def __getattr__(name: str) -> object:
    """Every check of :mod:`dpaudit._core.validation`, under this older name."""
    if name in __all__:
        return getattr(_validation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
