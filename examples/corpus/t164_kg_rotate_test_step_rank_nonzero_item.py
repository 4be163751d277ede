#!/usr/bin/env python3
"""examples/corpus/t164_kg_rotate_test_step_rank_nonzero_item.py: corpus workload (PyTorch).
Knowledge graph completion: RotatE (the KnowledgeGraphEmbedding code base's `KGEModel`,
complex entity embeddings of 32 dimensions, relations as rotations, self-adversarial negative
sampling, `--uni_weight`) trained on a synthetic graph of 500 entities (a 20 x 25 torus) and 8
relations that shift it, 4,000 triples, 128 held out for the test. Triples, negatives and the
head/tail alternation of `BidirectionalOneShotIterator` are sampled on the GPU. Two shapes
from that code base, the most copied knowledge-graph embedding code:
(1) `KGEModel.RotatE` keeps `gamma` and `embedding_range` as non-trainable `nn.Parameter`s
(moved to the GPU with the model) and reads them with `.item()` in every score computation:
`phase_relation = relation/(self.embedding_range.item()/pi)` and
`score = self.gamma.item() - score.sum(dim = 2)`, two blocking reads per forward, two forwards
per training step (negatives, positives), the first behind the previous step's Adam update;
(2) `test_step` ranks each test triple in a Python loop over the batch:
`ranking = (argsort[i, :] == positive_arg[i]).nonzero()` (`nonzero` reads its output size on
the host: the torch.nonzero note says it "causes host-device synchronization") and
`ranking = 1 + ranking.item()`, two blocking reads per query, 256 queries per evaluation
(head-batch and tail-batch), run every 20 training steps (`valid_steps`) and once after the
loop (the Performance Tuning Guide lists `.item()` and `nonzero` among the CPU-GPU
synchronizations to avoid; `torch.cuda.set_sync_debug_mode("warn")` reports them).
Fix (t169): gamma and the embedding range as Python floats, and the rank of every query of a
batch at once on the device, `(argsort == positive_arg.unsqueeze(1)).int().argmax(dim=1)`,
the metrics summed on the GPU and read once per evaluation.
Planted: the two `.item()` lines in `RotatE` (every forward) and the `nonzero` and `.item()`
lines of the ranking loop in `test_step` (every evaluation, every query).
Clean: setup (the graph built on the GPU, the model uploaded), allocator growth in the first
steps (forward, backward, Adam), the final read for the check.
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
        self.gamma = torch.nn.Parameter(torch.Tensor([gamma]), requires_grad=False)
        self.embedding_range = torch.nn.Parameter(torch.Tensor([(self.gamma.item() + self.epsilon) / hidden_dim]), requires_grad=False)
        self.entity_embedding = torch.nn.Parameter(torch.zeros(nentity, hidden_dim * 2))
        torch.nn.init.uniform_(self.entity_embedding, a=-self.embedding_range.item(), b=self.embedding_range.item())
        self.relation_embedding = torch.nn.Parameter(torch.zeros(nrelation, hidden_dim))
        torch.nn.init.uniform_(self.relation_embedding, a=-self.embedding_range.item(), b=self.embedding_range.item())

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
        phase_relation = relation / (self.embedding_range.item() / pi)  # SYNCSPY-PROBLEM: .item() of a CUDA Parameter, every forward
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
        score = self.gamma.item() - score.sum(dim=2)  # SYNCSPY-PROBLEM: .item() of a CUDA Parameter, every forward
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
    """The ranking loop of KnowledgeGraphEmbedding's test_step (no filter: the relations are bijections)."""
    model.eval()
    logs, ranks = [], []
    for mode in ("head-batch", "tail-batch"):
        for s in range(0, test_triples.size(0), TEST_BATCH):
            positive_sample = test_triples[s:s + TEST_BATCH]
            batch_size = positive_sample.size(0)
            score = model((positive_sample, all_ids[:batch_size]), mode)  # SYNCSPY-CLEAN: allocator growth, first evaluation
            # Explicitly sort all the entities to ensure that there is no test exposure bias
            argsort = torch.argsort(score, dim=1, descending=True)
            positive_arg = positive_sample[:, 0] if mode == "head-batch" else positive_sample[:, 2]
            for i in range(batch_size):
                # Notice that argsort is not ranking
                ranking = (argsort[i, :] == positive_arg[i]).nonzero()  # SYNCSPY-PROBLEM: nonzero per query: host-read size
                assert ranking.size(0) == 1
                # ranking + 1 is the true ranking used in evaluation metrics
                ranking = 1 + ranking.item()  # SYNCSPY-PROBLEM: .item() per query
                ranks.append(ranking)
                logs.append({"MRR": 1.0 / ranking, "MR": float(ranking), "HITS@1": 1.0 if ranking <= 1 else 0.0,
                             "HITS@3": 1.0 if ranking <= 3 else 0.0, "HITS@10": 1.0 if ranking <= 10 else 0.0})
    metrics = {metric: sum(log[metric] for log in logs) / len(logs) for metric in logs[0]}
    return metrics, ranks


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
        print("t164_kg_rotate_test_step_rank_nonzero_item: no CUDA device, result=SKIP")
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
    ok = (ranks == ref and len(valid) == STEPS // VALID_STEPS and bool(torch.isfinite(hist).all())
          and abs(metrics["MRR"] - sum(1.0 / r for r in ref) / len(ref)) < 1e-12
          and metrics["MRR"] > 2 * valid[0]["MRR"] and metrics["HITS@10"] >= metrics["HITS@3"] >= metrics["HITS@1"]
          and float(hist[-10:].mean()) < float(hist[:10].mean()))
    print("t164_kg_rotate_test_step_rank_nonzero_item: entities=%d relations=%d steps=%d evaluations=%d queries=%d "
          "result=%s" % (NENTITY, NREL, STEPS, len(valid) + 1, len(ranks), "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
