#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/nvtx_torch.py: torch.cuda.nvtx ranges around .item() syncs, for the NVTX injection
(docs/attribution.md). Run under the shim with NVTX_INJECTION64_PATH=libsyncspy.so; the
database must hold 10 "step" push ranges, each containing the step's .item() sync (S2)."""
import torch

x = torch.randn(1024, device="cuda")
total = 0.0
for step in range(10):
    torch.cuda.nvtx.range_push("step")
    total += (x * step).sum().item()
    torch.cuda.nvtx.range_pop()
print(f"nvtx_torch: steps=10 ok={total == total}")
