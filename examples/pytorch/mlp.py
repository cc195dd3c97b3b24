"""A small MLP for braid.export, trained with SGD and momentum:

    python3 -m braid.export examples/pytorch/mlp.py -o build/mlp --world-size 2
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, features=32, hidden=64, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def batch(rows, features=32, classes=10, seed=0):
    """Points labelled by the largest of their first `classes` features."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, features, generator=g)
    return x, x[:, :classes].argmax(dim=1)


def build(batch_size=16, lr=0.05, momentum=0.9, seed=0, data_parallel=2):
    """`batch_size` rows per data-parallel rank; the global batch holds each
    of the `data_parallel` ranks'."""
    torch.manual_seed(seed)
    model = MLP()
    x, labels = batch(data_parallel * batch_size, seed=seed + 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum,
                                weight_decay=1e-4)
    return dict(model=model, example_inputs=(x[:batch_size],),
                example_targets=(labels[:batch_size],), global_batch=((x,), (labels,)),
                loss_fn=nn.CrossEntropyLoss(), optimizer=optimizer, data_parallel=data_parallel)
