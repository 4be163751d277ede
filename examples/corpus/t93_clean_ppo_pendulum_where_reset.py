#!/usr/bin/env python3
"""examples/corpus/t93_clean_ppo_pendulum_where_reset.py: corpus workload (PyTorch), CLEAN.
Proximal policy optimization with a Gaussian policy on 2048 pendulum swing-up environments
(the Pendulum-v1 dynamics, a 200-step time limit with staggered starts) simulated together on
the GPU. The environment resets finished environments every step with a masked `torch.where`,
whether any finished or not (no host test of the flags); the policy's distribution is
`Normal(mu, std, validate_args=False)`, so neither its constructor nor `log_prob` checks its
arguments on the host (t41's problem), and actions come from `dist.rsample()` under no_grad
(`loc + eps * scale`, eps from an in-place `normal_()`): `dist.sample()` would call
`torch.normal(loc, scale)`, whose tensor-std check reads `std.min()` on the host (t86's
problem). GAE runs on the GPU, minibatches come from a device `randperm`, and the finished
episodes' returns and the update's approximate KL are summed on the GPU and read once per PPO
iteration, after its rollout and update loops.
Clean: all of it; the marked lines are setup, allocator growth in the first rollout and
update, the per-iteration read and the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributions import Normal  # noqa: E402

ENVS, HORIZON, ITERS, EPOCHS, MINIBATCHES, HIDDEN, TIME_LIMIT = 2048, 64, 3, 4, 4, 128, 200
GAMMA, LAM, CLIP, MAX_SPEED, MAX_TORQUE, DT = 0.99, 0.95, 0.2, 8.0, 2.0, 0.05


class VecPendulum:
    def __init__(self, n, dev, gen):
        self.n, self.dev, self.gen = n, dev, gen
        self.th = (torch.rand(n, device=dev, generator=gen) * 2 - 1) * math.pi  # SYNCSPY-CLEAN: setup allocation
        self.thdot = torch.rand(n, device=dev, generator=gen) * 2 - 1  # SYNCSPY-CLEAN: setup allocation
        self.t = torch.randint(0, TIME_LIMIT, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation (staggered episode starts)

    def obs(self):
        return torch.stack([torch.cos(self.th), torch.sin(self.th), self.thdot], dim=1)

    def step(self, u):
        u = u.clamp(-MAX_TORQUE, MAX_TORQUE)
        norm_th = torch.remainder(self.th + math.pi, 2 * math.pi) - math.pi
        cost = norm_th ** 2 + 0.1 * self.thdot ** 2 + 0.001 * u ** 2
        thdot = (self.thdot + (15.0 * torch.sin(self.th) + 3.0 * u) * DT).clamp(-MAX_SPEED, MAX_SPEED)
        th = self.th + thdot * DT
        self.t = self.t + 1
        done = self.t >= TIME_LIMIT
        fresh_th = (torch.rand(self.n, device=self.dev, generator=self.gen) * 2 - 1) * math.pi
        fresh_thdot = torch.rand(self.n, device=self.dev, generator=self.gen) * 2 - 1
        self.th = torch.where(done, fresh_th, th)
        self.thdot = torch.where(done, fresh_thdot, thdot)
        self.t = torch.where(done, torch.zeros_like(self.t), self.t)
        return self.obs(), -cost, done


class ActorCritic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pi = torch.nn.Sequential(torch.nn.Linear(3, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
        self.v = torch.nn.Sequential(torch.nn.Linear(3, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
        self.log_std = torch.nn.Parameter(torch.zeros(1))

    def dist(self, obs):
        return Normal(MAX_TORQUE * torch.tanh(self.pi(obs)), self.log_std.exp().expand(obs.shape[0], 1), validate_args=False)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(93)
    env = VecPendulum(ENVS, dev, gen)
    ac = ActorCritic().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(ac.parameters(), lr=3e-4)
    obs_buf = torch.zeros(HORIZON, ENVS, 3, device=dev)  # SYNCSPY-CLEAN: setup allocation
    act_buf = torch.zeros(HORIZON, ENVS, 1, device=dev)  # SYNCSPY-CLEAN: setup allocation
    logp_buf = torch.zeros(HORIZON, ENVS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    rew_buf = torch.zeros(HORIZON, ENVS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    done_buf = torch.zeros(HORIZON, ENVS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_buf = torch.zeros(HORIZON + 1, ENVS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    ep_ret = torch.zeros(ENVS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    window = torch.zeros(3, device=dev)  # SYNCSPY-CLEAN: setup allocation (finished returns, finished count, KL)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    log = []

    obs = env.obs()
    mb = HORIZON * ENVS // MINIBATCHES
    for it in range(ITERS):
        with torch.no_grad():
            for t in range(HORIZON):
                dist = ac.dist(obs)  # SYNCSPY-CLEAN: allocator growth in the first rollout
                action = dist.rsample()
                obs_buf[t], act_buf[t], logp_buf[t] = obs, action, dist.log_prob(action).sum(dim=1)
                val_buf[t] = ac.v(obs).squeeze(1)
                obs, reward, done = env.step(action.squeeze(1))
                rew_buf[t], done_buf[t] = reward, done.float()
                ep_ret += reward
                window[:2] += torch.stack([(ep_ret * done).sum(), done.sum()])
                ep_ret.mul_((~done).float())
            val_buf[HORIZON] = ac.v(obs).squeeze(1)
            adv = torch.zeros_like(rew_buf)
            last = torch.zeros(ENVS, device=dev)
            for t in reversed(range(HORIZON)):
                nonterminal = 1.0 - done_buf[t]
                delta = rew_buf[t] + GAMMA * val_buf[t + 1] * nonterminal - val_buf[t]
                last = delta + GAMMA * LAM * nonterminal * last
                adv[t] = last
            ret = (adv + val_buf[:HORIZON]).flatten()
            adv = adv.flatten()
        flat_obs, flat_act, flat_logp = obs_buf.flatten(0, 1), act_buf.flatten(0, 1), logp_buf.flatten()
        for epoch in range(EPOCHS):
            perm = torch.randperm(HORIZON * ENVS, device=dev, generator=gen)
            for k in range(MINIBATCHES):
                idx = perm[k * mb:(k + 1) * mb]
                a = (adv[idx] - adv[idx].mean()) / (adv[idx].std() + 1e-8)
                dist = ac.dist(flat_obs[idx])  # SYNCSPY-CLEAN: allocator growth in the first update
                logp = dist.log_prob(flat_act[idx]).sum(dim=1)
                ratio = torch.exp(logp - flat_logp[idx])
                pg = -torch.min(ratio * a, ratio.clamp(1 - CLIP, 1 + CLIP) * a).mean()
                v = F.mse_loss(ac.v(flat_obs[idx]).squeeze(1), ret[idx])
                loss = pg + 0.5 * v - 0.001 * dist.entropy().mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first update
                torch.nn.utils.clip_grad_norm_(ac.parameters(), 0.5)
                opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first update
                loss_sum += loss.detach()
                window[2] += (flat_logp[idx] - logp).mean().detach()
        ret_sum, n_done, kl = window.tolist()  # SYNCSPY-CLEAN: once per PPO iteration, after its rollout and update loops
        log.append((it, ret_sum / max(n_done, 1.0), n_done, kl / (EPOCHS * MINIBATCHES)))
        window.zero_()

    total_loss = loss_sum.item()  # SYNCSPY-CLEAN: final read
    floor = -TIME_LIMIT * (math.pi ** 2 + 0.1 * MAX_SPEED ** 2 + 0.001 * MAX_TORQUE ** 2)
    ok = math.isfinite(total_loss) and len(log) == ITERS and all(n > 0 and floor <= r <= 0.0 and math.isfinite(k) for _, r, n, k in log)
    print("t93_clean_ppo_pendulum_where_reset: envs=%d horizon=%d iters=%d updates=%d result=%s" % (ENVS, HORIZON, ITERS, ITERS * EPOCHS * MINIBATCHES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
