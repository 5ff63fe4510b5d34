"""One device-agnostic code path: resolve ``device`` strings and make seeded generators."""
from __future__ import annotations

from typing import Any

import torch

#: float64 is the default for the stump model: scores reach beta ~ 1e6.
DEFAULT_DTYPE = torch.float64


def resolve_device(device: Any = "auto") -> torch.device:
    """Turn ``device`` into a :class:`torch.device`.

    Parameters
    ----------
    device
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:K"``, or a
        :class:`torch.device`.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        For an unknown device string, or a CUDA device that is not present on this machine.
    """
    if isinstance(device, torch.device):
        spec = str(device)
    elif isinstance(device, str):
        spec = device.strip().lower()
    else:
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:K'; got {device!r}")
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if spec == "cpu":
        return torch.device("cpu")
    if spec == "cuda" or spec.startswith("cuda:"):
        if spec.startswith("cuda:"):
            idx = spec[5:]
            if not idx.isdigit():
                raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:K' with K an "
                                 f"integer; got {device!r}")
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} was requested but CUDA is not available on this "
                             f"machine; use device='cpu' or 'auto'")
        dev = torch.device(spec)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r}: only {torch.cuda.device_count()} CUDA device(s) "
                             f"present (indices 0..{torch.cuda.device_count() - 1})")
        return dev
    raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:K'; got {device!r}")


def make_generator(seed: int, device: torch.device) -> torch.Generator:
    """A :class:`torch.Generator` on ``device`` seeded with ``seed`` (same seed, same numbers).

    Parameters
    ----------
    seed : a non-negative integer.
    device : the device the generator draws on.

    Returns
    -------
    torch.Generator
    """
    from stumplib.core.validation import check_int

    seed = check_int("seed", seed, minimum=0)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen
