"""Models written in the styles people train, for export-models.py: each is
this project's own code in the manner of a public model family.

    nanogpt   nanoGPT: fused qkv projection, registered causal-mask buffer,
              exact GELU, the loss computed in forward from the targets
    mingpt    minGPT: NewGELU written with tanh and pow, dropout after the
              attention, the residual and the embeddings, masked_fill from a
              tril buffer
    llama     llama2.c: RMSNorm (pow, mean, rsqrt), a SiLU-gated MLP, rotary
              embeddings by unbind/stack of the (real, imaginary) pairs,
              grouped key/value heads (repeat by expand), an additive -inf
              mask buffer, no biases, untied head
    nanogpt-sdpa, llama-sdpa  the same with torch 2.x's
              F.scaled_dot_product_attention(is_causal=True), grouped
              key/value heads by enable_gqa (braid.attention)
    vit       a ViT classifier: patches by reshape and permute, a class
              token parameter, a positional embedding that is a plain tensor
              attribute (neither parameter nor buffer), the class token's
              output as the head's input

Every model takes (inputs..., targets) and returns its loss, as nanoGPT,
minGPT and llama2.c do; `loss_fn` is the identity.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def loss_from_forward(loss):
    return loss


class LossFromLabels(nn.Module):
    """A Hugging Face model's own loss from labels, as a Hugging Face
    training loop takes it (`model(input_ids=..., labels=...).loss`)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        return self.model(input_ids=input_ids, labels=labels).loss


# -- nanoGPT -------------------------------------------------------------------------

class NanoAttention(nn.Module):
    def __init__(self, width, heads, seq, flash=False):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.heads = heads
        self.flash = flash  # nanoGPT's: torch 2.x's fused attention
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class NanoBlock(nn.Module):
    def __init__(self, width, heads, seq, flash):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = NanoAttention(width, heads, seq, flash)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class NanoGPT(nn.Module):
    def __init__(self, vocab=32, seq=8, width=16, heads=2, layers=2, flash=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq, width)
        self.h = nn.ModuleList([NanoBlock(width, heads, seq, flash) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # tied, as nanoGPT

    def forward(self, idx, targets):
        T = idx.shape[1]
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# -- minGPT --------------------------------------------------------------------------

class NewGELU(nn.Module):
    """GPT-2's GELU, written out as minGPT writes it."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * torch.pow(x, 3.0))))


class MinAttention(nn.Module):
    def __init__(self, width, heads, seq, p):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.attn_dropout = nn.Dropout(p)
        self.resid_dropout = nn.Dropout(p)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))
        self.heads = heads

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MinBlock(nn.Module):
    def __init__(self, width, heads, seq, p):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = MinAttention(width, heads, seq, p)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(width, 4 * width), act=NewGELU(),
                                      c_proj=nn.Linear(4 * width, width),
                                      dropout=nn.Dropout(p)))

    def forward(self, x):
        m = self.mlp
        x = x + self.attn(self.ln_1(x))
        return x + m.dropout(m.c_proj(m.act(m.c_fc(self.ln_2(x)))))


class MinGPT(nn.Module):
    def __init__(self, vocab=32, seq=8, width=16, heads=2, layers=2, p=0.0):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width), wpe=nn.Embedding(seq, width), drop=nn.Dropout(p),
            h=nn.ModuleList([MinBlock(width, heads, seq, p) for _ in range(layers)]),
            ln_f=nn.LayerNorm(width)))
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx, targets):
        t = self.transformer
        pos = torch.arange(0, idx.size(1), dtype=torch.long).unsqueeze(0)
        x = t.drop(t.wte(idx) + t.wpe(pos))
        for block in t.h:
            x = block(x)
        logits = self.lm_head(t.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)


# -- llama2.c ------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_tables(head_dim, seq, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(seq).float(), freqs)
    return torch.cos(angles), torch.sin(angles)


def apply_rotary(x, cos, sin):
    """x [B, T, H, D]: each (even, odd) pair rotated by its position's angle."""
    xr, xi = x.reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    cos = cos.view(1, cos.shape[0], 1, cos.shape[1])
    sin = sin.view(1, sin.shape[0], 1, sin.shape[1])
    out_r = xr * cos - xi * sin
    out_i = xr * sin + xi * cos
    return torch.stack([out_r, out_i], dim=-1).flatten(3)


def repeat_kv(x, n_rep):
    B, T, H, D = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(B, T, H, n_rep, D).reshape(B, T, H * n_rep, D)


class LlamaAttention(nn.Module):
    def __init__(self, width, heads, kv_heads, flash=False):
        super().__init__()
        self.flash = flash  # torch 2.x's fused attention, key/value heads grouped
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.wq = nn.Linear(width, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, width, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.heads, self.head_dim)
        k = self.wk(x).view(B, T, self.kv_heads, self.head_dim)
        v = self.wv(x).view(B, T, self.kv_heads, self.head_dim)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if self.flash:
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                 v.transpose(1, 2), is_causal=True,
                                                 enable_gqa=True)
            return self.wo(out.transpose(1, 2).contiguous().view(B, T, -1))
        k = repeat_kv(k, self.heads // self.kv_heads)
        v = repeat_kv(v, self.heads // self.kv_heads)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask[:, :, :T, :T]
        scores = F.softmax(scores, dim=-1)
        out = torch.matmul(scores, v).transpose(1, 2).contiguous().view(B, T, -1)
        return self.wo(out)


class LlamaMLP(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.w1 = nn.Linear(width, hidden, bias=False)
        self.w2 = nn.Linear(hidden, width, bias=False)
        self.w3 = nn.Linear(width, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, width, heads, kv_heads, hidden, flash):
        super().__init__()
        self.attention = LlamaAttention(width, heads, kv_heads, flash)
        self.feed_forward = LlamaMLP(width, hidden)
        self.attention_norm = RMSNorm(width)
        self.ffn_norm = RMSNorm(width)

    def forward(self, x, cos, sin, mask):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, vocab=32, seq=8, width=16, heads=4, kv_heads=2, layers=2, hidden=24,
                 flash=False):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList([LlamaBlock(width, heads, kv_heads, hidden, flash)
                                     for _ in range(layers)])
        self.norm = RMSNorm(width)
        self.output = nn.Linear(width, vocab, bias=False)
        cos, sin = rotary_tables(width // heads, seq)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)
        mask = torch.triu(torch.full((1, 1, seq, seq), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        cos, sin = self.freqs_cos[:T], self.freqs_sin[:T]
        for layer in self.layers:
            h = layer(h, cos, sin, self.mask)
        logits = self.output(self.norm(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)


# -- ViT -----------------------------------------------------------------------------

class ViTBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        # No qkv bias (timm's qkv_bias=False): the key bias has a true
        # gradient of 0 (softmax ignores a shift of a row's scores), which
        # AdamW turns into lr-sized steps of rounding noise.
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)
        self.heads = heads

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(B, N, 3, self.heads, C // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        att = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, image=8, patch=4, channels=3, width=16, heads=2, layers=2, classes=5):
        super().__init__()
        self.patch = patch
        n = (image // patch) ** 2
        self.embed = nn.Linear(channels * patch * patch, width)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        # A plain tensor attribute: fixed sinusoidal positions, as some ViT
        # code keeps them (neither a parameter nor a registered buffer).
        pos = torch.arange(n + 1).float().unsqueeze(1) / (n + 1)
        freq = torch.arange(width).float().unsqueeze(0)
        self.pos_embed = torch.sin(pos * (freq + 1)).unsqueeze(0)
        self.blocks = nn.ModuleList([ViTBlock(width, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, images, labels):
        B, C, H, W = images.shape
        p = self.patch
        x = images.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)
        x = self.embed(x.reshape(B, (H // p) * (W // p), C * p * p))
        x = torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return F.cross_entropy(self.head(self.norm(x)[:, 0]), labels)


# -- the batches -----------------------------------------------------------------------

def language_batch(vocab, seq, rows, seed):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (rows, seq + 1), generator=g)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def image_batch(rows, seed, image=8, channels=3, classes=5):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, channels, image, image, generator=g),
            torch.randint(0, classes, (rows,), generator=g))


def make(name, seed=0, p=0.0):
    """(model, global batch (inputs + targets)) of a zoo model."""
    torch.manual_seed(seed)
    if name == "nanogpt":
        return NanoGPT(), language_batch(32, 8, 4, seed)
    if name == "mingpt":
        return MinGPT(p=p), language_batch(32, 8, 4, seed)
    if name == "llama":
        return Llama(), language_batch(32, 8, 4, seed)
    if name == "vit":
        return ViT(), image_batch(4, seed)
    if name == "nanogpt-sdpa":
        return NanoGPT(flash=True), language_batch(32, 8, 4, seed)
    if name == "llama-sdpa":
        return Llama(flash=True), language_batch(32, 8, 4, seed)
    raise KeyError(name)


NAMES = ("nanogpt", "mingpt", "llama", "vit")
# torch 2.x's scaled_dot_product_attention (enable_gqa: 2.5 and later).
SDPA_NAMES = ("nanogpt-sdpa", "llama-sdpa")
