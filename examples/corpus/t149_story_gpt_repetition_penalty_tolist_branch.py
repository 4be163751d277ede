#!/usr/bin/env python3
"""examples/corpus/t149_story_gpt_repetition_penalty_tolist_branch.py: corpus workload (PyTorch).
Inference: a small GPT-2-style story generator (four pre-norm blocks of width 384, six heads,
a 4,096-token vocabulary, weights from a seeded stand-in for a checkpoint) continues a batch of
8 prompts of 12 tokens by 48 greedy tokens, with the CTRL repetition penalty (1.3) applied the
way early Hugging Face `generate` did in `enforce_repetition_penalty_`: for each sequence,
`for previous_token in set(prev_output_tokens[i].tolist()):` and then
`if lprobs[i, previous_token] < 0:` to multiply or divide the token's score. `.tolist()` of a
CUDA tensor copies it to the host and waits (the Performance Tuning Guide lists `.cpu()`-style
copies among the CPU-GPU synchronizations to avoid), and an `if` on a comparison of a CUDA
scalar calls `Tensor.__bool__`, an `.item()` ("python control flow which depends on results of
operations performed on CUDA tensors", the same guide; `torch.cuda.set_sync_debug_mode("warn")`
reports each one). Every decoding step does 8 `.tolist()` reads (the first waits for the
forward pass over the whole sequence) and one blocking `if` per distinct previous token of each
sequence, 100-400 reads a step, each a round trip while the GPU idles.
Fix (t154): the penalty as today's `RepetitionPenaltyLogitsProcessor` writes it, on the device:
`gather` the previous tokens' scores, `torch.where(score < 0, score * p, score / p)`,
`scatter_` them back.
Planted: the `for previous_token in set(prev_output_tokens[i].tolist()):` line (expensive) and
the `if lprobs[i, previous_token] < 0:` line (cheap, one read per distinct token), every
decoding step (one problem, two lines).
Clean: setup (the prompts and the model uploaded once), allocator growth in the first steps
(the forward pass over a growing sequence), the generated tokens read once after the loop.
Per step on an H100 (estimated from the sizes, fp32 without TF32): the forward pass over 8
sequences of 13-60 tokens, about 0.5-1 ms, without the penalty's reads (about 5 ms more).
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


def enforce_repetition_penalty_(lprobs, batch_size, prev_output_tokens, repetition_penalty):
    """repetition penalty (from CTRL paper https://arxiv.org/abs/1909.05858)."""
    for i in range(batch_size):
        for previous_token in set(prev_output_tokens[i].tolist()):  # SYNCSPY-PROBLEM: .tolist() per sequence, every step
            if lprobs[i, previous_token] < 0:  # SYNCSPY-PROBLEM: bool() of a CUDA scalar, per token
                lprobs[i, previous_token] *= repetition_penalty
            else:
                lprobs[i, previous_token] /= repetition_penalty


@torch.no_grad()
def generate(model, input_ids, max_new_tokens):
    for _ in range(max_new_tokens):
        logits = model(input_ids)[:, -1, :]  # SYNCSPY-CLEAN: allocator growth, first steps
        lprobs = F.log_softmax(logits, dim=-1)
        enforce_repetition_penalty_(lprobs, input_ids.size(0), input_ids, PENALTY)
        next_tokens = lprobs.argmax(dim=-1)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=1)
    return input_ids


def main():
    if not torch.cuda.is_available():
        print("t149_story_gpt_repetition_penalty_tolist_branch: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    prompts = torch.randint(0, VOCAB, (BATCH, PROMPT_LEN), generator=torch.Generator().manual_seed(149))
    input_ids = prompts.to(dev)  # SYNCSPY-CLEAN: setup upload, once
    model = StoryGPT().eval().to(dev)  # SYNCSPY-CLEAN: setup upload (stand-in for a checkpoint)
    out = generate(model, input_ids, NEW_TOKENS).cpu()  # SYNCSPY-CLEAN: final read
    new = out[:, PROMPT_LEN:]
    ok = (out.shape == (BATCH, PROMPT_LEN + NEW_TOKENS) and torch.equal(out[:, :PROMPT_LEN], prompts)
          and int(new.min()) >= 0 and int(new.max()) < VOCAB)
    print("t149_story_gpt_repetition_penalty_tolist_branch: prompts=%d prompt_len=%d new_tokens=%d "
          "vocab=%d result=%s" % (BATCH, PROMPT_LEN, NEW_TOKENS, VOCAB, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
