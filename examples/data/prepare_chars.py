"""Characters as tokens, as nanoGPT's `shakespeare_char/prepare.py`: a text
file into a training and a held-out token file for `braid-run --data`.

    python3 examples/data/prepare_chars.py TEXT OUT [--vocab 64] [--val 0.1]

writes OUT.train.bin and OUT.val.bin (raw uint16 token ids: the first and
the last part of the text) and OUT.meta.json (the alphabet). The vocab - 1
most frequent characters (ties by code point) get ids 0 .. vocab - 2 in
code-point order; every other character is id vocab - 1. The text is read
as UTF-8."""

import argparse
import collections
import json
import sys

import numpy as np


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("text", help="a UTF-8 text file")
    parser.add_argument("out", help="prefix of the files written")
    parser.add_argument("--vocab", type=int, default=64,
                        help="token ids 0 .. VOCAB - 1 (default 64, the bundled GPT's)")
    parser.add_argument("--val", type=float, default=0.1,
                        help="the share of the text held out (default 0.1)")
    args = parser.parse_args(argv)
    if not 2 <= args.vocab <= 65536:
        parser.error("--vocab must be 2 to 65536 (uint16 tokens), not %d" % args.vocab)
    if not 0 < args.val < 1:
        parser.error("--val must be between 0 and 1, not %g" % args.val)
    try:
        with open(args.text, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        parser.error("cannot read %s: %s" % (args.text, e))
    counts = collections.Counter(text)
    kept = sorted(sorted(counts, key=lambda c: (-counts[c], c))[:args.vocab - 1])
    unknown = len(kept)
    ids = {c: i for i, c in enumerate(kept)}
    tokens = np.array([ids.get(c, unknown) for c in text], np.uint16)
    cut = int(len(tokens) * (1 - args.val))
    if cut < 2 or len(tokens) - cut < 2:
        parser.error("%s holds %d characters, too few to split" % (args.text, len(tokens)))
    tokens[:cut].tofile(args.out + ".train.bin")
    tokens[cut:].tofile(args.out + ".val.bin")
    with open(args.out + ".meta.json", "w") as f:
        json.dump({"alphabet": "".join(kept), "unknown": unknown, "vocab": args.vocab,
                   "train_tokens": cut, "val_tokens": len(tokens) - cut}, f)
    print("prepare_chars: %s: %d characters, %d kept as tokens 0-%d (the rest %d: %d of them); "
          "%s.train.bin %d tokens, %s.val.bin %d" % (
              args.text, len(tokens), len(kept), unknown - 1, unknown,
              sum(counts[c] for c in counts if c not in ids), args.out, cut, args.out,
              len(tokens) - cut))
    return 0


if __name__ == "__main__":
    sys.exit(main())
