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

from braid._cli import module_command
from braid.ir import (DEFAULT_PIPELINE_SCHEDULE, MAX_MICRO_BATCHES, PIPELINE_SCHEDULES,
                      StepBuilder, data_parallel_degree, is_interleaved)


def mlp(batch=64, features=784, hidden=1024, classes=10, world_size=8,
        lr=0.01, momentum=0.9, layers=1, tp=1, pp=1):
    """An MLP of `layers` hidden layers (Linear, ReLU, ..., Linear,
    cross-entropy) trained with SGD+momentum; the default is 2 linear layers.
    With `tp` > 1, Megatron's layout: the linear layers alternate
    column-parallel (weight and bias split by rows) and row-parallel
    (weight split by columns, bias replicated) from the first; an odd last
    layer is replicated."""
    b = StepBuilder("mlp_step", world_size, tp=tp, pp=pp)
    x = b.arg("batch", "x", (batch, features))
    labels = b.arg("batch", "labels", (batch,), "i64")
    sizes = [features] + [hidden] * layers + [classes]
    shapes = {}
    for k in range(1, len(sizes)):
        shapes["fc%d.weight" % k] = (sizes[k], sizes[k - 1])
        shapes["fc%d.bias" % k] = (sizes[k],)
    p = {n: b.param(n, s) for n, s in shapes.items()}
    buf = {n: b.arg("optimizer_state", n + ".momentum", s) for n, s in shapes.items()}
    last = len(sizes) - 1
    for k in range(1, len(sizes)):
        # Pairs (column, row); an odd last layer stays replicated (its
        # output, the logits, is needed whole).
        if k % 2 == 1 and k < last:
            b.shard("fc%d.weight" % k, "split 0")
            b.shard("fc%d.bias" % k, "split 0")
        elif k % 2 == 0:
            b.shard("fc%d.weight" % k, "split 1")

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
        lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, layers=1, tp=1,
        vocab_parallel=False, micro_batches=1, max_grad_norm=None, dtype="f32",
        master_weights=False, reduce_dtype=None, attention="fused", pp=1):
    """A GPT-2 (pre-norm attention and gelu MLP, tied lm head) with AdamW,
    `layers` blocks (default one). Defaults are GPT-2 small's shapes."""
    return transformer("gpt2", batch=batch, seq=seq, hidden=hidden, heads=heads,
                       vocab=vocab, world_size=world_size, lr=lr, betas=betas, eps=eps,
                       weight_decay=weight_decay, layers=layers, tp=tp,
                       vocab_parallel=vocab_parallel, micro_batches=micro_batches,
                       max_grad_norm=max_grad_norm, dtype=dtype,
                       master_weights=master_weights, reduce_dtype=reduce_dtype,
                       attention=attention, pp=pp)


def transformer(kind, batch, seq, hidden, heads, vocab, layers, world_size=8,
                ffn=None, kv_heads=None, dtype="f32", lr=3e-4, betas=(0.9, 0.95),
                eps=1e-8, weight_decay=0.1, tp=1, vocab_parallel=False, micro_batches=1,
                max_grad_norm=None, master_weights=False, reduce_dtype=None,
                attention="fused", pp=1):
    """A transformer training step with AdamW, forward and backward by hand.

    kind "gpt2": learned positions, layer norm with bias, biased projections,
      gelu MLP of width `ffn` (4 * hidden), causal attention, lm head tied to
      the token embedding.
    kind "bert": as gpt2, but attention is bidirectional (no causal mask);
      the masked-LM head (tied) predicts every position.
    kind "llama": no position table (rotary embeddings are not modelled, a
      small elementwise cost), norms without bias (layer norm in place of RMS
      norm: the same cost class), no biases, a gated MLP of three matrices
      (gelu gate in place of SiLU: the same cost), grouped-query attention
      with `kv_heads` key/value heads, an untied lm head.
    `dtype` is every tensor's type (pure bf16 training; no f32 master
    weights); the optimizer's step count stays f32. With `master_weights`
    (mixed precision, as braid.export's autocast and Megatron's bf16 recipe
    run it), the parameters, the optimizer state, the gradients' accumulation
    and AdamW stay f32: each step casts the parameters to `dtype` once, the
    forward and backward compute in `dtype`, the logits are cast to f32 for
    the loss (autocast's log_softmax), and each gradient is cast to f32 as it
    is complete. `reduce_dtype` is the type the gradients are all-reduced in
    (default: theirs, f32 with master weights), cast back after the
    backward.
    `world_size` counts every rank; with `tp` > 1 the grid is
    `world_size / tp` data-parallel ranks x `tp` with Megatron's layout:
    the fused q/k/v projection, the MLP's first matrices (and gate)
    column-parallel by whole heads, the output projections row-parallel;
    norms and the output biases replicated; the embeddings too unless
    `vocab_parallel`: then the token table (tied with the lm head) and
    llama's lm head are split by rows, Megatron's vocabulary-parallel
    embedding and cross-entropy, the vocabulary padded as Megatron pads it
    where it does not divide by `tp` (to a multiple of 128 * tp).
    With `micro_batches` k > 1, each rank's batch is k micro-batches of
    `batch` sequences: the forward and backward run once per micro-batch
    (the loss gradient 1/k), the gradients add up, and each is all-reduced
    once, after its gradient in the last micro-batch (gradient
    accumulation, as braid.export writes it). With `max_grad_norm`, the
    reduced gradients are clipped to that global norm before AdamW
    (torch.nn.utils.clip_grad_norm_, as braid.export writes it).
    `attention` "fused" is one braid.attention a layer and its backward
    (FlashAttention: no [seq, seq] tensor, what braid.export writes for
    scaled_dot_product_attention); "unfused" writes the scores, the mask
    and the softmax as their own ops, each [batch, heads, seq, seq]."""
    if attention not in ("fused", "unfused"):
        raise ValueError("attention must be 'fused' or 'unfused', not %r" % (attention,))
    assert hidden % heads == 0
    if vocab_parallel and vocab % tp:
        # Megatron's padding (--make-vocab-size-divisible-by 128, times the
        # tensor-parallel size): GPT-2's 50257 rows become 51200 at t = 8.
        vocab = -(-vocab // (128 * tp)) * 128 * tp
    kv_heads = kv_heads or heads
    assert heads % kv_heads == 0
    hd = hidden // heads
    group = heads // kv_heads
    kvd = kv_heads * hd
    n = batch * seq
    H = hidden
    F = ffn or 4 * hidden
    llama = kind == "llama"
    name = {"gpt2": "gpt_step", "bert": "bert_step", "llama": "llama_step"}[kind]
    b = StepBuilder(name, world_size, tp=tp, pp=pp)
    all_ids = b.arg("batch", "tokens", (micro_batches * batch, seq), "i64")
    all_labels = b.arg("batch", "labels", (micro_batches * batch, seq), "i64")
    shapes = {"wte": (vocab, H)}
    if not llama:
        shapes["wpe"] = (seq, H)
    for i in range(layers):
        h = "h%d." % i
        shapes[h + "ln_1.weight"] = (H,)
        if not llama:
            shapes[h + "ln_1.bias"] = (H,)
        shapes[h + "attn.c_attn.weight"] = (H + 2 * kvd, H)
        if not llama:
            shapes[h + "attn.c_attn.bias"] = (H + 2 * kvd,)
        shapes[h + "attn.c_proj.weight"] = (H, H)
        if not llama:
            shapes[h + "attn.c_proj.bias"] = (H,)
        shapes[h + "ln_2.weight"] = (H,)
        if not llama:
            shapes[h + "ln_2.bias"] = (H,)
        if llama:
            shapes[h + "mlp.gate.weight"] = (F, H)
        shapes[h + "mlp.c_fc.weight"] = (F, H)
        if not llama:
            shapes[h + "mlp.c_fc.bias"] = (F,)
        shapes[h + "mlp.c_proj.weight"] = (H, F)
        if not llama:
            shapes[h + "mlp.c_proj.bias"] = (H,)
    shapes["ln_f.weight"] = (H,)
    if not llama:
        shapes["ln_f.bias"] = (H,)
    if llama:
        shapes["lm_head.weight"] = (vocab, H)
    master = "f32" if master_weights else dtype
    p = {k: b.param(k, s, master) for k, s in shapes.items()}
    m = {k: b.arg("optimizer_state", k + ".exp_avg", s, master) for k, s in shapes.items()}
    v = {k: b.arg("optimizer_state", k + ".exp_avg_sq", s, master) for k, s in shapes.items()}
    step = b.arg("optimizer_state", "step", ())
    for i in range(layers):
        h = "h%d." % i
        qkv_blocks = "split 0 blocks [%d, %d, %d]" % (H, kvd, kvd)
        b.shard(h + "attn.c_attn.weight", qkv_blocks)
        if not llama:
            b.shard(h + "attn.c_attn.bias", qkv_blocks)
        b.shard(h + "attn.c_proj.weight", "split 1")
        b.shard(h + "mlp.c_fc.weight", "split 0")
        if not llama:
            b.shard(h + "mlp.c_fc.bias", "split 0")
        if llama:
            b.shard(h + "mlp.gate.weight", "split 0")
        b.shard(h + "mlp.c_proj.weight", "split 1")
    if vocab_parallel:
        b.shard("wte", "split 0")
        if llama:
            b.shard("lm_head.weight", "split 0")
    if master != dtype:
        # The compute copy of every parameter, cast once a step.
        p = {k: b.cast(w, dtype, hint="c_" + k.replace(".", "_")) for k, w in p.items()}
    zero_bias = b.fill(0.0, (H,), dtype, hint="no_bias") if llama else None

    def bias(x, name, hint):
        return x if llama else b.bias_add(x, p[name], hint=hint)

    def norm(x, prefix, hint):
        return b.layer_norm(x, p[prefix + ".weight"], zero_bias if llama else p[prefix + ".bias"],
                            hint=hint)

    def heads_of(x, nh, hint):
        return b.transpose(b.reshape(x, (batch, seq, nh, hd), hint=hint + "4"),
                           [0, 2, 1, 3], hint=hint + "h")

    def expand_kv(x, hint):
        # (batch, kv_heads, seq, hd) -> (batch, heads, seq, hd), grouped-query.
        if group == 1:
            return x
        e = b.broadcast(x, [2], (batch, kv_heads, group, seq, hd), hint=hint + "_rep")
        return b.reshape(e, (batch, heads, seq, hd), hint=hint + "_exp")

    def reduce_kv(dx, hint):
        if group == 1:
            return dx
        r = b.reshape(dx, (batch, kv_heads, group, seq, hd), hint=hint + "_grp")
        return b.reduce_sum(r, [2], hint=hint + "_sum")

    # One micro-batch: its forward and backward, its gradients added to the
    # earlier ones (each rank's batch is `micro_batches` micro-batches of
    # `batch` sequences).
    grads, acc = {}, {}

    def micro_step(mb, ids, labels):
        # Forward.
        tok = b.embedding(p["wte"], ids, hint="tok")
        if llama:
            x2 = b.reshape(tok, (n, H), hint="x2")
        else:
            pos = b.broadcast(p["wpe"], [0], (batch, seq, H), hint="pos")
            x2 = b.reshape(b.add(tok, pos, hint="x"), (n, H), hint="x2")
        saved = []
        x = x2
        for i in range(layers):
            h = "h%d." % i
            s_ = {"x": x}
            y1, m1, r1 = norm(x, h + "ln_1", "ln1")
            qkv = bias(b.matmul(y1, p[h + "attn.c_attn.weight"], tb=True, hint="qkv"),
                       h + "attn.c_attn.bias", "qkv_b")
            q = heads_of(b.slice(qkv, [0, 0], (n, H), hint="q"), heads, "q")
            k = heads_of(b.slice(qkv, [0, H], (n, kvd), hint="k"), kv_heads, "k")
            vv = heads_of(b.slice(qkv, [0, H + kvd], (n, kvd), hint="v"), kv_heads, "v")
            ke = ve = probs = lse = None
            if attention == "fused":
                ctx, lse = b.attention(q, k, vv, kind != "bert", 1.0 / math.sqrt(hd))
            else:
                ke, ve = expand_kv(k, "k"), expand_kv(vv, "v")
                scores = b.matmul(q, ke, tb=True, hint="scores")
                scaled = b.scale(scores, 1.0 / math.sqrt(hd))
                probs = b.softmax(scaled if kind == "bert" else b.causal_mask(scaled, -1e9), 3)
                ctx = b.matmul(probs, ve, hint="ctx")
            ctx2 = b.reshape(b.transpose(ctx, [0, 2, 1, 3], hint="ctx_t"), (n, H), hint="ctx2")
            proj = bias(b.matmul(ctx2, p[h + "attn.c_proj.weight"], tb=True, hint="proj"),
                        h + "attn.c_proj.bias", "proj_b")
            x3 = b.add(x, proj, hint="x3")
            y2, m2, r2 = norm(x3, h + "ln_2", "ln2")
            fc = bias(b.matmul(y2, p[h + "mlp.c_fc.weight"], tb=True, hint="fc"),
                      h + "mlp.c_fc.bias", "fc_b")
            if llama:
                gate = b.matmul(y2, p[h + "mlp.gate.weight"], tb=True, hint="gate")
                act = b.gelu(gate, hint="gate_act")
                g = b.mul(act, fc, hint="gated")
            else:
                g = b.gelu(fc)
            mo = bias(b.matmul(g, p[h + "mlp.c_proj.weight"], tb=True, hint="mlp_out"),
                      h + "mlp.c_proj.bias", "mlp_out_b")
            x4 = b.add(x3, mo, hint="x4")
            s_.update(y1=y1, m1=m1, r1=r1, q=q, k=k, v=vv, ke=ke, ve=ve, probs=probs, ctx=ctx,
                      lse=lse, ctx2=ctx2, x3=x3, y2=y2, m2=m2, r2=r2, fc=fc, g=g)
            if llama:
                s_.update(gate=gate, act=act)
            saved.append(s_)
            x = x4
        yf, mf, rf = norm(x, "ln_f", "lnf")
        head = p["lm_head.weight"] if llama else p["wte"]
        logits = b.matmul(yf, head, tb=True, hint="logits")
        flat_labels = b.reshape(labels, (n,), hint="labels_flat")
        if master != dtype:
            logits = b.cast(logits, master, hint="logits32")
        loss = b.cross_entropy(logits, flat_labels)

        # Backward, each gradient reduced as soon as it is complete.
        def reduce(name, grad):
            # Accumulated over the micro-batches (in the master type);
            # all-reduced after the last.
            if grad.dtype != master and (micro_batches > 1 or reduce_dtype != grad.dtype):
                grad = b.cast(grad, master, hint="d32_" + name.replace(".", "_"))
            total = grad if mb == 0 else b.add(acc[name], grad, hint="acc_" + name.replace(".", "_"))
            acc[name] = total
            if mb == micro_batches - 1:
                grads[name] = b.grad_all_reduce(total, name, reduce_dtype)

        def linear_backward(dy, x, prefix, hint_w, hint_b, hint_dx):
            """y = x W^T (+ bias): reduces dW (and db), returns dx."""
            reduce(prefix + ".weight", b.matmul(dy, x, ta=True, hint=hint_w))
            if not llama:
                reduce(prefix + ".bias", b.reduce_sum(dy, [0], hint=hint_b))
            return b.matmul(dy, p[prefix + ".weight"], hint=hint_dx)

        def norm_backward(dy, x, mean, rstd, prefix, hint):
            """Layer norm: reduces its scale (and bias) gradients, returns dx."""
            dx, dgamma, dbeta = b.layer_norm_backward(dy, x, mean, rstd, p[prefix + ".weight"],
                                                      hint=hint)
            reduce(prefix + ".weight", dgamma)
            if not llama:
                reduce(prefix + ".bias", dbeta)
            return dx

        one = b.constant(1.0 / micro_batches, dtype=logits.dtype, hint="one")
        dlogits = b.cross_entropy_backward(one, logits, flat_labels)
        if dlogits.dtype != dtype:
            dlogits = b.cast(dlogits, dtype, hint="dlogits16")
        dhead = b.matmul(dlogits, yf, ta=True, hint="d_lm_head" if llama else "d_wte_head")
        if llama:
            reduce("lm_head.weight", dhead)
        dyf = b.matmul(dlogits, head, hint="dyf")
        dx = norm_backward(dyf, x, mf, rf, "ln_f", "dlnf")
        for i in reversed(range(layers)):
            h = "h%d." % i
            s_ = saved[i]
            dx4 = dx
            dg = linear_backward(dx4, s_["g"], h + "mlp.c_proj", "d_mlp_proj_w", "d_mlp_proj_b", "dg")
            if llama:
                dact = b.mul(dg, s_["fc"], hint="d_act")
                dfc = b.mul(dg, s_["act"], hint="dfc")
                dgate = b.gelu_backward(dact, s_["gate"], hint="d_gate")
                reduce(h + "mlp.gate.weight", b.matmul(dgate, s_["y2"], ta=True, hint="d_gate_w"))
                reduce(h + "mlp.c_fc.weight", b.matmul(dfc, s_["y2"], ta=True, hint="d_fc_w"))
                dy2 = b.add(b.matmul(dgate, p[h + "mlp.gate.weight"], hint="dy2_gate"),
                            b.matmul(dfc, p[h + "mlp.c_fc.weight"], hint="dy2_fc"), hint="dy2")
            else:
                dfc = b.gelu_backward(dg, s_["fc"], hint="dfc")
                dy2 = linear_backward(dfc, s_["y2"], h + "mlp.c_fc", "d_fc_w", "d_fc_b", "dy2")
            dx3a = norm_backward(dy2, s_["x3"], s_["m2"], s_["r2"], h + "ln_2", "dln2")
            dx3 = b.add(dx4, dx3a, hint="dx3")
            dctx2 = linear_backward(dx3, s_["ctx2"], h + "attn.c_proj", "d_attn_proj_w",
                                    "d_attn_proj_b", "dctx2")
            dctx = b.transpose(b.reshape(dctx2, (batch, seq, heads, hd), hint="dctx4"),
                               [0, 2, 1, 3], hint="dctx")
            if attention == "fused":
                dq, dk, dv = b.attention_backward(dctx, s_["q"], s_["k"], s_["v"], s_["ctx"],
                                                  s_["lse"], kind != "bert", 1.0 / math.sqrt(hd))
            else:
                dprobs = b.matmul(dctx, s_["ve"], tb=True, hint="dprobs")
                dv = reduce_kv(b.matmul(s_["probs"], dctx, ta=True, hint="dv"), "dv")
                dmasked = b.softmax_backward(dprobs, s_["probs"], 3, hint="dmasked")
                if kind == "bert":
                    dscores = b.scale(dmasked, 1.0 / math.sqrt(hd), hint="dscores")
                else:
                    dscores = b.scale(b.causal_mask(dmasked, 0.0, hint="dscaled"),
                                      1.0 / math.sqrt(hd), hint="dscores")
                dq = b.matmul(dscores, s_["ke"], hint="dq")
                dk = reduce_kv(b.matmul(dscores, s_["q"], ta=True, hint="dk"), "dk")

            def merge_heads(t, nh, hint):
                return b.reshape(b.transpose(t, [0, 2, 1, 3], hint=hint + "_t"), (n, nh * hd),
                                 hint=hint + "2")

            dqkv = b.concat([merge_heads(dq, heads, "dq"), merge_heads(dk, kv_heads, "dk"),
                             merge_heads(dv, kv_heads, "dv")], 1, hint="dqkv")
            dy1 = linear_backward(dqkv, s_["y1"], h + "attn.c_attn", "d_attn_w", "d_attn_b", "dy1")
            dx2a = norm_backward(dy1, s_["x"], s_["m1"], s_["r1"], h + "ln_1", "dln1")
            dx = b.add(dx3, dx2a, hint="dx2")
        dx = b.reshape(dx, (batch, seq, H), hint="dx")
        if not llama:
            reduce("wpe", b.reduce_sum(dx, [0], hint="d_wpe"))
        demb = b.embedding_backward(dx, ids, (vocab, H), hint="d_wte_emb")
        if llama:
            reduce("wte", demb)
        else:
            # The lm head shares wte: its two gradients are summed.
            reduce("wte", b.add(dhead, demb, hint="d_wte"))

        return loss

    losses = []
    for mb in range(micro_batches):
        if micro_batches == 1:
            losses.append(micro_step(mb, all_ids, all_labels))
            continue
        losses.append(micro_step(
            mb, b.slice(all_ids, [mb * batch, 0], (batch, seq), hint="tokens_mb%d" % mb),
            b.slice(all_labels, [mb * batch, 0], (batch, seq), hint="labels_mb%d" % mb)))
    loss = losses[0]
    for other in losses[1:]:
        loss = b.add(loss, other, hint="loss_sum")
    if micro_batches > 1:
        loss = b.scale(loss, 1.0 / micro_batches, hint="loss_mean")

    # Gradients reduced in a narrower type come back to the master type
    # after the backward.
    for name in shapes:
        if grads[name].dtype != master:
            grads[name] = b.cast(grads[name], master, hint="g32_" + name.replace(".", "_"))
    scale = None if max_grad_norm is None else b.clip_factor(grads, max_grad_norm)

    # AdamW on every parameter.
    new_step = b.add(step, b.constant(1.0, hint="one"), hint="new_step")
    new = {}
    for name in shapes:
        new[name] = b.adamw(name, grads[name], m[name], v[name], new_step, lr, betas, eps,
                            weight_decay, grad_scale=scale)
    for name in shapes:
        b.result(new[name][0], "parameter", name)
    for name in shapes:
        b.result(new[name][1], "optimizer_state", name + ".exp_avg")
        b.result(new[name][2], "optimizer_state", name + ".exp_avg_sq")
    b.result(new_step, "optimizer_state", "step")
    b.result(loss, "loss", "loss")
    return b


# Published shapes (the models' papers and configurations): layers, hidden,
# heads, key/value heads, MLP width, vocabulary, sequence.
PRESETS = {
    "gpt2-small": dict(kind="gpt2", layers=12, hidden=768, heads=12, vocab=50257, seq=1024),
    "gpt2-medium": dict(kind="gpt2", layers=24, hidden=1024, heads=16, vocab=50257, seq=1024),
    "gpt2-xl": dict(kind="gpt2", layers=48, hidden=1600, heads=25, vocab=50257, seq=1024),
    "llama2-7b": dict(kind="llama", layers=32, hidden=4096, heads=32, ffn=11008, vocab=32000,
                      seq=4096),
    "llama2-13b": dict(kind="llama", layers=40, hidden=5120, heads=40, ffn=13824, vocab=32000,
                       seq=4096),
    "llama2-70b": dict(kind="llama", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672,
                       vocab=32000, seq=4096),
    "bert-large": dict(kind="bert", layers=24, hidden=1024, heads=16, vocab=30522, seq=512),
}


def preset(name, **overrides):
    """A preset's step; `overrides` replace its shapes (batch defaults to 1)."""
    kw = dict(PRESETS[name])
    kw["batch"] = 1
    kw.update({k: v for k, v in overrides.items() if v is not None})
    return transformer(**kw)


MODELS = {"mlp": mlp, "gpt": gpt}
TRANSFORMERS = ["gpt"] + sorted(PRESETS)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=module_command("braid.models"),
        description="Write a model's data-parallel training step as braid IR.",
        epilog="Presets have their published shapes (layers, hidden, heads, MLP width, "
               "vocabulary, sequence) with a micro-batch of 1; the options override them. "
               "No weights are written: braid-run initializes them.")
    parser.add_argument("model", choices=sorted(MODELS) + sorted(PRESETS))
    parser.add_argument("--world-size", type=int, default=8,
                        help="every rank of the grid, as torch and mpirun count them: the "
                             "data-parallel size is WORLD_SIZE / (TP x PP) (default 8)")
    parser.add_argument("--tp", type=int, default=1,
                        help="tensor-parallel size: the grid is WORLD_SIZE / TP data-parallel "
                             "ranks x TP with Megatron's sharding of the parameters, "
                             "for braid-tensor-parallel (default 1: data parallel only)")
    parser.add_argument("--pp", type=int, default=1,
                        help="pipeline stages: the grid is PP x WORLD_SIZE / PP (/ TP x TP), "
                             "the step one micro-batch's, which braid-compile splits into stage "
                             "programs (braid-pipeline; default 1: no pipeline)")
    parser.add_argument("--schedule-pp", choices=PIPELINE_SCHEDULES, default=None,
                        help="with --pp: the order of a stage's micro-batches (default 1f1b)")
    parser.add_argument("--virtual-stages", type=int, default=None,
                        help="with --schedule-pp interleaved: virtual stages (model chunks) "
                             "per rank, the step split into PP x V stages (default 2)")
    parser.add_argument("--stage-boundaries", default=None,
                        help="with --pp: the module starting each stage after the first, "
                             "comma-separated (default: stages balanced by the cost model)")
    parser.add_argument("--vocab-parallel", action="store_true",
                        help="with --tp: split the token embedding (tied with the lm head) "
                             "and llama's lm head by rows over the tensor-parallel ranks "
                             "(Megatron's vocabulary-parallel embedding and cross-entropy)")
    parser.add_argument("--layers", type=int, default=None,
                        help="hidden layers (mlp; default 1) or transformer blocks")
    parser.add_argument("--batch", type=int, default=None,
                        help="per-rank (micro-)batch (sequences for transformers)")
    parser.add_argument("--max-grad-norm", type=float, default=None,
                        help="clip the gradients to this global norm (transformers)")
    parser.add_argument("--micro-batches", type=int, default=None,
                        help="gradient accumulation (transformers): each step runs this many "
                             "micro-batches of --batch sequences, all-reducing once")
    parser.add_argument("--seq", type=int, default=None, help="sequence length (transformers)")
    parser.add_argument("--hidden", type=int, default=None, help="hidden size")
    parser.add_argument("--heads", type=int, default=None, help="attention heads (transformers)")
    parser.add_argument("--vocab", type=int, default=None, help="vocabulary (transformers)")
    parser.add_argument("--features", type=int, default=None, help="input features (mlp)")
    parser.add_argument("--classes", type=int, default=None, help="classes (mlp)")
    parser.add_argument("--dtype", choices=["f32", "bf16", "f16"], default=None,
                        help="element type of every tensor (transformer presets; default f32; "
                             "the cpu backend runs f32, bf16 and f16, the cuda backend f32, "
                             "the simulator all)")
    parser.add_argument("--autocast", choices=["bf16", "f16"], default=None,
                        help="mixed precision (transformers): compute in this type, f32 "
                             "master weights, optimizer state and AdamW")
    parser.add_argument("--reduce-dtype", choices=["f32", "bf16"], default=None,
                        help="the type gradients are all-reduced in (with --autocast; "
                             "default f32)")
    parser.add_argument("--zero", type=int, choices=[0, 1, 2], default=0,
                        help="shard the optimizer state over the data-parallel ranks as ZeRO "
                             "does: the module asks braid-compile for this stage "
                             "(braid.zero_stage; braid-compile --zero overrides it; "
                             "docs/ShardedDataParallel.md; default 0)")
    parser.add_argument("--tiny", action="store_true",
                        help="a small configuration that trains on CPUs in seconds "
                             "(gpt: batch 2, seq 32, hidden 64, 4 heads, vocab 64; "
                             "mlp: batch 16, 32 features, hidden 64, 10 classes)")
    parser.add_argument("--attention", choices=["fused", "unfused"], default=None,
                        help="transformers: one braid.attention a layer (fused, the default: "
                             "FlashAttention, no [seq, seq] tensor) or the scores, mask and "
                             "softmax as separate ops (unfused)")
    parser.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = parser.parse_args(argv)
    if args.world_size < 1:
        parser.error("--world-size must be at least 1")
    if args.tp < 1:
        parser.error("--tp must be at least 1")
    if args.vocab_parallel and args.tp == 1:
        parser.error("--vocab-parallel needs --tp above 1")
    if args.pp < 1:
        parser.error("--pp must be at least 1")
    try:
        data_parallel_degree(args.world_size, args.tp, args.pp)
    except ValueError as e:
        parser.error(str(e))
    if args.pp == 1 and (args.schedule_pp or args.stage_boundaries):
        parser.error("--schedule-pp and --stage-boundaries need --pp above 1")
    if args.virtual_stages is not None and not is_interleaved(args.schedule_pp):
        parser.error("--virtual-stages needs --schedule-pp interleaved")
    virtual = args.virtual_stages if args.virtual_stages is not None else \
        2 if is_interleaved(args.schedule_pp) else 1
    kwargs = {"world_size": args.world_size, "tp": args.tp, "pp": args.pp}
    if args.vocab_parallel:
        if args.model == "mlp":
            parser.error("--vocab-parallel is for transformers")
        kwargs["vocab_parallel"] = True
    tiny = {"gpt": dict(batch=2, seq=32, hidden=64, heads=4, vocab=64),
            "mlp": dict(batch=16, features=32, hidden=64, classes=10)}
    if args.tiny:
        if args.model not in tiny:
            parser.error("--tiny is for gpt and mlp")
        kwargs.update(tiny[args.model])
    transformer_options = ("layers", "batch", "seq", "hidden", "heads", "vocab",
                           "micro_batches")
    shape_options = {"mlp": ("layers", "batch", "features", "hidden", "classes")}
    allowed = shape_options.get(args.model, transformer_options)
    if args.pp > 1:
        allowed = allowed + ("micro_batches",)
    for name in ("layers", "batch", "seq", "hidden", "heads", "vocab", "features", "classes",
                 "micro_batches"):
        value = getattr(args, name)
        if value is None:
            continue
        if name not in allowed:
            parser.error("--%s is not an option of %s" % (name.replace("_", "-"), args.model))
        if value < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
        if name == "micro_batches" and value > MAX_MICRO_BATCHES:
            parser.error("--micro-batches must be at most %d (each micro-batch is unrolled "
                         "into the step), not %d" % (MAX_MICRO_BATCHES, value))
        kwargs[name] = value
    if args.max_grad_norm is not None:
        if args.model == "mlp":
            parser.error("--max-grad-norm is for transformers")
        if not 0 < args.max_grad_norm < float("inf"):
            parser.error("--max-grad-norm must be positive and finite")
        kwargs["max_grad_norm"] = args.max_grad_norm
    if args.dtype is not None:
        if args.model not in PRESETS:
            parser.error("--dtype is an option of the presets (%s)" % ", ".join(sorted(PRESETS)))
        kwargs["dtype"] = args.dtype
    if args.autocast is not None:
        if args.model == "mlp":
            parser.error("--autocast is for transformers")
        if args.dtype is not None:
            parser.error("--autocast and --dtype exclude each other (--autocast computes in its "
                         "type with f32 master weights)")
        kwargs.update(dtype=args.autocast, master_weights=True)
    if args.reduce_dtype is not None:
        if args.autocast is None:
            parser.error("--reduce-dtype goes with --autocast")
        kwargs["reduce_dtype"] = None if args.reduce_dtype == "f32" else args.reduce_dtype
    if args.attention is not None:
        if args.model == "mlp":
            parser.error("--attention is for transformers")
        kwargs["attention"] = args.attention
    # A pipelined step is one micro-batch's: braid-pipeline runs it once per
    # micro-batch (an MLP's too).
    micro = kwargs.pop("micro_batches", 1) if args.pp > 1 else None
    if args.model in MODELS:
        if args.model == "gpt" and kwargs.get("hidden", 768) % kwargs.get("heads", 12):
            parser.error("--hidden must be a multiple of --heads")
        step = MODELS[args.model](**kwargs)
    else:
        shape = dict(PRESETS[args.model])
        shape.update(kwargs)
        if shape["hidden"] % shape["heads"]:
            parser.error("--hidden (%d) must be a multiple of --heads (%d)" % (
                shape["hidden"], shape["heads"]))
        if shape["heads"] % shape.get("kv_heads", shape["heads"]):
            parser.error("--heads must be a multiple of the key/value heads (%d)" % shape["kv_heads"])
        step = preset(args.model, **kwargs)
    if args.zero:
        step.zero_stage = args.zero
    if args.pp > 1:
        boundaries = [b for b in (args.stage_boundaries or "").split(",") if b]
        try:
            step.pipeline(micro, args.schedule_pp or DEFAULT_PIPELINE_SCHEDULE, boundaries, virtual)
        except ValueError as e:
            parser.error(str(e))
    # The command that regenerates this file (without the output path).
    command = [args.model] + (["--tiny"] if args.tiny else [])
    if args.world_size != 8:
        command.append("--world-size %d" % args.world_size)
    if args.tp != 1:
        command.append("--tp %d" % args.tp)
    if args.pp != 1:
        command.append("--pp %d" % args.pp)
    if args.schedule_pp:
        command.append("--schedule-pp %s" % args.schedule_pp)
    if args.virtual_stages is not None:
        command.append("--virtual-stages %d" % args.virtual_stages)
    if args.stage_boundaries:
        command.append("--stage-boundaries %s" % args.stage_boundaries)
    if args.vocab_parallel:
        command.append("--vocab-parallel")
    for name in ("layers", "batch", "seq", "hidden", "heads", "vocab", "features", "classes",
                 "micro_batches"):
        if getattr(args, name) is not None:
            command.append("--%s %d" % (name.replace("_", "-"), getattr(args, name)))
    if args.dtype is not None:
        command.append("--dtype %s" % args.dtype)
    if args.autocast is not None:
        command.append("--autocast %s" % args.autocast)
    if args.reduce_dtype is not None:
        command.append("--reduce-dtype %s" % args.reduce_dtype)
    if args.max_grad_norm is not None:
        command.append("--max-grad-norm %g" % args.max_grad_norm)
    if args.attention is not None:
        command.append("--attention %s" % args.attention)
    if args.zero:
        command.append("--zero %d" % args.zero)
    kind = "data-parallel" if args.tp == 1 else "global (tensor-parallel, for braid-tensor-parallel)"
    if args.pp > 1:
        kind = "micro-batch's pipelined (split into stages by braid-compile)"
    header = ("// Generated by `python3 -m braid.models %s`: one %s training\n"
              "// step (forward, backward, gradient all-reduces, optimizer).\n" % (" ".join(command), kind))
    text = step.text(header)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
