#!/usr/bin/env python3
"""examples/corpus/t112_doc_cnn_isin_stopwords.py: corpus workload (PyTorch).
Topic classification of documents (20 classes, a 30,000-word vocabulary, 128 documents of up to
512 tokens a batch) with a Kim-style convolutional network: word embeddings, 256 filters each of
widths 3, 4 and 5, max-over-time pooling, dropout. The model drops stop words inside `forward`,
`keep = ~torch.isin(ids, self.stop_ids)`, the 400 stop-word ids a registered buffer on the GPU.
With 400 test elements against 65,536 elements, `isin` takes the sorting algorithm
(aten/src/ATen/native/TensorCompare.cpp: brute force only while
`test_elements.numel() < 10 * elements.numel() ** 0.145`, here 49), and without
`assume_unique=True` it first calls `at::_unique` on the elements and on the test elements. CUDA
unique returns its output size to the host: two blocking reads per step, the first behind the
previous step's backward pass and update, and the GPU idles while the host queues the whole
forward and backward pass. A boolean lookup table over the vocabulary, indexed by the ids, needs
no read.
Planted: the `keep = ~torch.isin(ids, self.stop_ids)` line in DocCNN.forward, every step.
Clean: setup (the corpus tokenized on the host), two pinned staging slots filled by the host and
uploaded `non_blocking`, each refilled only after an event wait on its upload two steps back,
allocator growth in the first steps, the accuracy counters read once per epoch outside the step
loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, DOCS, MINLEN, DOC_LEN = 2, 25, 128, 6400, 200, 512
VOCAB, STOPWORDS, KEYWORDS, EMB, FILTERS, CLASSES, PAD = 30000, 400, 40, 256, 256, 20, 0
WIDTHS = (3, 4, 5)


class DocCNN(torch.nn.Module):
    def __init__(self, stop_ids):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, EMB, padding_idx=PAD)
        self.register_buffer("stop_ids", stop_ids)
        self.convs = torch.nn.ModuleList([torch.nn.Conv1d(EMB, FILTERS, w) for w in WIDTHS])
        self.drop = torch.nn.Dropout(0.5)
        self.fc = torch.nn.Linear(FILTERS * len(WIDTHS), CLASSES)

    def forward(self, ids):
        keep = ~torch.isin(ids, self.stop_ids)  # SYNCSPY-PROBLEM: 400 test ids: the sorting path, at::_unique on both inputs, CUDA unique reads its output size on the host, every step
        x = (self.emb(ids) * keep.unsqueeze(-1)).transpose(1, 2)
        h = torch.cat([F.relu(conv(x)).amax(dim=2) for conv in self.convs], dim=1)
        return self.fc(self.drop(h))


def make_corpus():
    """Zipf background words (the most frequent are the stop words) and 6% topic keywords; column 0 holds the label."""
    g = torch.Generator().manual_seed(112)
    label = torch.randint(0, CLASSES, (DOCS,), generator=g)
    length = torch.randint(MINLEN, DOC_LEN + 1, (DOCS,), generator=g)
    rank = torch.exp(torch.rand(DOCS, DOC_LEN, generator=g) * math.log(VOCAB - 1)).long().clamp(1, VOCAB - 1)
    keywords = STOPWORDS + 1 + torch.randperm(VOCAB - STOPWORDS - 1, generator=g)[:CLASSES * KEYWORDS].view(CLASSES, KEYWORDS)
    topical = torch.rand(DOCS, DOC_LEN, generator=g) < 0.06
    pick = keywords[label.unsqueeze(1), torch.randint(0, KEYWORDS, (DOCS, DOC_LEN), generator=g)]
    ids = torch.where(topical, pick, rank)
    ids = ids.masked_fill(torch.arange(DOC_LEN).unsqueeze(0) >= length.unsqueeze(1), PAD)
    stop_ids = torch.randperm(STOPWORDS, generator=g) + 1
    return torch.cat([label.unsqueeze(1), ids], dim=1), stop_ids


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    docs_host, stop_ids = make_corpus()
    staging = [torch.empty(BATCH, DOC_LEN + 1, dtype=torch.long, pin_memory=True) for _ in range(2)]  # SYNCSPY-CLEAN: setup, two pinned staging slots allocated once
    uploaded = [torch.cuda.Event() for _ in range(2)]
    model = DocCNN(stop_ids).to(dev)  # SYNCSPY-CLEAN: setup upload (the stop-word buffer included)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    host_gen = torch.Generator().manual_seed(7)
    epoch_acc = []

    model.train()
    for epoch in range(EPOCHS):
        order = torch.randperm(DOCS, generator=host_gen)
        correct.zero_()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            slot = step % 2
            if step >= 2:
                uploaded[slot].synchronize()  # SYNCSPY-CLEAN: double buffer: the slot's upload two steps back, long finished
            torch.index_select(docs_host, 0, order[i * BATCH:(i + 1) * BATCH], out=staging[slot])
            batch = staging[slot].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory
            uploaded[slot].record()
            y, ids = batch[:, 0], batch[:, 1:]
            logits = model(ids)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
            correct += logits.detach().argmax(dim=1).eq(y).sum()
        epoch_acc.append(correct.item() / (STEPS_PER_EPOCH * BATCH))  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in epoch_acc)
    print("t112_doc_cnn_isin_stopwords: epochs=%d steps=%d batch=%d doc_len=%d stopwords=%d classes=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, DOC_LEN, STOPWORDS, CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
