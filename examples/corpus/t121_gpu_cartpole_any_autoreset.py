#!/usr/bin/env python3
"""examples/corpus/t121_gpu_cartpole_any_autoreset.py: corpus workload (PyTorch).
Advantage actor-critic on 512 CartPole environments simulated together on the GPU (the classic
Barto-Sutton-Anderson dynamics, Euler steps of 20 ms, episodes ended by a fall or at 200 steps), a
shared MLP policy and value network (three hidden layers of 1,024), rollouts of 16 steps, Adam.
Actions are drawn on the device (Gumbel-max), rewards and returns stay on the device. The vector
environment's `step()` was ported from a NumPy/Gym vector environment and kept its auto-reset test,
`if any(done):`. On a CUDA tensor the Python builtin `any` iterates the tensor (`Tensor.__iter__`
unbinds it into 512 views) and calls `bool()` on each element until one is true: every call is
`Tensor.__bool__`, an `.item()` of one element, a blocking read. With episodes of a few dozen steps
a few percent of the environments finish each step, so `any` reads about 28 elements per environment
step, the first behind the policy forward pass just queued, 16 environment steps per update. A
device-side reset (`torch.where` on the done mask, as `_reset` already does) needs no test at all.
Planted: the `if any(done):` line in VecCartPole.step, every environment step.
Clean: setup (the environment state and rollout buffers), allocator growth in the first updates,
rollout buffers written on the device, the bookkeeping counters kept on the device, the final reads
and the dynamics checked against a Python reference after the loop.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NUM_ENVS, ROLLOUT, UPDATES, HIDDEN, MAX_T, GAMMA = 512, 16, 40, 1024, 200, 0.99
GRAVITY, M_CART, M_POLE, HALF_LEN, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
X_LIMIT, TH_LIMIT = 2.4, 12 * 2 * math.pi / 360
OBS_SCALE = (2.4, 3.0, 0.21, 3.5)


def cartpole_dynamics(state, push_right):
    """One Euler step for every environment: state (n, 4) = x, x_dot, theta, theta_dot."""
    x, x_dot, th, th_dot = state.unbind(1)
    force = push_right.to(state.dtype) * (2 * FORCE) - FORCE
    cos, sin = th.cos(), th.sin()
    total = M_CART + M_POLE
    temp = (force + M_POLE * HALF_LEN * th_dot * th_dot * sin) / total
    th_acc = (GRAVITY * sin - cos * temp) / (HALF_LEN * (4.0 / 3.0 - M_POLE * cos * cos / total))
    x_acc = temp - M_POLE * HALF_LEN * th_acc * cos / total
    return torch.stack([x + TAU * x_dot, x_dot + TAU * x_acc, th + TAU * th_dot, th_dot + TAU * th_acc], 1)


class VecCartPole:
    def __init__(self, n, dev, gen):
        self.n, self.gen = n, gen
        self.state = torch.zeros(n, 4, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.t = torch.zeros(n, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.ended = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.resets = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.scale = torch.tensor(OBS_SCALE, device=dev)  # SYNCSPY-CLEAN: setup upload (pageable, once)
        self._reset(torch.ones(n, dtype=torch.bool, device=dev))  # SYNCSPY-CLEAN: setup allocation

    def _reset(self, mask):
        fresh = 0.1 * torch.rand(self.n, 4, device=self.state.device, generator=self.gen) - 0.05
        self.state = torch.where(mask[:, None], fresh, self.state)
        self.t = torch.where(mask, torch.zeros_like(self.t), self.t)
        self.resets += mask.sum()

    def obs(self):
        return self.state / self.scale

    def step(self, push_right):
        self.state = cartpole_dynamics(self.state, push_right)
        self.t += 1
        fell = (self.state[:, 0].abs() > X_LIMIT) | (self.state[:, 2].abs() > TH_LIMIT)
        done = fell | (self.t >= MAX_T)
        self.ended += done.sum()
        if any(done):  # SYNCSPY-PROBLEM: builtin any() on a CUDA tensor: unbind, then bool() (a blocking .item()) per element until one is true, every environment step
            self._reset(done)
        return fell


class ActorCritic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(4, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.Tanh(),
            torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.Tanh())
        self.pi = torch.nn.Linear(HIDDEN, 2)
        self.v = torch.nn.Linear(HIDDEN, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(121)
    env = VecCartPole(NUM_ENVS, dev, gen)
    net = ActorCritic().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    obs_buf = torch.zeros(ROLLOUT, NUM_ENVS, 4, device=dev)  # SYNCSPY-CLEAN: setup allocation
    act_buf = torch.zeros(ROLLOUT, NUM_ENVS, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    fell_buf = torch.zeros(ROLLOUT, NUM_ENVS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    losses = torch.zeros(UPDATES, device=dev)  # SYNCSPY-CLEAN: setup allocation

    for update in range(UPDATES):
        with torch.no_grad():
            for t in range(ROLLOUT):
                obs = env.obs()
                logits, _ = net(obs)  # SYNCSPY-CLEAN: allocator growth in the first updates
                gumbel = -torch.log(-torch.log(torch.rand(NUM_ENVS, 2, device=dev, generator=gen)))
                action = (logits + gumbel).argmax(dim=1)
                obs_buf[t] = obs  # SYNCSPY-CLEAN: rollout buffer written on the device (asynchronous device-to-device copy)
                act_buf[t] = action  # SYNCSPY-CLEAN: rollout buffer written on the device
                fell = env.step(action)  # the environment step: its reads are the planted line inside VecCartPole.step
                fell_buf[t] = fell.float()  # SYNCSPY-CLEAN: rollout buffer written on the device
            _, last_value = net(env.obs())  # SYNCSPY-CLEAN: allocator growth in the first updates
        logits, values = net(obs_buf.view(-1, 4))  # SYNCSPY-CLEAN: allocator growth in the first updates
        values = values.view(ROLLOUT, NUM_ENVS)
        with torch.no_grad():
            returns = torch.empty_like(values)
            running = last_value
            for t in reversed(range(ROLLOUT)):
                running = 1.0 + GAMMA * (1.0 - fell_buf[t]) * running
                returns[t] = running  # SYNCSPY-CLEAN: the return written into a device buffer (asynchronous device-to-device copy)
        logp = F.log_softmax(logits, dim=1)
        chosen = logp.gather(1, act_buf.view(-1, 1)).squeeze(1).view(ROLLOUT, NUM_ENVS)
        adv = returns - values.detach()
        entropy = -(logp.exp() * logp).sum(1).mean()
        loss = -(chosen * adv).mean() + 0.5 * F.mse_loss(values, returns) - 0.01 * entropy
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first updates
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first update
        losses[update] = loss.detach()  # SYNCSPY-CLEAN: the update's loss copied into the history on the device

    finite = bool(torch.isfinite(losses).all()) and bool(torch.isfinite(env.state).all())  # SYNCSPY-CLEAN: final read
    max_t, ended, resets = int(env.t.max()), int(env.ended), int(env.resets)  # SYNCSPY-CLEAN: final read
    probe = env.state[:16].clone()  # SYNCSPY-CLEAN: teardown, a device-to-device copy
    push = torch.arange(16, device=dev) % 2  # SYNCSPY-CLEAN: teardown allocation
    got = cartpole_dynamics(probe, push).tolist()  # SYNCSPY-CLEAN: teardown check, read once
    worst = 0.0
    for s, p, g in zip(probe.tolist(), push.tolist(), got):  # SYNCSPY-CLEAN: teardown check, read once
        x, xd, th, thd = s
        f = FORCE if p else -FORCE
        tmp = (f + M_POLE * HALF_LEN * thd * thd * math.sin(th)) / (M_CART + M_POLE)
        tha = (GRAVITY * math.sin(th) - math.cos(th) * tmp) / (HALF_LEN * (4.0 / 3.0 - M_POLE * math.cos(th) ** 2 / (M_CART + M_POLE)))
        xa = tmp - M_POLE * HALF_LEN * tha * math.cos(th) / (M_CART + M_POLE)
        ref = (x + TAU * xd, xd + TAU * xa, th + TAU * thd, thd + TAU * tha)
        worst = max(worst, max(abs(a - b) for a, b in zip(ref, g)))
    ok = finite and max_t <= MAX_T and resets == ended + NUM_ENVS and ended > 0 and worst < 1e-4
    print("t121_gpu_cartpole_any_autoreset: envs=%d rollout=%d updates=%d hidden=%d result=%s" % (NUM_ENVS, ROLLOUT, UPDATES, HIDDEN, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
