"""Activation layers and MultiheadAttention."""
import math

import minitorch as mt
from . import functional as F, init
from .linear import Linear
from .module import Module, Parameter


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, self.inplace)


class Sigmoid(Module):
    def forward(self, input):
        return input.sigmoid()


class Tanh(Module):
    def forward(self, input):
        return input.tanh()


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim if self.dim is not None else -1)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input):
        return F.log_softmax(input, self.dim if self.dim is not None else -1)


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention (packed in-projection, batch_first option, masks)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (
                vdim not in (None, embed_dim)):
            raise NotImplementedError("minitorch's MultiheadAttention supports equal q/k/v "
                                      "dims without bias_kv / zero_attn")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim, self.batch_first = embed_dim // num_heads, batch_first
        self.in_proj_weight = Parameter(mt.empty(3 * embed_dim, embed_dim, device=device,
                                                 dtype=dtype))
        if bias:
            self.in_proj_bias = Parameter(mt.zeros(3 * embed_dim, device=device, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        init.xavier_uniform_(self.in_proj_weight)
        if bias:
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        if not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        batch, length, _ = query.shape
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q, b_k, b_v = self.in_proj_bias.chunk(3) if self.in_proj_bias is not None else \
            (None, None, None)
        q, k, v = (self._heads(F.linear(x, w, b)) for x, w, b in
                   ((query, w_q, b_q), (key, w_k, b_k), (value, w_v, b_v)))
        scores = (q @ k.mT) * (1.0 / math.sqrt(self.head_dim))     # (B, H, L, S)
        scores = self._masked(scores, attn_mask, key_padding_mask, is_causal)
        weights = F.softmax(scores, -1)
        attended = F.dropout(weights, self.dropout, self.training) @ v
        out = attended.transpose(1, 2).reshape(batch, length, self.embed_dim)
        out = self.out_proj(out)
        if not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        return out, weights.mean(1) if average_attn_weights else weights

    def _heads(self, x):
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    @staticmethod
    def _masked(scores, attn_mask, key_padding_mask, is_causal):
        if is_causal and attn_mask is None:
            length, source = scores.shape[-2:]
            rows = mt.arange(length, device=scores.device).unsqueeze(1)
            scores = scores.masked_fill(mt.arange(source, device=scores.device) > rows,
                                        -math.inf)
        elif attn_mask is not None:
            scores = scores.masked_fill(attn_mask, -math.inf) if attn_mask.dtype is mt.bool \
                else scores + attn_mask
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2), -math.inf)
        return scores
