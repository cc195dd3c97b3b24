"""The values a lowering of aten ops passes between ops, besides written
braid Values: braid.aten.Lowering and its mixins (aten_functions, aten_nn,
aten_attention) share them from here."""


class Deferred:
    """A value written on first use: `emit()` returns the Value."""

    def __init__(self, shape, dtype, emit):
        self.shape, self.dtype, self._emit = tuple(shape), dtype, emit
        self._value = None

    def get(self):
        if self._value is None:
            self._value = self._emit()
        return self._value


class RandomState:
    """What a step's dropout masks are drawn from: the step-count and rank
    Values, the seed, and the next site's stream number (one per mask, in
    graph order, across micro-batches)."""

    def __init__(self, step, rank, seed):
        self.step, self.rank, self.seed, self.sites = step, rank, seed, 0

    def next_stream(self):
        self.sites += 1
        return self.sites - 1


class Scalar:
    """A Python number in an op's arguments."""

    def __init__(self, value):
        self.value = value
