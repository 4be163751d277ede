#!/usr/bin/env python3
"""examples/corpus/t13_clean_cuda_graph.py: corpus workload (PyTorch), CLEAN. Batched inference
through a CUDA graph: after warm-up iterations on a side stream (as torch's documentation
prescribes), the forward pass is captured once with torch.cuda.graph and replayed each step;
each step copies its batch device-to-device into the static input and accumulates the output
on the GPU. The accumulated scores are read once at the end.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH = 100, 512


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    batches = torch.randn(STEPS, BATCH, 256, device=dev)  # SYNCSPY-CLEAN: setup allocation
    static_in = torch.zeros(BATCH, 256, device=dev)  # SYNCSPY-CLEAN: setup allocation
    scores = torch.zeros(10, device=dev)  # SYNCSPY-CLEAN: setup allocation

    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static_in)  # SYNCSPY-CLEAN: warm-up before capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):  # SYNCSPY-CLEAN: capture, once
            static_out = model(static_in)  # SYNCSPY-CLEAN: capture, once

        for step in range(STEPS):
            static_in.copy_(batches[step])
            graph.replay()
            scores += static_out.softmax(dim=1).sum(dim=0)

    result = scores.cpu()  # SYNCSPY-CLEAN: final read
    print("t13_clean_cuda_graph: steps=%d top=%d mass=%.2f result=OK" % (STEPS, int(result.argmax()), float(result.sum())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
