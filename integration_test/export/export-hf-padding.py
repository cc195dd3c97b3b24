# Hugging Face models whose config sets `pad_token_id`, as real configs do
# (issue 48): their token embedding is nn.Embedding(padding_idx=P), whose
# row P gets no gradient. Qwen2, Qwen3, Mistral, Phi-3, OPT, Gemma (causal
# LMs, the loss from `labels`) and BERT (masked LM, the loss from labels
# with -100 where nothing is masked) from tiny configs with random weights
# (no download: HF_HUB_OFFLINE=1), each batch holding the pad token, are
# exported for 2 ranks with braid.export, compiled and trained 10 steps
# with AdamW on 2 cpu ranks, and judged by braid.compare.against_pytorch
# against PyTorch DDP on 2 ranks, as export-hf.py judges GPT-2 and Llama:
# every loss within 1e-5 relative of float64 PyTorch, every final array no
# farther from it than float32 PyTorch's spread allows. Where the lm head
# is not tied to the table (Qwen2, Qwen3, Mistral, Phi-3), the padding row
# is checked apart: with a zero gradient and no weight decay AdamW leaves it
# exactly as it started, where any gradient into it would move it by about
# lr at once. (OPT's, Gemma's and BERT's heads share the table, and the
# head's gradient reaches row P as in PyTorch: the comparison covers it.)
#
# AdamW's eps is 1e-6, as export-hf.py explains.
#
# REQUIRES: torch2, transformers, numpy, mpi
# RUN: env BRAID_BIN=%braid_bin HF_HUB_OFFLINE=1 %python %s %t

import os
import sys

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import transformers  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from exporttest import Checker, against_ddp  # noqa: E402
import zoo  # noqa: E402
import braid  # noqa: E402

STEPS = 10
RANKS = 2
VOCAB, SEQ, PAD = 32, 8, 1
transformers.logging.set_verbosity_error()

ARCHS = ("qwen2", "qwen3", "mistral", "phi3", "opt", "gemma", "bert")


def build(name):
    torch.manual_seed(0)
    small = dict(vocab_size=VOCAB, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ,
                 pad_token_id=PAD, bos_token_id=0, eos_token_id=0, attn_implementation="sdpa")
    if name == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**small))
    if name == "qwen3":
        return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(head_dim=4, **small))
    if name == "mistral":
        return transformers.MistralForCausalLM(transformers.MistralConfig(**small))
    if name == "phi3":
        return transformers.Phi3ForCausalLM(transformers.Phi3Config(
            resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, **small))
    if name == "gemma":
        return transformers.GemmaForCausalLM(transformers.GemmaConfig(head_dim=4, **small))
    if name == "opt":
        return transformers.OPTForCausalLM(transformers.OPTConfig(
            vocab_size=VOCAB, hidden_size=16, ffn_dim=24, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=SEQ, word_embed_proj_dim=16,
            dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, layerdrop=0.0,
            pad_token_id=PAD, bos_token_id=0, eos_token_id=0, attn_implementation="sdpa"))
    return transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, pad_token_id=PAD, attn_implementation="sdpa"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    check = Checker()
    for name in sys.argv[2:] or ARCHS:
        model = zoo.LossFromLabels(build(name))
        emb = model.model.get_input_embeddings()
        check(emb.padding_idx == PAD, "%s: the token embedding has padding_idx %d (%s)"
              % (name, PAD, type(model.model).__name__))
        tokens, _ = zoo.language_batch(VOCAB, SEQ, 4, seed=1)
        tokens[:, -2:] = PAD  # every sequence ends in padding
        if name == "bert":
            # Masked LM: labels at a quarter of the positions, -100 elsewhere.
            labels = torch.full_like(tokens, -100)
            labels[:, ::4] = tokens[:, ::4]
        else:
            labels = tokens.clone()  # the model shifts them
        batch = (tokens, labels)
        half = tokens.shape[0] // RANKS
        pad_row = emb.weight.detach()[PAD].clone()
        spec = dict(model=model, example_inputs=tuple(t[:half] for t in batch),
                    example_targets=(), loss_fn=zoo.loss_from_forward, world_size=RANKS,
                    optimizer=torch.optim.AdamW(model.parameters(), lr=3e-3, eps=1e-6,
                                                weight_decay=0.0))
        prefix = os.path.join(out, name)
        e = braid.export(model, spec["example_inputs"], (), spec["loss_fn"], spec["optimizer"],
                         RANKS, output=prefix, global_batch=(batch, ()))
        text = open(e.paths["mlir"]).read()
        check("padding_idx = %d" % PAD in text,
              "%s: exported %d aten ops to %d braid ops, the embedding's backward with "
              "padding_idx = %d" % (name, sum(e.summary["aten_ops"].values()),
                                    e.summary["braid_ops"], PAD))
        against_ddp(check, name, spec, e, (batch, ()), STEPS, RANKS)
        tied = model.model.get_output_embeddings().weight is emb.weight
        if tied:
            continue
        with np.load(prefix + ".trained.npz") as f:
            key = [k for k in f.files if k.endswith(("embed_tokens.weight",
                                                     "word_embeddings.weight"))]
            row = f[key[0]][PAD] if key else None
        check(row is not None and np.array_equal(row, pad_row.numpy()),
              "%s: the padding row (%s) is as it started after %d steps" % (
                  name, key[0] if key else "not saved", STEPS))
    check.finish("export-hf-padding")


if __name__ == "__main__":
    main()
