#!/usr/bin/env python3
"""examples/corpus/t33_metrics_dict_items.py: corpus workload (PyTorch). A multi-task model (a
shared trunk, a classification head and a regression head) whose training step returns a dict
of GPU scalars (total loss, the two task losses, the batch accuracy, the gradient norm), as
trainer frameworks' `training_step` does. The loop hands the dict to its logger as Python
numbers with `logged = {name: v.item() for name, v in metrics.items()}` every step: five `.item()`
calls on one line, the first of which waits for the whole step (forward, backward, clipping,
the optimizer) and the four others each a small copy and wait of their own. One line to change
(stack the values and read them every N steps, or keep running sums on the GPU).
Planted: the dict comprehension of `.item()` over the metrics, every step.
Clean: setup, allocator growth in the first steps, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, FEATURES, CLASSES, CHUNKS = 60, 1024, 256, 16, 5


class MultiTask(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Sequential(torch.nn.Linear(FEATURES, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU())
        self.cls = torch.nn.Linear(1024, CLASSES)
        self.reg = torch.nn.Linear(1024, 1)

    def forward(self, x):
        h = self.trunk(x)  # SYNCSPY-CLEAN: allocator growth in the first steps
        return self.cls(h), self.reg(h).squeeze(-1)


def training_step(model, opt, xb, yb_cls, yb_reg):
    logits, pred = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps
    ce = torch.nn.functional.cross_entropy(logits, yb_cls)
    mse = torch.nn.functional.mse_loss(pred, yb_reg)
    loss = ce + 0.5 * mse
    opt.zero_grad(set_to_none=True)
    loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)  # SYNCSPY-CLEAN: allocator growth in the first steps
    opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
    acc = (logits.detach().argmax(dim=1) == yb_cls).float().mean()
    return {"loss": loss.detach(), "ce": ce.detach(), "mse": mse.detach(), "acc": acc, "grad_norm": grad_norm}


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    xs = torch.randn(CHUNKS, BATCH, FEATURES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    centers = torch.randn(CLASSES, FEATURES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    y_cls = (xs @ centers.T).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation
    y_reg = xs[..., :8].pow(2).sum(dim=-1).sqrt()  # SYNCSPY-CLEAN: setup allocation
    model = MultiTask().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True)

    history = []
    for step in range(STEPS):
        c = step % CHUNKS
        metrics = training_step(model, opt, xs[c], y_cls[c], y_reg[c])
        logged = {name: v.item() for name, v in metrics.items()}  # SYNCSPY-PROBLEM: five .item() reads of the metrics dict every step
        history.append(logged)

    last = history[-1]
    with torch.no_grad():
        logits, _ = model(xs[0])
        final_acc = (logits.argmax(dim=1) == y_cls[0]).float().mean().item()  # SYNCSPY-CLEAN: final read
    print("t33_metrics_dict_items: steps=%d logged=%d last_loss=%.3f last_acc=%.3f final_acc=%.3f result=OK" % (STEPS, len(history), last["loss"], last["acc"], final_acc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
