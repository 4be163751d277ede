#!/usr/bin/env python3
"""examples/corpus/t175_tumor_subtype_pruning_grad_numpy_roundtrip.py: corpus workload (PyTorch + NumPy).
Genomics: breast-tumour subtype classification from gene-expression profiles (five PAM50-like
subtypes from 1,000 genes, TCGA-style), with a LeNet-300-100 compressed by magnitude pruning as
Deep-Compression-PyTorch (mightydeveloper/Deep-Compression-PyTorch, `pruning.py` and
`net/prune.py`) does it: `MaskedLinear` layers (`F.linear(input, self.weight * self.mask,
self.bias)`), an initial training phase, `prune_by_std(sensitivity)` (weights under
sensitivity x std set to zero, the mask updated), the Adam state reset with
`optimizer.load_state_dict(initial_optimizer_state_dict)`, and a retraining phase. Its `train()`
keeps the pruned connections at zero by editing every gradient on the host after
`loss.backward()` (the same loop is in the widely copied Lottery-Ticket-Hypothesis-in-Pytorch
and in many pruning and quantization code bases):
    for name, p in model.named_parameters():
        if 'mask' in name: continue
        tensor = p.data.cpu().numpy()
        grad_tensor = p.grad.data.cpu().numpy()
        grad_tensor = np.where(tensor==0, 0, grad_tensor)
        p.grad.data = torch.from_numpy(grad_tensor).to(device)
for each of the six weights and biases, every step of both phases: two device-to-host copies
into new pageable memory (`copy_kernel_cuda` ends them with `memcpy_and_sync`; the first waits
for the backward pass, expensive) and one copy from pageable memory back (blocking the same
way), 18 a step, about 4 MB. 2,048 synthetic profiles (40 marker genes a subtype, noise, generated
on the GPU and standardized), one epoch of 32 steps of 64 profiles per phase, 64 steps in all.
The Performance Tuning Guide lists `.cpu()`-style copies among the CPU-GPU synchronizations to
avoid; `torch.cuda.set_sync_debug_mode` reports the copies to and from pageable memory.
Fix (not in this set): keep the gradient on the device, `p.grad.mul_(module.mask)` (or
`torch.where(p == 0, 0, p.grad)`), or register the masks with `torch.nn.utils.prune`, whose
forward pre-hook applies them (here the masked forward already gives the pruned weights a zero
gradient: the round trip changes nothing but the time).
Planted (one problem, three lines): `tensor = p.data.cpu().numpy()`, `grad_tensor =
p.grad.data.cpu().numpy()` and `p.grad.data = torch.from_numpy(grad_tensor).to(device)`, every
step.
Clean: setup (the profiles generated and standardized on the GPU, the model uploaded), the
per-epoch device shuffle, allocator growth in the first steps of each phase (the batch gathered
on the GPU, forward, backward, Adam), the loss read every `log_interval` (10) steps, the pruning
between the phases (`prune_by_std`'s host round trip of each weight and mask, and the check's
thresholds), `print_nonzeros` and `test()` once per phase, the final reads. The script was
written without tqdm (the log lines are kept in a list), with one test batch, one epoch a phase
and `--sensitivity 0.75` (the repository's defaults are 100 epochs and a sensitivity of 2).
Per step on an H100 (estimated from the sizes, fp32 without TF32): a 0.33M-parameter MLP on 64
profiles, forward, backward and Adam, well under 0.5 ms of kernels, launch-bound; the 18 blocking
copies about 1 ms.
"""
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn import Module, Parameter

N_GENES, N_SUBTYPES, MARKERS, N_TRAIN, N_TEST = 1000, 5, 40, 2048, 1000
BATCH, EPOCHS, LR, SENSITIVITY, LOG_INTERVAL = 64, 1, 0.01, 0.75, 10


class PruningModule(Module):
    def prune_by_std(self, s=0.25):
        """Prune the weights under s x (the layer's weight standard deviation)."""
        for name, module in self.named_modules():
            if name in ["fc1", "fc2", "fc3"]:
                threshold = np.std(module.weight.data.cpu().numpy()) * s  # SYNCSPY-CLEAN: once, between the training phases
                module.prune(threshold)


class MaskedLinear(Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.empty(out_features, in_features))
        # Initialize the mask with 1
        self.mask = Parameter(torch.ones([out_features, in_features]), requires_grad=False)
        if bias:
            self.bias = Parameter(torch.empty(out_features))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input):
        return F.linear(input, self.weight * self.mask, self.bias)

    def prune(self, threshold):
        weight_dev = self.weight.device
        mask_dev = self.mask.device
        # Convert Tensors to numpy and calculate
        tensor = self.weight.data.cpu().numpy()  # SYNCSPY-CLEAN: once, between the training phases
        mask = self.mask.data.cpu().numpy()  # SYNCSPY-CLEAN: once, between the training phases
        new_mask = np.where(abs(tensor) < threshold, 0, mask)
        # Apply new weight and mask
        self.weight.data = torch.from_numpy(tensor * new_mask).to(weight_dev)  # SYNCSPY-CLEAN: once, between the training phases
        self.mask.data = torch.from_numpy(new_mask).to(mask_dev)  # SYNCSPY-CLEAN: once, between the training phases


class LeNet(PruningModule):
    def __init__(self, mask=False):
        super().__init__()
        linear = MaskedLinear if mask else torch.nn.Linear
        self.fc1 = linear(N_GENES, 300)
        self.fc2 = linear(300, 100)
        self.fc3 = linear(100, N_SUBTYPES)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = F.log_softmax(self.fc3(x), dim=1)
        return x


def print_nonzeros(model, log):
    nonzero = total = 0
    for name, p in model.named_parameters():
        if "mask" in name:
            continue
        tensor = p.data.cpu().numpy()  # SYNCSPY-CLEAN: once per phase, outside the step loop
        nz_count = np.count_nonzero(tensor)
        total_params = np.prod(tensor.shape)
        nonzero += nz_count
        total += total_params
    log.append(f"alive: {nonzero}, pruned : {total - nonzero}, total: {total}, Compression rate : {total / nonzero:10.2f}x")
    return nonzero, total


def make_profiles(gen, dev):
    """Expression = gene baseline + the subtype's marker shift + noise, standardized per gene with
    the training split's statistics."""
    n = N_TRAIN + N_TEST
    labels = torch.randint(0, N_SUBTYPES, (n,), device=dev, generator=gen)
    baseline = torch.randn(N_GENES, device=dev, generator=gen) * 2.0 + 6.0
    markers = torch.rand(N_SUBTYPES, N_GENES, device=dev, generator=gen).argsort(dim=1)[:, :MARKERS]
    shift = torch.zeros(N_SUBTYPES, N_GENES, device=dev).scatter_(1, markers, 1.5)
    x = baseline + shift[labels] + torch.randn(n, N_GENES, device=dev, generator=gen)
    mean, std = x[:N_TRAIN].mean(0), x[:N_TRAIN].std(0)
    x = (x - mean) / std
    return x[:N_TRAIN], labels[:N_TRAIN], x[N_TRAIN:], labels[N_TRAIN:]


def main():
    if not torch.cuda.is_available():
        print("t175_tumor_subtype_pruning_grad_numpy_roundtrip: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device("cuda")
    gen = torch.Generator(device=device).manual_seed(175)
    x_train, y_train, x_test, y_test = make_profiles(gen, device)  # SYNCSPY-CLEAN: setup, the profiles generated on the GPU once
    model = LeNet(mask=True).to(device)  # SYNCSPY-CLEAN: setup upload
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=0.0001)
    initial_optimizer_state_dict = optimizer.state_dict()
    steps_per_epoch = N_TRAIN // BATCH
    log, steps = [], [0]

    def train(epochs):
        model.train()
        for epoch in range(epochs):
            order = torch.randperm(N_TRAIN, device=device, generator=gen)  # SYNCSPY-CLEAN: once per epoch, a device-side shuffle
            for batch_idx in range(steps_per_epoch):
                idx = order[batch_idx * BATCH:(batch_idx + 1) * BATCH]
                data, target = x_train[idx], y_train[idx]  # SYNCSPY-CLEAN: allocator growth in the first steps (the batch gathered on the GPU)
                optimizer.zero_grad()
                output = model(data)  # SYNCSPY-CLEAN: allocator growth in the first steps
                loss = F.nll_loss(output, target)
                loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps

                # zero-out all the gradients corresponding to the pruned connections
                for name, p in model.named_parameters():
                    if "mask" in name:
                        continue
                    tensor = p.data.cpu().numpy()  # SYNCSPY-PROBLEM: blocking device-to-host copy per parameter, every step
                    grad_tensor = p.grad.data.cpu().numpy()  # SYNCSPY-PROBLEM: blocking device-to-host copy per parameter, every step
                    grad_tensor = np.where(tensor == 0, 0, grad_tensor)
                    p.grad.data = torch.from_numpy(grad_tensor).to(device)  # SYNCSPY-PROBLEM: blocking pageable upload per parameter, every step

                optimizer.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step of each phase
                steps[0] += 1
                if batch_idx % LOG_INTERVAL == 0:
                    done = batch_idx * len(data)
                    percentage = 100. * batch_idx / steps_per_epoch
                    log.append(f"Train Epoch: {epoch} [{done:5}/{N_TRAIN} ({percentage:3.0f}%)]  Loss: {loss.item():.6f}")  # SYNCSPY-CLEAN: the loss read every log_interval (10) steps

    def test():
        model.eval()
        with torch.no_grad():
            output = model(x_test)
            test_loss = F.nll_loss(output, y_test, reduction="sum").item()  # SYNCSPY-CLEAN: once per phase, outside the step loop
            pred = output.data.max(1, keepdim=True)[1]
            correct = pred.eq(y_test.data.view_as(pred)).sum().item()  # SYNCSPY-CLEAN: once per phase, outside the step loop
        log.append(f"Test set: Average loss: {test_loss / N_TEST:.4f}, Accuracy: {correct}/{N_TEST}")
        return 100. * correct / N_TEST

    # Initial training
    train(EPOCHS)
    initial_accuracy = test()
    alive_before, total = print_nonzeros(model, log)
    # Pruning
    layers = (model.fc1, model.fc2, model.fc3)
    thresholds = [float(np.std(m.weight.data.cpu().numpy())) * SENSITIVITY for m in layers]  # SYNCSPY-CLEAN: once, between the training phases, for the check
    model.prune_by_std(SENSITIVITY)
    kept = [m.weight.data.cpu() for m in layers]  # SYNCSPY-CLEAN: once, between the training phases, for the check
    kept_ok = all(bool((w[w != 0].abs() >= th).all()) and bool((w == 0).any()) for w, th in zip(kept, thresholds))
    pruned_accuracy = test()
    alive_pruned, _ = print_nonzeros(model, log)
    # Retrain
    optimizer.load_state_dict(initial_optimizer_state_dict)  # Reset the optimizer
    train(EPOCHS)
    final_accuracy = test()
    alive_final, _ = print_nonzeros(model, log)
    masks_ok = all(bool(((m.weight == 0) == (m.mask == 0)).all()) for m in (model.fc1, model.fc2, model.fc3))  # SYNCSPY-CLEAN: final read, for the check
    ok = (steps[0] == 2 * EPOCHS * steps_per_epoch and alive_before == total and alive_pruned < 0.75 * total
          and alive_final == alive_pruned and masks_ok and kept_ok and initial_accuracy >= 80.0 and final_accuracy >= 80.0
          and math.isfinite(pruned_accuracy) and len(log) == 2 * EPOCHS * 4 + 6)
    print("t175_tumor_subtype_pruning_grad_numpy_roundtrip: steps=%d batch=%d genes=%d subtypes=%d sensitivity=%g "
          "result=%s" % (steps[0], BATCH, N_GENES, N_SUBTYPES, SENSITIVITY, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
