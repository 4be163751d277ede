#!/usr/bin/env python3
"""examples/corpus/t30_clean_graph_train_step.py: corpus workload (PyTorch), CLEAN. Whole
training-step capture, as torch's CUDA graphs documentation describes it: a few warm-up steps
on a side stream, then the forward pass, backward pass and SGD step captured once into a
CUDA graph with static input and target tensors; each step copies its batch
(device to device) into the static tensors and replays the graph, which refills the static
gradients in place. The loss is accumulated on the GPU and read once at the end. The capture
itself synchronizes and empties the cache once, before the loop.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

WARMUP, STEPS, BATCH, D_IN, D_OUT = 3, 80, 256, 512, 64


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, D_OUT)).to(dev)  # SYNCSPY-CLEAN: setup upload
    loss_fn = torch.nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    xs = torch.randn(STEPS + WARMUP, BATCH, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    teacher = torch.randn(D_IN, D_OUT, device=dev) / D_IN ** 0.5  # SYNCSPY-CLEAN: setup allocation
    ys = torch.tanh(xs @ teacher)  # SYNCSPY-CLEAN: setup allocation
    static_x = torch.zeros(BATCH, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    static_y = torch.zeros(BATCH, D_OUT, device=dev)  # SYNCSPY-CLEAN: setup allocation
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    # warm-up on a side stream, on real batches (the optimizer steps are real steps)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(WARMUP):
            static_x.copy_(xs[i])
            static_y.copy_(ys[i])
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(static_x), static_y)  # SYNCSPY-CLEAN: warm-up before capture
            loss.backward()  # SYNCSPY-CLEAN: warm-up before capture
            opt.step()  # SYNCSPY-CLEAN: warm-up before capture
    del loss  # drop the warm-up's autograd graph: the capture builds its own
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # backward in the capture allocates .grad from the graph's pool
    with torch.cuda.graph(graph):  # SYNCSPY-CLEAN: capture, once (synchronizes and empties the cache)
        static_loss = loss_fn(model(static_x), static_y)  # SYNCSPY-CLEAN: capture, once
        static_loss.backward()  # SYNCSPY-CLEAN: capture, once
        opt.step()  # SYNCSPY-CLEAN: capture, once

    for step in range(STEPS):
        static_x.copy_(xs[WARMUP + step])
        static_y.copy_(ys[WARMUP + step])
        graph.replay()
        loss_sum += static_loss.detach()

    with torch.no_grad():
        final = loss_fn(model(xs[0]), ys[0]).item()  # SYNCSPY-CLEAN: final read
    print("t30_clean_graph_train_step: steps=%d mean_loss=%.4f final=%.4f result=OK" % (STEPS, loss_sum.item() / STEPS, final))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
