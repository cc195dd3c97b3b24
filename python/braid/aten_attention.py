"""Lowerings of PyTorch's fused attention: `scaled_dot_product_attention`
as AOT autograd traces it on the CPU (aten's
`_scaled_dot_product_flash_attention_for_cpu` and its backward) becomes
one braid.attention and one braid.attention_backward. A mixin of
braid.aten.Lowering."""

import math

import torch


class AttentionLowerings:
    def _attention_options(self, dropout_p, is_causal, attn_mask, scale, head_size):
        """(causal, scale) of braid.attention for SDPA's arguments: no
        dropout, no mask except a constant causal one, torch's default scale
        1/sqrt(head size)."""
        if dropout_p:
            self.fail("attention dropout (dropout_p=%g) is not supported: pass dropout_p=0 "
                      "(or dropout_p=self.dropout if self.training else 0 in eval)" % dropout_p)
        causal = bool(is_causal)
        if attn_mask is not None:
            m = self.ref(attn_mask)
            if not isinstance(m, torch.Tensor):
                self.fail("an attn_mask computed from the step's inputs is not supported "
                          "(pass is_causal=True for a causal mask)")
            if causal or not self._is_causal_attn_mask(m):
                self.fail("an attn_mask that is not the causal mask is not supported")
            causal = True
        return causal, (1.0 / math.sqrt(head_size) if scale is None else float(scale))

    @staticmethod
    def _is_causal_attn_mask(m):
        """A boolean mask that keeps the lower triangle, or an additive one
        that is -inf above the diagonal and 0 elsewhere."""
        if m.dim() < 2 or m.shape[-1] != m.shape[-2]:
            return False
        keep = torch.ones(m.shape[-2:], dtype=torch.bool).tril()
        if m.dtype == torch.bool:
            return bool((m == keep).all())
        return bool((m[..., ~keep] == float("-inf")).all()) and bool((m[..., keep] == 0).all())

    def _scaled_dot_product_flash_attention_for_cpu(self, query, key, value, dropout_p=0.0,
                                                    is_causal=False, attn_mask=None,
                                                    scale=None):
        q, k, v = self.value(query), self.value(key), self.value(value)
        causal, scale = self._attention_options(dropout_p, is_causal, attn_mask, scale,
                                                q.shape[-1])
        return tuple(self.b.attention(q, k, v, causal, scale))

    def _scaled_dot_product_flash_attention_for_cpu_backward(
            self, grad_out, query, key, value, out, logsumexp, dropout_p, is_causal,
            attn_mask=None, scale=None):
        q = self.value(query)
        causal, scale = self._attention_options(dropout_p, is_causal, attn_mask, scale,
                                                q.shape[-1])
        return tuple(self.b.attention_backward(
            self.value(grad_out), q, self.value(key), self.value(value), self.value(out),
            self.value(logsumexp), causal, scale))
