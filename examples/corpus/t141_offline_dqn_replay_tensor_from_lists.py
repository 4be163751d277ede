#!/usr/bin/env python3
"""examples/corpus/t141_offline_dqn_replay_tensor_from_lists.py: corpus workload (PyTorch +
NumPy). Offline reinforcement learning for a mobile app's notification policy: a double DQN
(a 32 -> 1024 -> 1024 -> 8 Q-network, a target network refreshed every 20 steps, Huber loss,
Adam) trained on 160,000 logged transitions of user sessions (32 session features, 8 actions:
seven notification templates or none, the reward the engagement that followed, a done flag at
the end of a session), collected under a uniform exploration policy. The log is loaded into a
textbook replay buffer, a Python list of `Transition` namedtuples holding NumPy arrays, and
every step `ReplayBuffer.sample` draws 4,096 of them with `random.sample` and builds the batch
with `torch.tensor(..., device=dev)` from Python lists and a NumPy array. `torch.tensor` with a
CUDA device builds the tensor in ordinary (pageable) CPU memory and then calls
`tensor.to(device, ..., /*non_blocking=*/false)` (internal_new_from_data in
torch/csrc/utils/tensor_new.cpp); `copy_kernel_cuda` (aten/src/ATen/native/cuda/Copy.cu) ends
that copy in `memcpy_and_sync`, a stream-ordered `cudaMemcpyAsync` and a
`cudaStreamSynchronize` (the Performance Tuning Guide lists `tensor.cuda()` and `.to(device)`
among the syncs to avoid; the CUDA semantics notes say only pinned memory with
`non_blocking=True` copies asynchronously). The observations' upload waits for the previous
step's forward passes, backward pass and Adam update; then the GPU idles while the host samples
and converts the next 4,096 transitions. The two smaller uploads right after it find the stream
empty and cost their own round trips.
Planted: the three `torch.tensor(..., device=dev)` lines in `ReplayBuffer.sample`, every step
(the observations' expensive, the actions' and the rewards' cheap; one problem, three lines).
Clean: setup (the held-out states and their best actions uploaded once), the target network's
`load_state_dict` (device-to-device copies), allocator growth in the first steps, the greedy
accuracy read once per epoch outside the step loop, the final read.
"""
import collections
import math
import os
import random
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

OBS, ACTIONS, HIDDEN, GAMMA, LOGGED, HELD_OUT = 32, 8, 1024, 0.9, 160000, 4096
EPOCHS, STEPS_PER_EPOCH, BATCH, TARGET_EVERY, LR = 2, 40, 4096, 20, 1e-3

Transition = collections.namedtuple("Transition", "obs action reward next_obs done")


class ReplayBuffer:
    def __init__(self, capacity, seed):
        self.capacity, self.pos, self.data = capacity, 0, []
        self.rng = random.Random(seed)

    def push(self, *fields):
        if len(self.data) < self.capacity:
            self.data.append(None)
        self.data[self.pos] = Transition(*fields)
        self.pos = (self.pos + 1) % self.capacity

    def sample(self, n, dev):
        batch = self.rng.sample(self.data, n)
        obs = torch.tensor(np.array([(t.obs, t.next_obs) for t in batch]), device=dev)  # SYNCSPY-PROBLEM: pageable, waits for the step
        act = torch.tensor([t.action for t in batch], device=dev)  # SYNCSPY-PROBLEM: blocking upload
        rd = torch.tensor([(t.reward, t.done) for t in batch], device=dev)  # SYNCSPY-PROBLEM: blocking
        return obs[:, 0], act, rd[:, 0], obs[:, 1], rd[:, 1]


def session_log(rng, w):
    """Logged sessions: features drift within a session, reward linear in the features."""
    s = rng.standard_normal((LOGGED, OBS)).astype(np.float32)
    a = rng.integers(0, ACTIONS, LOGGED)
    r = np.einsum("nd,nd->n", s, w[:, a].T) + 0.1 * rng.standard_normal(LOGGED)
    s2 = (0.9 * s + 0.45 * rng.standard_normal((LOGGED, OBS))).astype(np.float32)
    done = rng.random(LOGGED) < 0.1
    return s, a, r.astype(np.float32), s2, done


def q_net():
    return torch.nn.Sequential(torch.nn.Linear(OBS, HIDDEN), torch.nn.ReLU(),
                               torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                               torch.nn.Linear(HIDDEN, ACTIONS))


def main():
    if not torch.cuda.is_available():
        print("t141_offline_dqn_replay_tensor_from_lists: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    rng = np.random.default_rng(141)
    w = (rng.standard_normal((OBS, ACTIONS)) / math.sqrt(OBS)).astype(np.float32)
    buf = ReplayBuffer(LOGGED, seed=141)
    for fields in zip(*session_log(rng, w)):
        buf.push(fields[0], int(fields[1]), float(fields[2]), fields[3], float(fields[4]))
    test_s = rng.standard_normal((HELD_OUT, OBS)).astype(np.float32)
    test_states = torch.from_numpy(test_s).to(dev)  # SYNCSPY-CLEAN: setup upload, once
    best = torch.from_numpy((test_s @ w).argmax(axis=1)).to(dev)  # SYNCSPY-CLEAN: setup, once
    q, target = q_net().to(dev), q_net().to(dev)  # SYNCSPY-CLEAN: setup upload
    target.load_state_dict(q.state_dict())  # SYNCSPY-CLEAN: setup, device-to-device copies
    opt = torch.optim.Adam(q.parameters(), lr=LR)
    losses, accuracy, step = [], [], 0

    for epoch in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            s, a, r, s2, done = buf.sample(BATCH, dev)
            with torch.no_grad():
                a2 = q(s2).argmax(dim=1, keepdim=True)  # SYNCSPY-CLEAN: growth, first steps
                y = r + GAMMA * (1.0 - done) * target(s2).gather(1, a2).squeeze(1)
            q_sa = q(s).gather(1, a[:, None]).squeeze(1)  # SYNCSPY-CLEAN: growth, first steps
            loss = F.smooth_l1_loss(q_sa, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses.append(loss.detach())
            step += 1
            if step % TARGET_EVERY == 0:
                target.load_state_dict(q.state_dict())  # SYNCSPY-CLEAN: device-to-device copies
        with torch.no_grad():
            greedy = q(test_states).argmax(dim=1)
        accuracy.append(greedy.eq(best).float().mean().item())  # SYNCSPY-CLEAN: once per epoch

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    q_test = q(test_states[:8]).detach().cpu()  # SYNCSPY-CLEAN: final read
    ok = (math.isfinite(first) and math.isfinite(last) and bool(torch.isfinite(q_test).all())
          and hist.numel() == EPOCHS * STEPS_PER_EPOCH and accuracy[-1] > 4.0 / ACTIONS)
    print("t141_offline_dqn_replay_tensor_from_lists: epochs=%d steps=%d batch=%d logged=%d "
          "result=%s" % (EPOCHS, hist.numel(), BATCH, LOGGED, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
