#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/py_through_framework.py: a sync point in a user function that a framework calls,
as torch's nn.Module.__call__ calls a model's forward(): the user's frames are then separated by
the framework's own (a package under site-packages/), and the call site is the innermost user
line, the one inside forward(), not the loop that called the framework (docs/attribution.md).

argv: DIR (where the stand-in framework package is written, under DIR/site-packages/), N."""
import ctypes
import os
import sys

ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)  # the stand-in, loaded globally
cuda = ctypes.PyDLL(None)

packages = os.path.join(sys.argv[1], "site-packages")
os.makedirs(os.path.join(packages, "framework"), exist_ok=True)
with open(os.path.join(packages, "framework", "__init__.py"), "w") as f:
    f.write("class Module:\n"
            "    def __call__(self, *args):\n"
            "        return self._call_impl(*args)\n"
            "    def _call_impl(self, *args):\n"
            "        return self.forward(*args)\n")
sys.path.insert(0, packages)
import framework  # noqa: E402


class Router(framework.Module):
    def forward(self, x):
        cuda.cudaDeviceSynchronize()  # MARK:inner
        return x + 1


class Layer(framework.Module):
    def __init__(self):
        self.router = Router()

    def forward(self, x):
        return self.router(x)  # MARK:outer-forward


layer = Layer()
x = 0
for step in range(int(sys.argv[2])):
    x = layer(x)  # MARK:loop
print("done", x)
