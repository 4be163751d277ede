#!/usr/bin/env python3
"""examples/corpus/t92_clean_kws_streaming_pinned_ring.py: corpus workload (PyTorch), CLEAN.
Streaming keyword spotting for 64 microphones: every second of 16 kHz audio per stream is
turned into log-mel features on the GPU (`torch.stft` with a Hann window and a mel filterbank
built once in setup), classified by a small CNN in eval mode (BatchNorm with running
statistics) into ten keywords plus filler and silence, and the posteriors are smoothed across
chunks on the GPU (an exponential average) before a threshold picks detections. The audio
arrives in host memory; each chunk is copied by the host into one of two pinned staging
slots, after waiting on the event recorded behind the upload that last read that slot (two
chunks back, long finished), and uploaded with `.to(dev, non_blocking=True)`. Each chunk's
detections are copied with `copy_(non_blocking=True)` into one of two pinned result slots and
an event is recorded; the host waits on chunk i-1's event only after chunk i is queued, then
reads its detections and the chunk's latency from two timing events that have both completed.
One `torch.cuda.synchronize()` after the loop ends the stream.
Clean: all of it; the marked lines are setup, the pinned copies, the double buffers' event
waits (one step behind), allocator growth in the first chunks and the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CHUNKS, STREAMS, SR, N_FFT, HOP, MELS, CLASSES, THRESHOLD = 60, 64, 16000, 512, 160, 40, 12, 0.6


def mel_filterbank(dev):
    def hz_to_mel(f):
        return 2595.0 * math.log10(1.0 + f / 700.0)
    mels = torch.linspace(hz_to_mel(20.0), hz_to_mel(SR / 2), MELS + 2)
    hz = 700.0 * (10 ** (mels / 2595.0) - 1.0)
    freqs = torch.linspace(0, SR / 2, N_FFT // 2 + 1)
    lower, centre, upper = hz[:-2].unsqueeze(1), hz[1:-1].unsqueeze(1), hz[2:].unsqueeze(1)
    fb = torch.clamp(torch.minimum((freqs - lower) / (centre - lower), (upper - freqs) / (upper - centre)), min=0.0)
    return fb.to(dev)  # SYNCSPY-CLEAN: setup upload of the filterbank, once


class KWSNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [], 1
        for cout, stride in ((32, 1), (64, 2), (64, 1), (128, 2), (128, 2)):
            layers += [torch.nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU()]
            cin = cout
        self.features = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(cin, CLASSES)

    def forward(self, logmel):
        return self.head(self.features(logmel.unsqueeze(1)).mean(dim=(2, 3)))


def make_audio():
    """Host capture buffer: tones and chirps (the keywords) in noise, per stream and chunk."""
    g = torch.Generator().manual_seed(92)
    t = torch.arange(SR, dtype=torch.float32) / SR
    word = torch.randint(0, CLASSES, (CHUNKS, STREAMS), generator=g)
    f0 = 300.0 + 150.0 * word.float().unsqueeze(2)
    sweep = torch.where(word.unsqueeze(2) % 2 == 0, 1.0, -1.0) * 200.0 * t
    voiced = (t > 0.2) & (t < 0.8)
    audio = 0.5 * torch.sin(2 * math.pi * (f0 + sweep) * t) * voiced + 0.1 * torch.randn(CHUNKS, STREAMS, SR, generator=g)
    return audio.contiguous()


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    capture = make_audio()
    staging = [torch.empty(STREAMS, SR, pin_memory=True) for _ in range(2)]  # SYNCSPY-CLEAN: setup, two pinned staging slots allocated once
    results = [torch.empty(STREAMS, 2, pin_memory=True) for _ in range(2)]  # SYNCSPY-CLEAN: setup, two pinned result slots allocated once
    uploaded = [torch.cuda.Event() for _ in range(2)]
    ready = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    started = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    window = torch.hann_window(N_FFT, device=dev)  # SYNCSPY-CLEAN: setup allocation
    fb = mel_filterbank(dev)
    model = KWSNet().to(dev).eval()  # SYNCSPY-CLEAN: setup upload (stand-in for the checkpoint)
    smoothed = torch.zeros(STREAMS, CLASSES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    detections, latencies = [0] * CLASSES, []

    def consume(slot):
        ready[slot].synchronize()  # SYNCSPY-CLEAN: double buffer: chunk i-1's results, waited on after chunk i is queued
        latencies.append(started[slot].elapsed_time(ready[slot]))  # SYNCSPY-CLEAN: both events already complete, no wait
        for cls, score in results[slot].tolist():
            if score > THRESHOLD:
                detections[int(cls)] += 1

    with torch.inference_mode():
        for i in range(CHUNKS):
            slot = i % 2
            if i >= 2:
                uploaded[slot].synchronize()  # SYNCSPY-CLEAN: double buffer: the upload two chunks back, long finished
            staging[slot].copy_(capture[i])
            started[slot].record()
            audio = staging[slot].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory
            uploaded[slot].record()
            spec = torch.stft(audio, N_FFT, hop_length=HOP, window=window, return_complex=True)  # SYNCSPY-CLEAN: allocator growth in the first chunks
            logmel = torch.log(torch.matmul(fb, spec.abs() ** 2) + 1e-6)
            logmel = (logmel - logmel.mean(dim=(1, 2), keepdim=True)) / (logmel.std(dim=(1, 2), keepdim=True) + 1e-5)
            probs = F.softmax(model(logmel), dim=1)  # SYNCSPY-CLEAN: allocator growth in the first chunks
            smoothed.mul_(0.7).add_(probs, alpha=0.3)
            score, cls = smoothed[:, :CLASSES - 2].max(dim=1)
            results[slot].copy_(torch.stack([cls.float(), score], dim=1), non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy into a pinned slot allocated once
            ready[slot].record()
            if i >= 1:
                consume(1 - slot)

    torch.cuda.synchronize()  # SYNCSPY-CLEAN: once after the loop, the last chunk
    consume((CHUNKS - 1) % 2)
    ok = len(latencies) == CHUNKS and all(lat >= 0.0 for lat in latencies) and 0 <= sum(detections) <= CHUNKS * STREAMS
    print("t92_clean_kws_streaming_pinned_ring: chunks=%d streams=%d sr=%d mels=%d classes=%d result=%s" % (CHUNKS, STREAMS, SR, MELS, CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
