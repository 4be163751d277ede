#!/usr/bin/env python3
"""examples/corpus/t19_collate_token_lists.py: corpus workload (PyTorch). A bag-of-embeddings
text classifier fed by a hand-written collate function: documents are Python lists of token
ids, padded in Python to the batch's longest, and turned into CUDA tensors every step with
`torch.tensor(list, device=dev)`. That builds a pageable CPU tensor and copies it with a
blocking copy: the first one waits for the previous step's queued work, the second (the
labels, right after) finds the stream empty and costs only its own copy.
Planted: `torch.tensor(..., device=dev)` of the padded ids (expensive) and of the labels
(cheap), every step.
Clean: setup, allocator growth (the padded length changes from batch to batch), the final
evaluation (one upload, one read).
"""
import os
import random
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, VOCAB, DIM, CLASSES, PAD = 60, 128, 5000, 256, 4, 0


def make_docs(rng, n):
    docs = []
    for _ in range(n):
        label = rng.randrange(CLASSES)
        lo = 1 + label * 50
        ids = [rng.randrange(lo, lo + 50) if rng.random() < 0.3 else rng.randrange(1, VOCAB) for _ in range(rng.randint(8, 64))]
        docs.append((ids, label))
    return docs


def collate(batch):
    longest = max(len(ids) for ids, _ in batch)
    return [ids + [PAD] * (longest - len(ids)) for ids, _ in batch], [label for _, label in batch]


class BagClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM, padding_idx=PAD)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(DIM, 512), torch.nn.ReLU(), torch.nn.Linear(512, CLASSES))

    def forward(self, ids):
        mask = (ids != PAD).unsqueeze(-1).float()
        pooled = (self.embed(ids) * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)  # SYNCSPY-CLEAN: large temporaries, allocator growth
        return self.mlp(pooled)  # SYNCSPY-CLEAN: allocator growth in the first steps


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    rng = random.Random(0)
    train = make_docs(rng, STEPS * BATCH)
    held_out = make_docs(rng, 512)
    model = BagClassifier().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        padded, labels = collate(train[step * BATCH:(step + 1) * BATCH])
        ids = torch.tensor(padded, device=dev)  # SYNCSPY-PROBLEM: pageable list-to-tensor upload every step, waits for the previous step
        targets = torch.tensor(labels, device=dev)  # SYNCSPY-PROBLEM: pageable list-to-tensor upload every step
        logits = model(ids)  # SYNCSPY-CLEAN: allocator growth (the padded length varies)
        loss = torch.nn.functional.cross_entropy(logits, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth (the padded length varies)
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    padded, labels = collate(held_out)
    with torch.no_grad():
        pred = model(torch.tensor(padded, device=dev)).argmax(dim=1).cpu()  # SYNCSPY-CLEAN: final evaluation, one upload and one read
    acc = sum(int(p) == t for p, t in zip(pred.tolist(), labels)) / len(labels)
    print("t19_collate_token_lists: steps=%d mean_loss=%.3f acc=%.3f result=OK" % (STEPS, loss_sum.item() / STEPS, acc))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
