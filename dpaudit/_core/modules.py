"""A package that can still be called, for one release, under the name of its old main function.

``dpaudit.audit`` is the sub-package of the engine; ``dpaudit.audit(mechanism, pair, ...)`` used
to run an audit, which :func:`dpaudit.audit_mechanism` does now. A function and a module must not
share a name (tooltips, ``help()`` and type checkers read the module), so the call is kept only as
a deprecated spelling: the package's class is switched to :class:`CallableModule`, a
:class:`types.ModuleType` whose ``__call__`` warns (``DeprecationWarning``) and delegates to the
function named in ``__main_function__``. The module stays the module (sub-modules, attributes,
``from m import f``)::

    # at the end of the package __init__ that owned the call
    make_callable(__name__, "audit_mechanism")
"""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any


class CallableModule(types.ModuleType):
    """A module that can be called: ``module(*args, **kwargs)`` warns that the call is
    deprecated and returns ``module.<__main_function__>(*args, **kwargs)``."""

    __main_function__: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        function = self.__main_function__
        warnings.warn(
            f"calling the module {self.__name__} is deprecated and will be removed in the next "
            f"release; call {self.__name__.rsplit('.', 1)[0]}.{function} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, function)(*args, **kwargs)


def make_callable(module_name: str, function: str) -> None:
    """Make calling the module ``module_name`` a deprecated spelling of its function ``function``.

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
