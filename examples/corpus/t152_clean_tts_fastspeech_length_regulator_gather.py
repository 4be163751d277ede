#!/usr/bin/env python3
"""examples/corpus/t152_clean_tts_fastspeech_length_regulator_gather.py: corpus workload
(PyTorch), CLEAN. The FastSpeech 2-style acoustic model of t147 (phoneme embedding, two
feed-forward Transformer blocks of width 256 in the encoder and two in the decoder, a
log-duration predictor, an 80-bin mel head, 640 synthetic utterances of 20-40 phonemes kept on
the GPU, batches of 16 padded to 40 phonemes and 320 frames) with the length regulator written
on the device (the fix of t147): the durations' `cumsum` per utterance, `torch.searchsorted` of
the frame numbers 0..319 (a buffer built once) in it gives each frame's phoneme, and one
`gather` expands the hidden vectors; frames past the utterance's end are zeroed with
`masked_fill`. No `.item()` per phoneme, fixed shapes, nothing in the step loop reads the GPU
(t147 read 640 durations a step on the host). The regulator is checked after the loop against
the per-phoneme `expand` loop, run on the CPU on the last batch.
Clean: all of it; the marked lines are setup (the corpus and the model uploaded once),
allocator growth in the first steps (forward, backward, Adam), the losses and the check's
inputs read once after the loop.
Per step on an H100 (estimated from the sizes, fp32 without TF32): 16 x 40 phonemes and
16 x 320 frames through four blocks of width 256, forward and backward about 2-3 ms.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

N_PHONES, N_MELS, HIDDEN, HEADS, KERNEL = 72, 80, 256, 2, 9
UTTERANCES, MIN_LEN, MAX_LEN, MAX_DUR, BATCH, EPOCHS = 640, 20, 40, 8, 16, 2
MAX_FRAMES = MAX_LEN * MAX_DUR


class FFTBlock(torch.nn.Module):
    """Self-attention and a conv1d feed-forward layer, post-norm (FastSpeech)."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = torch.nn.Linear(HIDDEN, HIDDEN)
        self.norm1, self.norm2 = torch.nn.LayerNorm(HIDDEN), torch.nn.LayerNorm(HIDDEN)
        self.conv1 = torch.nn.Conv1d(HIDDEN, 2 * HIDDEN, KERNEL, padding=KERNEL // 2)
        self.conv2 = torch.nn.Conv1d(2 * HIDDEN, HIDDEN, 1)

    def forward(self, x, pad):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, HIDDEN // HEADS).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS)
        scores = scores.masked_fill(pad[:, None, None, :], -1e9)
        att = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, HIDDEN)
        x = self.norm1(x + self.proj(att)).masked_fill(pad[..., None], 0.0)
        ff = self.conv2(F.relu(self.conv1(x.transpose(1, 2)))).transpose(1, 2)
        return self.norm2(x + ff).masked_fill(pad[..., None], 0.0)


class DurationPredictor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(HIDDEN, HIDDEN, 3, padding=1)
        self.conv2 = torch.nn.Conv1d(HIDDEN, HIDDEN, 3, padding=1)
        self.norm1, self.norm2 = torch.nn.LayerNorm(HIDDEN), torch.nn.LayerNorm(HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, 1)

    def forward(self, x, pad):
        h = self.norm1(F.relu(self.conv1(x.transpose(1, 2))).transpose(1, 2))
        h = self.norm2(F.relu(self.conv2(h.transpose(1, 2))).transpose(1, 2))
        return self.out(h).squeeze(-1).masked_fill(pad, 0.0)


class LengthRegulator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("frames", torch.arange(MAX_FRAMES), persistent=False)

    def forward(self, x, duration, max_len):
        ends = duration.cumsum(1)
        frames = self.frames[:max_len].expand(x.size(0), max_len).contiguous()
        idx = torch.searchsorted(ends, frames, right=True).clamp_(max=x.size(1) - 1)
        out = x.gather(1, idx.unsqueeze(-1).expand(-1, -1, x.size(2)))
        return out.masked_fill((frames >= ends[:, -1:]).unsqueeze(-1), 0.0)


def expand_loop(x, duration, max_len):
    """The per-phoneme reference (t147's regulator), for the check after the loop, on the CPU."""
    out = []
    for batch, target in zip(x, duration):
        o = torch.cat([vec.expand(int(n), -1) for vec, n in zip(batch, target.tolist())], 0)
        out.append(F.pad(o, (0, 0, 0, max_len - o.size(0))))
    return torch.stack(out)


class FastSpeech2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(N_PHONES, HIDDEN, padding_idx=0)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(MAX_FRAMES, HIDDEN))
        self.encoder = torch.nn.ModuleList(FFTBlock() for _ in range(2))
        self.duration = DurationPredictor()
        self.regulator = LengthRegulator()
        self.decoder = torch.nn.ModuleList(FFTBlock() for _ in range(2))
        self.mel = torch.nn.Linear(HIDDEN, N_MELS)

    def forward(self, phones, src_pad, durations, mel_pad):
        x = self.embed(phones) + self.pos[:phones.size(1)]
        for blk in self.encoder:
            x = blk(x, src_pad)
        log_dur = self.duration(x, src_pad)
        y = self.regulator(x, durations, MAX_FRAMES) + self.pos
        for blk in self.decoder:
            y = blk(y, mel_pad)
        return self.mel(y), log_dur


def make_corpus(gen):
    """Phoneme strings, aligner durations and mels from per-phoneme spectral templates."""
    templates = torch.randn(N_PHONES, N_MELS, generator=gen)
    lengths = torch.randint(MIN_LEN, MAX_LEN + 1, (UTTERANCES,), generator=gen)
    phones = torch.randint(1, N_PHONES, (UTTERANCES, MAX_LEN), generator=gen)
    durs = torch.randint(1, MAX_DUR + 1, (UTTERANCES, MAX_LEN), generator=gen)
    src_pad = torch.arange(MAX_LEN)[None, :] >= lengths[:, None]
    phones, durs = phones.masked_fill(src_pad, 0), durs.masked_fill(src_pad, 0)
    mels = torch.zeros(UTTERANCES, MAX_FRAMES, N_MELS)
    mel_pad = torch.ones(UTTERANCES, MAX_FRAMES, dtype=torch.bool)
    for u in range(UTTERANCES):
        frames = torch.repeat_interleave(phones[u], durs[u])
        ramp = torch.cat([torch.linspace(-1.0, 1.0, int(d)) for d in durs[u] if d > 0])
        mels[u, :frames.numel()] = templates[frames] * (1.0 + 0.2 * ramp[:, None])
        mel_pad[u, :frames.numel()] = False
    mels += 0.05 * torch.randn(mels.shape, generator=gen)
    return phones, src_pad, durs, mels.masked_fill(mel_pad[..., None], 0.0), mel_pad


def main():
    if not torch.cuda.is_available():
        print("t152_clean_tts_fastspeech_length_regulator_gather: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    corpus = make_corpus(torch.Generator().manual_seed(147))
    frames_total = int((~corpus[4]).sum())
    phones, src_pad, durs, mels, mel_pad = (t.to(dev) for t in corpus)  # SYNCSPY-CLEAN: setup upload, once
    model = FastSpeech2().to(dev)  # SYNCSPY-CLEAN: setup upload (stand-in for a checkpoint)
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98))
    order = torch.randperm(UTTERANCES // BATCH, generator=torch.Generator().manual_seed(1)).tolist()
    losses = []

    for epoch in range(EPOCHS):
        for b in order:
            s = slice(b * BATCH, (b + 1) * BATCH)
            mel_pred, log_dur = model(phones[s], src_pad[s], durs[s], mel_pad[s])  # SYNCSPY-CLEAN: growth, first steps
            valid = (~mel_pad[s]).unsqueeze(-1).float()
            mel_loss = ((mel_pred - mels[s]).abs() * valid).sum() / (valid.sum() * N_MELS)
            src_valid = (~src_pad[s]).float()
            dur_err = (log_dur - torch.log(durs[s].float() + 1.0)) ** 2
            loss = mel_loss + (dur_err * src_valid).sum() / src_valid.sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses.append(loss.detach())

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    with torch.no_grad():
        h = model.embed(phones[s]) + model.pos[:MAX_LEN]  # SYNCSPY-CLEAN: check after the loop
        reg = model.regulator(h, durs[s], MAX_FRAMES).cpu()  # SYNCSPY-CLEAN: final read, check
        ref = expand_loop(h.cpu(), durs[s].cpu(), MAX_FRAMES)  # SYNCSPY-CLEAN: final read, check
    ok = (math.isfinite(first) and math.isfinite(last) and last < 0.8 * first
          and hist.numel() == EPOCHS * (UTTERANCES // BATCH) and torch.equal(reg, ref))
    print("t152_clean_tts_fastspeech_length_regulator_gather: epochs=%d steps=%d batch=%d frames=%d "
          "result=%s" % (EPOCHS, hist.numel(), BATCH, frames_total, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
