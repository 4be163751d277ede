#!/usr/bin/env python3
"""examples/corpus/t54_master_weights_allclose_assert.py: corpus workload (PyTorch). Hand-written
mixed-precision training in the style of apex's O2 mode or Megatron's float16 optimizer
wrapper: the model runs in bfloat16, an fp32 master copy of its weights is what AdamW updates,
the gradients are upcast into the master copy and the updated master weights are cast back
into the model after every step. A consistency check left on from debugging then asserts that
the first bf16 weight still matches its master copy, `assert torch.allclose(...)`:
torch.allclose returns a Python bool, `isclose(...).all().item()`, so the check copies a flag to
the host and waits for the whole step (forward, backward, optimizer update, cast-back) to finish,
every step. The update itself is asynchronous; the check is the only wait in the loop.
Planted: the `torch.allclose` assertion in the optimizer wrapper's check, every step.
Clean: setup (the master copy), allocator growth in the first steps (the upcast gradients
included), the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, CHUNKS, BATCH, D_IN, HIDDEN, CLASSES = 80, 8, 512, 256, 1024, 20


class MasterWeightOptimizer:
    """fp32 master weights for a bf16 model: upcast grads, step in fp32, cast back."""

    def __init__(self, model, lr, weight_decay, check_every_step=True):
        self.model_params = [p for p in model.parameters() if p.requires_grad]
        self.master_params = [p.detach().float().clone().requires_grad_(True) for p in self.model_params]  # SYNCSPY-CLEAN: setup allocation (the fp32 master copy)
        self.inner = torch.optim.AdamW(self.master_params, lr=lr, weight_decay=weight_decay)
        self.check_every_step = check_every_step

    def zero_grad(self):
        for p in self.model_params:
            p.grad = None

    def step(self):
        for master, p in zip(self.master_params, self.model_params):
            master.grad = p.grad.float()  # SYNCSPY-CLEAN: allocator growth in the first steps
        self.inner.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        with torch.no_grad():
            for master, p in zip(self.master_params, self.model_params):
                p.copy_(master)
        if self.check_every_step:
            self._check_in_sync()

    def _check_in_sync(self):
        p, master = self.model_params[0], self.master_params[0]
        assert torch.allclose(p.float(), master.detach(), rtol=1e-2, atol=1e-2), "bf16 weights drifted from the fp32 master copy"  # SYNCSPY-PROBLEM: allclose reads its result on the host (.item()), every step


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.GELU(), torch.nn.LayerNorm(HIDDEN), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.GELU())
        self.head = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        return self.head(self.body(x))


def train(model, opt, x_all, y_all, dev):
    history = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    model.train()
    for step in range(STEPS):
        xb, yb = x_all[step % CHUNKS], y_all[step % CHUNKS]
        logits = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits.float(), yb)
        opt.zero_grad()
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()
        history[step] = loss.detach()
    return history


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    w_true = torch.randn(D_IN, CLASSES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    x_all = torch.randn(CHUNKS, BATCH, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    y_all = (x_all @ w_true).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation
    x_all = x_all.to(torch.bfloat16)  # SYNCSPY-CLEAN: setup allocation
    model = Classifier().to(dev, dtype=torch.bfloat16)  # SYNCSPY-CLEAN: setup upload
    opt = MasterWeightOptimizer(model, lr=2e-3, weight_decay=0.01)

    history = train(model, opt, x_all, y_all, dev)

    first, last = torch.stack([history[:10].mean(), history[-10:].mean()]).tolist()  # SYNCSPY-CLEAN: final read
    ok = last < first
    print("t54_master_weights_allclose_assert: steps=%d params=%d learned=%d result=OK" % (STEPS, len(opt.master_params), int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
