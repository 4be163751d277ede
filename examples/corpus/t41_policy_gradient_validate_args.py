#!/usr/bin/env python3
"""examples/corpus/t41_policy_gradient_validate_args.py: corpus workload (PyTorch). REINFORCE
on a batch of 1024 contextual-bandit environments simulated on the GPU: the policy network
gives logits, the script builds `torch.distributions.Categorical(logits=logits)`, samples the
actions, computes `dist.log_prob(actions)` for the policy-gradient loss. Distributions
validate their arguments by default (`Distribution._validate_args` is `__debug__`, True
unless Python runs with -O): the constructor checks every parameter against its constraint
and `log_prob` checks the value against the support, each with a Python
`if not valid.all()`-style test of a GPU tensor (torch/distributions/distribution.py,
`__init__` and `_validate_sample`): two copies to the host and two waits for the GPU, every
step. The fix: `Categorical(logits=logits, validate_args=False)`, or
`torch.distributions.Distribution.set_default_validate_args(False)` once at start-up.
`dist.sample()` is not marked: Categorical samples with `torch.multinomial`, whose input
check is a device-side assert (`_assert_async`) and whose one-sample path is exponential
noise and an argmax, with no host read.
Planted: the `Categorical(logits=...)` construction and the `dist.log_prob(actions)` call,
every step.
Clean: setup, allocator growth in the first steps, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, ENVS, CONTEXT, ACTIONS, HIDDEN = 80, 1024, 32, 16, 256


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)
    payoff = torch.randn(CONTEXT, ACTIONS, device=dev)  # SYNCSPY-CLEAN: setup allocation (the environments' hidden payoffs)
    policy = torch.nn.Sequential(torch.nn.Linear(CONTEXT, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, ACTIONS)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    reward_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    first_rewards = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        ctx = torch.randn(ENVS, CONTEXT, device=dev, generator=gen)  # SYNCSPY-CLEAN: allocator growth in the first steps
        logits = policy(ctx)  # SYNCSPY-CLEAN: allocator growth in the first steps
        dist = torch.distributions.Categorical(logits=logits)  # SYNCSPY-PROBLEM: argument validation tests a GPU tensor in Python every step
        actions = dist.sample()
        rewards = (ctx @ payoff).gather(1, actions.unsqueeze(1)).squeeze(1)
        baseline = rewards.mean()
        logp = dist.log_prob(actions)  # SYNCSPY-PROBLEM: sample validation tests a GPU tensor in Python every step
        loss = -((rewards - baseline).detach() * logp).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        reward_sum += baseline.detach()
        if step < 10:
            first_rewards += baseline.detach()

    late = (reward_sum - first_rewards).item() / (STEPS - 10)  # SYNCSPY-CLEAN: final read
    early = first_rewards.item() / 10  # SYNCSPY-CLEAN: final read
    improved = late > early
    print("t41_policy_gradient_validate_args: steps=%d improved=%d result=OK" % (STEPS, int(improved)))
    return 0 if improved else 1


if __name__ == "__main__":
    sys.exit(main())
