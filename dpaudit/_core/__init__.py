"""Plumbing shared by every layer of dpaudit: it imports nothing else of dpaudit.

- :mod:`dpaudit._core.modules`: :class:`CallableModule`, the design that lets a package or module
  share its name with its main function (``dpaudit.audit``, ``dpaudit.bounds.gdp``).
- :mod:`dpaudit._core.numbers`: :func:`format_number`, how every report and printed result writes
  a number (a lower bound rounded down, an upper bound up).
- :mod:`dpaudit._core.provenance`: ``__version__`` and :func:`versions`, the record of a run.
"""
