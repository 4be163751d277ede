#!/usr/bin/env python3
"""examples/corpus/t49_clean_capacity_moe_dispatch.py: corpus workload (PyTorch), CLEAN.
The fixed version of t47's routing, trained: a Switch-Transformer style top-1 mixture of
experts with a fixed expert capacity (capacity factor 1.25), so every shape is known on the
host from the batch size alone. Each token's slot in its expert is computed on the device
(`one_hot(..., num_classes=E)`, a cumulative sum, `torch.where` with three arguments), tokens
past the capacity go to a dummy slot and are dropped, and a GShard-style dense dispatch matrix
(`scatter_` of ones) gathers and combines the tokens with matrix products; the experts run as
one batched matmul. `one_hot` with an explicit `num_classes` does not read the maximum on the
host for a CUDA input (it relies on scatter's device-side asserts). The load-balancing loss,
the fraction of dropped tokens and the loss history stay on the GPU; a warm-up LambdaLR is fed
Python floats. One final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, WARMUP, CHUNKS, TOKENS, D_IN, D_MODEL, D_FF, EXPERTS, CLASSES, CAPACITY_FACTOR = 60, 10, 6, 2048, 64, 256, 512, 8, 16, 1.25


class SwitchFFN(torch.nn.Module):
    def __init__(self, d_model, d_ff, n_experts, capacity_factor):
        super().__init__()
        self.n_experts, self.capacity_factor = n_experts, capacity_factor
        self.router = torch.nn.Linear(d_model, n_experts, bias=False)
        self.w_in = torch.nn.Parameter(torch.randn(n_experts, d_model, d_ff) / math.sqrt(d_model))
        self.w_out = torch.nn.Parameter(torch.randn(n_experts, d_ff, d_model) / math.sqrt(d_ff))

    def forward(self, x):
        n_tokens, d_model = x.shape
        capacity = int(self.capacity_factor * n_tokens / self.n_experts)
        probs = self.router(x).softmax(dim=-1)
        gate, expert = probs.max(dim=-1)
        expert_mask = F.one_hot(expert, num_classes=self.n_experts)
        position = ((torch.cumsum(expert_mask, dim=0) - 1) * expert_mask).sum(dim=-1)
        kept = position < capacity
        slot = torch.where(kept, expert * capacity + position, torch.full_like(position, self.n_experts * capacity))
        dispatch = torch.zeros(n_tokens, self.n_experts * capacity + 1, device=x.device, dtype=x.dtype).scatter_(1, slot.unsqueeze(1), 1.0)[:, :-1]  # SYNCSPY-CLEAN: allocator growth in the first steps
        expert_in = (dispatch.T @ x).view(self.n_experts, capacity, d_model)  # SYNCSPY-CLEAN: allocator growth in the first steps
        hidden = F.gelu(torch.bmm(expert_in, self.w_in))  # SYNCSPY-CLEAN: allocator growth in the first steps
        expert_out = torch.bmm(hidden, self.w_out).view(self.n_experts * capacity, d_model)
        y = (dispatch @ expert_out) * (gate * kept).unsqueeze(-1)
        load = expert_mask.float().mean(dim=0)
        aux_loss = self.n_experts * (load * probs.mean(dim=0)).sum()
        dropped = 1.0 - kept.float().mean()
        return y, aux_loss, dropped


class SwitchClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(D_IN, D_MODEL)
        self.norms = torch.nn.ModuleList([torch.nn.LayerNorm(D_MODEL) for _ in range(2)])
        self.moes = torch.nn.ModuleList([SwitchFFN(D_MODEL, D_FF, EXPERTS, CAPACITY_FACTOR) for _ in range(2)])
        self.head = torch.nn.Linear(D_MODEL, CLASSES)

    def forward(self, x):
        h = self.embed(x)
        aux = h.new_zeros(())
        dropped = h.new_zeros(())
        for norm, moe in zip(self.norms, self.moes):
            y, a, d = moe(norm(h))
            h = h + y
            aux = aux + a
            dropped = dropped + d
        return self.head(h), aux, dropped / len(self.moes)


def warmup_factor(step):
    return min(1.0, (step + 1) / WARMUP)


def train(model, x_all, y_all, dev):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_factor)
    history = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    dropped_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    model.train()
    for step in range(STEPS):
        xb, yb = x_all[step % (CHUNKS - 1)], y_all[step % (CHUNKS - 1)]
        logits, aux, dropped = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits, yb) + 0.01 * aux
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        sched.step()
        history[step] = loss.detach()
        dropped_sum += dropped.detach()
    return history, dropped_sum


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    w_teacher = torch.randn(D_IN, CLASSES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    x_all = torch.randn(CHUNKS, TOKENS, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    y_all = (x_all @ w_teacher).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation
    model = SwitchClassifier().to(dev)  # SYNCSPY-CLEAN: setup upload

    history, dropped_sum = train(model, x_all, y_all, dev)

    model.eval()
    with torch.no_grad():
        logits, _, _ = model(x_all[-1])
        held_out_acc = (logits.argmax(dim=-1) == y_all[-1]).float().mean()
    first, last, dropped, acc = torch.stack([history[:10].mean(), history[-10:].mean(), dropped_sum / STEPS, held_out_acc]).tolist()  # SYNCSPY-CLEAN: final read
    ok = last < first and 0.0 <= dropped < 1.0 and acc > 1.0 / CLASSES
    capacity = int(CAPACITY_FACTOR * TOKENS / EXPERTS)
    print("t49_clean_capacity_moe_dispatch: steps=%d experts=%d capacity=%d learned=%d result=OK" % (STEPS, EXPERTS, capacity, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
