"""Graph-level braid IR for model shapes, without weights.

    python3 -m braid.models mlp > examples/mlp.mlir
    python3 -m braid.models gpt > examples/gpt.mlir

Each step is one data-parallel training step: forward, the full backward,
one gradient all-reduce (average) per parameter placed right after the
gradient is produced, and the optimizer update.
"""

import argparse
import math
import sys

from braid.ir import StepBuilder


def mlp(batch=64, features=784, hidden=1024, classes=10, world_size=8,
        lr=0.01, momentum=0.9, layers=1):
    """An MLP of `layers` hidden layers (Linear, ReLU, ..., Linear,
    cross-entropy) trained with SGD+momentum; the default is 2 linear layers."""
    b = StepBuilder("mlp_step", world_size)
    x = b.arg("batch", "x", (batch, features))
    labels = b.arg("batch", "labels", (batch,), "i64")
    sizes = [features] + [hidden] * layers + [classes]
    shapes = {}
    for k in range(1, len(sizes)):
        shapes["fc%d.weight" % k] = (sizes[k], sizes[k - 1])
        shapes["fc%d.bias" % k] = (sizes[k],)
    p = {n: b.param(n, s) for n, s in shapes.items()}
    buf = {n: b.arg("optimizer_state", n + ".momentum", s) for n, s in shapes.items()}

    acts = [x]
    for k in range(1, layers + 1):
        h = b.bias_add(b.matmul(acts[-1], p["fc%d.weight" % k], tb=True, hint="h"),
                       p["fc%d.bias" % k], hint="h_b")
        acts.append(b.relu(h, hint="a"))
    last = layers + 1
    o = b.bias_add(b.matmul(acts[-1], p["fc%d.weight" % last], tb=True, hint="o"),
                   p["fc%d.bias" % last], hint="logits")
    loss = b.cross_entropy(o, labels)

    grads = {}
    one = b.constant(1.0, hint="one")
    d = b.cross_entropy_backward(one, o, labels)
    for k in range(last, 0, -1):
        w, bias = "fc%d.weight" % k, "fc%d.bias" % k
        grads[w] = b.grad_all_reduce(b.matmul(d, acts[k - 1], ta=True, hint="d_fc%d_w" % k), w)
        grads[bias] = b.grad_all_reduce(b.reduce_sum(d, [0], hint="d_fc%d_b" % k), bias)
        if k > 1:
            da = b.matmul(d, p[w], hint="da")
            d = b.relu_backward(da, acts[k - 1], hint="dh")

    for n in shapes:
        new_p, new_buf = b.sgd(n, grads[n], buf[n], lr, momentum)
        b.result(new_p, "parameter", n)
        b.result(new_buf, "optimizer_state", n + ".momentum")
    b.result(loss, "loss", "loss")
    return b


def gpt(batch=8, seq=1024, hidden=768, heads=12, vocab=50304, world_size=8,
        lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    """A one-block GPT-2 (pre-norm attention and gelu MLP, tied lm head) with
    AdamW. Defaults are GPT-2 small's shapes."""
    assert hidden % heads == 0
    hd = hidden // heads
    n = batch * seq
    H, F = hidden, 4 * hidden
    b = StepBuilder("gpt_step", world_size)
    ids = b.arg("batch", "tokens", (batch, seq), "i64")
    labels = b.arg("batch", "labels", (batch, seq), "i64")
    shapes = {
        "wte": (vocab, H), "wpe": (seq, H),
        "h0.ln_1.weight": (H,), "h0.ln_1.bias": (H,),
        "h0.attn.c_attn.weight": (3 * H, H), "h0.attn.c_attn.bias": (3 * H,),
        "h0.attn.c_proj.weight": (H, H), "h0.attn.c_proj.bias": (H,),
        "h0.ln_2.weight": (H,), "h0.ln_2.bias": (H,),
        "h0.mlp.c_fc.weight": (F, H), "h0.mlp.c_fc.bias": (F,),
        "h0.mlp.c_proj.weight": (H, F), "h0.mlp.c_proj.bias": (H,),
        "ln_f.weight": (H,), "ln_f.bias": (H,),
    }
    p = {k: b.param(k, s) for k, s in shapes.items()}
    m = {k: b.arg("optimizer_state", k + ".exp_avg", s) for k, s in shapes.items()}
    v = {k: b.arg("optimizer_state", k + ".exp_avg_sq", s) for k, s in shapes.items()}
    step = b.arg("optimizer_state", "step", ())

    # Forward.
    tok = b.embedding(p["wte"], ids, hint="tok")
    pos = b.broadcast(p["wpe"], [0], (batch, seq, H), hint="pos")
    x2 = b.reshape(b.add(tok, pos, hint="x"), (n, H), hint="x2")
    y1, m1, r1 = b.layer_norm(x2, p["h0.ln_1.weight"], p["h0.ln_1.bias"], hint="ln1")
    qkv = b.bias_add(b.matmul(y1, p["h0.attn.c_attn.weight"], tb=True, hint="qkv"),
                     p["h0.attn.c_attn.bias"], hint="qkv_b")

    def heads_of(x, hint):
        return b.transpose(b.reshape(x, (batch, seq, heads, hd), hint=hint + "4"),
                           [0, 2, 1, 3], hint=hint + "h")

    q = heads_of(b.slice(qkv, [0, 0], (n, H), hint="q"), "q")
    k = heads_of(b.slice(qkv, [0, H], (n, H), hint="k"), "k")
    vv = heads_of(b.slice(qkv, [0, 2 * H], (n, H), hint="v"), "v")
    scores = b.matmul(q, k, tb=True, hint="scores")
    scaled = b.scale(scores, 1.0 / math.sqrt(hd))
    probs = b.softmax(b.causal_mask(scaled, -1e9), 3)
    ctx = b.matmul(probs, vv, hint="ctx")
    ctx2 = b.reshape(b.transpose(ctx, [0, 2, 1, 3], hint="ctx_t"), (n, H), hint="ctx2")
    proj = b.bias_add(b.matmul(ctx2, p["h0.attn.c_proj.weight"], tb=True, hint="proj"),
                      p["h0.attn.c_proj.bias"], hint="proj_b")
    x3 = b.add(x2, proj, hint="x3")
    y2, m2, r2 = b.layer_norm(x3, p["h0.ln_2.weight"], p["h0.ln_2.bias"], hint="ln2")
    fc = b.bias_add(b.matmul(y2, p["h0.mlp.c_fc.weight"], tb=True, hint="fc"),
                    p["h0.mlp.c_fc.bias"], hint="fc_b")
    g = b.gelu(fc)
    mo = b.bias_add(b.matmul(g, p["h0.mlp.c_proj.weight"], tb=True, hint="mlp_out"),
                    p["h0.mlp.c_proj.bias"], hint="mlp_out_b")
    x4 = b.add(x3, mo, hint="x4")
    yf, mf, rf = b.layer_norm(x4, p["ln_f.weight"], p["ln_f.bias"], hint="lnf")
    logits = b.matmul(yf, p["wte"], tb=True, hint="logits")
    flat_labels = b.reshape(labels, (n,), hint="labels_flat")
    loss = b.cross_entropy(logits, flat_labels)

    # Backward, each gradient reduced as soon as it is complete.
    grads = {}

    def reduce(name, grad):
        grads[name] = b.grad_all_reduce(grad, name)

    one = b.constant(1.0, hint="one")
    dlogits = b.cross_entropy_backward(one, logits, flat_labels)
    dwte_head = b.matmul(dlogits, yf, ta=True, hint="d_wte_head")
    dyf = b.matmul(dlogits, p["wte"], hint="dyf")
    dx4, dgf, dbf = b.layer_norm_backward(dyf, x4, mf, rf, p["ln_f.weight"], hint="dlnf")
    reduce("ln_f.weight", dgf)
    reduce("ln_f.bias", dbf)
    reduce("h0.mlp.c_proj.weight", b.matmul(dx4, g, ta=True, hint="d_mlp_proj_w"))
    reduce("h0.mlp.c_proj.bias", b.reduce_sum(dx4, [0], hint="d_mlp_proj_b"))
    dg = b.matmul(dx4, p["h0.mlp.c_proj.weight"], hint="dg")
    dfc = b.gelu_backward(dg, fc, hint="dfc")
    reduce("h0.mlp.c_fc.weight", b.matmul(dfc, y2, ta=True, hint="d_fc_w"))
    reduce("h0.mlp.c_fc.bias", b.reduce_sum(dfc, [0], hint="d_fc_b"))
    dy2 = b.matmul(dfc, p["h0.mlp.c_fc.weight"], hint="dy2")
    dx3a, dg2, db2 = b.layer_norm_backward(dy2, x3, m2, r2, p["h0.ln_2.weight"], hint="dln2")
    reduce("h0.ln_2.weight", dg2)
    reduce("h0.ln_2.bias", db2)
    dx3 = b.add(dx4, dx3a, hint="dx3")
    reduce("h0.attn.c_proj.weight", b.matmul(dx3, ctx2, ta=True, hint="d_attn_proj_w"))
    reduce("h0.attn.c_proj.bias", b.reduce_sum(dx3, [0], hint="d_attn_proj_b"))
    dctx2 = b.matmul(dx3, p["h0.attn.c_proj.weight"], hint="dctx2")
    dctx = b.transpose(b.reshape(dctx2, (batch, seq, heads, hd), hint="dctx4"),
                       [0, 2, 1, 3], hint="dctx")
    dprobs = b.matmul(dctx, vv, tb=True, hint="dprobs")
    dv = b.matmul(probs, dctx, ta=True, hint="dv")
    dmasked = b.softmax_backward(dprobs, probs, 3, hint="dmasked")
    dscores = b.scale(b.causal_mask(dmasked, 0.0, hint="dscaled"), 1.0 / math.sqrt(hd),
                      hint="dscores")
    dq = b.matmul(dscores, k, hint="dq")
    dk = b.matmul(dscores, q, ta=True, hint="dk")

    def merge_heads(x, hint):
        return b.reshape(b.transpose(x, [0, 2, 1, 3], hint=hint + "_t"), (n, H), hint=hint + "2")

    dqkv = b.concat([merge_heads(dq, "dq"), merge_heads(dk, "dk"), merge_heads(dv, "dv")], 1,
                    hint="dqkv")
    reduce("h0.attn.c_attn.weight", b.matmul(dqkv, y1, ta=True, hint="d_attn_w"))
    reduce("h0.attn.c_attn.bias", b.reduce_sum(dqkv, [0], hint="d_attn_b"))
    dy1 = b.matmul(dqkv, p["h0.attn.c_attn.weight"], hint="dy1")
    dx2a, dg1, db1 = b.layer_norm_backward(dy1, x2, m1, r1, p["h0.ln_1.weight"], hint="dln1")
    reduce("h0.ln_1.weight", dg1)
    reduce("h0.ln_1.bias", db1)
    dx = b.reshape(b.add(dx3, dx2a, hint="dx2"), (batch, seq, H), hint="dx")
    reduce("wpe", b.reduce_sum(dx, [0], hint="d_wpe"))
    # The lm head shares wte: its two gradients are summed.
    dwte = b.add(dwte_head, b.embedding_backward(dx, ids, (vocab, H), hint="d_wte_emb"),
                 hint="d_wte")
    reduce("wte", dwte)

    # AdamW on every parameter.
    new_step = b.add(step, b.constant(1.0, hint="one"), hint="new_step")
    new = {}
    for name in shapes:
        new[name] = b.adamw(name, grads[name], m[name], v[name], new_step, lr, betas, eps,
                            weight_decay)
    for name in shapes:
        b.result(new[name][0], "parameter", name)
    for name in shapes:
        b.result(new[name][1], "optimizer_state", name + ".exp_avg")
        b.result(new[name][2], "optimizer_state", name + ".exp_avg_sq")
    b.result(new_step, "optimizer_state", "step")
    b.result(loss, "loss", "loss")
    return b


MODELS = {"mlp": mlp, "gpt": gpt}


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m braid.models",
        description="Write a model's data-parallel training step as braid IR.")
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--world-size", type=int, default=8,
                        help="ranks of the data-parallel grid (default 8)")
    parser.add_argument("--layers", type=int, default=None,
                        help="hidden layers (mlp only; default 1)")
    parser.add_argument("--batch", type=int, default=None,
                        help="per-rank batch (sequences for gpt)")
    parser.add_argument("--seq", type=int, default=None, help="sequence length (gpt)")
    parser.add_argument("--hidden", type=int, default=None, help="hidden size")
    parser.add_argument("--heads", type=int, default=None, help="attention heads (gpt)")
    parser.add_argument("--vocab", type=int, default=None, help="vocabulary (gpt)")
    parser.add_argument("--features", type=int, default=None, help="input features (mlp)")
    parser.add_argument("--classes", type=int, default=None, help="classes (mlp)")
    parser.add_argument("--tiny", action="store_true",
                        help="a small configuration that trains on CPUs in seconds "
                             "(gpt: batch 2, seq 32, hidden 64, 4 heads, vocab 64; "
                             "mlp: batch 16, 32 features, hidden 64, 10 classes)")
    parser.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = parser.parse_args(argv)
    if args.world_size < 1:
        parser.error("--world-size must be at least 1")
    kwargs = {"world_size": args.world_size}
    tiny = {"gpt": dict(batch=2, seq=32, hidden=64, heads=4, vocab=64),
            "mlp": dict(batch=16, features=32, hidden=64, classes=10)}
    if args.tiny:
        kwargs.update(tiny[args.model])
    shape_options = {"gpt": ("batch", "seq", "hidden", "heads", "vocab"),
                     "mlp": ("batch", "features", "hidden", "classes")}
    for name in ("batch", "seq", "hidden", "heads", "vocab", "features", "classes"):
        value = getattr(args, name)
        if value is None:
            continue
        if name not in shape_options[args.model]:
            parser.error("--%s is not an option of %s" % (name, args.model))
        if value < 1:
            parser.error("--%s must be at least 1" % name)
        kwargs[name] = value
    if args.model == "gpt" and kwargs.get("hidden", 768) % kwargs.get("heads", 12):
        parser.error("--hidden must be a multiple of --heads")
    if args.layers is not None:
        if args.model != "mlp":
            parser.error("--layers is only for mlp")
        if args.layers < 1:
            parser.error("--layers must be at least 1")
        kwargs["layers"] = args.layers
    step = MODELS[args.model](**kwargs)
    # The command that regenerates this file (without the output path).
    command = [args.model] + (["--tiny"] if args.tiny else [])
    if args.world_size != 8:
        command.append("--world-size %d" % args.world_size)
    for name in ("layers", "batch", "seq", "hidden", "heads", "vocab", "features", "classes"):
        if getattr(args, name) is not None:
            command.append("--%s %d" % (name, getattr(args, name)))
    header = ("// Generated by `python3 -m braid.models %s`: one data-parallel training\n"
              "// step (forward, backward, gradient all-reduces, optimizer).\n" % " ".join(command))
    text = step.text(header)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
