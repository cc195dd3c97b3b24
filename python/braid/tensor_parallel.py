"""A tensor-parallel plan for braid.export, in the vocabulary of
torch.distributed.tensor.parallel: module-name patterns (fnmatch, as
"h.*.attn.c_proj") mapped to a style.

    "colwise"   an nn.Linear split by output features (ColwiseParallel):
                weight and bias split along dimension 0
    "rowwise"   an nn.Linear split by input features (RowwiseParallel):
                weight split along dimension 1, bias replicated
    {"style": "colwise", "fused": 3}
                a fused projection (nanoGPT's c_attn: q, k and v in one
                matrix): each of 3 equal parts of the output features split,
                so that every rank holds whole heads of each; "fused" may
                also list the parts' sizes ([h, kv, kv] for grouped
                key/value heads)

torch's ColwiseParallel() and RowwiseParallel() objects are taken for the
strings. Everything not named stays replicated. braid-tensor-parallel
propagates the shardings and inserts the collectives (docs/TensorParallel.md).
"""

import fnmatch

import torch

from braid.aten import ExportError

STYLES = ("colwise", "rowwise")


def _style(style, pattern):
    """(kind, fused) of one plan entry: fused is None, a count or sizes."""
    name = type(style).__name__
    if name in ("ColwiseParallel", "RowwiseParallel"):
        return ("colwise" if name == "ColwiseParallel" else "rowwise"), None
    if isinstance(style, str) and style in STYLES:
        return style, None
    if isinstance(style, dict) and style.get("style") == "colwise" and "fused" in style \
            and set(style) == {"style", "fused"}:
        return "colwise", style["fused"]
    raise ExportError("tensor-parallel plan: %r maps to %r; a style is 'colwise', 'rowwise' or "
                      "{'style': 'colwise', 'fused': N or [sizes]}" % (pattern, style))


def _blocks(fused, rows, where):
    if fused is None:
        return [rows]
    if isinstance(fused, int) and not isinstance(fused, bool) and fused >= 1:
        if rows % fused:
            raise ExportError("tensor-parallel plan: %s has %d output features, which do not "
                              "make %d equal fused parts" % (where, rows, fused))
        return [rows // fused] * fused
    if isinstance(fused, (list, tuple)) and fused and all(
            isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in fused):
        if sum(fused) != rows:
            raise ExportError("tensor-parallel plan: %s's fused parts %s sum to %d, but it has "
                              "%d output features" % (where, list(fused), sum(fused), rows))
        return list(fused)
    raise ExportError("tensor-parallel plan: %s: 'fused' is a count of equal parts or a list of "
                      "their sizes, not %r" % (where, fused))


def shardings(model, plan, size, aliases):
    """{parameter name: "split D" or "split D blocks [...]"} for the
    parameters `plan` shards over `size` ranks; ExportError naming the
    problem for a pattern that matches no module, a style braid does not
    know, a module that is not an nn.Linear, a tied weight, or a dimension
    that does not divide by `size`."""
    if not isinstance(plan, dict) or not plan:
        raise ExportError("the tensor-parallel plan must be a non-empty dict of module-name "
                          "patterns to styles, not %r" % (plan,))
    modules = dict(model.named_modules())
    out = {}
    for pattern, style in plan.items():
        if not isinstance(pattern, str):
            raise ExportError("tensor-parallel plan: the pattern %r is not a string" % (pattern,))
        kind, fused = _style(style, pattern)
        matched = [n for n in modules if n and fnmatch.fnmatchcase(n, pattern)]
        if not matched:
            names = [n for n in modules if n]
            raise ExportError("tensor-parallel plan: %r matches no module of %s (its modules: "
                              "%s%s)" % (pattern, type(model).__name__, ", ".join(names[:12]),
                                         ", ..." if len(names) > 12 else ""))
        for name in matched:
            mod = modules[name]
            where = "%r (%s)" % (name, pattern)
            if not isinstance(mod, torch.nn.Linear):
                raise ExportError("tensor-parallel plan: %s is a %s; 'colwise' and 'rowwise' "
                                  "split an nn.Linear" % (where, type(mod).__name__))
            weight = name + ".weight"
            if weight in aliases or weight in aliases.values():
                raise ExportError("tensor-parallel plan: %s's weight is tied (%s); a tied "
                                  "weight stays replicated" % (where, ", ".join(
                                      sorted(a for a, b in aliases.items()
                                             if weight in (a, b)) or [weight])))
            if weight in out:
                raise ExportError("tensor-parallel plan: %s is named by two patterns" % where)
            if kind == "colwise":
                blocks = _blocks(fused, mod.out_features, where)
                for b in blocks:
                    if b % size:
                        raise ExportError(
                            "tensor-parallel plan: the tensor-parallel size %d does not divide "
                            "%s of %s (output features %d%s)" % (
                                size, "a fused part of %d" % b if len(blocks) > 1 else
                                "the output features", where, mod.out_features,
                                ", fused %s" % blocks if len(blocks) > 1 else ""))
                text = "split 0" + (" blocks [%s]" % ", ".join(map(str, blocks))
                                    if len(blocks) > 1 else "")
                out[weight] = text
                if mod.bias is not None:
                    out[name + ".bias"] = text
            else:
                if mod.in_features % size:
                    raise ExportError("tensor-parallel plan: the tensor-parallel size %d does "
                                      "not divide the input features %d of %s" % (
                                          size, mod.in_features, where))
                out[weight] = "split 1"
    return out
