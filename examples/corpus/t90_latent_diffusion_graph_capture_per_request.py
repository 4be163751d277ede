#!/usr/bin/env python3
"""examples/corpus/t90_latent_diffusion_graph_capture_per_request.py: corpus workload
(PyTorch, CUDA graphs). A class-conditional latent-diffusion sampling service: every request
asks for 16 latents (4x16x16) of one class, sampled with 20 deterministic DDIM steps of a small
convolutional denoiser (GroupNorm residual blocks, sinusoidal time and class embeddings). To
cut launch overhead, `Sampler.generate` replays the denoiser from a CUDA graph, following the
whole-network capture example of the CUDA-graphs notes (warm-up on a side stream, then capture)
but inside the request: every request builds and captures a new `torch.cuda.CUDAGraph`.
`torch.cuda.graph.__enter__` (torch/cuda/graphs.py) calls `torch.cuda.synchronize()` and
`torch.cuda.empty_cache()` before `capture_begin` (the host waits for all queued work, and
the cached blocks go back to the driver), `__exit__` instantiates the graph, and the capture
draws its memory from the new graph's private pool, which the caching allocator has to
cudaMalloc each time. Capturing once, with static buffers kept across requests, removes all of
it (t13 does so).
Planted: the `with torch.cuda.graph(graph):` line in Sampler.generate (synchronize,
empty_cache, instantiation) and the captured denoiser call under it (the new private pool's
cudaMalloc), every request. The warm-up's and the DDIM update's allocations, which
`empty_cache` forces again every request, are their consequences and carry no marker.
Clean: setup (the model upload, the schedule kept as Python floats), the results buffer, the
final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

REQUESTS, BATCH, LATENT_C, LATENT_HW, CLASSES, STEPS, TRAIN_T = 30, 16, 4, 16, 10, 20, 1000


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float().unsqueeze(1) * freqs.unsqueeze(0)
    return torch.cat([torch.sin(args), torch.cos(args)], dim=1)


class ResBlock(torch.nn.Module):
    def __init__(self, c, edim):
        super().__init__()
        self.n1, self.n2 = torch.nn.GroupNorm(8, c), torch.nn.GroupNorm(8, c)
        self.c1, self.c2 = torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.Conv2d(c, c, 3, padding=1)
        self.emb = torch.nn.Linear(edim, 2 * c)

    def forward(self, x, emb):
        scale, shift = self.emb(emb)[:, :, None, None].chunk(2, dim=1)
        h = self.c1(F.silu(self.n1(x)))
        h = self.n2(h) * (1 + scale) + shift
        return x + self.c2(F.silu(h))


class Denoiser(torch.nn.Module):
    def __init__(self, ch=96, edim=128):
        super().__init__()
        self.edim = edim
        self.t_mlp = torch.nn.Sequential(torch.nn.Linear(edim, edim), torch.nn.SiLU(), torch.nn.Linear(edim, edim))
        self.label = torch.nn.Embedding(CLASSES, edim)
        self.inp = torch.nn.Conv2d(LATENT_C, ch, 3, padding=1)
        self.blocks = torch.nn.ModuleList([ResBlock(ch, edim) for _ in range(4)])
        self.out = torch.nn.Conv2d(ch, LATENT_C, 3, padding=1)

    def forward(self, x, t, y):
        emb = self.t_mlp(timestep_embedding(t, self.edim)) + self.label(y)
        h = self.inp(x)
        for blk in self.blocks:
            h = blk(h, emb)
        return self.out(F.silu(h))


class Sampler:
    def __init__(self, model, dev):
        self.model, self.dev = model, dev
        betas = [1e-4 + (0.02 - 1e-4) * i / (TRAIN_T - 1) for i in range(TRAIN_T)]
        self.abar, prod = [], 1.0
        for b in betas:
            prod *= 1.0 - b
            self.abar.append(prod)
        self.timesteps = list(range(TRAIN_T - 1, -1, -TRAIN_T // STEPS)) + [-1]

    @torch.no_grad()
    def generate(self, label, gen):
        static_x = torch.randn(BATCH, LATENT_C, LATENT_HW, LATENT_HW, device=self.dev, generator=gen)
        static_t = torch.zeros(BATCH, dtype=torch.long, device=self.dev)
        static_y = torch.full((BATCH,), label, dtype=torch.long, device=self.dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                self.model(static_x, static_t, static_y)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):  # SYNCSPY-PROBLEM: a new graph every request: synchronize() and empty_cache() on entry, instantiation on exit
            static_eps = self.model(static_x, static_t, static_y)  # SYNCSPY-PROBLEM: captured every request, into a new private memory pool (cudaMalloc)
        for t, t_prev in zip(self.timesteps[:-1], self.timesteps[1:]):
            a, a_prev = self.abar[t], (self.abar[t_prev] if t_prev >= 0 else 1.0)
            static_t.fill_(t)
            graph.replay()
            x0 = (static_x - math.sqrt(1.0 - a) * static_eps) / math.sqrt(a)
            static_x.copy_(math.sqrt(a_prev) * x0.clamp(-4.0, 4.0) + math.sqrt(1.0 - a_prev) * static_eps)
        return static_x.clone()


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(90)
    model = Denoiser().to(dev).eval()  # SYNCSPY-CLEAN: setup upload (stand-in for the checkpoint)
    sampler = Sampler(model, dev)
    stats = torch.zeros(REQUESTS, 3, device=dev)  # SYNCSPY-CLEAN: setup allocation

    for r in range(REQUESTS):
        latents = sampler.generate(r % CLASSES, gen)
        stats[r] = torch.stack([latents.mean(), latents.std(), latents.abs().max()])

    table = stats.cpu()  # SYNCSPY-CLEAN: final read
    ok = bool(torch.isfinite(table).all()) and bool((table[:, 1] > 0).all()) and tuple(latents.shape) == (BATCH, LATENT_C, LATENT_HW, LATENT_HW)
    print("t90_latent_diffusion_graph_capture_per_request: requests=%d batch=%d latent=%dx%dx%d ddim_steps=%d result=%s" % (REQUESTS, BATCH, LATENT_C, LATENT_HW, LATENT_HW, len(sampler.timesteps) - 1, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
