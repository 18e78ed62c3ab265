"""The choice of a device, without PyTorch: names, seeds, specs, and no torch import on numpy.

What runs on a torch device is tested in tests/integrations/test_device.py, where torch is
installed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import dpaudit
from dpaudit import specs
from dpaudit._core.device import check_device
from dpaudit._core.streams import MAX_SEEDED_CHUNKS, STREAMS, chunk_seeds
from dpaudit.mechanisms import Gaussian


def test_numpy_device_never_imports_torch():
    code = (
        "import sys, dpaudit; from dpaudit.mechanisms import Gaussian; "
        "dpaudit.audit_mechanism(Gaussian(1.0), trials=1000, device='numpy'); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "CPU", 0, "cuda:"])
def test_bad_device_is_refused_naming_device(device):
    with pytest.raises(ValueError, match="device must be None, 'numpy', 'cpu', 'cuda'"):
        check_device("device", device)
    with pytest.raises(ValueError, match="device must be"):
        dpaudit.audit_mechanism(Gaussian(1.0), trials=1000, device=device)


def test_chunk_seeds_are_distinct_in_their_low_32_bits():
    # torch's CPU generator keeps the low 32 bits of a seed: no two chunks of an audit may share
    # them, across the engine's streams too.
    seeds = [s for stream in STREAMS for s in chunk_seeds(7, stream, range(5000))]
    assert len({s & 0xFFFFFFFF for s in seeds}) == len(seeds)
    assert len({s >> 32 for s in seeds}) > 0.99 * len(seeds)
    assert chunk_seeds(7, "evaluation", range(3, 5)) == chunk_seeds(7, "evaluation", range(5))[3:]
    assert chunk_seeds(8, "evaluation", range(5)) != chunk_seeds(7, "evaluation", range(5))
    with pytest.raises(ValueError, match="chunks must be a range"):
        chunk_seeds(7, "evaluation", range(MAX_SEEDED_CHUNKS + 1))


SPEC = """
[[audit]]
name = "gauss"
mechanism = {mechanism}
trials = 20000
device = {device}
"""
GAUSSIAN = '{ kind = "gaussian", sigma = 1.0 }'


@pytest.mark.parametrize(
    ("mechanism", "device", "message"),
    [
        (GAUSSIAN, '"gpu"', "device must be None, 'numpy', 'cpu', 'cuda'"),
        (
            '{ kind = "fixed_size_subsampled", base = { kind = "gaussian", sigma = 1.0 }, '
            "size = 2, population = 10 }",
            '"cuda"',
            "device: device='cuda': mechanism FixedSizeSubsampled.* has no device sampler",
        ),
    ],
)
def test_specs_refuse_bad_devices_when_read(mechanism, device, message):
    with pytest.raises(specs.SpecError, match=f"t.toml: audit 1 \\(gauss\\): {message}"):
        specs.loads(SPEC.format(mechanism=mechanism, device=device), source="t.toml")


def test_specs_read_the_device():
    (numpy,) = specs.loads(SPEC.format(mechanism=GAUSSIAN, device='"numpy"'))
    (cuda,) = specs.loads(SPEC.format(mechanism=GAUSSIAN, device='"cuda:1"'))
    assert (numpy.device, cuda.device) == (None, "cuda:1")
    assert cuda.with_overrides(device="numpy").device is None
    assert cuda.with_overrides(device="numpy").table["device"] == "numpy"


def test_missing_torch_is_refused_naming_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails, installed or not
    with pytest.raises(ValueError, match=r"^device='cuda' needs PyTorch: pip install"):
        dpaudit.audit_mechanism(Gaussian(1.0), trials=1000, device="cuda")
