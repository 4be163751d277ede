#!/usr/bin/env python3
"""examples/corpus/t173_heart_sound_nemo_specaug_host_mask.py: corpus workload (PyTorch + NumPy).
Heart-sound (phonocardiogram) murmur classification, PhysioNet/CinC 2022 style (normal,
systolic murmur, diastolic murmur), with NVIDIA NeMo's audio classification front end copied in
its shape: `FilterbankFeatures` (nemo/collections/asr/parts/preprocessing/features.py: dither,
pre-emphasis, `torch.stft`, power spectrum, mel filterbank, log, `normalize_batch(...,
"per_feature")`, padding mask, `pad_to=16`) and the legacy `SpecAugment.forward`
(nemo/collections/asr/parts/submodules/spectr_augment.py, the code path of NeMo 1.x and of
`use_vectorized_code=False`), in front of a MatchboxNet-style ConvASR encoder (time-channel
separable Conv1d blocks) and a pooling classification decoder, as `EncDecClassificationModel`
chains them. 1,024 synthetic recordings at 4 kHz of 1.5-3 s (S1/S2 tone bursts at 60-100
beats per minute, a high-pitched systolic or a low-pitched diastolic murmur), made on the
GPU; 3 epochs of 16 steps of 64 recordings, AdamW; validation once per epoch.
Where the front end reads the GPU, every step:
- `normalize_batch`: `if (torch.cuda.is_available() and not
  torch.cuda.is_current_stream_capturing() and torch.any(seq_len == 1).item()):` (NeMo's own
  comment: "item() ... calls cudaStreamSynchronize()"), the step's first sync: it waits for the
  previous step's backward pass and AdamW update and this step's STFT (expensive); the same line
  runs for every validation batch;
- `SpecAugment.forward`: `lengths_cpu = length.cpu().numpy()` (a blocking device-to-host copy,
  cheap: the GPU has just been drained), the masks drawn in a Python loop into a NumPy array on
  the host, and `fill_mask = torch.from_numpy(fill_mask).to(input_spec.device)` (a 295 KB copy
  from pageable memory, which `copy_kernel_cuda` ends with `memcpy_and_sync`).
The Performance Tuning Guide lists `.item()`, `.cpu()` and copies from pageable memory among the
CPU-GPU synchronizations to avoid; `torch.cuda.set_sync_debug_mode` reports all three.
Fix (t177): NeMo's vectorized SpecAugment (`_forward_vectorized`/`_apply_masks`, masks drawn
with `torch.rand` on the device) and the length check done once, in setup, on the recordings'
lengths.
Planted: the `normalize_batch` check line (expensive), the `length.cpu().numpy()` line and the
`torch.from_numpy(fill_mask).to(...)` line, every step.
Clean: setup (the recordings generated on the GPU, the model and its mel filterbank uploaded),
the per-epoch device shuffle and accumulators, allocator growth in the first steps (forward,
backward, AdamW) and the first validation, the per-epoch reads outside the step loop, the final
reads.
Per step on an H100 (estimated from the sizes, fp32 without TF32): the STFT of 64 x 12,000
samples, a 24-band mel filterbank and a 0.2M-parameter separable Conv1d encoder over 192 frames,
forward and backward, about 1.5 ms, launch-bound; the host mask loop about 0.3 ms.
"""
import math
import random
import sys

import numpy as np
import torch
import torch.nn.functional as F

SAMPLE_RATE, T_MAX, MIN_SAMPLES, N_CLASSES = 4000, 12000, 6000, 3
WIN, HOP, NFILT, LOWFREQ, HIGHFREQ, PAD_TO = 256, 64, 24, 20.0, 1000.0, 16
N_TRAIN, N_VAL, BATCH, EPOCHS, LR = 1024, 256, 64, 3, 2e-3
CONSTANT = 1e-5


def hz_to_mel(f):
    """Slaney's mel scale (librosa's default)."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    return f / f_sp if f < min_log_hz else min_log_hz / f_sp + math.log(f / min_log_hz) / (math.log(6.4) / 27.0)


def mel_to_hz(m):
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel = min_log_hz / f_sp
    return f_sp * m if m < min_log_mel else min_log_hz * math.exp((math.log(6.4) / 27.0) * (m - min_log_mel))


def mel_filterbank(sr, n_fft, n_mels, fmin, fmax):
    """librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, norm="slaney"), on the CPU."""
    fftfreqs = torch.linspace(0, sr / 2, n_fft // 2 + 1, dtype=torch.float64)
    mels = torch.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2, dtype=torch.float64)
    hz = torch.tensor([mel_to_hz(m) for m in mels.tolist()], dtype=torch.float64)
    fdiff = hz[1:] - hz[:-1]
    ramps = hz[:, None] - fftfreqs[None, :]
    weights = torch.clamp(torch.minimum(-ramps[:-2] / fdiff[:-1, None], ramps[2:] / fdiff[1:, None]), min=0)
    return (weights * (2.0 / (hz[2:n_mels + 2] - hz[:n_mels]))[:, None]).float()


def normalize_batch(x, seq_len, normalize_type):
    x_mean = None
    x_std = None
    if normalize_type == "per_feature":
        batch_size = x.shape[0]
        max_time = x.shape[2]
        # When doing stream capture to a graph, item() is not allowed
        # becuase it calls cudaStreamSynchronize(). Therefore, we are
        # sacrificing some error checking when running with cuda graphs.
        if torch.cuda.is_available() and not torch.cuda.is_current_stream_capturing() and torch.any(seq_len == 1).item():  # SYNCSPY-PROBLEM: .item() every batch, behind the previous step and the STFT
            raise ValueError("normalize_batch with `per_feature` normalize_type received a tensor of length 1.")
        time_steps = torch.arange(max_time, device=x.device).unsqueeze(0).expand(batch_size, max_time)
        valid_mask = time_steps < seq_len.unsqueeze(1)
        x_mean_numerator = torch.where(valid_mask.unsqueeze(1), x, 0.0).sum(axis=2)
        x_mean_denominator = valid_mask.sum(axis=1)
        x_mean = x_mean_numerator / x_mean_denominator.unsqueeze(1)
        # Subtract 1 in the denominator to correct for the bias.
        x_std = torch.sqrt(torch.sum(torch.where(valid_mask.unsqueeze(1), x - x_mean.unsqueeze(2), 0.0) ** 2, axis=2) / (x_mean_denominator.unsqueeze(1) - 1.0))
        x_std = x_std.masked_fill(x_std.isnan(), 0.0)  # edge case: only 1 frame in denominator
        # make sure x_std is not zero
        x_std += CONSTANT
        return (x - x_mean.unsqueeze(2)) / x_std.unsqueeze(2), x_mean, x_std
    return x, x_mean, x_std


class FilterbankFeatures(torch.nn.Module):
    """NeMo's featurizer (log-mel, per-feature normalization), use_grads=False."""

    def __init__(self, sample_rate=SAMPLE_RATE, n_window_size=WIN, n_window_stride=HOP, nfilt=NFILT, lowfreq=LOWFREQ,
                 highfreq=HIGHFREQ, dither=1e-5, preemph=0.97, pad_to=PAD_TO, normalize="per_feature"):
        super().__init__()
        self.win_length, self.hop_length = n_window_size, n_window_stride
        self.n_fft = 2 ** math.ceil(math.log2(self.win_length))
        self.register_buffer("window", torch.hann_window(self.win_length, periodic=False))
        self.register_buffer("fb", mel_filterbank(sample_rate, self.n_fft, nfilt, lowfreq, highfreq).unsqueeze(0))
        self.normalize, self.dither, self.preemph, self.pad_to, self.pad_value = normalize, dither, preemph, pad_to, 0.0
        self.log_zero_guard_value = 2 ** -24

    def get_seq_len(self, seq_len):
        pad_amount = self.n_fft // 2 * 2
        seq_len = torch.floor_divide((seq_len + pad_amount - self.n_fft), self.hop_length)
        return seq_len.to(dtype=torch.long)

    @torch.no_grad()
    def forward(self, x, seq_len):
        seq_len_time = seq_len
        seq_len = self.get_seq_len(seq_len)
        if self.training and self.dither > 0:
            x = x + self.dither * torch.randn_like(x)
        if self.preemph is not None:
            timemask = torch.arange(x.shape[1], device=x.device).unsqueeze(0) < seq_len_time.unsqueeze(1)
            x = torch.cat((x[:, 0].unsqueeze(1), x[:, 1:] - self.preemph * x[:, :-1]), dim=1)
            x = x.masked_fill(~timemask, 0.0)
        with torch.autocast(x.device.type, enabled=False):
            x = torch.stft(x, n_fft=self.n_fft, hop_length=self.hop_length, win_length=self.win_length, center=True,
                           window=self.window.to(dtype=torch.float, device=x.device), return_complex=True, pad_mode="constant")
        x = torch.view_as_real(x)
        x = torch.sqrt(x.pow(2).sum(-1))
        x = x.pow(2.0)
        with torch.autocast(x.device.type, enabled=False):
            x = torch.matmul(self.fb.to(x.dtype), x)
        x = torch.log(x + self.log_zero_guard_value)
        if self.normalize:
            x, _, _ = normalize_batch(x, seq_len, normalize_type=self.normalize)
        max_len = x.size(-1)
        mask = torch.arange(max_len, device=x.device)
        mask = mask.repeat(x.size(0), 1) >= seq_len.unsqueeze(1)
        x = x.masked_fill(mask.unsqueeze(1).type(torch.bool).to(device=x.device), self.pad_value)
        pad_amt = x.size(-1) % self.pad_to
        if pad_amt != 0:
            x = F.pad(x, (0, self.pad_to - pad_amt), value=self.pad_value)
        return x, seq_len


class SpecAugment(torch.nn.Module):
    """NeMo's SpecAugment, the legacy (loop) forward."""

    def __init__(self, freq_masks=0, time_masks=0, freq_width=10, time_width=10, rng=None, mask_value=0.0):
        super().__init__()
        self._rng = random.Random() if rng is None else rng
        self.freq_masks, self.time_masks = freq_masks, time_masks
        self.freq_width, self.time_width = freq_width, time_width
        self.mask_value = mask_value
        if isinstance(time_width, int):
            self.adaptive_temporal_width = False
        else:
            if time_width > 1.0 or time_width < 0.0:
                raise ValueError("If `time_width` is a float value, must be in range [0, 1]")
            self.adaptive_temporal_width = True

    @torch.no_grad()
    def forward(self, input_spec, length):
        batch_size, num_freq_bins, _ = input_spec.shape
        # Move lengths to CPU before repeated indexing
        lengths_cpu = length.cpu().numpy()  # SYNCSPY-PROBLEM: blocking device-to-host copy every step
        # Generate a numpy boolean mask. `True` elements represent where the input spec will be augmented.
        fill_mask: np.array = np.full(shape=input_spec.shape, fill_value=False)
        freq_start_upper_bound = num_freq_bins - self.freq_width
        # Choose different mask ranges for each element of the batch
        for idx in range(batch_size):
            # Set freq masking
            for _ in range(self.freq_masks):
                start = self._rng.randint(0, freq_start_upper_bound)
                width = self._rng.randint(0, self.freq_width)
                fill_mask[idx, start:start + width, :] = True
            # Derive time width, sometimes based percentage of input length.
            if self.adaptive_temporal_width:
                time_max_width = max(1, int(lengths_cpu[idx] * self.time_width))
            else:
                time_max_width = self.time_width
            time_start_upper_bound = max(1, lengths_cpu[idx] - time_max_width)
            # Set time masking
            for _ in range(self.time_masks):
                start = self._rng.randint(0, time_start_upper_bound)
                width = self._rng.randint(0, time_max_width)
                fill_mask[idx, :, start:start + width] = True
        # Bring the mask to device and fill spec
        fill_mask = torch.from_numpy(fill_mask).to(input_spec.device)  # SYNCSPY-PROBLEM: blocking upload from pageable memory every step
        masked_spec = input_spec.masked_fill(mask=fill_mask, value=self.mask_value)
        return masked_spec


class SepConvBN(torch.nn.Module):
    """A time-channel separable Conv1d (depthwise, then pointwise), BatchNorm."""

    def __init__(self, c_in, c_out, kernel, dilation=1):
        super().__init__()
        pad = dilation * (kernel - 1) // 2
        self.dw = torch.nn.Conv1d(c_in, c_in, kernel, padding=pad, dilation=dilation, groups=c_in, bias=False)
        self.pw = torch.nn.Conv1d(c_in, c_out, 1, bias=False)
        self.bn = torch.nn.BatchNorm1d(c_out)

    def forward(self, x):
        return self.bn(self.pw(self.dw(x)))


class JasperBlock(torch.nn.Module):
    """MatchboxNet block: two separable sub-blocks and a 1x1 residual."""

    def __init__(self, c_in, c_out, kernel, dropout=0.1):
        super().__init__()
        self.sub1, self.sub2 = SepConvBN(c_in, c_out, kernel), SepConvBN(c_out, c_out, kernel)
        self.res = torch.nn.Sequential(torch.nn.Conv1d(c_in, c_out, 1, bias=False), torch.nn.BatchNorm1d(c_out))
        self.drop = torch.nn.Dropout(dropout)

    def forward(self, x):
        y = self.sub2(self.drop(F.relu(self.sub1(x))))
        return self.drop(F.relu(y + self.res(x)))


class EncDecClassificationModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.preprocessor = FilterbankFeatures()
        self.spec_augmentation = SpecAugment(freq_masks=2, time_masks=2, freq_width=4, time_width=0.05, rng=random.Random(173))
        self.encoder = torch.nn.Sequential(
            SepConvBN(NFILT, 64, 11), torch.nn.ReLU(),
            JasperBlock(64, 64, 13), JasperBlock(64, 64, 15), JasperBlock(64, 64, 17),
            SepConvBN(64, 128, 29, dilation=2), torch.nn.ReLU(), SepConvBN(128, 128, 1), torch.nn.ReLU())
        self.decoder = torch.nn.Linear(128, N_CLASSES)

    def forward(self, input_signal, input_signal_length):
        processed_signal, processed_signal_len = self.preprocessor(input_signal, input_signal_length)
        if self.spec_augmentation is not None and self.training:
            processed_signal = self.spec_augmentation(input_spec=processed_signal, length=processed_signal_len)
        encoded = self.encoder(processed_signal)
        return self.decoder(encoded.mean(dim=2))


def make_recordings(n, gen, dev):
    """Phonocardiograms: S1 and S2 bursts every beat, a murmur between S1 and S2 (systolic, 420 Hz)
    or between S2 and the next S1 (diastolic, 160 Hz) for classes 1 and 2, noise."""
    labels = torch.randint(0, N_CLASSES, (n,), device=dev, generator=gen)
    lengths = torch.randint(MIN_SAMPLES, T_MAX + 1, (n,), device=dev, generator=gen)
    t = torch.arange(T_MAX, device=dev, dtype=torch.float32) / SAMPLE_RATE
    period = 60.0 / (60.0 + 40.0 * torch.rand(n, 1, device=dev, generator=gen))
    offset = torch.rand(n, 1, device=dev, generator=gen) * period
    phase = torch.remainder(t + offset, period) / period

    def burst(center, width, freq):
        return torch.exp(-0.5 * ((phase - center) / width) ** 2) * torch.sin(2 * math.pi * freq * t)

    heart = burst(0.06, 0.02, 45.0) + 0.7 * burst(0.42, 0.015, 65.0)
    noise = torch.randn(n, T_MAX, device=dev, generator=gen)
    systolic = ((phase > 0.12) & (phase < 0.36)).float() * torch.sin(2 * math.pi * 420.0 * t)
    diastolic = ((phase > 0.5) & (phase < 0.85)).float() * torch.sin(2 * math.pi * 160.0 * t)
    murmur = torch.where(labels[:, None] == 1, systolic, torch.where(labels[:, None] == 2, diastolic, torch.zeros_like(systolic)))
    x = heart + 0.4 * murmur * (1 + 0.5 * noise) + 0.05 * torch.randn(n, T_MAX, device=dev, generator=gen)
    x = x * (torch.arange(T_MAX, device=dev) < lengths[:, None])
    return x, lengths, labels


def main():
    if not torch.cuda.is_available():
        print("t173_heart_sound_nemo_specaug_host_mask: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(173)
    audio, audio_len, labels = make_recordings(N_TRAIN, gen, dev)  # SYNCSPY-CLEAN: setup, the recordings generated on the GPU once
    v_audio, v_len, v_labels = make_recordings(N_VAL, gen, dev)  # SYNCSPY-CLEAN: setup, the recordings generated on the GPU once
    model = EncDecClassificationModel().to(dev)  # SYNCSPY-CLEAN: setup upload (the mel filterbank and window included)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=1e-3)
    steps_per_epoch = N_TRAIN // BATCH
    losses, epoch_losses, val_accs = [], [], []

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(N_TRAIN, device=dev, generator=gen)  # SYNCSPY-CLEAN: once per epoch, a device-side shuffle
        epoch_loss = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: once per epoch, an accumulator
        for b in range(steps_per_epoch):
            idx = order[b * BATCH:(b + 1) * BATCH]
            logits = model(audio[idx], audio_len[idx])  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits, labels[idx])
            optimizer.zero_grad()
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            optimizer.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            losses.append(loss.detach())
            epoch_loss += loss.detach()
        model.eval()
        correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: once per epoch, an accumulator
        with torch.no_grad():
            for s in range(0, N_VAL, BATCH):
                logits = model(v_audio[s:s + BATCH], v_len[s:s + BATCH])  # SYNCSPY-CLEAN: allocator growth, first validation
                correct += (logits.argmax(1) == v_labels[s:s + BATCH]).sum()
        epoch_losses.append(epoch_loss.item() / steps_per_epoch)  # SYNCSPY-CLEAN: once per epoch, outside the step loop
        val_accs.append(correct.item() / N_VAL)  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    # normalize_batch's invariant on the last validation batch: zero mean, unit (unbiased) standard
    # deviation over each recording's valid frames, zeros past them.
    with torch.no_grad():
        feats, feat_len = model.preprocessor(v_audio[-BATCH:], v_len[-BATCH:])
        feats, feat_len = feats.cpu().double(), feat_len.cpu()  # SYNCSPY-CLEAN: final read, for the check
    valid = torch.arange(feats.size(2))[None, :] < feat_len[:, None]
    cnt = valid.sum(1, keepdim=True).double()
    mean = (feats * valid[:, None]).sum(2) / cnt
    std = (((feats - mean[..., None]) * valid[:, None]) ** 2).sum(2).div(cnt - 1).sqrt()
    norm_ok = (bool((mean.abs() < 1e-3).all()) and bool(((std - 1).abs() < 1e-2).all())
               and bool((feats * ~valid[:, None] == 0).all()) and feats.size(2) % PAD_TO == 0)
    n = len(losses)
    ok = (n == EPOCHS * steps_per_epoch and bool(torch.isfinite(hist).all()) and norm_ok
          and float(hist[-8:].mean()) < 0.7 * float(hist[:8].mean()) and epoch_losses[-1] < epoch_losses[0]
          and val_accs[-1] >= 0.7)
    print("t173_heart_sound_nemo_specaug_host_mask: epochs=%d steps=%d batch=%d mels=%d classes=%d "
          "result=%s" % (EPOCHS, n, BATCH, NFILT, N_CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
