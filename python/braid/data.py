"""The windows braid-run takes from a token file (`braid-run --data
FILE.bin`), computed here the same way, so that PyTorch can train on the
very batches braid does (runtime/tools/RunData.h is braid-run's side).

A token file is a flat array of token ids, uint16 (or uint32), with no
header: nanoGPT's `prepare.py` writes one with `np.array(ids,
np.uint16).tofile(path)`. A pattern (`train-*.bin`) names several, the
shards, taken in name order as one stream in which no window crosses a
shard's end. Every step takes one window of seq + 1 tokens for
each row of the global batch: the row's input ids are its first seq
tokens, its labels (the next token of each) the last seq. Data-parallel
replica d of D trains on rows d * b .. (d + 1) * b - 1 of the global batch
of D * b rows; the tensor-parallel and pipeline ranks of a replica on the
same rows.

Row r's window at step k (1-based, counting the steps of earlier runs, so
that a resumed run continues the same stream) starts at

- `random` (the default): Philox4x32-10 of the counter (r mod 2^32,
  r >> 32, k, 0x64617461) under the key (seed, 0); its first two words,
  as the 64-bit number w0 + 2^32 w1, modulo the number of starts whose
  window fits in its shard (N - seq in a shard of N tokens), counted
  shard after shard. Windows of one step may overlap, as nanoGPT's
  `get_batch` draws them.
- `sequential`: window (k - 1) * rows + r, wrapping around, of the shards
  each cut into floor((N - 1) / seq) windows of seq tokens (a window's
  labels end on the next one's first token), one shard after another.
  With one file it starts at ((k - 1) * rows + r) mod floor((N - 1) / seq)
  * seq.

A .npz of N samples with `--sampling` (`braid-run --data SAMPLES.npz`,
each batch input an array [N, ...] of its per-row shape) is iterated in
epochs instead: `epoch_order`, `sample_indices` and `sample_batch` below.
"""

import numpy as np

_DATA_STREAM = 0x64617461
_EPOCH_STREAM = 0x65706F63
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
    `step` (1-based), as positions in the shards' tokens one after another:
    `num_tokens` is the token count of the file, or the list of the
    shards' counts (each at least seq + 1). An int64 array."""
    shards = [int(n) for n in (num_tokens if isinstance(num_tokens, (list, tuple))
                               else [num_tokens])]
    if min(shards) < seq + 1:
        raise ValueError("a shard of %d tokens holds no window of %d" % (min(shards), seq + 1))
    if sampling not in ("random", "sequential"):
        raise ValueError("sampling is 'random' or 'sequential', not %r" % (sampling,))
    counts = [(n - 1) // seq if sampling == "sequential" else n - seq for n in shards]
    total = sum(counts)
    r = np.arange(rows, dtype=np.uint64)
    if sampling == "sequential":
        index = ((step - 1) * rows + np.arange(rows, dtype=np.int64)) % total
    else:
        w = _philox([r & _M32, r >> np.uint64(32), np.full(rows, step, np.uint64),
                     np.full(rows, _DATA_STREAM, np.uint64)], seed, 0)
        bits = w[0] | (w[1] << np.uint64(32))
        index = (bits % np.uint64(total)).astype(np.int64)
    out = np.empty(rows, np.int64)
    for i, k in enumerate(index.tolist()):
        first = 0
        for n, c in zip(shards, counts):
            if k < c:
                out[i] = first + (k * seq if sampling == "sequential" else k)
                break
            k -= c
            first += n
    return out


def batch(tokens, seq, rows, step, seed=0, sampling="random"):
    """The global batch of step `step` from `tokens` (the token file as a
    numpy array, or the list of its shards' arrays in name order): (ids,
    labels), each [rows, seq] int64."""
    shards = list(tokens) if isinstance(tokens, (list, tuple)) else [tokens]
    whole = np.concatenate([np.asarray(t) for t in shards])
    starts = window_starts([len(t) for t in shards], seq, rows, step, seed, sampling)
    windows = np.stack([np.asarray(whole[s:s + seq + 1], np.int64) for s in starts])
    return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])


def read_tokens(pattern, token_bytes=2):
    """A token file, or the shards a pattern (`train-*.bin`) names in name
    order, as numpy arrays (memory-mapped): one array, or a list."""
    import glob
    dtype = np.uint16 if token_bytes == 2 else np.uint32
    if not any(c in pattern for c in "*?["):
        return np.memmap(pattern, dtype=dtype, mode="r")
    paths = sorted(glob.glob(pattern))
    if not paths:
        raise FileNotFoundError("%s matches no file" % pattern)
    return [np.memmap(p, dtype=dtype, mode="r") for p in paths]


def epoch_order(count, epoch, seed=0, sampling="random"):
    """The order of the samples of a dataset of `count` in epoch `epoch`
    (0-based), as braid-run's SampleStream takes them (runtime/tools/
    RunData.h): "sequential", 0 .. count - 1; "random", the samples sorted
    by the 64-bit number Philox4x32-10 of the counter (i, i >> 32, epoch,
    "epoc") under the key (seed, 0) gives each, ties by i. An int64 array."""
    if sampling not in ("random", "sequential"):
        raise ValueError("sampling is 'random' or 'sequential', not %r" % (sampling,))
    i = np.arange(count, dtype=np.uint64)
    if sampling == "sequential":
        return i.astype(np.int64)
    w = _philox([i & _M32, i >> np.uint64(32), np.full(count, epoch, np.uint64),
                 np.full(count, _EPOCH_STREAM, np.uint64)], seed, 0)
    key = w[0] | (w[1] << np.uint64(32))
    return np.lexsort((i, key)).astype(np.int64)


def sample_indices(count, rows, step, seed=0, sampling="random"):
    """The samples of the global batch of `rows` rows at step `step`
    (1-based) of a dataset of `count` samples in epochs of count // rows
    steps (the rest of each epoch unused, as a DataLoader's drop_last):
    (epoch, an int64 array of `rows` sample indices)."""
    per_epoch = count // rows
    if per_epoch < 1:
        raise ValueError("%d samples hold no batch of %d rows" % (count, rows))
    epoch, p = (step - 1) // per_epoch, (step - 1) % per_epoch
    return epoch, epoch_order(count, epoch, seed, sampling)[p * rows:(p + 1) * rows]


def sample_batch(arrays, rows, step, seed=0, sampling="random"):
    """The global batch of step `step` from a dataset: `arrays` (a list of
    arrays [N, ...], as the .npz holds them for each batch input), each
    taken at sample_indices' rows."""
    _, take = sample_indices(len(arrays[0]), rows, step, seed, sampling)
    return [np.ascontiguousarray(np.asarray(a)[take]) for a in arrays]
