#!/usr/bin/env python3
"""examples/corpus/t159_show_attend_tell_decode_lengths_zeros_upload.py: corpus workload (PyTorch).
Image captioning with soft attention (Show, Attend and Tell), in the shape of the most copied
PyTorch tutorial of it: a CNN encoder (three strided convolutions to an 8 x 8 grid of 256-d
features, standing in for the tutorial's ResNet) and `DecoderWithAttention` (additive
attention, a gate, an `LSTMCell` of 256, a 2,000-word output layer, doubly stochastic attention
regularization), trained with teacher forcing on 1,024 synthetic 64 x 64 scenes of one to three
coloured shapes whose captions ("a red star in the top left and a ...") come from the scene;
the images, captions and caption lengths are uploaded to the GPU once in setup (the tutorial
moves `caplens` to the device with every batch). The decoder's `forward` is the tutorial's:
it sorts the batch by `caption_lengths` on the GPU, then reads them back,
`decode_lengths = (caption_lengths - 1).tolist()` (a blocking device-to-host copy: it waits for
the encoder's forward pass and the hidden-state initialisation), and allocates its output
buffers on the host and copies them up, `predictions = torch.zeros(batch_size,
max(decode_lengths), vocab_size).to(device)` (6.1 MB of zeros built in pageable memory and
uploaded: `copy_kernel_cuda` ends in `memcpy_and_sync`) and the same for `alphas` (0.2 MB).
The Performance Tuning Guide lists `.tolist()`-style reads and the blocking host-to-device
copies among the CPU-GPU synchronizations to avoid (`torch.cuda.set_sync_debug_mode("warn")`
reports them); every step the GPU drains before the decoder's 24 time steps are queued.
Fix (not in this set): keep the lengths the loader had on the host (sort them there) and
allocate with `torch.zeros(..., device=device)`.
Planted: in `DecoderWithAttention.forward`, `decode_lengths = (caption_lengths - 1).tolist()`
(expensive: behind the encoder's forward pass) and the two `torch.zeros(...).to(device)` lines
(cheap waits, the first a 6.1 MB pageable upload), every training step and every validation
batch.
Clean: setup (data and models uploaded once), allocator growth in the first steps (encoder and
decoder forward, `pack_padded_sequence` of the scores, backward, Adam), the loss and top-5
counts summed on the GPU and read once per epoch after validation (the tutorial reads them
with `.item()` every step), the losses read once after the loop.
Per step on an H100 (estimated from the sizes, fp32 without TF32): the encoder on 32 images,
24 attention and LSTM steps with a 2,000-word projection, forward and backward, launch-bound,
about 3 ms.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402

TRAIN, VAL, IMG, BATCH, EPOCHS = 1024, 128, 64, 32, 2
VOCAB, EMB_DIM, ATT_DIM, DEC_DIM, ENC_DIM, MAX_CAP = 2000, 128, 128, 256, 256, 26
ALPHA_C, GRAD_CLIP, DEC_LR, ENC_LR = 1.0, 5.0, 4e-4, 1e-4
COLOURS = ("red", "green", "blue", "yellow", "purple", "white")
SHAPES = ("square", "ring", "cross", "bar", "dot")
PLACES = ("top left", "top right", "bottom left", "bottom right")
WORDS = ("<pad>", "<start>", "<end>", "a", "and", "in", "the", "top", "bottom", "left", "right") + COLOURS + SHAPES
WORD_MAP = {w: i for i, w in enumerate(WORDS)}
RGB = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (0.6, 0, 0.8), (1, 1, 1))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        chans = (3, 64, 128, ENC_DIM)
        self.convs = nn.ModuleList(nn.Conv2d(chans[i], chans[i + 1], 3, 2, 1) for i in range(3))
        self.bns = nn.ModuleList(nn.BatchNorm2d(c) for c in chans[1:])

    def forward(self, images):
        x = images
        for conv, bn in zip(self.convs, self.bns):
            x = F.relu(bn(conv(x)))
        return x.permute(0, 2, 3, 1)  # (batch_size, encoded_image_size, encoded_image_size, encoder_dim)


class Attention(nn.Module):
    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.encoder_att = nn.Linear(encoder_dim, attention_dim)
        self.decoder_att = nn.Linear(decoder_dim, attention_dim)
        self.full_att = nn.Linear(attention_dim, 1)
        self.relu = nn.ReLU()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, encoder_out, decoder_hidden):
        att1 = self.encoder_att(encoder_out)
        att2 = self.decoder_att(decoder_hidden)
        att = self.full_att(self.relu(att1 + att2.unsqueeze(1))).squeeze(2)
        alpha = self.softmax(att)
        attention_weighted_encoding = (encoder_out * alpha.unsqueeze(2)).sum(dim=1)
        return attention_weighted_encoding, alpha


class DecoderWithAttention(nn.Module):
    def __init__(self, attention_dim, embed_dim, decoder_dim, vocab_size, encoder_dim=ENC_DIM, dropout=0.5):
        super().__init__()
        self.encoder_dim, self.vocab_size = encoder_dim, vocab_size
        self.attention = Attention(encoder_dim, decoder_dim, attention_dim)
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.dropout = nn.Dropout(p=dropout)
        self.decode_step = nn.LSTMCell(embed_dim + encoder_dim, decoder_dim, bias=True)
        self.init_h = nn.Linear(encoder_dim, decoder_dim)
        self.init_c = nn.Linear(encoder_dim, decoder_dim)
        self.f_beta = nn.Linear(decoder_dim, encoder_dim)
        self.sigmoid = nn.Sigmoid()
        self.fc = nn.Linear(decoder_dim, vocab_size)
        self.embedding.weight.data.uniform_(-0.1, 0.1)
        self.fc.bias.data.fill_(0)
        self.fc.weight.data.uniform_(-0.1, 0.1)

    def init_hidden_state(self, encoder_out):
        mean_encoder_out = encoder_out.mean(dim=1)
        return self.init_h(mean_encoder_out), self.init_c(mean_encoder_out)

    def forward(self, encoder_out, encoded_captions, caption_lengths):
        device = encoder_out.device
        batch_size = encoder_out.size(0)
        encoder_dim = encoder_out.size(-1)
        vocab_size = self.vocab_size
        encoder_out = encoder_out.reshape(batch_size, -1, encoder_dim)  # (batch_size, num_pixels, encoder_dim)
        num_pixels = encoder_out.size(1)
        caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
        encoder_out = encoder_out[sort_ind]
        encoded_captions = encoded_captions[sort_ind]
        embeddings = self.embedding(encoded_captions)
        h, c = self.init_hidden_state(encoder_out)
        # We won't decode at the <end> position, since we've finished generating as soon as we generate <end>
        decode_lengths = (caption_lengths - 1).tolist()  # SYNCSPY-PROBLEM: blocking read, behind the encoder
        predictions = torch.zeros(batch_size, max(decode_lengths), vocab_size).to(device)  # SYNCSPY-PROBLEM: blocking 6.1 MB upload
        alphas = torch.zeros(batch_size, max(decode_lengths), num_pixels).to(device)  # SYNCSPY-PROBLEM: blocking upload
        for t in range(max(decode_lengths)):
            batch_size_t = sum([l > t for l in decode_lengths])
            attention_weighted_encoding, alpha = self.attention(encoder_out[:batch_size_t], h[:batch_size_t])
            gate = self.sigmoid(self.f_beta(h[:batch_size_t]))
            attention_weighted_encoding = gate * attention_weighted_encoding
            h, c = self.decode_step(torch.cat([embeddings[:batch_size_t, t, :], attention_weighted_encoding], dim=1),
                                    (h[:batch_size_t], c[:batch_size_t]))
            preds = self.fc(self.dropout(h))
            predictions[:batch_size_t, t, :] = preds
            alphas[:batch_size_t, t, :] = alpha
        return predictions, encoded_captions, decode_lengths, alphas, sort_ind


def make_scenes(n, gen):
    """One to three coloured shapes in distinct quadrants, and the caption that describes them."""
    masks = torch.zeros(len(SHAPES), 20, 20)
    masks[0, 2:18, 2:18] = 1
    masks[1, 1:19, 1:19] = 1
    masks[1, 6:14, 6:14] = 0
    masks[2, 7:13, :] = 1
    masks[2, :, 7:13] = 1
    masks[3, 7:13, 1:19] = 1
    yy, xx = torch.meshgrid(torch.arange(20.0), torch.arange(20.0), indexing="ij")
    masks[4] = (((yy - 9.5) ** 2 + (xx - 9.5) ** 2) < 30).float()
    images = 0.15 * torch.rand(n, 3, IMG, IMG, generator=gen)
    caps = torch.zeros(n, MAX_CAP, dtype=torch.long)
    caplens = torch.zeros(n, 1, dtype=torch.long)
    for i in range(n):
        k = int(torch.randint(1, 4, (1,), generator=gen))
        places = torch.randperm(4, generator=gen)[:k].tolist()
        words = ["<start>"]
        for j, p in enumerate(places):
            colour = int(torch.randint(0, len(COLOURS), (1,), generator=gen))
            shape = int(torch.randint(0, len(SHAPES), (1,), generator=gen))
            y0 = 32 * (p // 2) + 4 + int(torch.randint(0, 5, (1,), generator=gen))
            x0 = 32 * (p % 2) + 4 + int(torch.randint(0, 5, (1,), generator=gen))
            tint = torch.tensor(RGB[colour])[:, None, None]
            patch = images[i, :, y0:y0 + 20, x0:x0 + 20]
            images[i, :, y0:y0 + 20, x0:x0 + 20] = patch * (1 - masks[shape]) + tint * masks[shape]
            words += (["and"] if j else []) + ["a", COLOURS[colour], SHAPES[shape], "in", "the"] + PLACES[p].split()
        words.append("<end>")
        caps[i, :len(words)] = torch.tensor([WORD_MAP[w] for w in words])
        caplens[i, 0] = len(words)
    return images, caps, caplens


def clip_gradient(optimizer, grad_clip):
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is not None:
                param.grad.data.clamp_(-grad_clip, grad_clip)


def step_loss(encoder, decoder, imgs, caps, caplens):
    imgs = encoder(imgs)  # SYNCSPY-CLEAN: allocator growth in the first steps
    scores, caps_sorted, decode_lengths, alphas, sort_ind = decoder(imgs, caps, caplens)  # SYNCSPY-CLEAN: growth, first steps
    targets = caps_sorted[:, 1:]
    scores = pack_padded_sequence(scores, decode_lengths, batch_first=True).data  # SYNCSPY-CLEAN: growth, first steps
    targets = pack_padded_sequence(targets, decode_lengths, batch_first=True).data
    loss = F.cross_entropy(scores, targets)
    loss = loss + ALPHA_C * ((1. - alphas.sum(dim=1)) ** 2).mean()
    correct5 = scores.topk(5, 1).indices.eq(targets[:, None]).any(1).sum()
    return loss, correct5, sum(decode_lengths)


def main():
    if not torch.cuda.is_available():
        print("t159_show_attend_tell_decode_lengths_zeros_upload: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    scenes = make_scenes(TRAIN + VAL, torch.Generator().manual_seed(159))
    images, caps, caplens = (t.to(dev) for t in scenes)  # SYNCSPY-CLEAN: setup upload, once
    encoder = Encoder().to(dev)  # SYNCSPY-CLEAN: setup upload
    decoder = DecoderWithAttention(ATT_DIM, EMB_DIM, DEC_DIM, VOCAB).to(dev)  # SYNCSPY-CLEAN: setup upload
    encoder_optimizer = torch.optim.Adam(encoder.parameters(), lr=ENC_LR)
    decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=DEC_LR)
    order = torch.randperm(TRAIN // BATCH, generator=torch.Generator().manual_seed(1)).tolist()
    losses, epoch_stats = [], []

    for epoch in range(EPOCHS):
        encoder.train()
        decoder.train()
        loss_sum, correct_sum, tokens = torch.zeros((), device=dev), torch.zeros((), device=dev, dtype=torch.long), 0
        for b in order:
            s = slice(b * BATCH, (b + 1) * BATCH)
            loss, correct5, n_tok = step_loss(encoder, decoder, images[s], caps[s], caplens[s])
            decoder_optimizer.zero_grad()
            encoder_optimizer.zero_grad()
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            clip_gradient(decoder_optimizer, GRAD_CLIP)
            clip_gradient(encoder_optimizer, GRAD_CLIP)
            decoder_optimizer.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            encoder_optimizer.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses.append(loss.detach())
            loss_sum += loss.detach() * n_tok
            correct_sum += correct5
            tokens += n_tok
        encoder.eval()
        decoder.eval()
        val_sum, val_tokens = torch.zeros((), device=dev), 0
        with torch.no_grad():
            for v in range(VAL // BATCH):
                s = slice(TRAIN + v * BATCH, TRAIN + (v + 1) * BATCH)
                loss, _, n_tok = step_loss(encoder, decoder, images[s], caps[s], caplens[s])
                val_sum += loss * n_tok
                val_tokens += n_tok
        train_loss, top5, val_loss = torch.stack([loss_sum, correct_sum.float(), val_sum]).tolist()  # SYNCSPY-CLEAN: once per epoch
        epoch_stats.append((train_loss / tokens, top5 / tokens, val_loss / val_tokens))

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    (l0, a0, v0), (l1, a1, v1) = epoch_stats[0], epoch_stats[-1]
    ok = (all(math.isfinite(x) for row in epoch_stats for x in row) and hist[-8:].mean() < 0.7 * hist[:8].mean()
          and l1 < l0 and v1 < v0 and a1 > a0 and hist.numel() == EPOCHS * (TRAIN // BATCH))
    print("t159_show_attend_tell_decode_lengths_zeros_upload: epochs=%d steps=%d batch=%d vocab=%d "
          "result=%s" % (EPOCHS, hist.numel(), BATCH, VOCAB, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
