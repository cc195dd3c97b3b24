"""The windows braid-run takes from a token file (`braid-run --data
FILE.bin`), computed here the same way, so that PyTorch can train on the
very batches braid does (runtime/tools/RunData.h is braid-run's side).

A token file is a flat array of token ids, uint16 (or uint32), with no
header: nanoGPT's `prepare.py` writes one with `np.array(ids,
np.uint16).tofile(path)`. Every step takes one window of seq + 1 tokens for
each row of the global batch: the row's input ids are its first seq
tokens, its labels (the next token of each) the last seq. Data-parallel
replica d of D trains on rows d * b .. (d + 1) * b - 1 of the global batch
of D * b rows; the tensor-parallel and pipeline ranks of a replica on the
same rows.

Row r's window at step k (1-based, counting the steps of earlier runs, so
that a resumed run continues the same stream) starts at

- `random` (the default): Philox4x32-10 of the counter (r mod 2^32,
  r >> 32, k, 0x64617461) under the key (seed, 0); its first two words,
  as the 64-bit number w0 + 2^32 w1, modulo N - seq (the starts whose
  window fits in the N tokens). Windows of one step may overlap, as
  nanoGPT's `get_batch` draws them.
- `sequential`: window (k - 1) * rows + r of the file cut into
  floor((N - 1) / seq) windows of seq tokens (a window's labels end on the
  next one's first token), wrapping around: it starts at
  ((k - 1) * rows + r) mod floor((N - 1) / seq) * seq.
"""

import numpy as np

_DATA_STREAM = 0x64617461
_M32 = np.uint64(0xFFFFFFFF)


def _philox(c, key0, key1):
    """Philox4x32-10 of the counter words c (arrays of uint64 holding 32-bit
    values) under (key0, key1), as common/include/braid-common/Philox.h."""
    k0, k1 = np.uint64(key0), np.uint64(key1)
    c = [np.asarray(x, np.uint64) for x in c]
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _M32,
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _M32]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & _M32, (k1 + np.uint64(0xBB67AE85)) & _M32
    return c


def window_starts(num_tokens, seq, rows, step, seed=0, sampling="random"):
    """The first token of each of the global batch's `rows` windows at step
    `step` (1-based), in a file of `num_tokens` tokens: an int64 array."""
    if num_tokens < seq + 1:
        raise ValueError("%d tokens hold no window of %d" % (num_tokens, seq + 1))
    r = np.arange(rows, dtype=np.uint64)
    if sampling == "sequential":
        windows = (num_tokens - 1) // seq
        return (((step - 1) * rows + r.astype(np.int64)) % windows * seq).astype(np.int64)
    if sampling != "random":
        raise ValueError("sampling is 'random' or 'sequential', not %r" % (sampling,))
    w = _philox([r & _M32, r >> np.uint64(32), np.full(rows, step, np.uint64),
                 np.full(rows, _DATA_STREAM, np.uint64)], seed, 0)
    bits = w[0] | (w[1] << np.uint64(32))
    return (bits % np.uint64(num_tokens - seq)).astype(np.int64)


def batch(tokens, seq, rows, step, seed=0, sampling="random"):
    """The global batch of step `step` from `tokens` (the token file as a
    numpy array): (ids, labels), each [rows, seq] int64."""
    starts = window_starts(len(tokens), seq, rows, step, seed, sampling)
    windows = np.stack([np.asarray(tokens[s:s + seq + 1], np.int64) for s in starts])
    return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])


def read_tokens(path, token_bytes=2):
    """A token file as a numpy array (memory-mapped)."""
    return np.memmap(path, dtype=np.uint16 if token_bytes == 2 else np.uint32, mode="r")
