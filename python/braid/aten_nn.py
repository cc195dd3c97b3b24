"""Lowerings of aten's neural-network ops: softmax and log-softmax, layer
norm, the negative log-likelihood loss and the embedding, each with its
backward. A mixin of braid.aten.Lowering: the methods use its value
helpers, and braid.aten.LOWERINGS maps the aten ops onto them."""

from braid.aten_values import Deferred


class NNLowerings:
    def _softmax(self, x, dim, half_to_float=False):
        v = self.value(x)
        return self.b.softmax(v, self.dim(dim, len(v.shape)), hint="softmax")

    def _safe_softmax(self, x, dim, dtype=None):
        """torch 2.x's softmax of masked attention: an all -inf row is 0."""
        v = self.value(x)
        if dtype is not None and self.dtype_of(dtype) != v.dtype:
            v = self.as_dtype(v, self.dtype_of(dtype))
        return self.b.softmax(v, self.dim(dim, len(v.shape)), hint="softmax", safe=True)

    def _softmax_backward_data(self, grad, output, dim, input_dtype=None):
        y = self.value(output)
        return self.b.softmax_backward(self.value(grad), y, self.dim(dim, len(y.shape)),
                                       hint="dsoftmax")

    def _log_softmax(self, x, dim, half_to_float=False):
        v = self.value(x)
        return self.b.log_softmax(v, self.dim(dim, len(v.shape)), hint="logp")

    def _log_softmax_backward_data(self, grad, output, dim, input_dtype=None):
        y = self.value(output)
        return self.b.log_softmax_backward(self.value(grad), y, self.dim(dim, len(y.shape)),
                                           hint="dlogp")

    def native_layer_norm(self, x, normalized_shape, weight, bias, eps):
        v = self.value(x)
        norm = tuple(normalized_shape)
        gamma = self.value(weight) if weight is not None else self.b.fill(1.0, norm, v.dtype, hint="ones")
        beta = self.value(bias) if bias is not None else self.b.fill(0.0, norm, v.dtype, hint="zeros")
        y, mean, rstd = self.b.layer_norm(v, gamma, beta, eps, hint="ln")
        stats = v.shape[:len(v.shape) - len(norm)] + (1,) * len(norm)
        return (y, self.reshape(mean, stats), self.reshape(rstd, stats))

    def native_layer_norm_backward(self, grad, x, normalized_shape, mean, rstd, weight, bias,
                                   output_mask):
        v = self.value(x)
        norm = tuple(normalized_shape)
        lead = v.shape[:len(v.shape) - len(norm)]
        gamma = self.value(weight) if weight is not None else self.b.fill(1.0, norm, v.dtype, hint="ones")
        m = self.materialize(self.reshape(self.ref(mean), lead))
        r = self.materialize(self.reshape(self.ref(rstd), lead))
        return tuple(self.b.layer_norm_backward(self.value(grad), v, m, r, gamma, hint="dln"))

    def _reduction(self, reduction):
        if reduction not in (1, 2):
            self.fail("reduction %r: braid's losses are scalars (mean or sum)" % reduction)
        return "mean" if reduction == 1 else "sum"

    def nll_loss_forward(self, x, target, weight, reduction, ignore_index):
        if weight is not None:
            self.fail("class weights are not supported")
        red = self._reduction(reduction)
        loss = self.b.nll_loss(self.value(x), self.value(target), red, ignore_index,
                               hint="loss")
        node = self.node

        def total_weight():
            self.node = node
            self.fail("nll_loss_forward's total_weight is only read by its backward")
        return (loss, Deferred((), loss.dtype, total_weight))

    def nll_loss_backward(self, grad, x, target, weight, reduction, ignore_index, total_weight):
        if weight is not None:
            self.fail("class weights are not supported")
        red = self._reduction(reduction)
        return self.b.nll_loss_backward(self.value(grad), self.value(x), self.value(target), red,
                                        ignore_index, hint="dlogp")

    def embedding(self, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
        if sparse:
            self.fail("sparse gradients are not supported")
        return self.b.embedding(self.value(weight), self.value(indices), hint="emb")

    def embedding_dense_backward(self, grad, indices, num_weights, padding_idx,
                                 scale_grad_by_freq):
        if scale_grad_by_freq:
            self.fail("scale_grad_by_freq is not supported (the gradient of each row "
                      "divided by its token count in the batch)")
        # torch passes -1 for no padding row (nn.Embedding makes a negative
        # padding_idx non-negative before).
        padding = None if padding_idx in (-1, None) else int(padding_idx)
        if padding is not None and not 0 <= padding < num_weights:
            self.fail("padding_idx %d is not a row of the table of %d rows"
                      % (padding, num_weights))
        g = self.value(grad)
        return self.b.embedding_backward(g, self.value(indices), (num_weights, g.shape[-1]),
                                         padding_idx=padding, hint="demb")
