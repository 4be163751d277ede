#!/usr/bin/env python3
"""examples/corpus/t23_trim_padding_max_len.py: corpus workload (PyTorch). A token-wise
feed-forward text encoder over a pre-tokenized dataset kept on the GPU, padded to a global
MAX_LEN, with a lengths tensor beside it. To skip the padding, each step trims the batch to its
longest sequence with `max_len = int(lengths.max())`: a scalar read of a GPU tensor at the top
of the step, which waits for the whole previous step to finish. (The host-side sampler that
bucketed the lengths knew them; here the code asks the GPU.)
Planted: `int(lengths.max())` every step.
Clean: setup, allocator growth (the trimmed length varies), the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, MAX_LEN, VOCAB, DIM, CLASSES, PAD = 60, 512, 128, 8000, 256, 5, 0


def make_data(gen):
    bound = torch.randint(24, MAX_LEN + 1, (STEPS, 1), generator=gen)  # bucketed: similar lengths per batch
    lengths = (bound * (0.5 + 0.5 * torch.rand(STEPS, BATCH, generator=gen))).long().clamp(min=1)
    labels = torch.randint(0, CLASSES, (STEPS, BATCH), generator=gen)
    tokens = torch.randint(1, VOCAB, (STEPS, BATCH, MAX_LEN), generator=gen)
    tokens[:, :, ::4] = (labels + 1).unsqueeze(-1)  # a class-specific token every 4 positions
    tokens[torch.arange(MAX_LEN).view(1, 1, -1) >= lengths.unsqueeze(-1)] = PAD
    return tokens, lengths, labels


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    tokens_cpu, lengths_cpu, labels_cpu = make_data(torch.Generator().manual_seed(4))
    tokens = tokens_cpu.to(dev)  # SYNCSPY-CLEAN: setup upload
    lengths_all = lengths_cpu.to(dev)  # SYNCSPY-CLEAN: setup upload
    labels_all = labels_cpu.to(dev)  # SYNCSPY-CLEAN: setup upload
    embed = torch.nn.Embedding(VOCAB, DIM, padding_idx=PAD).to(dev)  # SYNCSPY-CLEAN: setup upload
    ffn = torch.nn.Sequential(torch.nn.Linear(DIM, 4 * DIM), torch.nn.GELU(), torch.nn.Linear(4 * DIM, DIM)).to(dev)  # SYNCSPY-CLEAN: setup upload
    head = torch.nn.Linear(DIM, CLASSES).to(dev)  # SYNCSPY-CLEAN: setup upload
    params = list(embed.parameters()) + list(ffn.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    tokens_seen = 0

    for step in range(STEPS):
        lengths = lengths_all[step]
        max_len = int(lengths.max())  # SYNCSPY-PROBLEM: scalar read of a GPU tensor every step, to trim the padding
        tok = tokens[step, :, :max_len]
        mask = (tok != PAD).unsqueeze(-1).float()
        h = embed(tok)  # SYNCSPY-CLEAN: allocator growth (the trimmed length varies)
        h = h + ffn(h)  # SYNCSPY-CLEAN: allocator growth (the trimmed length varies)
        pooled = (h * mask).sum(dim=1) / lengths.unsqueeze(1).float()  # SYNCSPY-CLEAN: large temporary, allocator growth
        loss = torch.nn.functional.cross_entropy(head(pooled), labels_all[step])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth (the trimmed length varies)
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        loss_sum += loss.detach()
        tokens_seen += BATCH * max_len

    print("t23_trim_padding_max_len: steps=%d padded_tokens=%d mean_loss=%.4f result=OK" % (STEPS, tokens_seen, loss_sum.item() / STEPS))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
