#!/usr/bin/env python3
"""examples/corpus/t154_clean_story_gpt_repetition_penalty_gather_where.py: corpus workload
(PyTorch), CLEAN. The story generator of t149 (a GPT-2-style model of four blocks of width 384,
8 prompts of 12 tokens continued by 48 greedy tokens, the CTRL repetition penalty 1.3) with the
penalty applied on the device the way Hugging Face's current `RepetitionPenaltyLogitsProcessor`
does it (the fix of t149): `score = torch.gather(lprobs, 1, input_ids)`,
`torch.where(score < 0, score * penalty, score / penalty)`, `lprobs.scatter_(1, input_ids,
score)` (a token repeated in a row gathers and scatters the same value, so the order of the
duplicate writes does not matter). No `.tolist()` per sequence and no Python `if` per previous
token: nothing in the decoding loop reads the GPU. The device penalty is checked after the loop
against the per-token loop of t149, run on the CPU on the last step's scores.
Clean: all of it; the marked lines are setup (the prompts and the model uploaded once),
allocator growth in the first steps (the forward pass over a growing sequence), the generated
tokens and the check's inputs read once after the loop.
Per step on an H100 (estimated from the sizes, fp32 without TF32): the forward pass over 8
sequences of 13-60 tokens, about 0.5-1 ms.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB, WIDTH, HEADS, LAYERS, CONTEXT = 4096, 384, 6, 4, 64
BATCH, PROMPT_LEN, NEW_TOKENS, PENALTY = 8, 12, 48, 1.3


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(WIDTH), torch.nn.LayerNorm(WIDTH)
        self.qkv, self.proj = torch.nn.Linear(WIDTH, 3 * WIDTH), torch.nn.Linear(WIDTH, WIDTH)
        self.fc, self.out = torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.Linear(4 * WIDTH, WIDTH)
        self.register_buffer("causal", torch.ones(CONTEXT, CONTEXT).tril().bool(), persistent=False)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(WIDTH // HEADS)
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
        x = x + self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class StoryGPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(VOCAB, WIDTH), torch.nn.Embedding(CONTEXT, WIDTH)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = torch.nn.LayerNorm(WIDTH)

    def forward(self, ids):
        x = self.tok(ids) + self.pos.weight[:ids.size(1)]
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.tok.weight.t()


def repetition_penalty(lprobs, input_ids, penalty):
    """repetition penalty (from CTRL paper https://arxiv.org/abs/1909.05858), on the device."""
    score = torch.gather(lprobs, 1, input_ids)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return lprobs.scatter_(1, input_ids, score)


def repetition_penalty_loop(lprobs, prev_output_tokens, penalty):
    """t149's per-token reference, for the check after the loop, on the CPU."""
    for i in range(lprobs.size(0)):
        for previous_token in set(prev_output_tokens[i].tolist()):
            if lprobs[i, previous_token] < 0:
                lprobs[i, previous_token] *= penalty
            else:
                lprobs[i, previous_token] /= penalty
    return lprobs


@torch.no_grad()
def generate(model, input_ids, max_new_tokens):
    for _ in range(max_new_tokens):
        logits = model(input_ids)[:, -1, :]  # SYNCSPY-CLEAN: allocator growth, first steps
        lprobs = F.log_softmax(logits, dim=-1)
        lprobs = repetition_penalty(lprobs, input_ids, PENALTY)
        next_tokens = lprobs.argmax(dim=-1)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=1)
    return input_ids


def main():
    if not torch.cuda.is_available():
        print("t154_clean_story_gpt_repetition_penalty_gather_where: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    prompts = torch.randint(0, VOCAB, (BATCH, PROMPT_LEN), generator=torch.Generator().manual_seed(149))
    input_ids = prompts.to(dev)  # SYNCSPY-CLEAN: setup upload, once
    model = StoryGPT().eval().to(dev)  # SYNCSPY-CLEAN: setup upload (stand-in for a checkpoint)
    ids = generate(model, input_ids, NEW_TOKENS)
    out = ids.cpu()  # SYNCSPY-CLEAN: final read
    new = out[:, PROMPT_LEN:]
    with torch.no_grad():
        last = ids[:, :-1]
        lprobs = F.log_softmax(model(last)[:, -1, :], dim=-1)  # SYNCSPY-CLEAN: check after the loop
        dev_pen = repetition_penalty(lprobs.clone(), last, PENALTY).cpu()  # SYNCSPY-CLEAN: final read, check
        ref = repetition_penalty_loop(lprobs.cpu(), last.cpu(), PENALTY)  # SYNCSPY-CLEAN: final read, check
    ok = (out.shape == (BATCH, PROMPT_LEN + NEW_TOKENS) and torch.equal(out[:, :PROMPT_LEN], prompts)
          and int(new.min()) >= 0 and int(new.max()) < VOCAB and torch.allclose(dev_pen, ref))
    print("t154_clean_story_gpt_repetition_penalty_gather_where: prompts=%d prompt_len=%d new_tokens=%d "
          "vocab=%d result=%s" % (BATCH, PROMPT_LEN, NEW_TOKENS, VOCAB, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
