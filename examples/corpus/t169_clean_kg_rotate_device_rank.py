#!/usr/bin/env python3
"""examples/corpus/t169_clean_kg_rotate_device_rank.py: corpus workload (PyTorch).
Knowledge graph completion, clean: the t164 RotatE model and training on the same synthetic
torus graph (500 entities, 8 shifting relations, self-adversarial negative sampling on the
GPU), with the two fixes of t164: `gamma` and `embedding_range` kept as Python floats (they
are fixed hyperparameters, so the score computation reads nothing from the GPU), and
`test_step` ranking a whole batch of queries on the device,
`(argsort == positive_arg.unsqueeze(1)).int().argmax(dim=1)` (exactly one match a row), the
MRR, MR and HITS@1/3/10 summed on the GPU and read with one `.tolist()` per evaluation (every
20 steps, the program's `valid_steps`, and once after the loop). Checked after the loop
against ranks counted on CPU copies of the scores.
Clean: setup (the graph built on the GPU, the model uploaded), allocator growth in the first
steps (forward, backward, Adam), the metrics read once per evaluation, the final reads.
Per step on an H100 (estimated from the sizes, fp32 without TF32): 256 triples x 64 negatives
x 32 complex dimensions, forward and backward, well under 1 ms, launch-bound; an evaluation
is 16 batches of 16 x 500 scores and argsorts, about 2 ms of kernels.
"""
import math
import sys

import torch
import torch.nn.functional as F

A, B, NREL, HIDDEN, GAMMA, EPSILON = 20, 25, 8, 32, 6.0, 2.0
N_TEST, BATCH, NEG, TEST_BATCH, STEPS, VALID_STEPS, LR, ADV_T = 128, 256, 64, 16, 60, 20, 0.02, 1.0
NENTITY = A * B


class KGEModel(torch.nn.Module):
    def __init__(self, nentity, nrelation, hidden_dim, gamma):
        super().__init__()
        self.epsilon = EPSILON
        self.gamma = float(gamma)
        self.embedding_range = (self.gamma + self.epsilon) / hidden_dim
        self.entity_embedding = torch.nn.Parameter(torch.zeros(nentity, hidden_dim * 2))
        torch.nn.init.uniform_(self.entity_embedding, a=-self.embedding_range, b=self.embedding_range)
        self.relation_embedding = torch.nn.Parameter(torch.zeros(nrelation, hidden_dim))
        torch.nn.init.uniform_(self.relation_embedding, a=-self.embedding_range, b=self.embedding_range)

    def forward(self, sample, mode="single"):
        if mode == "single":
            head = torch.index_select(self.entity_embedding, dim=0, index=sample[:, 0]).unsqueeze(1)
            relation = torch.index_select(self.relation_embedding, dim=0, index=sample[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, dim=0, index=sample[:, 2]).unsqueeze(1)
        elif mode == "head-batch":
            tail_part, head_part = sample
            batch_size, negative_sample_size = head_part.size(0), head_part.size(1)
            head = torch.index_select(self.entity_embedding, dim=0, index=head_part.view(-1)).view(batch_size, negative_sample_size, -1)
            relation = torch.index_select(self.relation_embedding, dim=0, index=tail_part[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, dim=0, index=tail_part[:, 2]).unsqueeze(1)
        else:
            head_part, tail_part = sample
            batch_size, negative_sample_size = tail_part.size(0), tail_part.size(1)
            head = torch.index_select(self.entity_embedding, dim=0, index=head_part[:, 0]).unsqueeze(1)
            relation = torch.index_select(self.relation_embedding, dim=0, index=head_part[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, dim=0, index=tail_part.view(-1)).view(batch_size, negative_sample_size, -1)
        return self.RotatE(head, relation, tail, mode)

    def RotatE(self, head, relation, tail, mode):
        pi = 3.14159265358979323846
        re_head, im_head = torch.chunk(head, 2, dim=2)
        re_tail, im_tail = torch.chunk(tail, 2, dim=2)
        # Make phases of relations uniformly distributed in [-pi, pi]
        phase_relation = relation / (self.embedding_range / pi)
        re_relation, im_relation = torch.cos(phase_relation), torch.sin(phase_relation)
        if mode == "head-batch":
            re_score = re_relation * re_tail + im_relation * im_tail
            im_score = re_relation * im_tail - im_relation * re_tail
            re_score, im_score = re_score - re_head, im_score - im_head
        else:
            re_score = re_head * re_relation - im_head * im_relation
            im_score = re_head * im_relation + im_head * re_relation
            re_score, im_score = re_score - re_tail, im_score - im_tail
        score = torch.stack([re_score, im_score], dim=0).norm(dim=0)
        score = self.gamma - score.sum(dim=2)
        return score


def train_step(model, optimizer, positive_sample, negative_sample, mode):
    model.train()
    optimizer.zero_grad()
    negative_score = model((positive_sample, negative_sample), mode=mode)  # SYNCSPY-CLEAN: allocator growth in the first steps
    negative_score = (F.softmax(negative_score * ADV_T, dim=1).detach() * F.logsigmoid(-negative_score)).sum(dim=1)
    positive_score = F.logsigmoid(model(positive_sample)).squeeze(dim=1)  # SYNCSPY-CLEAN: allocator growth in the first steps
    positive_sample_loss = -positive_score.mean()
    negative_sample_loss = -negative_score.mean()
    loss = (positive_sample_loss + negative_sample_loss) / 2
    loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
    optimizer.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
    return loss.detach()


@torch.no_grad()
def test_step(model, test_triples, all_ids):
    """KnowledgeGraphEmbedding's test_step with the ranks of a batch computed on the device."""
    model.eval()
    sums = torch.zeros(5, device=all_ids.device)  # SYNCSPY-CLEAN: once per evaluation, an accumulator
    ranks = []
    for mode in ("head-batch", "tail-batch"):
        for s in range(0, test_triples.size(0), TEST_BATCH):
            positive_sample = test_triples[s:s + TEST_BATCH]
            batch_size = positive_sample.size(0)
            score = model((positive_sample, all_ids[:batch_size]), mode)  # SYNCSPY-CLEAN: allocator growth, first evaluation
            argsort = torch.argsort(score, dim=1, descending=True)
            positive_arg = positive_sample[:, 0] if mode == "head-batch" else positive_sample[:, 2]
            ranking = 1 + (argsort == positive_arg.unsqueeze(1)).int().argmax(dim=1)
            ranks.append(ranking)
            r = ranking.double()
            sums += torch.stack([(1.0 / r).sum(), r.sum(), (r <= 1).sum(), (r <= 3).sum(), (r <= 10).sum()]).to(sums.dtype)
    values = (sums / (2 * test_triples.size(0))).tolist()  # SYNCSPY-CLEAN: one read per evaluation (every 20 steps)
    return dict(zip(("MRR", "MR", "HITS@1", "HITS@3", "HITS@10"), values)), torch.cat(ranks)


def make_graph(gen, dev):
    """Entities on a 20 x 25 torus, each relation a fixed shift; a random test split."""
    a = torch.arange(NENTITY, device=dev) // B
    b = torch.arange(NENTITY, device=dev) % B
    da = torch.randint(1, A, (NREL,), device=dev, generator=gen)
    db = torch.randint(1, B, (NREL,), device=dev, generator=gen)
    heads = torch.arange(NENTITY, device=dev).repeat_interleave(NREL)
    rels = torch.arange(NREL, device=dev).repeat(NENTITY)
    tails = ((a[heads] + da[rels]) % A) * B + (b[heads] + db[rels]) % B
    triples = torch.stack([heads, rels, tails], dim=1)
    perm = torch.randperm(triples.size(0), device=dev, generator=gen)
    return triples[perm[N_TEST:]], triples[perm[:N_TEST]]


def main():
    if not torch.cuda.is_available():
        print("t169_clean_kg_rotate_device_rank: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(164)
    train_triples, test_triples = make_graph(gen, dev)  # SYNCSPY-CLEAN: setup, the graph built on the GPU once
    all_ids = torch.arange(NENTITY, device=dev).repeat(TEST_BATCH, 1)  # SYNCSPY-CLEAN: setup allocation
    model = KGEModel(NENTITY, NREL, HIDDEN, GAMMA).to(dev)  # SYNCSPY-CLEAN: setup upload
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=LR)
    losses, valid = [], []

    for step in range(STEPS):
        idx = torch.randint(0, train_triples.size(0), (BATCH,), device=dev, generator=gen)
        negative_sample = torch.randint(0, NENTITY, (BATCH, NEG), device=dev, generator=gen)
        mode = "head-batch" if step % 2 == 0 else "tail-batch"
        losses.append(train_step(model, optimizer, train_triples[idx], negative_sample, mode))
        if step % VALID_STEPS == 0:
            valid.append(test_step(model, test_triples, all_ids)[0])
    metrics, ranks = test_step(model, test_triples, all_ids)

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    with torch.no_grad():
        full = torch.cat([model((test_triples[s:s + TEST_BATCH], all_ids), m) for m in ("head-batch", "tail-batch")
                          for s in range(0, N_TEST, TEST_BATCH)]).cpu()  # SYNCSPY-CLEAN: final read, for the check
    target = torch.cat([test_triples[:, 0], test_triples[:, 2]]).cpu()  # SYNCSPY-CLEAN: final read, for the check
    ref = (1 + (full > full.gather(1, target[:, None])).sum(dim=1)).tolist()
    ranks = ranks.tolist()  # SYNCSPY-CLEAN: final read, for the check
    ok = (ranks == ref and len(valid) == STEPS // VALID_STEPS and bool(torch.isfinite(hist).all())
          and abs(metrics["MRR"] - sum(1.0 / r for r in ref) / len(ref)) < 1e-5
          and metrics["MRR"] > 2 * valid[0]["MRR"] and metrics["HITS@10"] >= metrics["HITS@3"] >= metrics["HITS@1"]
          and float(hist[-10:].mean()) < float(hist[:10].mean()))
    print("t169_clean_kg_rotate_device_rank: entities=%d relations=%d steps=%d evaluations=%d queries=%d "
          "result=%s" % (NENTITY, NREL, STEPS, len(valid) + 1, len(ranks), "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
