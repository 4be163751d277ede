# SPDX-License-Identifier: MIT
"""tests/progs/py_pytest_cases.py: tests for the syncspy pytest plugin (t903), run by pytest
under the shim against the CPU stand-ins (through ctypes). The names say what each should do;
t903 checks pytest's verdicts and the failing tests' messages (their lines by MARK)."""
import ctypes
import os

import pytest

ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)


@pytest.fixture
def synced():
    cuda.cudaDeviceSynchronize()  # setup is not the test's call: not counted
    yield
    cuda.cudaDeviceSynchronize()


@pytest.mark.no_sync
def test_pass_enqueues_only():
    event = ctypes.c_void_p()
    cuda.cudaEventCreate(ctypes.byref(event))
    cuda.cudaEventRecord(event, None)


@pytest.mark.no_sync
def test_fail_two_syncs():
    cuda.cudaDeviceSynchronize()  # MARK:two_a
    cuda.cudaStreamSynchronize(None)  # MARK:two_b


@pytest.mark.no_sync
def test_pass_fixture_syncs(synced):
    pass


@pytest.mark.sync_budget(max=2)
def test_pass_budget_of_two():
    cuda.cudaDeviceSynchronize()
    cuda.cudaDeviceSynchronize()


@pytest.mark.sync_budget(max=1, classes="S1")
def test_fail_budget_s1():
    for _ in range(2):
        cuda.cudaDeviceSynchronize()  # MARK:budget_s1
    cuda.cudaStreamSynchronize(None)


@pytest.mark.no_sync(classes=["S2"])
def test_pass_other_class():
    cuda.cudaDeviceSynchronize()


def test_pass_unmarked():
    cuda.cudaDeviceSynchronize()  # MARK:unmarked


@pytest.mark.no_sync
def test_fail_own_assertion():
    assert 1 == 2, "the test's own failure"
