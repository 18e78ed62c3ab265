"""Modules that are also their own main function.

Several public names of dpaudit are both a module and the function users call most:
``dpaudit.audit`` is the sub-package of the engine *and* ``dpaudit.audit(mechanism, pair, ...)``;
``dpaudit.bounds.gdp`` is the module of Gaussian DP *and* the curve constructor ``gdp(mu)``.
Binding the function to the name would hide the module (``import dpaudit.audit.grid as g`` resolves
attributes along the path and would find the function); binding the module would break the call.

One general design keeps both: the module object's class is switched to :class:`CallableModule`,
a :class:`types.ModuleType` whose ``__call__`` delegates to the function named in
``__main_function__``. The module stays the module (sub-modules, attributes, ``from m import f``)
and calling it calls the function::

    # at the end of the module (or package __init__) that owns ``name``
    make_callable(__name__, "gdp")

``import dpaudit.bounds.gdp as m``, ``from dpaudit.bounds import gdp`` and
``from dpaudit.bounds.gdp import gdp`` then all work, and ``gdp(1.0)`` is the curve either way.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class CallableModule(types.ModuleType):
    """A module that can be called: ``module(*args, **kwargs)`` is
    ``module.<__main_function__>(*args, **kwargs)``."""

    __main_function__: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, self.__main_function__)(*args, **kwargs)


def make_callable(module_name: str, function: str) -> None:
    """Make the module ``module_name`` callable as its function ``function``.

    Parameters
    ----------
    module_name:
        The ``__name__`` of a module that is already in :data:`sys.modules`.
    function:
        The name of the module attribute that a call delegates to; it must exist.
    """
    module = sys.modules[module_name]
    if not callable(getattr(module, function, None)):
        raise ValueError(f"function must name a callable of {module_name}, got {function!r}")
    module.__class__ = CallableModule
    module.__main_function__ = function
