#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/py_shapes.py: syncs reached from every bytecode shape that can reach one, with the
GIL released, each on a marked line, for the Python-frame attribution (interpose/python.c).

Each sync is the CPU stand-in's cudaDeviceSynchronize called through ctypes.CDLL, which releases
the GIL around the call, as torch does around its operations. The operators' slots are ctypes
function objects themselves (a class attribute without __get__ is called without self), so no
Python frame comes between the line and the sync, as with torch's C operators: a subscript, a
comparison, a bool conversion, a format, iteration, a plain call, and a plain call from a
threading.Thread. Each marked line must be the innermost frame of its sync. The test finds the
lines by their markers (SYNC:name, as tests/gpu/check_python_lines.py reads them) and the syncs
in this order."""
import ctypes
import os
import threading

path = os.environ["CUDART"]
lib = ctypes.CDLL(path, mode=os.RTLD_GLOBAL)  # the stand-in, global: the shim's wrapper first


def sync_returning(restype):
    """The stand-in's sync as a ctypes function returning restype (the GIL released)."""
    function = ctypes.CFUNCTYPE(ctypes.c_int)(("cudaDeviceSynchronize", ctypes.CDLL(None)))
    function.restype = restype
    return function


class Synced:
    __getitem__ = sync_returning(ctypes.c_int)  # x[key]
    __gt__ = sync_returning(ctypes.c_int)  # x > other
    __bool__ = sync_returning(ctypes.c_bool)  # if x:
    __format__ = sync_returning(str)  # f"{x}": str(0) is made in C, no Python frame
    __next__ = sync_returning(ctypes.c_int)  # for v in x: each step

    def __iter__(self):
        return self


x = Synced()
plain = ctypes.CDLL(None).cudaDeviceSynchronize
plain()  # SYNC:call
y = x[1]  # SYNC:subscript
z = x > 1  # SYNC:compare
if x:  # SYNC:bool
    print("never")
s = f"{x}"  # SYNC:format
for v in x:  # SYNC:iteration
    break
w = x[x > 1]  # SYNC:mask


def worker():
    plain()  # SYNC:thread


thread = threading.Thread(target=worker)
thread.start()
thread.join()
print("done", y, z, s)
