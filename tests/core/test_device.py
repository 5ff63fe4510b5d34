"""Devices (``stumplib.core.device``): what each device string resolves to and seeded generators. (Bad
device strings, CUDA on a machine without it: ``tests/test_bad_input.py``.)"""
from __future__ import annotations

import pytest
import torch

from stumplib.core.device import make_generator, resolve_device

HAS_CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("spec", ["cpu", " CPU ", torch.device("cpu")])
def test_cpu_spellings_resolve_to_the_cpu(spec):
    assert resolve_device(spec) == torch.device("cpu")


def test_auto_follows_the_machine():
    assert resolve_device("auto").type == ("cuda" if HAS_CUDA else "cpu")


def test_generators_with_the_same_seed_give_the_same_numbers():
    cpu = torch.device("cpu")
    a = torch.rand(5, generator=make_generator(3, cpu))
    assert torch.equal(a, torch.rand(5, generator=make_generator(3, cpu)))
    assert not torch.equal(a, torch.rand(5, generator=make_generator(4, cpu)))
