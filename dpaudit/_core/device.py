"""Where an audit's trials run: numpy on this machine's cores, or a PyTorch device.

``device=None`` (or ``"numpy"``) is the numpy engine. ``"cpu"``, ``"cuda"`` and ``"cuda:N"``
run the reference mechanisms' samplers, their scores and the binning on that PyTorch device.
PyTorch is optional: it is imported by :func:`torch_device` only, so ``import dpaudit`` never
imports it, and an audit that names no torch device never does either.

A class offers a device path by defining a ``torch_*`` twin of a numpy method (``torch_sample``
of ``sample``, ``torch_score`` of ``score``, ``torch_log_density_ratio`` of
``log_density_ratio``) in the same class as the numpy method (:func:`has_twin`): a subclass that
changes the numpy method without its twin has no device path, and is refused instead of running
its parent's sampler.
"""

from __future__ import annotations

import re
from typing import Any

from dpaudit._core.streams import chunk_seeds

__all__ = ["DEVICES", "check_device", "has_twin", "torch_device", "torch_generators"]

#: How a device is named: ``None``/``"numpy"`` (numpy), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
DEVICES = ("numpy", "cpu", "cuda", "cuda:N")

_TORCH_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


def check_device(name: str, device: object) -> str | None:
    """``None`` for the numpy engine, else the torch device's name; anything else raises
    ``ValueError`` naming ``name``. Imports nothing."""
    if device is None or device == "numpy":
        return None
    if not isinstance(device, str) or not _TORCH_DEVICE.fullmatch(device):
        raise ValueError(
            f"{name} must be None, 'numpy', 'cpu', 'cuda' or 'cuda:N' (N a GPU index), "
            f"got {device!r}"
        )
    return device


def torch_device(device: str) -> Any:
    """The ``torch.device`` named ``device``; ``ValueError`` naming ``device`` when PyTorch is
    not installed or the GPU does not exist."""
    try:
        import torch
    except ImportError:
        raise ValueError(f"device={device!r} needs PyTorch: pip install 'dpaudit[torch]'") from None
    target = torch.device(device)
    if target.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = 0 if target.index is None else target.index
        if index >= count:
            raise ValueError(f"device={device!r} names a GPU this machine lacks ({count} found)")
        target = torch.device("cuda", index)
    return target


def torch_generators(target: Any, seed: int, stream: str, chunks: range) -> list[Any]:
    """One torch generator on ``target`` per chunk of ``chunks`` of ``stream``, seeded by
    :func:`~dpaudit._core.streams.chunk_seeds`."""
    import torch

    generators = []
    for value in chunk_seeds(seed, stream, chunks):
        generator = torch.Generator(device=target)
        generator.manual_seed(value)
        generators.append(generator)
    return generators


def _owner(obj: object, name: str) -> type | None:
    for cls in type(obj).__mro__:
        if name in vars(cls):
            return cls
    return None


def has_twin(obj: object, name: str, twin: str) -> bool:
    """Whether ``obj``'s method ``twin`` is defined in the same class as its method ``name``."""
    owner = _owner(obj, twin)
    return owner is not None and owner is _owner(obj, name)
