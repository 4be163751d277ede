#!/usr/bin/env python3
"""examples/corpus/t36_clean_prioritized_replay.py: corpus workload (PyTorch), CLEAN. Offline DQN
training from a prioritized replay buffer kept entirely on the GPU. Each step samples the batch
proportionally to the priorities by inverse-CDF sampling: `torch.cumsum` of the priorities (in
fixed point, int64: an exact scan, so the draws are reproducible, which a float cumsum on CUDA
is not), uniform draws scaled by the total (`cdf[-1]`, a view, never read on the host) and
`torch.searchsorted`; the importance weights, the double-DQN target from a target network and
the new priorities (written back with `scatter_reduce_(..., reduce="amax")`, order-independent
for duplicate draws) are all tensor operations with fixed shapes. The target network is
refreshed every TARGET_EVERY steps with load_state_dict (device-to-device copies). Nothing in
the step loop reads a value on the host: no `.item()`, no data-dependent shape (no
`torch.multinomial` either, whose one-sample and no-replacement paths read the distribution's
validity back to the host). The buffer is filled once at setup; one read at the end.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, CAPACITY, STATE, ACTIONS, BATCH, HIDDEN = 80, 65536, 64, 8, 1024, 512
GAMMA, ALPHA, BETA, EPS, TARGET_EVERY, FIXED_POINT = 0.97, 0.6, 0.4, 1e-3, 20, 2 ** 20


def q_network():
    return torch.nn.Sequential(torch.nn.Linear(STATE, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, ACTIONS))


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    states = torch.randn(CAPACITY, STATE, device=dev)  # SYNCSPY-CLEAN: setup, replay buffer
    next_states = (states + 0.1 * torch.randn(CAPACITY, STATE, device=dev)).roll(1, dims=1)  # SYNCSPY-CLEAN: setup, replay buffer
    actions = torch.randint(0, ACTIONS, (CAPACITY,), device=dev)  # SYNCSPY-CLEAN: setup, replay buffer
    rewards = torch.tanh(states[:, :ACTIONS].gather(1, actions.unsqueeze(1)).squeeze(1))  # SYNCSPY-CLEAN: setup, replay buffer
    priorities = torch.ones(CAPACITY, device=dev)  # SYNCSPY-CLEAN: setup, replay buffer
    online = q_network().to(dev)  # SYNCSPY-CLEAN: setup upload
    target = q_network().to(dev)  # SYNCSPY-CLEAN: setup upload
    target.load_state_dict(online.state_dict())  # SYNCSPY-CLEAN: setup, device-to-device copies
    target.requires_grad_(False)
    opt = torch.optim.Adam(online.parameters(), lr=5e-4)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        fixed = (priorities.pow(ALPHA) * FIXED_POINT).long().clamp_(min=1)  # SYNCSPY-CLEAN: temporaries, allocator growth in the first steps
        cdf = torch.cumsum(fixed, dim=0)  # SYNCSPY-CLEAN: temporaries, allocator growth in the first steps
        total = cdf[-1]
        u = (torch.rand(BATCH, device=dev, dtype=torch.float64) * total).long()
        idx = torch.searchsorted(cdf, u, right=True).clamp_(max=CAPACITY - 1)
        weights = (CAPACITY * fixed[idx].double() / total).pow(-BETA).float()
        weights = weights / weights.max()
        s, a, r, s2 = states[idx], actions[idx], rewards[idx], next_states[idx]  # SYNCSPY-CLEAN: temporaries, allocator growth in the first steps
        with torch.no_grad():
            best = online(s2).argmax(dim=1, keepdim=True)  # SYNCSPY-CLEAN: allocator growth in the first steps
            y = r + GAMMA * target(s2).gather(1, best).squeeze(1)  # SYNCSPY-CLEAN: allocator growth in the first steps
        q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)  # SYNCSPY-CLEAN: allocator growth in the first steps
        td = y - q
        loss = (weights * torch.nn.functional.smooth_l1_loss(q, y, reduction="none")).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        priorities.scatter_reduce_(0, idx, td.detach().abs() + EPS, reduce="amax", include_self=False)
        loss_sum += loss.detach()
        if (step + 1) % TARGET_EVERY == 0:
            target.load_state_dict(online.state_dict())  # SYNCSPY-CLEAN: device-to-device copies every TARGET_EVERY steps, no wait

    stats = torch.stack([loss_sum / STEPS, priorities.mean(), priorities.max()]).cpu()  # SYNCSPY-CLEAN: final read, once
    print("t36_clean_prioritized_replay: steps=%d mean_loss=%.4f mean_prio=%.4f max_prio=%.3f result=OK" % (STEPS, float(stats[0]), float(stats[1]), float(stats[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
