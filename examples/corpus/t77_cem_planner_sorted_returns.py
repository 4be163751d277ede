#!/usr/bin/env python3
"""examples/corpus/t77_cem_planner_sorted_returns.py: corpus workload (PyTorch). Model-based RL
on a batch of pendulum swing-up environments simulated on the GPU: a dynamics MLP is fitted on
random transitions in setup, then every control step plans with the cross-entropy method
(MPC): a population of action sequences is rolled out through the learned model in one batch,
and the elites refit the sampling distribution, three CEM iterations per control step, while
each control step also takes a gradient step on the transitions collected so far. The elite
selection comes from a generic optimizer utility written for CPU simulators,
`select_elites(candidates, scores, k)`, which ranks with Python's `sorted` and a key that
returns a 0-dim CUDA tensor. Every comparison Python makes (`<` between two tensors, then
`bool()` of the result) is `Tensor.__bool__`, i.e. `.item()`: a blocking device-to-host read,
on the order of P*log2(P) of them per CEM iteration, every control step. `torch.topk(scores, k)`
on the device picks the same elites without a read.
Planted: the `sorted(...)` line in select_elites, every CEM iteration of every control step.
Clean: setup (the dynamics model's fit on random transitions, buffers preallocated with a
Python-int write pointer), allocator growth in the first steps, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CONTROL_STEPS, ENVS, HORIZON, POP, ELITES, CEM_ITERS = 40, 16, 10, 48, 6, 3
FIT_STEPS, BUFFER, BATCH, DT, MAX_TORQUE = 150, 8192, 256, 0.05, 2.0


def pendulum_step(state, action):
    th, thdot = state[..., 0], state[..., 1]
    u = action[..., 0].clamp(-MAX_TORQUE, MAX_TORQUE)
    thdot = (thdot + (3 * 9.81 / 2 * torch.sin(th) + 3.0 * u) * DT).clamp(-8, 8)
    th = th + thdot * DT
    return torch.stack([th, thdot], dim=-1)


def reward(state, action):
    th = torch.atan2(torch.sin(state[..., 0]), torch.cos(state[..., 0]))
    return -(th ** 2 + 0.1 * state[..., 1] ** 2 + 0.001 * action[..., 0] ** 2)


def features(state):
    return torch.stack([torch.cos(state[..., 0]), torch.sin(state[..., 0]), state[..., 1]], dim=-1)


class Dynamics(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 128), torch.nn.SiLU(), torch.nn.Linear(128, 128), torch.nn.SiLU(), torch.nn.Linear(128, 2))

    def forward(self, state, action):
        return state + self.net(torch.cat([features(state), action], dim=-1)) * DT


def select_elites(candidates, scores, k):
    ranked = sorted(range(len(candidates)), key=lambda i: scores[i], reverse=True)  # SYNCSPY-PROBLEM: each comparison of two 0-dim CUDA tensors is bool() -> .item() (blocking), every CEM iteration
    return torch.stack([candidates[i] for i in ranked[:k]])


@torch.no_grad()
def plan(model, state, mean, std, gen):
    """CEM over action sequences for one environment."""
    for _ in range(CEM_ITERS):
        noise = torch.randn(POP, HORIZON, 1, device=state.device, generator=gen)
        actions = (mean + std * noise).clamp(-MAX_TORQUE, MAX_TORQUE)
        s = state.expand(POP, 2)
        ret = torch.zeros(POP, device=state.device)
        for h in range(HORIZON):
            ret = ret + reward(s, actions[:, h])
            s = model(s, actions[:, h])
        elites = select_elites(list(actions.unbind(0)), ret.unbind(0), ELITES)
        mean, std = elites.mean(dim=0), elites.std(dim=0) + 0.05
    return mean


class Transitions:
    def __init__(self, dev):
        self.s = torch.zeros(BUFFER, 2, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.a = torch.zeros(BUFFER, 1, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.s2 = torch.zeros(BUFFER, 2, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.size = 0

    def add(self, s, a, s2):
        n = s.shape[0]
        self.s[self.size:self.size + n], self.a[self.size:self.size + n], self.s2[self.size:self.size + n] = s, a, s2
        self.size += n


def fit_step(model, opt, buf, gen):
    idx = torch.randint(0, buf.size, (BATCH,), device=buf.s.device, generator=gen)
    loss = F.mse_loss(model(buf.s[idx], buf.a[idx]), buf.s2[idx])  # SYNCSPY-CLEAN: allocator growth in the first steps
    opt.zero_grad(set_to_none=True)
    loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
    opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
    return loss.detach()


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(2)
    model = Dynamics().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    buf = Transitions(dev)
    s = torch.rand(2048, 2, device=dev, generator=gen) * torch.tensor([2 * math.pi, 16.0], device=dev) - torch.tensor([math.pi, 8.0], device=dev)  # SYNCSPY-CLEAN: setup, random transitions
    a = (torch.rand(2048, 1, device=dev, generator=gen) * 2 - 1) * MAX_TORQUE  # SYNCSPY-CLEAN: setup allocation
    buf.add(s, a, pendulum_step(s, a))
    for _ in range(FIT_STEPS):
        fit_step(model, opt, buf, gen)

    state = torch.zeros(ENVS, 2, device=dev)  # SYNCSPY-CLEAN: setup allocation
    state[:, 0] = math.pi + 0.1 * torch.randn(ENVS, device=dev, generator=gen)
    mean = torch.zeros(ENVS, HORIZON, 1, device=dev)  # SYNCSPY-CLEAN: setup allocation
    total_reward = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    for step in range(CONTROL_STEPS):
        env = step % ENVS  # the planner serves one environment per control tick, round robin
        mean[env] = plan(model, state[env:env + 1], mean[env], torch.ones(HORIZON, 1, device=dev), gen)
        actions = torch.cat([mean[:, :1], torch.zeros(ENVS, 1, 1, device=dev)], dim=1)[:, 0]
        nxt = pendulum_step(state, actions)
        total_reward += reward(state, actions).sum()
        buf.add(state, actions, nxt)
        state = nxt
        mean = torch.cat([mean[:, 1:], torch.zeros(ENVS, 1, 1, device=dev)], dim=1)
        fit_step(model, opt, buf, gen)

    avg = total_reward.item() / (CONTROL_STEPS * ENVS)  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(avg) and buf.size == 2048 + CONTROL_STEPS * ENVS
    print("t77_cem_planner_sorted_returns: control_steps=%d population=%d cem_iters=%d transitions=%d result=OK" % (CONTROL_STEPS, POP, CEM_ITERS, buf.size))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
