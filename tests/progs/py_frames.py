#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/py_frames.py: sync points made from Python, for the Python-frame attribution.

Calls the CPU stand-in libcudart through ctypes. ctypes.PyDLL keeps the GIL during the call, as
torch's `.item()` may: the shim must name this file's line. ctypes.CDLL releases the GIL, as
torch.cuda.synchronize() does: the shim reads the thread's frames all the same, on the main
thread and on another (interpose/python.c). The lines that call are marked; the test finds them
by their markers."""
import ctypes
import os
import sys
import threading

path = os.environ["CUDART"]
ctypes.CDLL(path, mode=os.RTLD_GLOBAL)  # the stand-in, loaded globally: the shim's wrapper comes first
holds_gil = ctypes.PyDLL(None)
releases_gil = ctypes.CDLL(None)


def inner_step(n):
    for _ in range(n):
        holds_gil.cudaDeviceSynchronize()  # MARK:with-gil


def train(n):
    inner_step(n)
    releases_gil.cudaDeviceSynchronize()  # MARK:without-gil


def worker():
    releases_gil.cudaDeviceSynchronize()  # MARK:thread


train(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
thread = threading.Thread(target=worker)
thread.start()
thread.join()
print("done")
