"""Models for the exporter's tests (export-errors.py, export-ops.py)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, act):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = act

    def forward(self, x):
        return self.act(self.fc(x))


class Cosine(nn.Module):
    """cos, which braid has no lowering for (nor torch a decomposition):
    aten.cos in the forward, aten.sin in its backward, under torch 1.13 and
    2.x alike."""

    def forward(self, x):
        return torch.cos(x)


class Net(nn.Module):
    """Linear blocks; block 1's activation is `act` (Cosine: no lowering)."""

    def __init__(self, act=None, width=16, classes=4):
        super().__init__()
        self.blocks = nn.ModuleList([Block(width, nn.ReLU()), Block(width, act or nn.ReLU())])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class OwnForward(Net):
    """An unsupported op called in the model's own forward."""

    def forward(self, x):
        return super().forward(torch.sin(x))


class TwoOps(Net):
    """Two unsupported ops: sin here, Cosine in blocks.1.act."""

    def __init__(self):
        super().__init__(Cosine())

    def forward(self, x):
        return super().forward(torch.sin(x))


class Ops(nn.Module):
    """The aten ops the small GPT and the MLP do not use: permute, mean.dim,
    sub, div by a tensor, exact gelu, unsqueeze, cat, layer norm without
    affine parameters, neg."""

    def __init__(self, seq=6, width=8, classes=5):
        super().__init__()
        # No bias: one along the sequence would be removed by the mean over
        # features below, a true gradient of 0 that Adam turns into noise.
        self.mix = nn.Linear(seq, seq, bias=False)
        self.fc = nn.Linear(width, width)
        self.norm = nn.LayerNorm(2 * width, elementwise_affine=False)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):                                      # [B, T, C]
        y = self.mix(x.permute(0, 2, 1)).permute(0, 2, 1)      # permute
        y = y - y.mean(dim=-1, keepdim=True)                   # mean.dim, sub
        y = y / (1.0 + (y * y).mean(dim=-1, keepdim=True))     # div by a tensor
        y = F.gelu(self.fc(y))                                 # exact gelu
        z = torch.cat([y, -x.unsqueeze(1).mean(dim=1)], dim=-1)  # unsqueeze, neg, cat
        z = self.norm(z).sum(dim=1) / z.shape[1]                # no affine; sum; div
        return self.head(z)


class Functions(nn.Module):
    """The elementwise functions and the constant masks: exp, log, sqrt,
    sigmoid, tanh, pow, select, stack, unbind, torch.where and masked_fill
    with masks that are neither uniform nor causal (braid.where), and an
    additive causal -inf mask (braid.causal_mask)."""

    def __init__(self, seq=4, width=6, classes=3):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.mix = nn.Linear(width, seq)
        self.head = nn.Linear(width, classes)
        self.register_buffer("diagonal", torch.eye(seq))
        self.register_buffer("causal", torch.full((seq, seq), float("-inf")).triu(1))
        self.register_buffer("odd", torch.arange(width) % 2 == 1)

    def forward(self, x):                                       # [B, T, C]
        h = self.fc(x)
        h = torch.exp(0.3 * h) + torch.log(1.0 + h * h) + torch.sqrt(h * h + 0.5)
        h = torch.sigmoid(h) * torch.tanh(h) + torch.pow(h, 2.5 - 0.5) * 0.1
        h = torch.where(self.odd, h, -h)                        # where, constant mask
        scores = self.mix(h)                                    # [B, T, T]
        scores = scores.masked_fill(self.diagonal == 1, 0.5)    # a non-causal mask
        scores = torch.softmax(scores + self.causal, dim=-1)    # the additive causal mask
        y = scores @ h
        first, second = y.unbind(1)[:2]                         # unbind, select
        y = torch.stack([first, second, y.select(1, -1)], dim=1)  # stack
        return self.head(y.mean(1))


class Indexed(nn.Module):
    """Indexing with constant indices (buffers): x[:, idx] with a repeated
    and a negative index, x[idx] on the first dimension; their gradients
    are index_put with accumulate into new_zeros."""

    def __init__(self, width=6, classes=3):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.head = nn.Linear(width, classes)
        self.register_buffer("cols", torch.tensor([0, 2, 2, -1, 3]))
        self.register_buffer("rows", torch.tensor([1, 0]))

    def forward(self, x):                                      # [B, T, C]
        h = self.fc(x)
        picked = h[:, self.cols]                               # [B, 5, C]
        scale = torch.arange(1.0, 6.0).view(1, 5, 1)
        return self.head((picked * scale).mean(1) + h[:, self.rows].sum(1))


def indexed(seed=0):
    torch.manual_seed(seed)
    model = Indexed()
    return spec(model, torch.randn(5, 4, 6), torch.randint(0, 3, (5,)),
                optimizer=torch.optim.AdamW(model.parameters(), lr=1e-2))


def functions(seed=0):
    torch.manual_seed(seed)
    model = Functions()
    return spec(model, torch.randn(5, 4, 6), torch.randint(0, 3, (5,)),
                optimizer=torch.optim.AdamW(model.parameters(), lr=1e-2))


def no_world(seed=0):
    """A spec that says neither its world size nor its data-parallel size."""
    s = ops(seed)
    del s["world_size"]
    return s


def spec(model, x, y, optimizer=None, loss_fn=None, world_size=1):
    return dict(model=model, example_inputs=(x,), example_targets=(y,),
                loss_fn=loss_fn or F.cross_entropy,
                optimizer=optimizer or torch.optim.SGD(model.parameters(), lr=0.1),
                world_size=world_size)


def cosine():
    torch.manual_seed(0)
    return spec(Net(Cosine()), torch.randn(8, 16), torch.randint(0, 4, (8,)))


def own_forward():
    torch.manual_seed(0)
    return spec(OwnForward(), torch.randn(8, 16), torch.randint(0, 4, (8,)))


def two_ops():
    torch.manual_seed(0)
    return spec(TwoOps(), torch.randn(8, 16), torch.randint(0, 4, (8,)))


class Noise(nn.Module):
    """Gaussian noise added in train mode: a random op that is not dropout."""

    def forward(self, x):
        return x + 0.1 * torch.randn_like(x)


def noise():
    torch.manual_seed(0)
    return spec(Net(Noise()), torch.randn(8, 16), torch.randint(0, 4, (8,)))


def not_a_dict():
    return 42


def ops(seed=0):
    torch.manual_seed(seed)
    m = Ops()
    return spec(m, torch.randn(4, 6, 8), torch.randint(0, 5, (4,)),
                optimizer=torch.optim.SGD(m.parameters(), lr=0.5, momentum=0.9, nesterov=True,
                                          weight_decay=0.01))
