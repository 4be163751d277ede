# SPDX-License-Identifier: MIT
"""tests/gpu/python_pytest_torch.py: the pytest plugin with real torch (tests/gpu/python.sh):
test_item_fails must fail naming its `.item()` line, test_clean must pass. The tensors come
from a fixture: its setup (the allocator's first cudaMalloc) is not the test's call."""
import pytest
import torch


@pytest.fixture
def x():
    tensor = torch.ones(8, device="cuda")
    torch.cuda.synchronize()
    return tensor


@pytest.mark.no_sync
def test_item_fails(x):
    assert x.sum().item() == 8  # MARK:pytest_item


@pytest.mark.no_sync
def test_clean(x):
    x.mul_(2).relu_()
