#!/usr/bin/env python3
"""examples/corpus/t81_clean_seq2seq_double_buffer_decode.py: corpus workload (PyTorch), CLEAN.
A translation server's greedy decoder (a GRU encoder-decoder with dot-product attention) over
batches of requests. Each batch decodes a fixed MAX_OUT steps with a device-side `finished`
flag (tokens after EOS are replaced by PAD with a three-argument `torch.where`; no
`if finished.all(): break`). The output ids are copied with `copy_(..., non_blocking=True)` into
one of two pinned host buffers, and an event is recorded after the copy; before the host
detokenizes a batch it waits on the event of the batch before the one just queued
(`Event.synchronize()` on batch i-1 after batch i is enqueued), the wait that is the point of a
double buffer: the GPU already has batch i to work on. The last batch is waited for after the
loop.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

BATCHES, BATCH, SRC_LEN, MAX_OUT, VOCAB, EMB, HID = 40, 64, 24, 20, 1000, 128, 256
PAD, BOS, EOS = 0, 1, 2


class Seq2Seq(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = torch.nn.Embedding(VOCAB, EMB)
        self.tgt_emb = torch.nn.Embedding(VOCAB, EMB)
        self.encoder = torch.nn.GRU(EMB, HID, batch_first=True)
        self.cell = torch.nn.GRUCell(EMB + HID, HID)
        self.out = torch.nn.Linear(2 * HID, VOCAB)

    def encode(self, src):
        mem, h = self.encoder(self.src_emb(src))
        return mem, h[0]

    def step(self, tok, h, ctx, mem):
        h = self.cell(torch.cat([self.tgt_emb(tok), ctx], dim=-1), h)
        att = torch.softmax((mem @ h.unsqueeze(-1)).squeeze(-1), dim=-1)
        ctx = (att.unsqueeze(-1) * mem).sum(1)
        return self.out(torch.cat([h, ctx], dim=-1)), h, ctx


@torch.no_grad()
def greedy_decode(model, src, out):
    mem, h = model.encode(src)
    ctx = mem.mean(1)
    tok = torch.full((src.shape[0],), BOS, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for t in range(MAX_OUT):
        logits, h, ctx = model.step(tok, h, ctx, mem)
        nxt = logits.argmax(-1)
        nxt = torch.where(finished, torch.full_like(nxt, PAD), nxt)
        out[:, t] = nxt
        finished = finished | (nxt == EOS)
        tok = nxt


def detokenize(ids):
    return [" ".join(str(t) for t in row if t not in (PAD, EOS)) for row in ids]


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(4)
    model = Seq2Seq().to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    requests = torch.randint(3, VOCAB, (4, BATCH, SRC_LEN), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    out = torch.zeros(BATCH, MAX_OUT, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    host = [torch.empty(BATCH, MAX_OUT, dtype=torch.long, pin_memory=True) for _ in range(2)]  # SYNCSPY-CLEAN: setup, two pinned buffers allocated once
    done = [torch.cuda.Event() for _ in range(2)]
    chars = 0

    for i in range(BATCHES):
        greedy_decode(model, requests[i % 4], out)  # SYNCSPY-CLEAN: allocator growth in the first batches
        host[i % 2].copy_(out, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy into pinned memory
        done[i % 2].record()
        if i > 0:
            done[(i - 1) % 2].synchronize()  # SYNCSPY-CLEAN: double buffer: waits for batch i-1 while batch i is queued
            chars += sum(len(s) for s in detokenize(host[(i - 1) % 2].tolist()))

    done[(BATCHES - 1) % 2].synchronize()  # SYNCSPY-CLEAN: the last batch, after the loop
    chars += sum(len(s) for s in detokenize(host[(BATCHES - 1) % 2].tolist()))
    ok = chars >= 0
    print("t81_clean_seq2seq_double_buffer_decode: batches=%d batch=%d max_out=%d result=OK" % (BATCHES, BATCH, MAX_OUT))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
