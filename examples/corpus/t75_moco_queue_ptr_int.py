#!/usr/bin/env python3
"""examples/corpus/t75_moco_queue_ptr_int.py: corpus workload (PyTorch). MoCo v2-style
contrastive pre-training of a small CNN: a query encoder trained with InfoNCE against a
momentum key encoder and a queue of 4096 negative keys. As in the reference implementation,
the queue and its write pointer are registered buffers (so they are saved with the model and
live on the GPU), and `_dequeue_and_enqueue` starts with `ptr = int(self.queue_ptr)`:
`int()` of a CUDA tensor calls `Tensor.__int__`, i.e. `.item()`, a blocking device-to-host
copy that waits for the step's forward pass and the key encoder's momentum update, every step.
The pointer only ever advances by the batch size, so keeping it as a Python int next to the
buffer (writing the buffer for checkpoints only) removes the read.
Planted: the `int(self.queue_ptr)` line in MoCo._dequeue_and_enqueue, every step.
Clean: setup (the image pool, the key encoder's copy, the queue), allocator growth in the
first steps, the device-to-device enqueue, the `fill_` of the pointer buffer with a Python int,
the final read.
"""
import copy
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, POOL, IMG, DIM, QUEUE, MOMENTUM, TAU = 50, 128, 1024, 32, 128, 4096, 0.99, 0.2


def small_resnet():
    def block(cin, cout):
        return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True), torch.nn.MaxPool2d(2))
    return torch.nn.Sequential(block(3, 32), block(32, 64), block(64, 128), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(128, 256), torch.nn.ReLU(inplace=True), torch.nn.Linear(256, DIM))


class MoCo(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.K, self.m, self.T = QUEUE, MOMENTUM, TAU
        self.encoder_q = small_resnet()
        self.encoder_k = copy.deepcopy(self.encoder_q)
        for p in self.encoder_k.parameters():
            p.requires_grad_(False)
        self.register_buffer("queue", F.normalize(torch.randn(DIM, QUEUE), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for pk, pq in zip(self.encoder_k.parameters(), self.encoder_q.parameters()):
            pk.mul_(self.m).add_(pq, alpha=1.0 - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)  # SYNCSPY-PROBLEM: int() of a CUDA buffer is .item() (blocking D2H), every step
        self.queue[:, ptr:ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K
        self.queue_ptr.fill_(ptr)

    def forward(self, im_q, im_k):
        q = F.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            k = F.normalize(self.encoder_k(im_k), dim=1)
        l_pos = (q * k).sum(dim=1, keepdim=True)
        l_neg = q @ self.queue.clone().detach()
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        self._dequeue_and_enqueue(k)
        return logits


def augment(x, gen):
    b = x.shape[0]
    flip = torch.rand(b, 1, 1, 1, device=x.device, generator=gen) < 0.5
    x = torch.where(flip, x.flip(-1), x)
    shift = torch.randint(-3, 4, (2,), device="cpu").tolist()  # host RNG for the crop offset: a CPU tensor, no device read
    x = torch.roll(x, shifts=(shift[0], shift[1]), dims=(2, 3))
    jitter = 0.8 + 0.4 * torch.rand(b, 3, 1, 1, device=x.device, generator=gen)
    return x * jitter + 0.05 * torch.randn(x.shape, device=x.device, generator=gen)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(9)
    protos = torch.rand(16, 3, IMG, IMG, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    pool = protos[torch.arange(POOL, device=dev) % 16] + 0.1 * torch.randn(POOL, 3, IMG, IMG, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    model = MoCo().to(dev)  # SYNCSPY-CLEAN: setup upload (encoders and queue)
    opt = torch.optim.SGD(model.encoder_q.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
    labels = torch.zeros(BATCH, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation, the positives are column 0
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        s = (step * BATCH) % POOL
        images = pool[s:s + BATCH]
        logits = model(augment(images, gen), augment(images, gen))  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
        loss_sum += loss.detach()

    mean_loss = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    final_ptr = int(model.queue_ptr.item())  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and final_ptr == (STEPS * BATCH) % QUEUE
    print("t75_moco_queue_ptr_int: steps=%d batch=%d queue=%d ptr=%d result=OK" % (STEPS, BATCH, QUEUE, final_ptr))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
