#!/usr/bin/env python3
"""examples/corpus/t73_mmoe_dwa_tensor_from_losses.py: corpus workload (PyTorch). Multi-task
training of a recommendation ranker: a multi-gate mixture-of-experts (MMoE) over user, item and
category embeddings plus dense features, with three towers (click, conversion after click in the
ESMM style, watch time). The task losses are balanced with Dynamic Weight Averaging (Liu et al.,
2019), whose helper collects the current losses with
`torch.tensor([l.detach() for l in losses], device=dev)`. `torch.tensor` builds its result from
Python data: each element is converted on the host (the 0-dim CUDA tensors are read like
`.item()`, a blocking device-to-host copy), the tensor is filled in CPU memory and then copied to
the device. The first read waits for the step's forward pass; it happens every step, inside
`DynamicWeightAverage.weights`. `torch.stack(losses).detach()` keeps the history on the GPU.
Planted: the `torch.tensor([...])` line in DynamicWeightAverage.weights, every step.
Clean: setup (the interaction log generated on the GPU, the model upload), the weights'
softmax on the GPU, allocator growth in the first steps, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, ROWS = 40, 1024, 40960
USERS, ITEMS, CATS, DENSE, EMB, EXPERTS, EXPERT_DIM, TASKS = 5000, 8000, 64, 16, 32, 6, 128, 3


class MMoE(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.user = torch.nn.Embedding(USERS, EMB)
        self.item = torch.nn.Embedding(ITEMS, EMB)
        self.cat = torch.nn.Embedding(CATS, EMB)
        d_in = 3 * EMB + DENSE
        self.experts = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.Linear(d_in, EXPERT_DIM), torch.nn.ReLU(), torch.nn.Linear(EXPERT_DIM, EXPERT_DIM), torch.nn.ReLU()) for _ in range(EXPERTS)])
        self.gates = torch.nn.ModuleList([torch.nn.Linear(d_in, EXPERTS) for _ in range(TASKS)])
        self.towers = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.Linear(EXPERT_DIM, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)) for _ in range(TASKS)])

    def forward(self, uid, iid, cid, dense):
        x = torch.cat([self.user(uid), self.item(iid), self.cat(cid), dense], dim=-1)
        e = torch.stack([expert(x) for expert in self.experts], dim=1)  # (B, E, D)
        outs = []
        for gate, tower in zip(self.gates, self.towers):
            w = torch.softmax(gate(x), dim=-1).unsqueeze(-1)
            outs.append(tower((w * e).sum(dim=1)).squeeze(-1))
        return outs


class DynamicWeightAverage:
    """w_k = K * softmax(r_k / T), r_k = L_k(t-1) / L_k(t-2)."""

    def __init__(self, n_tasks, temperature, dev):
        self.n, self.temp, self.dev = n_tasks, temperature, dev
        self.prev = torch.ones(n_tasks, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.prev2 = torch.ones(n_tasks, device=dev)  # SYNCSPY-CLEAN: setup allocation

    def weights(self, losses):
        current = torch.tensor([l.detach() for l in losses], device=self.dev)  # SYNCSPY-PROBLEM: torch.tensor reads each 0-dim CUDA loss on the host (blocking D2H), every step
        w = self.n * torch.softmax((self.prev / self.prev2) / self.temp, dim=0)
        self.prev2, self.prev = self.prev, current
        return w


def make_log(dev, gen):
    uid = torch.randint(0, USERS, (ROWS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    iid = torch.randint(0, ITEMS, (ROWS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    cid = iid % CATS
    dense = torch.randn(ROWS, DENSE, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    taste = torch.randn(USERS, 4, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    style = torch.randn(CATS, 4, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    affinity = (taste[uid] * style[cid]).sum(-1) + 0.5 * dense[:, 0]
    click = (torch.rand(ROWS, device=dev, generator=gen) < torch.sigmoid(affinity - 1.0)).float()  # SYNCSPY-CLEAN: setup allocation
    convert = click * (torch.rand(ROWS, device=dev, generator=gen) < torch.sigmoid(affinity - 2.0)).float()  # SYNCSPY-CLEAN: setup allocation
    watch = click * F.softplus(affinity + 0.3 * dense[:, 1])
    return uid, iid, cid, dense, click, convert, watch


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(3)
    uid, iid, cid, dense, click, convert, watch = make_log(dev, gen)
    model = MMoE().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    dwa = DynamicWeightAverage(TASKS, 2.0, dev)
    loss_sum = torch.zeros(TASKS, device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        s = (step * BATCH) % ROWS
        b = slice(s, s + BATCH)
        ctr_logit, cvr_logit, watch_pred = model(uid[b], iid[b], cid[b], dense[b])  # SYNCSPY-CLEAN: allocator growth in the first steps
        ctcvr = torch.sigmoid(ctr_logit) * torch.sigmoid(cvr_logit)
        losses = [
            F.binary_cross_entropy_with_logits(ctr_logit, click[b]),
            F.binary_cross_entropy(ctcvr.clamp(1e-6, 1 - 1e-6), convert[b]),
            (click[b] * (watch_pred - watch[b]) ** 2).mean(),
        ]
        w = dwa.weights(losses)
        loss = sum(w[k] * losses[k] for k in range(TASKS))
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += torch.stack(losses).detach()

    means = (loss_sum / STEPS).tolist()  # SYNCSPY-CLEAN: final read
    ok = all(math.isfinite(m) for m in means)
    print("t73_mmoe_dwa_tensor_from_losses: steps=%d batch=%d tasks=%d experts=%d result=OK" % (STEPS, BATCH, TASKS, EXPERTS))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
