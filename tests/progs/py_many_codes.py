#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/py_many_codes.py: more Python code objects than the shim's code cache holds.

interpose/python.c names frames through a cache of code objects (2048 slots, filled to 3/4)
and sends a stack's text once per thread, its key afterwards, only while every code object of
the stack is in the cache. This makes N functions, each its own code object in its own file
gen_I.py, each syncing twice from two lines (the same code object at two instruction offsets:
two stacks), and calls each twice: past the cache's capacity, frames must still be named right,
by their text. The GIL is held during the calls (ctypes.PyDLL), as torch's `.item()` holds it.

  py_many_codes.py N"""
import ctypes
import os
import sys

ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
holds_gil = ctypes.PyDLL(None)

n = int(sys.argv[1])
functions = []
for i in range(n):
    source = ("def f_%d(sync):\n"
              "    sync()\n"
              "    sync()\n") % i
    namespace = {}
    exec(compile(source, "gen_%d.py" % i, "exec"), namespace)
    functions.append(namespace["f_%d" % i])
for _ in range(2):
    for f in functions:
        f(holds_gil.cudaDeviceSynchronize)
print("done")
