"""Devices (``stumplib.device``): what each device string resolves to, seeded generators, and a clear
error for CUDA on a machine without it. (Bad device strings: ``tests/test_bad_input.py``.)"""
from __future__ import annotations

import pytest
import torch

from stumplib.device import make_generator, resolve_device
from stumplib.tasks import sample_tasks

HAS_CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("spec", ["cpu", " CPU ", torch.device("cpu")])
def test_cpu_spellings_resolve_to_the_cpu(spec):
    assert resolve_device(spec) == torch.device("cpu")


def test_auto_follows_the_machine():
    assert resolve_device("auto").type == ("cuda" if HAS_CUDA else "cpu")


@pytest.mark.skipif(HAS_CUDA, reason="this machine has CUDA")
def test_cuda_requested_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="CUDA is not available"):
        sample_tasks(3, 3, device="cuda:0")


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device on this machine")
def test_cuda_index_beyond_the_devices_is_named():
    with pytest.raises(ValueError, match="CUDA device"):
        resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_generators_with_the_same_seed_give_the_same_numbers():
    cpu = torch.device("cpu")
    a = torch.rand(5, generator=make_generator(3, cpu))
    assert torch.equal(a, torch.rand(5, generator=make_generator(3, cpu)))
    assert not torch.equal(a, torch.rand(5, generator=make_generator(4, cpu)))
