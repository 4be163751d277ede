#!/usr/bin/env python3
"""examples/corpus/t10_thread_greedy_decode.py: corpus workload (PyTorch, threading). A tiny
serving loop: requests are decoded greedily by a worker thread (the main thread only queues
requests and collects results). Each decoding step reads the chosen token with `.item()` to
test for the end-of-sequence token, which waits for the step on the worker thread.
Planted: `.item()` every decoding step, on a non-main thread.
Clean: setup (weights to the GPU), allocator growth in the first steps.
"""
import os
import queue
import sys
import threading

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

VOCAB, HIDDEN, EOS, MAX_LEN, REQUESTS = 512, 256, 0, 25, 3


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, HIDDEN)
        self.cell = torch.nn.GRUCell(HIDDEN, HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, VOCAB)


def decode(model, prompt, dev):
    h = torch.zeros(1, HIDDEN, device=dev)
    token = torch.tensor([prompt], device=dev)
    tokens = []
    for _ in range(MAX_LEN):
        h = model.cell(model.embed(token), h)  # SYNCSPY-CLEAN: allocator growth in the first steps
        token = model.out(h).argmax(dim=1)
        tok = token.item()  # SYNCSPY-PROBLEM: .item() every decoding step (worker thread)
        if tok == EOS:
            break
        tokens.append(tok)
    return tokens


def worker(model, dev, requests, results):
    with torch.no_grad():
        while True:
            prompt = requests.get()
            if prompt is None:
                return
            results.put((prompt, decode(model, prompt, dev)))


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = TinyLM().to(dev)  # SYNCSPY-CLEAN: setup upload
    model.out.bias.data[EOS] = -1e4  # never stop early: every request runs MAX_LEN steps
    requests, results = queue.Queue(), queue.Queue()
    t = threading.Thread(target=worker, args=(model, dev, requests, results))
    t.start()
    for prompt in range(1, REQUESTS + 1):
        requests.put(prompt * 37)
    requests.put(None)
    t.join()
    digest = 0
    while not results.empty():
        prompt, tokens = results.get()
        digest = (digest * 131 + prompt + sum(tokens)) % 1000003
    print("t10_thread_greedy_decode: steps=%d digest=%d result=OK" % (REQUESTS * MAX_LEN, digest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
