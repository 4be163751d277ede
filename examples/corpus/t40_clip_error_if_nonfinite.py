#!/usr/bin/env python3
"""examples/corpus/t40_clip_error_if_nonfinite.py: corpus workload (PyTorch). A small
transformer-encoder language-model training loop that clips gradients with
`torch.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)` so that a NaN blow-up
raises at once. With `error_if_nonfinite=True`, clip_grad_norm_ evaluates
`if error_if_nonfinite and torch.logical_or(total_norm.isnan(), total_norm.isinf()):` in
Python (torch/nn/utils/clip_grad.py): the truth value of a GPU tensor, a copy to the host and
a wait for the whole backward pass and the norm, every step. With the default
`error_if_nonfinite=False` the clip is asynchronous (the clip coefficient is computed and
applied on the device); a non-finite check can stay on the GPU too (accumulate
`~torch.isfinite(norm)` into a counter read every N steps).
Planted: `clip_grad_norm_(..., error_if_nonfinite=True)`, every step.
Clean: setup, allocator growth in the first steps, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, SEQ, VOCAB, D_MODEL, CHUNKS = 60, 32, 64, 2000, 256, 4


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, D_MODEL)
        layer = torch.nn.TransformerEncoderLayer(D_MODEL, 4, 4 * D_MODEL, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens, mask):
        return self.head(self.encoder(self.embed(tokens), mask=mask, is_causal=True))


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    corpus = torch.randint(0, VOCAB, (CHUNKS, BATCH, SEQ + 1), device=dev)  # SYNCSPY-CLEAN: setup allocation
    mask = torch.nn.Transformer.generate_square_subsequent_mask(SEQ, device=dev)  # SYNCSPY-CLEAN: setup allocation
    model = TinyLM().to(dev)  # SYNCSPY-CLEAN: setup upload
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=3e-4)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        batch = corpus[step % CHUNKS]
        inp, tgt = batch[:, :-1], batch[:, 1:]
        logits = model(inp, mask)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1))  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        torch.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)  # SYNCSPY-PROBLEM: error_if_nonfinite tests a GPU tensor in Python every step
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        loss_sum += loss.detach()

    mean = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = 0.0 < mean < 20.0
    print("t40_clip_error_if_nonfinite: steps=%d finite=%d result=OK" % (STEPS, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
