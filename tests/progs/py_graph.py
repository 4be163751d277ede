#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/py_graph.py: a Python loop that captures, instantiates, launches and destroys a
CUDA graph every step through the runtime (ctypes), as torch.cuda.graph does from libtorch
(t045): the instantiation (MARK:instantiate) and the destroy (MARK:destroy) are context calls
(X1) that the shim stacks (ss_stacked_context_call), so that their site is the Python line.

argv: N. Environment: CUDART (the stand-in runtime)."""
import ctypes
import os
import sys

rt = ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
stream, graph, exe = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
failed = rt.cudaStreamCreate(ctypes.byref(stream))
for step in range(int(sys.argv[1])):
    failed |= rt.cudaStreamBeginCapture(stream, 0)
    failed |= rt.cudaStreamEndCapture(stream, ctypes.byref(graph))
    failed |= rt.cudaGraphInstantiate(ctypes.byref(exe), graph, ctypes.c_ulonglong(0))  # MARK:instantiate
    failed |= rt.cudaGraphLaunch(exe, stream)
    failed |= rt.cudaStreamSynchronize(stream)
    failed |= rt.cudaGraphExecDestroy(exe)  # MARK:destroy
    failed |= rt.cudaGraphDestroy(graph)
print("graphs", int(sys.argv[1]), "failed" if failed else "ok")
