#!/usr/bin/env python3
"""examples/corpus/t91_clean_fttransformer_amp_epoch_scale.py: corpus workload (PyTorch AMP),
CLEAN. Credit-default prediction on synthetic tabular data (ten numeric and six categorical
columns, generated on the GPU) with an FT-Transformer: numeric columns tokenized by piecewise
linear encoding over quantile bins, categorical columns by one offset embedding table, a CLS
token and three pre-norm encoder layers. Training uses fp16 autocast, `torch.amp.GradScaler`
and `AdamW(fused=True)` (GradScaler hands found_inf to the fused kernel: no host read, as in
t38), and the warm-up/cosine LambdaLR steps every iteration as in the AMP recipe, without
asking whether the step was skipped. The quantile bin edges come from a device sort indexed by
a device `linspace` (no Python-list index, no `torch.quantile`), batches from a device
`randperm` per epoch, and an EMA of the weights from `torch._foreach_lerp_`. Validation runs on
the GPU after each epoch's step loop, and its loss, accuracy and `scaler.get_scale()` (which
syncs, its docstring says) are read once per epoch, outside the step loop.
Clean: all of it; the marked lines are setup, allocator growth in the first steps, the
per-epoch reads and the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROWS, VAL_ROWS, EPOCHS, STEPS_PER_EPOCH, BATCH = 65536, 8192, 3, 25, 1024
NUM, CARDS, BINS, DIM, HEADS, LAYERS, EMA_DECAY = 10, (12, 8, 30, 5, 50, 3), 16, 96, 8, 3, 0.99


class FTTransformer(torch.nn.Module):
    def __init__(self, edges):
        super().__init__()
        self.register_buffer("edges", edges)  # (NUM, BINS + 1)
        self.num_w = torch.nn.Parameter(torch.randn(NUM, BINS, DIM) / math.sqrt(BINS))
        self.num_b = torch.nn.Parameter(torch.zeros(NUM, DIM))
        self.register_buffer("cat_offsets", torch.tensor([0] + list(CARDS[:-1])).cumsum(0))
        self.cat = torch.nn.Embedding(sum(CARDS), DIM)
        self.cls = torch.nn.Parameter(torch.zeros(1, 1, DIM))
        layer = torch.nn.TransformerEncoderLayer(DIM, HEADS, 2 * DIM, dropout=0.1, activation="gelu", batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = torch.nn.Sequential(torch.nn.LayerNorm(DIM), torch.nn.Linear(DIM, 1))

    def forward(self, x_num, x_cat):
        lo, hi = self.edges[:, :-1], self.edges[:, 1:]
        ple = ((x_num.unsqueeze(2) - lo) / (hi - lo).clamp(min=1e-6)).clamp(0.0, 1.0)  # (B, NUM, BINS)
        num_tok = torch.einsum("bfk,fkd->bfd", ple, self.num_w) + self.num_b
        cat_tok = self.cat(x_cat + self.cat_offsets)
        h = torch.cat([self.cls.expand(x_num.shape[0], -1, -1), num_tok, cat_tok], dim=1)
        return self.head(self.encoder(h)[:, 0]).squeeze(1)


def make_table(dev, gen):
    x_num = torch.randn(ROWS, NUM, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    x_num[:, :3] = torch.exp(0.8 * x_num[:, :3])  # incomes, balances, limits: log-normal
    x_cat = torch.stack([torch.randint(0, c, (ROWS,), device=dev, generator=gen) for c in CARDS], dim=1)  # SYNCSPY-CLEAN: setup allocation
    risk = 0.8 * torch.tanh(x_num[:, 3] * x_num[:, 4]) - 0.6 * torch.log1p(x_num[:, 0]) + 0.5 * x_num[:, 1] / (1 + x_num[:, 2])
    risk = risk + 0.3 * torch.sin(x_cat[:, 2].float()) - 0.4 * (x_cat[:, 3] == 1).float() + 0.2 * x_num[:, 5] ** 2
    y = (torch.rand(ROWS, device=dev, generator=gen) < torch.sigmoid(2.0 * risk - 0.5)).float()  # SYNCSPY-CLEAN: setup allocation
    return x_num, x_cat, y


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(91)
    x_num, x_cat, y = make_table(dev, gen)
    n_train = ROWS - VAL_ROWS
    sorted_cols = x_num[:n_train].sort(dim=0).values
    pick = torch.linspace(0, n_train - 1, BINS + 1, device=dev).long()  # SYNCSPY-CLEAN: setup allocation (quantile positions on the device)
    edges = sorted_cols[pick].t().contiguous()
    model = FTTransformer(edges).to(dev)  # SYNCSPY-CLEAN: setup upload
    ema = [p.detach().clone() for p in model.parameters()]  # SYNCSPY-CLEAN: setup, the EMA copy (device to device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4, fused=True)
    total = EPOCHS * STEPS_PER_EPOCH
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 14)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    history = []

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(n_train, device=dev, generator=gen)
        for step in range(STEPS_PER_EPOCH):
            idx = order[step * BATCH:(step + 1) * BATCH]
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                logit = model(x_num[idx], x_cat[idx])  # SYNCSPY-CLEAN: allocator growth in the first steps
                loss = F.binary_cross_entropy_with_logits(logit.float(), y[idx])
            scaler.scale(loss).backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            scaler.step(opt)  # SYNCSPY-CLEAN: fused AdamW, found_inf stays on the GPU (state allocated on the first step)
            scaler.update()
            sched.step()
            with torch.no_grad():
                torch._foreach_lerp_(ema, [p.detach() for p in model.parameters()], 1.0 - EMA_DECAY)
            loss_sum += loss.detach()
        model.eval()
        with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.float16):
            v_logit = model(x_num[n_train:], x_cat[n_train:]).float()  # SYNCSPY-CLEAN: validation after the epoch's step loop
            v_loss = F.binary_cross_entropy_with_logits(v_logit, y[n_train:])
            v_acc = ((v_logit > 0).float() == y[n_train:]).float().mean()
        val_loss, val_acc = torch.stack([v_loss, v_acc]).tolist()  # SYNCSPY-CLEAN: once per epoch, outside the step loop
        history.append((epoch, round(val_loss, 4), round(val_acc, 4), scaler.get_scale()))  # SYNCSPY-CLEAN: get_scale() once per epoch, outside the step loop

    ema_norm, mean_loss = torch.stack([torch.stack([e.float().norm() for e in ema]).sum(), loss_sum / total]).tolist()  # SYNCSPY-CLEAN: final read
    ok = len(history) == EPOCHS and all(math.isfinite(h[1]) and 0.0 <= h[2] <= 1.0 and h[3] > 0 for h in history) and math.isfinite(ema_norm) and math.isfinite(mean_loss)
    print("t91_clean_fttransformer_amp_epoch_scale: epochs=%d steps=%d batch=%d numeric=%d categorical=%d bins=%d result=%s" % (EPOCHS, total, BATCH, NUM, len(CARDS), BINS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
