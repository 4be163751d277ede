#!/usr/bin/env python3
"""examples/corpus/t168_clean_asr_transformer_device_accuracy.py: corpus workload (PyTorch).
Speech recognition, clean: the t163 attention encoder-decoder (ESPnet's shape: Conv2d
subsampling by 4, three encoder and two decoder layers, attention loss only) on the same
synthetic utterances, with `th_accuracy` computed as device sums (the fix of t163):
`((pad_pred == pad_targets) & mask).sum()` and `mask.sum()` stay on the GPU, the trainer adds
the step's accuracy to a per-step device table and an epoch sum, and reads the epoch's mean
once per epoch outside the step loop. Nothing in the step loop reads the GPU: the host queues
the backward pass right behind the forward pass. Checked after the loop against ESPnet's
`masked_select` formula on CPU copies of the last step's output.
Clean: setup (the corpus built on the GPU, the model uploaded, the accuracy table allocated),
the per-epoch device shuffle and accumulators, allocator growth in the first steps (forward,
backward, Adam), the per-epoch reads, the final reads.
Per step on an H100 (estimated from the sizes, fp32 without TF32): 16 utterances of 64 frames,
a 64-wide encoder over 15 frames and a decoder over 9 tokens, forward and backward, about
2 ms, launch-bound.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

N_UTT, MAX_TOK, T_MAX, FEAT, VOCAB = 256, 8, 64, 24, 12
D_MODEL, HEADS, FFN, ENC_LAYERS, DEC_LAYERS = 64, 4, 256, 3, 2
BATCH, EPOCHS, PEAK_LR, WARMUP, DROPOUT = 16, 4, 3e-3, 12, 0.1
SOS = EOS = VOCAB - 1
IGNORE_ID = -1


def make_pad_mask(lengths, max_len):
    """WeNet's make_pad_mask: True at the padded positions, on the lengths' device."""
    seq_range = torch.arange(0, max_len, dtype=torch.int64, device=lengths.device)
    return seq_range.unsqueeze(0) >= lengths.unsqueeze(-1)


def subsequent_mask(size, device):
    ret = torch.ones(size, size, device=device, dtype=torch.bool)
    return torch.tril(ret, out=ret)


def th_accuracy(pad_outputs, pad_targets, ignore_label):
    """ESPnet's th_accuracy with fixed shapes: the accuracy as a 0-dim device tensor."""
    pad_pred = pad_outputs.view(pad_targets.size(0), pad_targets.size(1), pad_outputs.size(1)).argmax(2)
    mask = pad_targets != ignore_label
    numerator = ((pad_pred == pad_targets) & mask).sum()
    denominator = mask.sum()
    return numerator.float() / denominator


class MultiHeadedAttention(torch.nn.Module):
    def __init__(self, n_head, n_feat, dropout_rate):
        super().__init__()
        self.d_k, self.h = n_feat // n_head, n_head
        self.linear_q, self.linear_k, self.linear_v, self.linear_out = (torch.nn.Linear(n_feat, n_feat) for _ in range(4))
        self.dropout = torch.nn.Dropout(dropout_rate)

    def forward(self, query, key, value, mask):
        n_batch = query.size(0)
        q = self.linear_q(query).view(n_batch, -1, self.h, self.d_k).transpose(1, 2)
        k = self.linear_k(key).view(n_batch, -1, self.h, self.d_k).transpose(1, 2)
        v = self.linear_v(value).view(n_batch, -1, self.h, self.d_k).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        mask = mask.unsqueeze(1).eq(0)
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
        x = torch.matmul(self.dropout(attn), v).transpose(1, 2).contiguous().view(n_batch, -1, self.h * self.d_k)
        return self.linear_out(x)


class FeedForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w_1, self.w_2 = torch.nn.Linear(D_MODEL, FFN), torch.nn.Linear(FFN, D_MODEL)
        self.dropout = torch.nn.Dropout(DROPOUT)

    def forward(self, x):
        return self.w_2(self.dropout(torch.relu(self.w_1(x))))


class PositionalEncoding(torch.nn.Module):
    def __init__(self, max_len=512):
        super().__init__()
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, D_MODEL, 2, dtype=torch.float32) * -(math.log(10000.0) / D_MODEL))
        pe = torch.zeros(max_len, D_MODEL)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe[None])
        self.xscale = math.sqrt(D_MODEL)
        self.dropout = torch.nn.Dropout(DROPOUT)

    def forward(self, x):
        return self.dropout(x * self.xscale + self.pe[:, :x.size(1)])


class Conv2dSubsampling(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Sequential(torch.nn.Conv2d(1, D_MODEL, 3, 2), torch.nn.ReLU(),
                                        torch.nn.Conv2d(D_MODEL, D_MODEL, 3, 2), torch.nn.ReLU())
        self.out = torch.nn.Linear(D_MODEL * (((FEAT - 1) // 2 - 1) // 2), D_MODEL)
        self.pos_enc = PositionalEncoding()

    def forward(self, x, x_mask):
        x = self.conv(x.unsqueeze(1))
        b, c, t, f = x.size()
        x = self.pos_enc(self.out(x.transpose(1, 2).contiguous().view(b, t, c * f)))
        return x, x_mask[:, :, :-2:2][:, :, :-2:2]


class EncoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.feed_forward = MultiHeadedAttention(HEADS, D_MODEL, DROPOUT), FeedForward()
        self.norm1, self.norm2 = torch.nn.LayerNorm(D_MODEL), torch.nn.LayerNorm(D_MODEL)
        self.dropout = torch.nn.Dropout(DROPOUT)

    def forward(self, x, mask):
        h = self.norm1(x)
        x = x + self.dropout(self.self_attn(h, h, h, mask))
        return x + self.dropout(self.feed_forward(self.norm2(x))), mask


class DecoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.src_attn = MultiHeadedAttention(HEADS, D_MODEL, DROPOUT), MultiHeadedAttention(HEADS, D_MODEL, DROPOUT)
        self.feed_forward = FeedForward()
        self.norm1, self.norm2, self.norm3 = (torch.nn.LayerNorm(D_MODEL) for _ in range(3))
        self.dropout = torch.nn.Dropout(DROPOUT)

    def forward(self, tgt, tgt_mask, memory, memory_mask):
        h = self.norm1(tgt)
        x = tgt + self.dropout(self.self_attn(h, h, h, tgt_mask))
        x = x + self.dropout(self.src_attn(self.norm2(x), memory, memory, memory_mask))
        return x + self.dropout(self.feed_forward(self.norm3(x)))


class TransformerASR(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Conv2dSubsampling()
        self.encoders = torch.nn.ModuleList(EncoderLayer() for _ in range(ENC_LAYERS))
        self.after_norm = torch.nn.LayerNorm(D_MODEL)
        self.dec_embed = torch.nn.Sequential(torch.nn.Embedding(VOCAB, D_MODEL), PositionalEncoding())
        self.decoders = torch.nn.ModuleList(DecoderLayer() for _ in range(DEC_LAYERS))
        self.dec_norm, self.output_layer = torch.nn.LayerNorm(D_MODEL), torch.nn.Linear(D_MODEL, VOCAB)

    def encode(self, xs_pad, ilens):
        masks = (~make_pad_mask(ilens, xs_pad.size(1)))[:, None, :]
        xs_pad, masks = self.embed(xs_pad, masks)
        for layer in self.encoders:
            xs_pad, masks = layer(xs_pad, masks)
        return self.after_norm(xs_pad), masks

    def decode(self, memory, memory_mask, ys_in_pad, ys_in_lens):
        maxlen = ys_in_pad.size(1)
        tgt_mask = (~make_pad_mask(ys_in_lens, maxlen))[:, None, :] & subsequent_mask(maxlen, ys_in_pad.device)[None]
        x = self.dec_embed(ys_in_pad)
        for layer in self.decoders:
            x = layer(x, tgt_mask, memory, memory_mask)
        return self.output_layer(self.dec_norm(x))

    def forward(self, speech, speech_lengths, ys_in_pad, ys_out_pad, ys_in_lens):
        encoder_out, encoder_mask = self.encode(speech, speech_lengths)
        decoder_out = self.decode(encoder_out, encoder_mask, ys_in_pad, ys_in_lens)
        loss_att = F.cross_entropy(decoder_out.view(-1, VOCAB), ys_out_pad.view(-1), ignore_index=IGNORE_ID, label_smoothing=0.1)
        acc_att = th_accuracy(decoder_out.view(-1, VOCAB), ys_out_pad, ignore_label=IGNORE_ID)
        self.last = (decoder_out.detach(), ys_out_pad)
        return loss_att, acc_att


def make_corpus(gen, dev):
    """Token sequences rendered as noisy frames of per-token prototypes; sos/eos targets."""
    lens = torch.randint(6, MAX_TOK + 1, (N_UTT,), device=dev, generator=gen)
    pos = torch.arange(MAX_TOK + 1, device=dev)
    tok = torch.randint(1, VOCAB - 1, (N_UTT, MAX_TOK), device=dev, generator=gen)
    dur = torch.randint(4, 8, (N_UTT, MAX_TOK), device=dev, generator=gen) * (pos[:-1] < lens[:, None])
    cum = dur.cumsum(1)
    ilens = cum[:, -1].contiguous()
    frames = torch.arange(T_MAX, device=dev).expand(N_UTT, T_MAX).contiguous()
    idx = torch.searchsorted(cum, frames, right=True).clamp_(max=MAX_TOK - 1)
    proto = torch.randn(VOCAB, FEAT, device=dev, generator=gen)
    feats = proto[tok.gather(1, idx)] + 0.6 * torch.randn(N_UTT, T_MAX, FEAT, device=dev, generator=gen)
    feats = feats * (frames < ilens[:, None])[..., None]
    tok_ext = torch.cat([tok, torch.zeros_like(tok[:, :1])], 1)
    ys_out = torch.where(pos < lens[:, None], tok_ext, torch.where(pos == lens[:, None], EOS, IGNORE_ID))
    ys_in = torch.cat([torch.full_like(tok[:, :1], SOS), torch.where(pos[:-1] < lens[:, None], tok, EOS)], 1)
    return feats, ilens, ys_in, ys_out, lens + 1


def main():
    if not torch.cuda.is_available():
        print("t168_clean_asr_transformer_device_accuracy: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(163)
    feats, ilens, ys_in, ys_out, ys_in_lens = make_corpus(gen, dev)  # SYNCSPY-CLEAN: setup, the corpus built on the GPU once
    model = TransformerASR().to(dev)  # SYNCSPY-CLEAN: setup upload
    optimizer = torch.optim.Adam(model.parameters(), lr=PEAK_LR, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / WARMUP, (WARMUP / (s + 1)) ** 0.5))
    steps_per_epoch = N_UTT // BATCH
    acc_table = torch.zeros(EPOCHS * steps_per_epoch, device=dev)  # SYNCSPY-CLEAN: setup allocation
    losses, epoch_losses, epoch_accs, step = [], [], [], 0

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(N_UTT, device=dev, generator=gen)  # SYNCSPY-CLEAN: once per epoch, a device-side shuffle
        epoch_loss = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: once per epoch, an accumulator
        epoch_acc = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: once per epoch, an accumulator
        for b in range(steps_per_epoch):
            idx = order[b * BATCH:(b + 1) * BATCH]
            loss, acc = model(feats[idx], ilens[idx], ys_in[idx], ys_out[idx], ys_in_lens[idx])  # SYNCSPY-CLEAN: allocator growth in the first steps
            optimizer.zero_grad()
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            scheduler.step()
            acc_table[step] = acc
            step += 1
            losses.append(loss.detach())
            epoch_loss += loss.detach()
            epoch_acc += acc
        epoch_losses.append(epoch_loss.item() / steps_per_epoch)  # SYNCSPY-CLEAN: once per epoch, outside the step loop
        epoch_accs.append(epoch_acc.item() / steps_per_epoch)  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    accs = acc_table.tolist()  # SYNCSPY-CLEAN: final read
    out, target = (t.cpu() for t in model.last)  # SYNCSPY-CLEAN: final read, for the check
    pad_pred, mask = out.argmax(2), target != IGNORE_ID
    cpu_acc = float(torch.sum(pad_pred.masked_select(mask) == target.masked_select(mask))) / float(torch.sum(mask))
    n = step
    first, last = sum(accs[:8]) / 8, sum(accs[-8:]) / 8
    ok = (n == EPOCHS * steps_per_epoch and bool(torch.isfinite(hist).all()) and all(0.0 <= a <= 1.0 for a in accs)
          and abs(cpu_acc - accs[-1]) < 1e-6 and abs(sum(epoch_accs) / EPOCHS - sum(accs) / n) < 1e-4 and last > first + 0.1
          and float(hist[-8:].mean()) < 0.9 * float(hist[:8].mean()) and epoch_losses[-1] < epoch_losses[0])
    print("t168_clean_asr_transformer_device_accuracy: epochs=%d steps=%d batch=%d frames=%d vocab=%d "
          "result=%s" % (EPOCHS, n, BATCH, T_MAX, VOCAB, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
