#!/usr/bin/env python3
"""examples/corpus/t146_clean_offline_dqn_gpu_replay.py: corpus workload (PyTorch + NumPy),
CLEAN. The offline double DQN of t141 (a notification policy learned from 160,000 logged
session transitions, a 32 -> 1024 -> 1024 -> 8 Q-network, a target network refreshed every 20
steps, Huber loss, Adam, 4,096 transitions a step) with the replay buffer kept on the GPU (the
fix of t141): the logged arrays are stacked once into three tensors (observation pairs from a
pinned staging copy with `non_blocking=True`, actions, reward/done pairs) and each batch is
drawn with `torch.randint(..., device=dev, generator=gen)` and gathered by advanced indexing on
the device, instead of `random.sample` over a Python list of namedtuples and three
`torch.tensor(..., device=dev)` uploads from pageable memory, each a blocking copy, every step.
Sampling is with replacement rather than without (4,096 of 160,000: the difference is
immaterial to the estimator). Nothing in the step loop reads the GPU or copies from the host.
Clean: all of it; the marked lines are setup (the replay tensors uploaded once, the held-out
states and their best actions uploaded once), the target network's `load_state_dict`
(device-to-device copies), allocator growth in the first steps, the greedy accuracy read once
per epoch outside the step loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

OBS, ACTIONS, HIDDEN, GAMMA, LOGGED, HELD_OUT = 32, 8, 1024, 0.9, 160000, 4096
EPOCHS, STEPS_PER_EPOCH, BATCH, TARGET_EVERY, LR = 2, 40, 4096, 20, 1e-3

class DeviceReplay:
    """The logged transitions as device tensors, sampled on the GPU."""

    def __init__(self, obs, action, reward, next_obs, done, dev, gen):
        staged = torch.from_numpy(np.stack([obs, next_obs], axis=1)).pin_memory()
        self.obs = staged.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: setup, pinned, once
        self.act = torch.from_numpy(action).to(dev)  # SYNCSPY-CLEAN: setup upload, once
        rd = np.stack([reward, done.astype(np.float32)], axis=1)
        self.rd = torch.from_numpy(rd).to(dev)  # SYNCSPY-CLEAN: setup upload, once
        self.gen = gen

    def sample(self, n):
        idx = torch.randint(0, self.obs.shape[0], (n,), device=self.obs.device, generator=self.gen)
        obs, rd = self.obs[idx], self.rd[idx]
        return obs[:, 0], self.act[idx], rd[:, 0], obs[:, 1], rd[:, 1]


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
        print("t146_clean_offline_dqn_gpu_replay: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    rng = np.random.default_rng(141)
    w = (rng.standard_normal((OBS, ACTIONS)) / math.sqrt(OBS)).astype(np.float32)
    gen = torch.Generator(device=dev).manual_seed(146)
    buf = DeviceReplay(*session_log(rng, w), dev=dev, gen=gen)
    test_s = rng.standard_normal((HELD_OUT, OBS)).astype(np.float32)
    test_states = torch.from_numpy(test_s).to(dev)  # SYNCSPY-CLEAN: setup upload, once
    best = torch.from_numpy((test_s @ w).argmax(axis=1)).to(dev)  # SYNCSPY-CLEAN: setup, once
    q, target = q_net().to(dev), q_net().to(dev)  # SYNCSPY-CLEAN: setup upload
    target.load_state_dict(q.state_dict())  # SYNCSPY-CLEAN: setup, device-to-device copies
    opt = torch.optim.Adam(q.parameters(), lr=LR)
    losses, accuracy, step = [], [], 0

    for epoch in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            s, a, r, s2, done = buf.sample(BATCH)
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
    print("t146_clean_offline_dqn_gpu_replay: epochs=%d steps=%d batch=%d logged=%d "
          "result=%s" % (EPOCHS, hist.numel(), BATCH, LOGGED, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
