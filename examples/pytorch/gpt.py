"""A small GPT for braid.export: 2 blocks, width 64, 4 heads, vocabulary 64,
sequence 32, trained with AdamW. It is the bundled default model of
utils/main.sh and of docs/Tutorial.md:

    python3 -m braid.export examples/pytorch/gpt.py -o build/gpt --world-size 2

`build()` returns what braid.export needs. The batch is a learnable toy
task: each sequence counts up from a random start (mod the vocabulary), and
the model predicts the next token.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, seq):
        super().__init__()
        self.heads = heads
        # No bias on the query/key/value projection: a key bias has a true
        # gradient of exactly 0 (softmax ignores a constant per row), and
        # AdamW would turn its rounding noise into lr-sized steps.
        self.c_attn = nn.Linear(width, 3 * width, bias=False)
        self.c_proj = nn.Linear(width, width)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, width, heads, seq):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, seq)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab=64, seq=32, width=64, heads=4, layers=2, padding_idx=None):
        super().__init__()
        self.wte = nn.Embedding(vocab, width, padding_idx=padding_idx)
        self.wpe = nn.Embedding(seq, width)
        self.h = nn.ModuleList([Block(width, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as GPT-2
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx):
        B, T = idx.shape
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def loss_fn(logits, targets):
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def batch(rows, vocab=64, seq=32, seed=0):
    """Sequences that count up from a random start; targets are the next tokens."""
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, vocab, (rows, 1), generator=g)
    tokens = (start + torch.arange(seq + 1)) % vocab
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def build(batch_size=4, layers=2, lr=1e-3, seed=0, data_parallel=2, width=64, heads=4,
          seq=32, vocab=64, padding_idx=None):
    """`batch_size` sequences per data-parallel rank; the global batch holds
    each of the `data_parallel` ranks'.
    The defaults are the bundled model; utils/bench-cpu.py also builds a
    wider one (`--arg width=256 --arg layers=4 ...`)."""
    torch.manual_seed(seed)
    model = GPT(vocab=vocab, seq=seq, width=width, heads=heads, layers=layers,
                padding_idx=padding_idx)
    idx, targets = batch(data_parallel * batch_size, vocab=vocab, seq=seq, seed=seed + 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95),
                                  eps=1e-8, weight_decay=0.1)
    # Megatron's layout for `--tensor-parallel N` (docs/TensorParallel.md):
    # q, k and v by whole heads, the MLP's first matrix by columns, the
    # output projections by rows, the tied token table by rows (Megatron's
    # vocabulary-parallel embedding and cross-entropy); norms and positions
    # replicated.
    tp_plan = {"wte": "rowwise",
               "h.*.attn.c_attn": {"style": "colwise", "fused": 3},
               "h.*.attn.c_proj": "rowwise",
               "h.*.mlp.c_fc": "colwise",
               "h.*.mlp.c_proj": "rowwise"}
    return dict(model=model, example_inputs=(idx[:batch_size],),
                example_targets=(targets[:batch_size],), global_batch=((idx,), (targets,)),
                loss_fn=loss_fn, optimizer=optimizer, data_parallel=data_parallel,
                tensor_parallel_plan=tp_plan)
