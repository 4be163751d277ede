#!/usr/bin/env python3
"""examples/nccl/ddp_allreduce.py: reference workload for NCCL under PyTorch, blocking against
overlapped gradient all-reduce. Run with torchrun (one process per GPU, NCCL backend):

    torchrun --nproc-per-node N examples/nccl/ddp_allreduce.py bad|fixed

bad:   no DDP: after backward, each parameter's gradient is all-reduced by hand
       (dist.all_reduce) and the host waits with torch.cuda.synchronize(): communication starts
       only after the whole backward pass and the host stops every step (rule host-sync, S1).
fixed: DistributedDataParallel: its reducer all-reduces gradient buckets on NCCL's stream while
       backward still computes, and the host does not wait.
With N = 1 (one GPU) it runs and must record the NCCL calls; the multi-GPU checks belong to the
multi-GPU suite. Rank 0 prints one deterministic line.
"""

import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS = 30
BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 256, 64, 256, 8


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("bad", "fixed"):
        print("usage: torchrun ... ddp_allreduce.py bad|fixed", file=sys.stderr)
        return 2
    variant = sys.argv[1]
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)  # the same initial weights on every rank

    gen = torch.Generator(device=device)
    gen.manual_seed(100 + rank)  # each rank its own shard of data
    inputs = torch.randn(BATCH, IN_FEATURES, device=device, generator=gen)
    targets = torch.tanh(inputs[:, :OUT_FEATURES])
    model = torch.nn.Sequential(torch.nn.Linear(IN_FEATURES, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, OUT_FEATURES)).to(device)
    if variant == "fixed":
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(inputs), targets)
        loss.backward()
        if variant == "bad":
            for p in model.parameters():
                dist.all_reduce(p.grad)  # @site allreduce
                p.grad /= world
            torch.cuda.synchronize()  # @site synchronize
        optimizer.step()
        losses.append(loss.detach())
    mean = torch.stack(losses)
    dist.all_reduce(mean)
    host = (mean / world).cpu().tolist()
    ok = math.isfinite(host[-1]) and host[-1] < host[0]
    if rank == 0:
        print("ddp_allreduce: variant=%s world=%d steps=%d first_loss=%.4f final_loss=%.4f "
              "result=%s" % (variant, world, STEPS, host[0], host[-1], "OK" if ok else "BAD"))
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
