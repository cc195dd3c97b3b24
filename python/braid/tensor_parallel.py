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

On an nn.Embedding, as torch.distributed.tensor.parallel has them:

    "rowwise"   the table split by rows, the vocabulary (Megatron's
                VocabParallelEmbedding): each rank looks up its rows
    "colwise"   the table split by its embedding dimension

A weight tied between modules (nanoGPT's wte and lm_head) is one
parameter: "rowwise" on the embedding and "colwise" on the lm head both
split it by rows, and naming either is enough; two styles that split it
differently are an error. Its logits are then split by vocabulary and
braid-tensor-parallel makes the cross-entropy the vocabulary-parallel one.

torch's ColwiseParallel() and RowwiseParallel() objects are taken for the
strings. Everything not named stays replicated. braid-tensor-parallel
propagates the shardings and inserts the collectives (docs/TensorParallel.md).
"""

import enum
import fnmatch

import torch

from braid.aten import ExportError

class Style(enum.Enum):
    """A plan entry's style, named as torch's ParallelStyle classes are."""
    COLWISE = "colwise"
    ROWWISE = "rowwise"


STYLES = tuple(s.value for s in Style)


def _torch_styles():
    """{torch's ParallelStyle class: Style}, where torch has them (2.x)."""
    try:
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel
    except ImportError:  # torch 1.13
        return {}
    return {ColwiseParallel: Style.COLWISE, RowwiseParallel: Style.ROWWISE}


def _style(style, pattern):
    """(Style, fused) of one plan entry: fused is None, a count or sizes."""
    for cls, kind in _torch_styles().items():
        if isinstance(style, cls):
            return kind, None
    if isinstance(style, str) and style in STYLES:
        return Style(style), None
    if isinstance(style, dict) and style.get("style") == Style.COLWISE.value and "fused" in style \
            and set(style) == {"style", "fused"}:
        return Style.COLWISE, style["fused"]
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
    know, a module that is not an nn.Linear or nn.Embedding, a tied weight
    split two ways, or a dimension that does not divide by `size`."""
    if not isinstance(plan, dict) or not plan:
        raise ExportError("the tensor-parallel plan must be a non-empty dict of module-name "
                          "patterns to styles, not %r" % (plan,))
    modules = dict(model.named_modules())
    out, by = {}, {}

    def put(param, text, where):
        """Records `param`'s sharding (under the name it is exported by)."""
        canonical = aliases.get(param, param)
        if canonical in out:
            if by[canonical][0] == param:
                raise ExportError("tensor-parallel plan: %s is named by two patterns (%s)" % (
                    where, by[canonical][1]))
            if out[canonical] != text:
                raise ExportError(
                    "tensor-parallel plan: %s and %s share one tied weight (%s) but split it "
                    "differently (%s and %s)" % (by[canonical][1], where, canonical,
                                                 out[canonical], text))
        out[canonical] = text
        by[canonical] = (param, where)

    def divides(count, what, where):
        if count % size:
            raise ExportError("tensor-parallel plan: the tensor-parallel size %d does not divide "
                              "%s %d of %s" % (size, what, count, where))

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
            weight = name + ".weight"
            if isinstance(mod, torch.nn.Embedding):
                if fused is not None:
                    raise ExportError("tensor-parallel plan: %s is an nn.Embedding, which has "
                                      "no fused parts" % where)
                if kind is Style.ROWWISE:
                    divides(mod.num_embeddings, "the vocabulary (rows)", where)
                    put(weight, "split 0", where)
                else:
                    divides(mod.embedding_dim, "the embedding dimension", where)
                    put(weight, "split 1", where)
                continue
            if not isinstance(mod, torch.nn.Linear):
                raise ExportError("tensor-parallel plan: %s is a %s; 'colwise' and 'rowwise' "
                                  "split an nn.Linear or an nn.Embedding"
                                  % (where, type(mod).__name__))
            if kind is Style.COLWISE:
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
                put(weight, text, where)
                if mod.bias is not None:
                    put(name + ".bias", text, where)
            else:
                divides(mod.in_features, "the input features", where)
                put(weight, "split 1", where)
    return out
