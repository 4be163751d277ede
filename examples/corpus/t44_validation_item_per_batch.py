#!/usr/bin/env python3
"""examples/corpus/t44_validation_item_per_batch.py: corpus workload (PyTorch). A training
script with a clean training loop (losses summed on the GPU) followed, every epoch, by a
validation pass over 40 batches that accumulates the metrics the way many scripts do:
`val_loss += loss.item()` and `correct += (pred == yb).sum().item()` for every validation
batch. Each `.item()` copies a scalar to the host and waits for that batch's forward pass
(torch docs: Tensor.item returns a Python number; on CUDA it synchronizes), so the validation
loop runs one batch at a time, the host idle while the GPU works and the GPU idle while the
host queues the next batch. It is outside the training step but it is a loop of its own, run
every epoch: accumulate both sums on the GPU and read them once after the pass (t26).
Planted: the two `.item()` reads of the validation loop, every validation batch.
Clean: setup, allocator growth in the first steps, the per-epoch read of the training loss
(once per epoch, outside the loops), the final print.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

EPOCHS, TRAIN_STEPS, VAL_BATCHES, BATCH, D_IN, HIDDEN, CLASSES = 2, 30, 40, 512, 256, 512, 10


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    w_true = torch.randn(D_IN, CLASSES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    train_x = torch.randn(8, BATCH, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    train_y = (train_x @ w_true).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation
    val_x = torch.randn(VAL_BATCHES, BATCH, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_y = (val_x @ w_true).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    accuracy = 0.0

    for epoch in range(EPOCHS):
        model.train()
        train_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: once per epoch
        for step in range(TRAIN_STEPS):
            loss = torch.nn.functional.cross_entropy(model(train_x[step % 8]), train_y[step % 8])  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
            train_sum += loss.detach()
        train_loss = train_sum.item() / TRAIN_STEPS  # SYNCSPY-CLEAN: once per epoch, outside the loops

        model.eval()
        val_loss, correct = 0.0, 0
        with torch.no_grad():
            for b in range(VAL_BATCHES):
                logits = model(val_x[b])  # SYNCSPY-CLEAN: allocator growth in the first batches
                loss = torch.nn.functional.cross_entropy(logits, val_y[b])
                val_loss += loss.item()  # SYNCSPY-PROBLEM: host read of every validation batch's loss
                correct += (logits.argmax(dim=-1) == val_y[b]).sum().item()  # SYNCSPY-PROBLEM: host read of every validation batch's hit count
        accuracy = correct / (VAL_BATCHES * BATCH)
        if not (train_loss > 0.0 and val_loss > 0.0):
            return 1

    ok = accuracy > 0.15
    print("t44_validation_item_per_batch: epochs=%d learned=%d result=OK" % (EPOCHS, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
