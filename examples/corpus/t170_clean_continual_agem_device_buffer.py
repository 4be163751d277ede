#!/usr/bin/env python3
"""examples/corpus/t170_clean_continual_agem_device_buffer.py: corpus workload (PyTorch + NumPy).
Continual learning, clean: the t165 A-GEM learner (mammoth's `models/agem.py` and reservoir
`Buffer`, the `MNISTMLP` on five two-class tasks of synthetic digits, 12 steps of 32 images a
task, 200 buffer slots on the GPU) with the fixes of t165: `get_data` draws its indices with
`torch.randperm(..., device=..., generator=...)` and indexes the buffer on the GPU (no
round trip of each example through the host for an identity transform), `observe` applies
`torch.where(dot_prod < 0, project(...), grad_xy)` on the device instead of branching on
`dot_prod.item()` (and counts the projections there), and returns the loss as a device tensor.
Nothing in the step loop reads the GPU. Checked after the loop: the last projected gradient is
orthogonal to the buffer gradient, the accuracies read once per task.
Clean: setup (the stream generated on the GPU, the model uploaded, the gradient vectors and
counters allocated), the buffer's allocation at the end of the first task, allocator growth in
the first steps (forward, backward, SGD), the evaluation read once per task outside the step
loop, the final reads.
Per step on an H100 (estimated from the sizes, fp32 without TF32): two forward and backward
passes of a 90k-parameter MLP on 32 images, the gradient copies and the projection, well under
1 ms of kernels, launch-bound.
"""
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

N_TASKS, CLASSES_PER_TASK, TRAIN_PER_CLASS, TEST_PER_CLASS = 5, 2, 192, 100
BATCH, MINIBATCH, BUFFER_SIZE, LR, NOISE = 32, 32, 200, 0.1, 1.5


class MNISTMLP(torch.nn.Module):
    def __init__(self, input_size=784, output_size=10):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(input_size, 100), torch.nn.Linear(100, 100)
        self.classifier = torch.nn.Linear(100, output_size)

    def forward(self, x):
        x = x.view(-1, 784)
        return self.classifier(F.relu(self.fc2(F.relu(self.fc1(x)))))


def reservoir(num_seen_examples, buffer_size):
    if num_seen_examples < buffer_size:
        return num_seen_examples
    rand = np.random.randint(0, num_seen_examples + 1)
    return rand if rand < buffer_size else -1


class Buffer:
    """mammoth's reservoir buffer (examples and labels)."""

    def __init__(self, buffer_size, device, gen):
        self.buffer_size, self.device, self.gen = buffer_size, device, gen
        self.num_seen_examples = 0
        self.attributes = ["examples", "labels"]

    def init_tensors(self, examples, labels):
        for attr_str, attr in (("examples", examples), ("labels", labels)):
            if attr is not None and not hasattr(self, attr_str):
                typ = torch.int64 if attr_str.endswith("els") else torch.float32
                setattr(self, attr_str, torch.zeros((self.buffer_size, *attr.shape[1:]), dtype=typ, device=self.device))  # SYNCSPY-CLEAN: once, at the end of the first task

    def add_data(self, examples, labels=None):
        if not hasattr(self, "examples"):
            self.init_tensors(examples, labels)
        for i in range(examples.shape[0]):
            index = reservoir(self.num_seen_examples, self.buffer_size)
            self.num_seen_examples += 1
            if index >= 0:
                self.examples[index] = examples[i].to(self.device)
                if labels is not None:
                    self.labels[index] = labels[i].to(self.device)

    def get_data(self, size, transform=None):
        if size > min(self.num_seen_examples, self.examples.shape[0]):
            size = min(self.num_seen_examples, self.examples.shape[0])
        choice = torch.randperm(min(self.num_seen_examples, self.examples.shape[0]), device=self.device, generator=self.gen)[:size]  # SYNCSPY-CLEAN: a device-side shuffle, allocator growth on first use
        ret_tuple = (self.examples[choice] if transform is None else transform(self.examples[choice]),)
        for attr_str in self.attributes[1:]:
            if hasattr(self, attr_str):
                attr = getattr(self, attr_str)
                ret_tuple += (attr[choice],)
        return ret_tuple

    def is_empty(self):
        return self.num_seen_examples == 0


def store_grad(params, grads, grad_dims):
    grads.fill_(0.0)
    count = 0
    for param in params():
        if param.grad is not None:
            begin = 0 if count == 0 else sum(grad_dims[:count])
            end = np.sum(grad_dims[:count + 1])
            grads[begin:end].copy_(param.grad.data.view(-1))
        count += 1


def overwrite_grad(params, newgrad, grad_dims):
    count = 0
    for param in params():
        if param.grad is not None:
            begin = 0 if count == 0 else sum(grad_dims[:count])
            end = sum(grad_dims[:count + 1])
            param.grad.data.copy_(newgrad[begin:end].contiguous().view(param.grad.data.size()))
        count += 1


def project(gxy, ger):
    corr = torch.dot(gxy, ger) / torch.dot(ger, ger)
    return gxy - corr * ger


class AGem:
    def __init__(self, net, device, gen):
        self.net, self.device = net, device
        self.opt = torch.optim.SGD(net.parameters(), lr=LR)
        self.buffer = Buffer(BUFFER_SIZE, device, gen)
        self.grad_dims = [p.data.numel() for p in net.parameters()]
        self.grad_xy = torch.zeros(np.sum(self.grad_dims), device=device)  # SYNCSPY-CLEAN: setup allocation
        self.grad_er = torch.zeros(np.sum(self.grad_dims), device=device)  # SYNCSPY-CLEAN: setup allocation
        self.projections = torch.zeros((), dtype=torch.long, device=device)  # SYNCSPY-CLEAN: setup allocation
        self.proj_g = torch.zeros_like(self.grad_xy)  # SYNCSPY-CLEAN: setup allocation
        self.proj_ger = torch.zeros_like(self.grad_er)  # SYNCSPY-CLEAN: setup allocation

    def end_task(self, task_x, task_y):
        samples_per_task = BUFFER_SIZE // N_TASKS
        self.buffer.add_data(examples=task_x[:samples_per_task].to(self.device), labels=task_y[:samples_per_task].to(self.device))

    def observe(self, inputs, labels):
        self.net.zero_grad()
        p = self.net.forward(inputs)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(p, labels)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        if not self.buffer.is_empty():
            store_grad(self.net.parameters, self.grad_xy, self.grad_dims)
            buf_inputs, buf_labels = self.buffer.get_data(MINIBATCH)
            self.net.zero_grad()
            buf_outputs = self.net.forward(buf_inputs)  # SYNCSPY-CLEAN: allocator growth in the first steps
            penalty = F.cross_entropy(buf_outputs, buf_labels)
            penalty.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            store_grad(self.net.parameters, self.grad_er, self.grad_dims)
            dot_prod = torch.dot(self.grad_xy, self.grad_er)
            conflict = dot_prod < 0
            g_tilde = project(gxy=self.grad_xy, ger=self.grad_er)
            overwrite_grad(self.net.parameters, torch.where(conflict, g_tilde, self.grad_xy), self.grad_dims)
            self.projections += conflict
            self.proj_g = torch.where(conflict, g_tilde, self.proj_g)
            self.proj_ger = torch.where(conflict, self.grad_er, self.proj_ger)
        self.opt.step()  # SYNCSPY-CLEAN: optimizer line (plain SGD)
        return loss.detach()


def make_stream(gen, dev):
    """Ten noisy class prototypes; task t holds classes 2t and 2t+1."""
    proto = torch.randn(10, 784, device=dev, generator=gen)
    def draw(per_class):
        y = torch.arange(10, device=dev).repeat_interleave(per_class)
        return proto[y] + NOISE * torch.randn(10 * per_class, 784, device=dev, generator=gen), y
    (x_tr, y_tr), (x_te, y_te) = draw(TRAIN_PER_CLASS), draw(TEST_PER_CLASS)
    perm = torch.randperm(x_tr.size(0), device=dev, generator=gen)
    x_tr, y_tr = x_tr[perm], y_tr[perm]
    tasks = []
    for t in range(N_TASKS):
        tr = (y_tr // CLASSES_PER_TASK) == t
        te = (y_te // CLASSES_PER_TASK) == t
        tasks.append((x_tr[tr], y_tr[tr], x_te[te], y_te[te]))
    return tasks


def main():
    if not torch.cuda.is_available():
        print("t170_clean_continual_agem_device_buffer: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    np.random.seed(165)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(165)
    tasks = make_stream(gen, dev)  # SYNCSPY-CLEAN: setup, the stream generated on the GPU once
    model = AGem(MNISTMLP().to(dev), dev, gen)  # SYNCSPY-CLEAN: setup upload
    steps, losses, accs = 0, [], []

    for t, (x_tr, y_tr, _, _) in enumerate(tasks):
        model.net.train()
        for b in range(x_tr.size(0) // BATCH):
            loss = model.observe(x_tr[b * BATCH:(b + 1) * BATCH], y_tr[b * BATCH:(b + 1) * BATCH])
            losses.append(loss)
            steps += 1
        model.net.eval()
        with torch.no_grad():
            acc = torch.stack([(model.net(x_te).argmax(1) == y_te).float().mean() for _, _, x_te, y_te in tasks[:t + 1]])  # SYNCSPY-CLEAN: evaluation, once per task
            accs.append(acc.tolist())  # SYNCSPY-CLEAN: evaluation, once per task outside the step loop
        model.end_task(x_tr, y_tr)

    losses = torch.stack(losses).tolist()  # SYNCSPY-CLEAN: final read
    projections = int(model.projections)  # SYNCSPY-CLEAN: final read
    g_tilde, ger = model.proj_g, model.proj_ger
    residual, scale = torch.dot(g_tilde, ger).item(), (g_tilde.norm() * ger.norm()).item()  # SYNCSPY-CLEAN: final read, for the check
    final = accs[-1]
    ok = (steps == N_TASKS * (2 * TRAIN_PER_CLASS // BATCH) and len(final) == N_TASKS and all(math.isfinite(v) for v in losses)
          and projections > 0 and abs(residual) <= 1e-4 * scale and final[-1] > 0.9
          and sum(final) / N_TASKS > 1.5 / N_TASKS and model.buffer.num_seen_examples == BUFFER_SIZE)
    print("t170_clean_continual_agem_device_buffer: tasks=%d steps=%d batch=%d buffer=%d "
          "result=%s" % (N_TASKS, steps, BATCH, BUFFER_SIZE, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
