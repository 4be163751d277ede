#!/usr/bin/env python3
"""examples/corpus/t34_host_sampling_decode.py: corpus workload (PyTorch + NumPy). A small
text-generation server: request batches of 16 prompts are decoded by a GRU language model for
40 new tokens each, with temperature sampling and a CTRL-style repetition penalty written in
NumPy on the host. Every decoding step copies the whole batch's logits to the host with
`logits.cpu().numpy()` (a copy of 16 x 4096 floats that waits for the step's kernels), samples
there, and uploads the sampled ids with `torch.from_numpy(ids).to(dev)` (a pageable copy that
waits again, cheaply, since the stream is empty by then). The fix, sampling on the device
(a GPU "seen" mask, the penalty with torch.where, an exponential race
`(probs / torch.empty_like(probs).exponential_()).argmax(-1)` rather than a one-sample
torch.multinomial, which reads the distribution's validity back), removes both lines.
Planted: the `.cpu()` of the logits (expensive) and the upload of the sampled ids (cheap),
every decoding step.
Clean: setup, each request batch's prompt upload and state allocation (once per batch, before
its decoding loop), allocator growth in the first steps.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numpy as np  # noqa: E402
import torch  # noqa: E402

VOCAB, HIDDEN, BATCH, MAX_NEW, WAVES, EOS = 4096, 512, 16, 40, 2, 0
TEMPERATURE, PENALTY = 0.8, 1.3


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, HIDDEN)
        self.cell = torch.nn.GRUCell(HIDDEN, HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, VOCAB)


def generate(model, prompts, rng, dev):
    rows = np.arange(BATCH)
    tokens = torch.from_numpy(prompts).to(dev)  # SYNCSPY-CLEAN: the request batch's prompts, once per batch
    h = torch.zeros(BATCH, HIDDEN, device=dev)  # SYNCSPY-CLEAN: the request batch's state, once per batch
    seen = np.zeros((BATCH, VOCAB), dtype=bool)
    seen[rows, prompts] = True
    finished = np.zeros(BATCH, dtype=bool)
    out = [[] for _ in range(BATCH)]
    for _ in range(MAX_NEW):
        h = model.cell(model.embed(tokens), h)  # SYNCSPY-CLEAN: allocator growth in the first steps
        logits = model.out(h)  # SYNCSPY-CLEAN: allocator growth in the first steps
        scores = logits.cpu().numpy()  # SYNCSPY-PROBLEM: the batch's logits copied to the host every decoding step
        scores = np.where(seen, np.where(scores > 0, scores / PENALTY, scores * PENALTY), scores) / TEMPERATURE
        scores -= scores.max(axis=1, keepdims=True)
        probs = np.exp(scores)
        cdf = np.cumsum(probs, axis=1)
        u = rng.random((BATCH, 1)) * cdf[:, -1:]
        ids = np.minimum((cdf < u).sum(axis=1), VOCAB - 1).astype(np.int64)
        ids[finished] = EOS
        seen[rows, ids] = True
        for b in np.flatnonzero(~finished):
            out[b].append(int(ids[b]))
        finished |= ids == EOS
        tokens = torch.from_numpy(ids).to(dev)  # SYNCSPY-PROBLEM: pageable upload of the sampled ids every decoding step
    return out


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = TinyLM().to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    rng = np.random.default_rng(11)
    requests = rng.integers(1, VOCAB, size=(WAVES, BATCH), dtype=np.int64)

    digest, generated = 0, 0
    with torch.no_grad():
        for wave in range(WAVES):
            for seq in generate(model, requests[wave], rng, dev):
                generated += len(seq)
                for tok in seq:
                    digest = (digest * 31 + tok) % 1000003
    print("t34_host_sampling_decode: steps=%d generated=%d digest=%d result=OK" % (WAVES * MAX_NEW, generated, digest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
