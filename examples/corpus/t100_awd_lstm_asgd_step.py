#!/usr/bin/env python3
"""examples/corpus/t100_awd_lstm_asgd_step.py: corpus workload (PyTorch).
Word-level language modelling with an AWD-LSTM (three stacked LSTMs 256-768-768-256, tied
embedding and softmax weights, embedding dropout, locked dropout, truncated BPTT of 70 tokens
with the hidden state carried across batches, gradient clipping at 0.25), trained in the phase
the AWD-LSTM recipe switches to averaged SGD: `torch.optim.ASGD(params, lr, t0=0, lambd=0.,
weight_decay=...)`, exactly the reference code's call. On CUDA, ASGD without `capturable=True`
keeps `step`, `eta` and `mu` as 0-dim device tensors and, in `_multi_tensor_asgd`
(torch/optim/asgd.py), rebuilds them on the host after the update: for every parameter
`_get_value(step)` (`.item()`, a blocking read) and `torch.as_tensor(python_float,
device=device)` (a blocking copy from pageable memory). Fourteen parameters, two blocking
transfers each, every step; the first waits for the whole backward pass, and the GPU idles
between them. `capturable=True` keeps the schedule on the device.
Planted: the `opt.step()` line in train_step (ASGD), every step.
Clean: setup (the corpus generated on the GPU, the model upload, the hidden state), allocator
growth in the first steps, the evaluation with the averaged weights (`ax`) swapped in after the
loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, BPTT, EVAL_LEN = 40, 40, 70, 280
VOCAB, EMB, HID, LAYERS, TOPICS, SPAN = 10000, 256, 768, 3, 64, 20
LR, CLIP, WDECAY = 30.0, 0.25, 1.2e-6


def embedded_dropout(embed, words, p):
    """Drops whole word types (rows of the embedding matrix), as in the AWD-LSTM code."""
    mask = embed.weight.new_empty((embed.weight.size(0), 1)).bernoulli_(1 - p) / (1 - p)
    return F.embedding(words, mask * embed.weight)


def locked_dropout(x, p):
    """Variational dropout: one mask per sequence, shared over time steps."""
    m = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - p) / (1 - p)
    return x * m


class AWDLSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Embedding(VOCAB, EMB)
        sizes = [EMB] + [HID] * (LAYERS - 1) + [EMB]
        self.rnns = torch.nn.ModuleList([torch.nn.LSTM(sizes[i], sizes[i + 1]) for i in range(LAYERS)])
        self.decoder = torch.nn.Linear(EMB, VOCAB)
        self.decoder.weight = self.encoder.weight

    def init_hidden(self, batch, dev):
        return [(torch.zeros(1, batch, rnn.hidden_size, device=dev), torch.zeros(1, batch, rnn.hidden_size, device=dev)) for rnn in self.rnns]  # SYNCSPY-CLEAN: setup allocation

    def forward(self, words, hidden):
        out = embedded_dropout(self.encoder, words, 0.1) if self.training else self.encoder(words)
        out = locked_dropout(out, 0.4) if self.training else out
        new_hidden = []
        for i, rnn in enumerate(self.rnns):
            out, h = rnn(out, hidden[i])
            new_hidden.append(h)
            if self.training:
                out = locked_dropout(out, 0.25 if i < LAYERS - 1 else 0.4)
        return self.decoder(out), new_hidden


def make_stream(length, dev, gen):
    """A (length, BATCH) token stream: each 20-token span draws log-uniform words around a topic."""
    topic = torch.randint(0, TOPICS, (length // SPAN + 1, 1, BATCH), device=dev, generator=gen).expand(-1, SPAN, -1).reshape(-1, BATCH)[:length]  # SYNCSPY-CLEAN: setup allocation
    u = torch.rand(length, BATCH, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    offset = (torch.exp(u * math.log(400.0)) - 1.0).long()
    return (topic * 151 + offset) % VOCAB


def train_step(model, opt, x, y, hidden):
    hidden = [(h.detach(), c.detach()) for h, c in hidden]
    logits, hidden = model(x, hidden)  # SYNCSPY-CLEAN: allocator growth in the first steps
    loss = F.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
    torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
    opt.step()  # SYNCSPY-PROBLEM: ASGD without capturable: .item() of the step and a pageable torch.as_tensor upload per parameter, every step
    return loss.detach(), hidden


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(100)
    train = make_stream(STEPS * BPTT + 1, dev, gen)
    valid = make_stream(EVAL_LEN + 1, dev, gen)
    model = AWDLSTM().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.ASGD(model.parameters(), lr=LR, t0=0, lambd=0.0, weight_decay=WDECAY)
    hidden = model.init_hidden(BATCH, dev)
    losses = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        i = step * BPTT
        losses[step], hidden = train_step(model, opt, train[i:i + BPTT], train[i + 1:i + 1 + BPTT], hidden)  # SYNCSPY-CLEAN: the step's loss copied into the loss history on the device (asynchronous device-to-device copy)

    model.eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(opt.state[p]["ax"])  # SYNCSPY-CLEAN: the averaged weights swapped in after the loop (device-to-device copy)
        logits, _ = model(valid[:-1], model.init_hidden(BATCH, dev))  # SYNCSPY-CLEAN: evaluation after the loop, averaged weights
        val = F.cross_entropy(logits.view(-1, VOCAB), valid[1:].reshape(-1))
    first, last, val_loss = torch.stack([losses[:5].mean(), losses[-5:].mean(), val]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and math.isfinite(val_loss) and val_loss < math.log(VOCAB) + 1.0
    n_params = sum(1 for _ in model.parameters())
    print("t100_awd_lstm_asgd_step: steps=%d batch=%d bptt=%d vocab=%d params=%d result=%s" % (STEPS, BATCH, BPTT, VOCAB, n_params, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
