#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/py_record.py: a Python program recorded through `python -m syncspy` (t901).

Calls the CPU stand-in runtime through ctypes: two device syncs from one marked line, a step
mark, then exits with the status given (so that the test sees `python -m syncspy` pass it on)."""
import ctypes
import os
import sys

ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)
import syncspy  # noqa: E402  (under the shim: no warning)

for _ in range(2):
    syncspy.step("train")
    cuda.cudaDeviceSynchronize()  # MARK:record
print("recorded", syncspy.counts()["S1"])
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
