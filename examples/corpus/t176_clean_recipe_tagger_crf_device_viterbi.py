#!/usr/bin/env python3
"""examples/corpus/t176_clean_recipe_tagger_crf_device_viterbi.py: corpus workload (PyTorch).
Recipe ingredient tagging, clean: the t171 BiLSTM-CRF (pytorch-crf 0.7.2's CRF in its shape,
the same 1,024 synthetic ingredient phrases, 2 epochs of 32 steps, Adam) with the fixes of
t171: the batch index of `_compute_score` is `torch.arange(batch_size,
device=emissions.device)` (made on the device, no upload), the mask's first time step is
checked once in setup for each split instead of in `_validate` and in `assert`s on every call,
and `_viterbi_decode` traces the best paths back on the device (one `gather` per time step
from the last tag, `torch.where` keeping the last tag past each phrase's end) and returns a
padded tag tensor; the validation accuracy is summed on the GPU and read with one `.tolist()`
per epoch. Nothing in the step loop reads the GPU. Checked after the loop: the device decoder
against pytorch-crf's loop decoder run on CPU copies of the last validation batch, and every
Viterbi path's log-likelihood at least the gold path's.
Clean: setup (the phrases generated on the GPU, the segment table uploaded, the two mask checks,
the model uploaded), the per-epoch device shuffle and accumulators, allocator growth in the first
steps (forward, backward, Adam) and in the first evaluation, the per-epoch reads, the final
reads.
Per step on an H100 (estimated from the sizes, fp32 without TF32): a 64-wide BiLSTM over 32
phrases of 16 tokens and the CRF's two loops of 15 time steps, forward and backward, about 2 ms,
launch-bound.
"""
import sys
from typing import Optional

import torch

VOCAB, NUM_TAGS, MAX_LEN, EMB, HID = 1608, 9, 16, 64, 64
N_TRAIN, N_VAL, BATCH, VAL_BATCH, EPOCHS, LR = 1024, 256, 32, 64, 2, 5e-3
# segments of a phrase: quantity, unit, "of", name, ",", comment
SEG_LO = [1, 50, 1600, 100, 1604, 1100]
SEG_N = [49, 50, 4, 1000, 4, 500]
SEG_B = [1, 3, 0, 5, 0, 7]
SEG_I = [2, 4, 0, 6, 0, 8]


class CRF(torch.nn.Module):
    """Conditional random field (pytorch-crf 0.7.2)."""

    def __init__(self, num_tags: int, batch_first: bool = False) -> None:
        if num_tags <= 0:
            raise ValueError(f"invalid number of tags: {num_tags}")
        super().__init__()
        self.num_tags = num_tags
        self.batch_first = batch_first
        self.start_transitions = torch.nn.Parameter(torch.empty(num_tags))
        self.end_transitions = torch.nn.Parameter(torch.empty(num_tags))
        self.transitions = torch.nn.Parameter(torch.empty(num_tags, num_tags))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        torch.nn.init.uniform_(self.start_transitions, -0.1, 0.1)
        torch.nn.init.uniform_(self.end_transitions, -0.1, 0.1)
        torch.nn.init.uniform_(self.transitions, -0.1, 0.1)

    def forward(self, emissions, tags, mask=None, reduction: str = "sum"):
        self._validate(emissions, tags=tags, mask=mask)
        if reduction not in ("none", "sum", "mean", "token_mean"):
            raise ValueError(f"invalid reduction: {reduction}")
        if mask is None:
            mask = torch.ones_like(tags, dtype=torch.uint8)
        if self.batch_first:
            emissions = emissions.transpose(0, 1)
            tags = tags.transpose(0, 1)
            mask = mask.transpose(0, 1)
        numerator = self._compute_score(emissions, tags, mask)
        denominator = self._compute_normalizer(emissions, mask)
        llh = numerator - denominator
        if reduction == "none":
            return llh
        if reduction == "sum":
            return llh.sum()
        if reduction == "mean":
            return llh.mean()
        assert reduction == "token_mean"
        return llh.sum() / mask.float().sum()

    def decode(self, emissions, mask=None) -> torch.Tensor:
        self._validate(emissions, mask=mask)
        if mask is None:
            mask = emissions.new_ones(emissions.shape[:2], dtype=torch.uint8)
        if self.batch_first:
            emissions = emissions.transpose(0, 1)
            mask = mask.transpose(0, 1)
        return self._viterbi_decode(emissions, mask)

    def _validate(self, emissions, tags=None, mask: Optional[torch.Tensor] = None) -> None:
        if emissions.dim() != 3:
            raise ValueError(f"emissions must have dimension of 3, got {emissions.dim()}")
        if emissions.size(2) != self.num_tags:
            raise ValueError(f"expected last dimension of emissions is {self.num_tags}, got {emissions.size(2)}")
        if tags is not None:
            if emissions.shape[:2] != tags.shape:
                raise ValueError("the first two dimensions of emissions and tags must match")
        if mask is not None:
            if emissions.shape[:2] != mask.shape:
                raise ValueError("the first two dimensions of emissions and mask must match")
            # the first time step of every mask is checked once per split in setup (check_masks)

    def _compute_score(self, emissions, tags, mask):
        assert emissions.dim() == 3 and tags.dim() == 2
        assert emissions.shape[:2] == tags.shape
        assert emissions.size(2) == self.num_tags
        assert mask.shape == tags.shape
        seq_length, batch_size = tags.shape
        mask = mask.float()
        batch_idx = torch.arange(batch_size, device=emissions.device)
        score = self.start_transitions[tags[0]]
        score += emissions[0, batch_idx, tags[0]]
        for i in range(1, seq_length):
            score += self.transitions[tags[i - 1], tags[i]] * mask[i]
            score += emissions[i, batch_idx, tags[i]] * mask[i]
        seq_ends = mask.long().sum(dim=0) - 1
        last_tags = tags[seq_ends, batch_idx]
        score += self.end_transitions[last_tags]
        return score

    def _compute_normalizer(self, emissions, mask):
        assert emissions.dim() == 3 and mask.dim() == 2
        assert emissions.shape[:2] == mask.shape
        assert emissions.size(2) == self.num_tags
        seq_length = emissions.size(0)
        score = self.start_transitions + emissions[0]
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emissions = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emissions
            next_score = torch.logsumexp(next_score, dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
        score += self.end_transitions
        return torch.logsumexp(score, dim=1)

    def _viterbi_decode(self, emissions, mask) -> torch.Tensor:
        """Viterbi with the backtrace on the device: (batch_size, seq_length) tags, -1 past the end."""
        assert emissions.dim() == 3 and mask.dim() == 2
        assert emissions.shape[:2] == mask.shape
        assert emissions.size(2) == self.num_tags
        seq_length, batch_size = mask.shape
        score = self.start_transitions + emissions[0]
        history = []
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emission = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emission
            next_score, indices = next_score.max(dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
            history.append(indices)
        score += self.end_transitions
        seq_ends = mask.long().sum(dim=0) - 1
        cur = score.argmax(dim=1)
        best = [cur]
        for t in range(seq_length - 2, -1, -1):
            back = history[t].gather(1, cur.unsqueeze(1)).squeeze(1)
            cur = torch.where(t < seq_ends, back, cur)
            best.append(cur)
        best.reverse()
        return torch.stack(best, dim=1).masked_fill(~mask.transpose(0, 1), -1)


class BiLSTMCRF(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCAB, EMB, padding_idx=0)
        self.lstm = torch.nn.LSTM(EMB, HID, batch_first=True, bidirectional=True)
        self.dropout = torch.nn.Dropout(0.2)
        self.hidden2tag = torch.nn.Linear(2 * HID, NUM_TAGS)
        self.crf = CRF(NUM_TAGS, batch_first=True)

    def emissions(self, tokens):
        out, _ = self.lstm(self.embedding(tokens))
        return self.hidden2tag(self.dropout(out))

    def forward(self, tokens, tags, mask):
        return -self.crf(self.emissions(tokens), tags, mask=mask, reduction="mean")

    def decode(self, tokens, mask):
        return self.crf.decode(self.emissions(tokens), mask=mask)


def make_phrases(n, gen, dev):
    """Segment lengths per phrase (quantity 1-2, unit 0-2, "of" 0-1 after a unit, name 1-3,
    "," 0-1, comment 1-4 after the comma); tokens drawn from each segment's id range, 5% of
    them replaced by name words; BIO tags; positions past the end padded with 0."""
    q = torch.randint(1, 3, (n,), device=dev, generator=gen)
    u = torch.randint(0, 3, (n,), device=dev, generator=gen)
    of = (torch.rand(n, device=dev, generator=gen) < 0.3).long() * (u > 0).long()
    nm = torch.randint(1, 4, (n,), device=dev, generator=gen)
    sep = (torch.rand(n, device=dev, generator=gen) < 0.5).long()
    cm = torch.randint(1, 5, (n,), device=dev, generator=gen) * sep
    seg_len = torch.stack([q, u, of, nm, sep, cm], 1)
    ends = seg_len.cumsum(1)
    starts = ends - seg_len
    lengths = ends[:, -1]
    pos = torch.arange(MAX_LEN, device=dev).expand(n, MAX_LEN).contiguous()
    seg = torch.searchsorted(ends, pos, right=True).clamp_(max=5)
    first = pos == starts.gather(1, seg)
    table = torch.tensor([SEG_LO, SEG_N, SEG_B, SEG_I], device=dev)  # SYNCSPY-CLEAN: setup, the segment table uploaded once per split
    r = torch.rand(n, MAX_LEN, device=dev, generator=gen)
    tokens = table[0][seg] + (r * table[1][seg]).long()
    noise = torch.rand(n, MAX_LEN, device=dev, generator=gen) < 0.05
    tokens = torch.where(noise, 100 + (torch.rand(n, MAX_LEN, device=dev, generator=gen) * 1000).long(), tokens)
    tags = torch.where(first, table[2][seg], table[3][seg])
    mask = pos < lengths[:, None]
    return tokens * mask, tags * mask, mask


def check_masks(mask):
    """pytorch-crf's requirement, checked once per split: every phrase has its first token."""
    if not bool(mask[:, 0].all()):  # SYNCSPY-CLEAN: setup, the masks checked once per split
        raise ValueError("mask of the first timestep must all be on")


def reference_viterbi(crf, emissions, mask):
    """pytorch-crf's loop decoder (`_viterbi_decode` with the host backtrace), on CPU tensors."""
    start, end, trans = (p.detach().cpu() for p in (crf.start_transitions, crf.end_transitions, crf.transitions))
    emissions, mask = emissions.transpose(0, 1), mask.transpose(0, 1)
    score, history = start + emissions[0], []
    for i in range(1, emissions.size(0)):
        next_score, indices = (score.unsqueeze(2) + trans + emissions[i].unsqueeze(1)).max(dim=1)
        score = torch.where(mask[i].unsqueeze(1), next_score, score)
        history.append(indices)
    score += end
    seq_ends = mask.long().sum(dim=0) - 1
    paths = []
    for idx in range(mask.size(1)):
        best = [int(score[idx].argmax())]
        for hist in reversed(history[:int(seq_ends[idx])]):
            best.append(int(hist[idx][best[-1]]))
        paths.append(best[::-1])
    return paths


def main():
    if not torch.cuda.is_available():
        print("t176_clean_recipe_tagger_crf_device_viterbi: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(171)
    tokens, tags, mask = make_phrases(N_TRAIN, gen, dev)  # SYNCSPY-CLEAN: setup, the phrases generated on the GPU once
    v_tokens, v_tags, v_mask = make_phrases(N_VAL, gen, dev)  # SYNCSPY-CLEAN: setup, the validation phrases generated on the GPU once
    check_masks(mask)
    check_masks(v_mask)
    model = BiLSTMCRF().to(dev)  # SYNCSPY-CLEAN: setup upload
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    steps_per_epoch = N_TRAIN // BATCH
    losses, epoch_losses, val_accs = [], [], []

    def evaluate():
        model.eval()
        counts = torch.zeros(2, device=dev)  # SYNCSPY-CLEAN: once per evaluation, an accumulator
        with torch.no_grad():
            for s in range(0, N_VAL, VAL_BATCH):
                paths = model.decode(v_tokens[s:s + VAL_BATCH], v_mask[s:s + VAL_BATCH])  # SYNCSPY-CLEAN: allocator growth, first evaluation
                m = v_mask[s:s + VAL_BATCH]
                counts[0] += ((paths == v_tags[s:s + VAL_BATCH]) & m).sum()
                counts[1] += m.sum()
        model.train()
        correct, total = counts.tolist()  # SYNCSPY-CLEAN: one read per evaluation, once per epoch outside the step loop
        return correct / total

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(N_TRAIN, device=dev, generator=gen)  # SYNCSPY-CLEAN: once per epoch, a device-side shuffle
        epoch_loss = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: once per epoch, an accumulator
        for b in range(steps_per_epoch):
            idx = order[b * BATCH:(b + 1) * BATCH]
            loss = model(tokens[idx], tags[idx], mask[idx])  # SYNCSPY-CLEAN: allocator growth in the first steps
            optimizer.zero_grad()
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses.append(loss.detach())
            epoch_loss += loss.detach()
        epoch_losses.append(epoch_loss.item() / steps_per_epoch)  # SYNCSPY-CLEAN: once per epoch, outside the step loop
        val_accs.append(evaluate())

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    # The device decoder against pytorch-crf's loop decoder on CPU copies; Viterbi's path has the
    # highest score, so its log-likelihood is at least the gold path's.
    model.eval()
    s = N_VAL - VAL_BATCH
    with torch.no_grad():
        em = model.emissions(v_tokens[s:])
        paths = model.crf.decode(em, mask=v_mask[s:])
        llh_v = model.crf(em, paths.clamp(min=0), mask=v_mask[s:], reduction="none")
        llh_g = model.crf(em, v_tags[s:], mask=v_mask[s:], reduction="none")
        gap = (llh_v - llh_g).min().item()  # SYNCSPY-CLEAN: final read, for the check
        llh_max = llh_v.max().item()  # SYNCSPY-CLEAN: final read, for the check
        got = paths.tolist()  # SYNCSPY-CLEAN: final read, for the check
        ref = reference_viterbi(model.crf, em.cpu(), v_mask[s:].cpu())  # SYNCSPY-CLEAN: final read, for the check
    n = len(losses)
    same = all([t for t in g if t >= 0] == r for g, r in zip(got, ref))
    ok = (n == EPOCHS * steps_per_epoch and bool(torch.isfinite(hist).all()) and same and gap > -1e-3
          and llh_max <= 1e-3 and float(hist[-8:].mean()) < 0.5 * float(hist[:8].mean())
          and epoch_losses[-1] < epoch_losses[0] and val_accs[-1] >= 0.75)
    print("t176_clean_recipe_tagger_crf_device_viterbi: epochs=%d steps=%d batch=%d tags=%d val_phrases=%d "
          "result=%s" % (EPOCHS, n, BATCH, NUM_TAGS, N_VAL, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
