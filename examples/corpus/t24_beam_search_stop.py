#!/usr/bin/env python3
"""examples/corpus/t24_beam_search_stop.py: corpus workload (PyTorch). Batched beam search with
a small GRU decoder, as a translation or captioning server runs it: two request batches of 32
sources, 4 beams each, up to 40 decoding steps. After every step the loop tests whether all
beams have emitted the end-of-sequence token, `if finished.all(): break`, which turns a GPU
boolean into a Python bool: a copy to the host and a wait for the step, every decoding step.
(The EOS logit is pushed down so that every batch runs all steps: a deterministic run.)
Planted: the `finished.all()` test in the decoding loop, every step.
Clean: setup, allocator growth in the first steps, one read of each batch's best hypotheses
after its decoding loop.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

VOCAB, HIDDEN, BEAM, BATCH, MAX_LEN, REQUESTS, BOS, EOS = 1000, 256, 4, 32, 40, 2, 1, 2


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, HIDDEN)
        self.cell = torch.nn.GRUCell(HIDDEN, HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, VOCAB)


def beam_search(model, enc, eos_row):
    dev = enc.device
    h = enc.unsqueeze(1).expand(BATCH, BEAM, HIDDEN).reshape(BATCH * BEAM, HIDDEN)
    tokens = torch.full((BATCH * BEAM,), BOS, dtype=torch.long, device=dev)
    scores = torch.full((BATCH, BEAM), float("-inf"), device=dev)
    scores[:, 0] = 0.0  # all beams start identical: keep one (a slice, so torch fills it: no copy)
    finished = torch.zeros(BATCH, BEAM, dtype=torch.bool, device=dev)
    seqs = torch.full((BATCH, BEAM, 1), BOS, dtype=torch.long, device=dev)
    steps = 0
    for _ in range(MAX_LEN):
        h = model.cell(model.embed(tokens), h)  # SYNCSPY-CLEAN: allocator growth in the first steps
        logp = torch.log_softmax(model.out(h), dim=-1).view(BATCH, BEAM, VOCAB)  # SYNCSPY-CLEAN: allocator growth in the first steps
        logp = torch.where(finished.unsqueeze(-1), eos_row, logp)  # SYNCSPY-CLEAN: allocator growth in the first steps (finished beams only extend with EOS)
        cand = (scores.unsqueeze(-1) + logp).view(BATCH, BEAM * VOCAB)  # SYNCSPY-CLEAN: allocator growth in the first steps
        scores, flat = cand.topk(BEAM, dim=1)
        beam_idx = torch.div(flat, VOCAB, rounding_mode="floor")
        next_tok = flat % VOCAB
        h = h.view(BATCH, BEAM, HIDDEN).gather(1, beam_idx.unsqueeze(-1).expand(BATCH, BEAM, HIDDEN)).view(BATCH * BEAM, HIDDEN)
        seqs = torch.cat([seqs.gather(1, beam_idx.unsqueeze(-1).expand(BATCH, BEAM, seqs.shape[2])), next_tok.unsqueeze(-1)], dim=2)
        finished = finished.gather(1, beam_idx) | (next_tok == EOS)
        tokens = next_tok.view(-1)
        steps += 1
        if finished.all():  # SYNCSPY-PROBLEM: GPU boolean in Python control flow every decoding step
            break
    return seqs, scores, steps


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = Decoder().to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    with torch.no_grad():
        model.out.bias[EOS].fill_(-1e4)  # never stop early: every batch runs MAX_LEN steps
    encodings = torch.randn(REQUESTS, BATCH, HIDDEN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    eos_row = torch.full((VOCAB,), float("-inf"), device=dev)  # SYNCSPY-CLEAN: setup allocation
    eos_row[EOS] = 0.0  # SYNCSPY-CLEAN: setup (a Python scalar copied into one element)

    digest, total_steps = 0, 0
    with torch.inference_mode():
        for r in range(REQUESTS):
            seqs, scores, steps = beam_search(model, encodings[r], eos_row)
            total_steps += steps
            best = seqs[:, 0].cpu()  # SYNCSPY-CLEAN: one read per request batch, after its decoding loop
            for row in best.tolist():
                for tok in row:
                    digest = (digest * 31 + tok) % 1000003
    print("t24_beam_search_stop: steps=%d digest=%d result=OK" % (total_steps, digest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
