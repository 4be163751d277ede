#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/py_autograd_thread.py: syncs on a thread that runs no Python while the main thread
waits for it in a function like torch's _engine_run_backward (t042): a stand-in torch package
under DIR/site-packages/ whose torch/autograd/graph.py calls the C engine
(progs/autograd_engine.c) as torch calls its autograd engine. The syncs of the thread named
pt_autograd_0 are named by the user's line that called backward, whether the thread has a
Python thread state of its own with no frame (torch's do: MARK:backward) or none
(MARK:stateless); those of a thread with another name (a watchdog's) by no Python line
(interpose/python.c, PYTHON-1).

argv: DIR, N. Environment: CUDART (the stand-in runtime), ENGINE (autograd_engine.so)."""
import ctypes
import os
import sys

ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)  # the stand-in, loaded globally

packages = os.path.join(sys.argv[1], "site-packages")
os.makedirs(os.path.join(packages, "torch", "autograd"), exist_ok=True)
for name in ("__init__.py", os.path.join("autograd", "__init__.py")):
    open(os.path.join(packages, "torch", name), "w").close()
with open(os.path.join(packages, "torch", "autograd", "graph.py"), "w") as f:
    f.write("import ctypes\n"
            "import os\n"
            "_engine = ctypes.CDLL(os.environ['ENGINE'])\n"
            "def _engine_run_backward(name, syncs, state):\n"
            "    return _engine.engine_run(name, syncs, state)\n")
sys.path.insert(0, packages)
from torch.autograd import graph  # noqa: E402

failed = 0
for step in range(int(sys.argv[2])):
    failed |= graph._engine_run_backward(b"pt_autograd_0", 2, 1)  # MARK:backward
    failed |= graph._engine_run_backward(b"pt_autograd_0", 1, 0)  # MARK:stateless
    failed |= graph._engine_run_backward(b"pt_watchdog", 1, 1)  # MARK:other
print("done", step + 1, "failed" if failed else "ok")
