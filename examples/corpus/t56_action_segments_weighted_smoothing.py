#!/usr/bin/env python3
"""examples/corpus/t56_action_segments_weighted_smoothing.py: corpus workload (PyTorch). A
temporal action segmentation model (a single-stage MS-TCN: dilated residual 1-D convolutions
over per-frame features) trained on synthetic videos, with two ways of waiting for the GPU
that are easy to miss:
- Training: the frame loss is `F.cross_entropy(logits, labels, weight=class_weights,
  label_smoothing=0.1)`, class-balanced and smoothed. With both a weight and label smoothing,
  ATen's mean reduction normalizes the smoothing term by
  `weight.gather(0, target.masked_select(~ignore_mask)).sum()`; masked_select has a
  data-dependent output size, so it counts the mask on the host first (a device sync) after
  the forward pass, every step. Without the weight (t55), or with reduction="sum" and a
  device-side normalization, there is no host read.
- Evaluation, every epoch, every validation video: the predicted frame labels are run-length
  encoded with `torch.unique_consecutive(pred, return_counts=True)` (its output size is read on
  the host: a sync that waits for the video's forward pass), and the segments are turned into
  Python lists with `.tolist()` for the segmental edit score (two more small blocking reads).
Planted: the weighted, label-smoothed cross-entropy (every training step), the
unique_consecutive (expensive) and the `.tolist()` pair (cheap) in the segment helper, every
validation video.
Clean: setup uploads (the class weights computed on the CPU), allocator growth in the first
steps and videos, the per-epoch read of the training loss and frame accuracy, the final print.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, CLIPS, CLIP_LEN, FEAT_DIM, CHANNELS, CLASSES, LAYERS = 2, 40, 8, 512, 32, 64, 6, 6
STREAM_FRAMES, VAL_VIDEOS, VAL_LENGTHS = 24576, 8, (360, 420, 480, 540)


class DilatedResidual(torch.nn.Module):
    def __init__(self, dilation):
        super().__init__()
        self.conv = torch.nn.Conv1d(CHANNELS, CHANNELS, 3, padding=dilation, dilation=dilation)
        self.proj = torch.nn.Conv1d(CHANNELS, CHANNELS, 1)

    def forward(self, x):
        return x + self.proj(F.relu(self.conv(x)))


class SingleStageTCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Conv1d(FEAT_DIM, CHANNELS, 1)
        self.layers = torch.nn.ModuleList([DilatedResidual(2 ** i) for i in range(LAYERS)])
        self.out = torch.nn.Conv1d(CHANNELS, CLASSES, 1)

    def forward(self, x):
        h = self.inp(x)
        for layer in self.layers:
            h = layer(h)
        return self.out(h)


def random_segments(n_frames, gen):
    """Piecewise-constant labels: (label, length) runs, no two neighbours alike."""
    segments, total, prev = [], 0, -1
    while total < n_frames:
        length = min(int(torch.randint(20, 81, (1,), generator=gen)), n_frames - total)
        label = int(torch.randint(0, CLASSES, (1,), generator=gen))
        if label == prev:
            label = (label + 1) % CLASSES
        segments.append((label, length))
        total, prev = total + length, label
    return segments


def labels_of(segments):
    return torch.cat([torch.full((length,), label, dtype=torch.long) for label, length in segments])


def edit_score(pred, truth):
    a, b = [s[0] for s in pred], [s[0] for s in truth]
    dist = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        prev, dist[0] = dist[0], i
        for j in range(1, len(b) + 1):
            cur = min(dist[j] + 1, dist[j - 1] + 1, prev + (a[i - 1] != b[j - 1]))
            prev, dist[j] = dist[j], cur
    return 100.0 * (1.0 - dist[len(b)] / max(len(a), len(b), 1))


def segments_of(pred):
    labels, counts = torch.unique_consecutive(pred, return_counts=True)  # SYNCSPY-PROBLEM: output size read on the host (sync), every validation video
    return list(zip(labels.tolist(), counts.tolist()))  # SYNCSPY-PROBLEM: two blocking device-to-host reads, every validation video


class SegmentationTrainer:
    def __init__(self, model, class_weights, dev):
        self.model, self.dev = model, dev
        self.class_weights = class_weights
        self.opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    def compute_loss(self, logits, labels):
        ce = F.cross_entropy(logits, labels, weight=self.class_weights, label_smoothing=0.1)  # SYNCSPY-PROBLEM: weighted + smoothed mean calls masked_select (host-side count), every step
        log_probs = F.log_softmax(logits, dim=1)
        tmse = torch.clamp((log_probs[:, :, 1:] - log_probs.detach()[:, :, :-1]) ** 2, max=16.0).mean()
        return ce + 0.15 * tmse

    def train_one_epoch(self, feats, labels, epoch):
        self.model.train()
        loss_sum = torch.zeros((), device=self.dev)  # SYNCSPY-CLEAN: once per epoch
        for step in range(STEPS_PER_EPOCH):
            starts = [((epoch * STEPS_PER_EPOCH + step) * 7919 + c * 3001) % (STREAM_FRAMES - CLIP_LEN) for c in range(CLIPS)]
            xb = torch.stack([feats[:, s:s + CLIP_LEN] for s in starts])  # SYNCSPY-CLEAN: allocator growth in the first steps
            yb = torch.stack([labels[s:s + CLIP_LEN] for s in starts])
            loss = self.compute_loss(self.model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
            self.opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            self.opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            loss_sum += loss.detach()
        return loss_sum

    @torch.no_grad()
    def evaluate(self, videos):
        self.model.eval()
        correct = torch.zeros((), dtype=torch.long, device=self.dev)  # SYNCSPY-CLEAN: once per epoch
        frames, scores = 0, []
        for feat, label, truth in videos:
            pred = self.model(feat).argmax(dim=1)[0]  # SYNCSPY-CLEAN: allocator growth in the first videos (four lengths)
            correct += (pred == label).sum()
            frames += label.shape[0]
            scores.append(edit_score(segments_of(pred), truth))
        return correct, frames, scores


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda")
    cpu_gen = torch.Generator().manual_seed(17)

    stream_labels_cpu = labels_of(random_segments(STREAM_FRAMES, cpu_gen))
    freq = torch.bincount(stream_labels_cpu, minlength=CLASSES).float()
    class_weights = (freq.sum() / (CLASSES * freq.clamp_min(1.0))).to(dev)  # SYNCSPY-CLEAN: setup upload
    prototypes = torch.randn(CLASSES, FEAT_DIM, device=dev)  # SYNCSPY-CLEAN: setup allocation
    stream_labels = stream_labels_cpu.to(dev)  # SYNCSPY-CLEAN: setup upload
    stream_feats = prototypes[stream_labels].T + 0.5 * torch.randn(FEAT_DIM, STREAM_FRAMES, device=dev)  # SYNCSPY-CLEAN: setup allocation

    videos = []
    for v in range(VAL_VIDEOS):
        truth = random_segments(VAL_LENGTHS[v % len(VAL_LENGTHS)], cpu_gen)
        label = labels_of(truth).to(dev)  # SYNCSPY-CLEAN: setup upload
        feat = (prototypes[label].T + 0.5 * torch.randn(FEAT_DIM, label.shape[0], device=dev)).unsqueeze(0)  # SYNCSPY-CLEAN: setup allocation
        videos.append((feat, label, truth))

    model = SingleStageTCN().to(dev)  # SYNCSPY-CLEAN: setup upload
    trainer = SegmentationTrainer(model, class_weights, dev)
    accuracy, edit, evaluated = 0.0, 0.0, 0
    for epoch in range(EPOCHS):
        loss_sum = trainer.train_one_epoch(stream_feats, stream_labels, epoch)
        correct, frames, scores = trainer.evaluate(videos)
        loss, n_correct = torch.stack([loss_sum / STEPS_PER_EPOCH, correct.float()]).tolist()  # SYNCSPY-CLEAN: once per epoch, outside the loops
        accuracy, edit, evaluated = n_correct / frames, sum(scores) / len(scores), evaluated + len(scores)
        if not loss > 0.0:
            return 1

    ok = accuracy > 0.5 and 0.0 <= edit <= 100.0
    print("t56_action_segments_weighted_smoothing: epochs=%d steps=%d videos=%d learned=%d result=OK" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, evaluated, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
