"""Characters as tokens, as nanoGPT's `shakespeare_char/prepare.py`: text
files into a training and a held-out token file for `braid-run --data`.

    python3 examples/data/prepare_chars.py TEXT [TEXT ...] OUT [--vocab 64] [--val 0.1]

writes OUT.train.bin and OUT.val.bin (raw uint16 token ids) and
OUT.meta.json (the alphabet). Each file is cut in two, its first 1 - val
to train on and its last val held out (so that every file, a topic of a
corpus, is in both), and the parts follow each other in the order given.
The vocab - 1 most frequent characters (ties by code point) get ids
0 .. vocab - 2 in code-point order; every other character is id vocab - 1.
The text is read as UTF-8 (a byte that is not is read as U+FFFD)."""

import argparse
import collections
import json
import sys

import numpy as np


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", metavar="TEXT ... OUT",
                        help="UTF-8 text files, then the prefix of the files written")
    parser.add_argument("--vocab", type=int, default=64,
                        help="token ids 0 .. VOCAB - 1 (default 64, the bundled GPT's)")
    parser.add_argument("--val", type=float, default=0.1,
                        help="the share of the text held out (default 0.1)")
    args = parser.parse_args(argv)
    if not 2 <= args.vocab <= 65536:
        parser.error("--vocab must be 2 to 65536 (uint16 tokens), not %d" % args.vocab)
    if not 0 < args.val < 1:
        parser.error("--val must be between 0 and 1, not %g" % args.val)
    if len(args.paths) < 2:
        parser.error("give one text file or more, then OUT")
    files, out = args.paths[:-1], args.paths[-1]
    train, held = [], []
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            parser.error("cannot read %s: %s" % (path, e))
        cut = int(len(text) * (1 - args.val))
        if cut < 2 or len(text) - cut < 2:
            parser.error("%s holds %d characters, too few to split" % (path, len(text)))
        train.append(text[:cut])
        held.append(text[cut:])
    train, held = "".join(train), "".join(held)
    counts = collections.Counter(train + held)
    kept = sorted(sorted(counts, key=lambda c: (-counts[c], c))[:args.vocab - 1])
    unknown = len(kept)
    ids = {c: i for i, c in enumerate(kept)}
    for part, name in ((train, ".train.bin"), (held, ".val.bin")):
        np.array([ids.get(c, unknown) for c in part], np.uint16).tofile(out + name)
    with open(out + ".meta.json", "w") as f:
        json.dump({"alphabet": "".join(kept), "unknown": unknown, "vocab": args.vocab,
                   "files": files, "train_tokens": len(train), "val_tokens": len(held)}, f)
    source = files[0] if len(files) == 1 else "%d files" % len(files)
    print("prepare_chars: %s: %d characters, %d kept as tokens 0-%d (the rest %d: %d of them); "
          "%s.train.bin %d tokens, %s.val.bin %d" % (
              source, len(train) + len(held), len(kept), unknown - 1, unknown,
              sum(counts[c] for c in counts if c not in ids), out, len(train), out,
              len(held)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
