"""The optimizers braid exports: one registry from an optimizer class
(torch.optim's SGD, AdamW and Adam, and braid's own Lion) to what braid
needs of it.

Each entry (an `Optimizer`) says which torch classes it covers, the
per-parameter state it keeps (torch's key, braid's name: `momentum_buffer`
is braid's `P.momentum`), whether it keeps the shared `step` count, what of
a param group it refuses, how it builds the update in the IR and whether its
step is bounded by the learning rate (Adam's, which braid.compare uses to
judge final states). export (the state, the arguments and the update),
_trace (the checks), spec (the reference's final state) and compare all ask
it, so a new optimizer is one entry here plus its braid op.

The entry is found along the optimizer's class hierarchy, so a subclass of
torch.optim.AdamW exports as AdamW; torch 2.x's
Adam(decoupled_weight_decay=True) is AdamW.
"""

import numpy as np
import torch

from braid.aten import ExportError


class Optimizer:
    """One optimizer braid exports. `state` lists (torch state key, braid
    suffix) per parameter, in the update op's operand order."""

    name = None
    classes = ()
    state = ()
    has_step = False
    bounded_step = False

    def check(self, optimizer, group, param, name):
        """Raises ExportError for what braid does not export of `group`, the
        param group of parameter `name`."""
        if group.get("maximize", False):
            raise ExportError("%s(maximize=True) is not supported" % self.label(optimizer))

    def label(self, optimizer):
        """The name summaries and the IR header give: the torch class's."""
        return type(optimizer).__name__

    def state_names(self, param):
        """Braid's names of `param`'s state, in the update's operand order."""
        return [param + "." + suffix for _, suffix in self.state]

    def state_arrays(self, optimizer, p, name, zeros=True):
        """The state torch holds for parameter `p` by braid's names; a
        missing buffer is zeros when `zeros` (torch fills it at the first
        step), left out otherwise. The step count is step_count's."""
        st = optimizer.state.get(p, {})
        out = {}
        for key, suffix in self.state:
            t = st.get(key)
            if t is not None:
                out[name + "." + suffix] = t.detach().cpu().numpy().copy()
            elif zeros:
                out[name + "." + suffix] = np.zeros(tuple(p.shape),
                                                    dtype=p.detach().cpu().numpy().dtype)
        return out

    def step_count(self, optimizer, p):
        """The step count torch holds for `p` (0 before the first step)."""
        return float(optimizer.state.get(p, {}).get("step", 0))

    def build(self, b, name, grad, state, step, lr, group, grad_scale):
        """Emits the update of parameter `name` with builder `b`: the new
        parameter, then its new state in `state`'s order."""
        raise NotImplementedError


class SGD(Optimizer):
    name = "SGD"
    classes = (torch.optim.SGD,)
    state = (("momentum_buffer", "momentum"),)

    def check(self, optimizer, group, param, name):
        super().check(optimizer, group, param, name)
        if group["dampening"] and optimizer.state.get(param, {}).get("momentum_buffer") is None:
            raise ExportError("SGD with dampening needs its momentum buffers: torch fills "
                              "them with the first gradient undamped; step the optimizer "
                              "once before exporting, or use dampening=0")

    def build(self, b, name, grad, state, step, lr, group, grad_scale):
        return b.sgd(name, grad, state[0], lr, float(group["momentum"]),
                     float(group["weight_decay"]), float(group["dampening"]),
                     bool(group["nesterov"]), grad_scale=grad_scale)


class AdamW(Optimizer):
    """torch.optim.AdamW, and torch.optim.Adam where it is the same update:
    without weight decay, or with decoupled_weight_decay (torch 2.x)."""
    name = "AdamW"
    classes = (torch.optim.AdamW, torch.optim.Adam)
    state = (("exp_avg", "exp_avg"), ("exp_avg_sq", "exp_avg_sq"))
    has_step = True
    bounded_step = True

    def check(self, optimizer, group, param, name):
        super().check(optimizer, group, param, name)
        if group.get("amsgrad", False):
            raise ExportError("%s(amsgrad=True) is not supported" % self.label(optimizer))
        if _is_plain_adam(optimizer) and group["weight_decay"] and \
                not group.get("decoupled_weight_decay", False):
            raise ExportError("Adam with weight_decay (L2 in the gradient) is not supported; "
                              "use AdamW")

    def label(self, optimizer):
        if _is_plain_adam(optimizer) and all(g.get("decoupled_weight_decay", False)
                                             for g in optimizer.param_groups):
            return "AdamW"  # torch 2.x's Adam(decoupled_weight_decay=True) is AdamW
        return type(optimizer).__name__

    def build(self, b, name, grad, state, step, lr, group, grad_scale):
        beta1, beta2 = (float(x) for x in group["betas"])
        return b.adamw(name, grad, state[0], state[1], step, lr, (beta1, beta2),
                       float(group["eps"]), float(group["weight_decay"]), grad_scale=grad_scale)


class Lion(torch.optim.Optimizer):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization
    Algorithms"), as lion-pytorch writes it: torch.optim has none, so braid
    ships this one to train with in PyTorch and to export (braid.lion).
    Per parameter, with m its `exp_avg`:
    p *= 1 - lr * weight_decay; p -= lr * sign(beta1 m + (1 - beta1) g);
    m = beta2 m + (1 - beta2) g."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        if not lr >= 0:
            raise ValueError("Lion: lr must be non-negative, not %r" % (lr,))
        if not all(0.0 <= b <= 1.0 for b in betas):
            raise ValueError("Lion: betas must be in [0, 1], not %r" % (betas,))
        if not weight_decay >= 0:
            raise ValueError("Lion: weight_decay must be non-negative, not %r"
                             % (weight_decay,))
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, wd = group["lr"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "exp_avg" not in state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - lr * wd)
                p.add_((m * beta1).add_(p.grad, alpha=1 - beta1).sign_(), alpha=-lr)
                m.mul_(beta2).add_(p.grad, alpha=1 - beta2)
        return loss


class LionEntry(Optimizer):
    name = "Lion"
    classes = (Lion,)
    state = (("exp_avg", "exp_avg"),)
    bounded_step = True  # every entry moves by lr (besides the decay)

    def build(self, b, name, grad, state, step, lr, group, grad_scale):
        beta1, beta2 = (float(x) for x in group["betas"])
        return b.update("lion", name, ["exp_avg"], lr, grad_scale, grad=grad,
                        exp_avg=state[0], beta1=beta1, beta2=beta2,
                        weight_decay=float(group["weight_decay"]))


def _is_plain_adam(optimizer):
    """torch.optim.Adam (or a subclass) that is not an AdamW: torch 2.x
    derives AdamW from Adam."""
    return isinstance(optimizer, torch.optim.Adam) and \
        not isinstance(optimizer, torch.optim.AdamW)


REGISTRY = (SGD(), AdamW(), LionEntry())


def supported():
    """The optimizer classes braid exports, for messages."""
    def spelled(c):
        return ("torch.optim." if c.__module__.startswith("torch.optim") else
                c.__module__ + ".") + c.__name__
    return ", ".join(spelled(c) for o in REGISTRY for c in o.classes)


def lookup(optimizer):
    """The registry entry of a torch optimizer (its class or the nearest
    registered base); None for one braid does not export."""
    for cls in type(optimizer).__mro__:
        for entry in REGISTRY:
            if cls in entry.classes:
                return entry
    return None


def of(optimizer):
    """lookup, or ExportError naming what braid exports."""
    entry = lookup(optimizer)
    if entry is None:
        raise ExportError("optimizer %s is not supported: braid exports %s"
                          % (type(optimizer).__name__, supported()))
    return entry
