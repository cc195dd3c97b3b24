"""A nanoGPT-like training configuration of the small GPT of gpt.py, for
braid.export: AdamW over two param groups (weight decay on the matrices
only, as nanoGPT's configure_optimizers does), nanoGPT's learning-rate
schedule (a linear warmup then a cosine decay to min_lr, written as a
LambdaLR), gradient accumulation (nanoGPT's gradient_accumulation_steps:
each rank's batch in `micro_batches` parts) and gradient clipping at
nanoGPT's grad_clip of 1.0:

    python3 -m braid.export examples/pytorch/nanogpt.py -o build/nanogpt --world-size 2

The schedule is evaluated for `max_steps` steps when exporting; braid-run
feeds step k its rate (docs/Tutorial.md, "A training recipe").
"""

import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt import GPT, batch, loss_fn  # noqa: E402


def warmup_cosine(warmup, max_steps, lr, min_lr):
    """nanoGPT's get_lr(it) as a factor of `lr` for LambdaLR (`it` counts
    from 0): linear warmup over `warmup` steps, then cosine decay to
    min_lr at max_steps, min_lr after."""
    def factor(it):
        if it < warmup:
            return (it + 1) / (warmup + 1)
        if it > max_steps:
            return min_lr / lr
        ratio = (it - warmup) / (max_steps - warmup)
        coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
        return (min_lr + coeff * (lr - min_lr)) / lr
    return factor


def build(batch_size=4, layers=2, lr=1e-3, min_lr=1e-4, warmup=5, max_steps=50,
          micro_batches=2, grad_clip=1.0, seed=0, data_parallel=2):
    """`batch_size` sequences per data-parallel rank a step, in
    `micro_batches` parts; the global batch holds each of the `data_parallel`
    ranks'."""
    torch.manual_seed(seed)
    model = GPT(layers=layers)
    idx, targets = batch(data_parallel * batch_size, seed=seed + 1)
    # nanoGPT: decay every parameter of two or more dimensions (matrices,
    # embeddings), not biases and norms.
    params = [p for p in model.parameters()]
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95), eps=1e-8)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, warmup_cosine(warmup, max_steps, lr, min_lr))
    return dict(model=model, example_inputs=(idx[:batch_size],),
                example_targets=(targets[:batch_size],), global_batch=((idx,), (targets,)),
                loss_fn=loss_fn, optimizer=optimizer, data_parallel=data_parallel,
                lr_scheduler=scheduler, max_steps=max_steps, micro_batches=micro_batches,
                max_grad_norm=grad_clip)
