"""Activation layers and MultiheadAttention."""
import math
import warnings

import minitorch as mt
from . import functional as F, init
from .linear import NonDynamicallyQuantizableLinear
from .module import Module
from .parameter import Parameter


def _inplace_repr(inplace, first=False):
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class ReLU(Module):
    """Applies max(x, 0) elementwise, in place when inplace=True (torch.nn.ReLU)."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace, first=True)


class Hardtanh(Module):
    """Clamps each element to [min_val, max_val] (torch.nn.Hardtanh, with its deprecated
    min_value / max_value keywords)."""
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace_repr(self.inplace)


class ReLU6(Hardtanh):
    """Applies min(max(x, 0), 6) elementwise (torch.nn.ReLU6)."""
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace, first=True)


class LeakyReLU(Module):
    """Applies x where positive, else negative_slope * x (torch.nn.LeakyReLU)."""
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + _inplace_repr(self.inplace)


class ELU(Module):
    """Applies x where positive, else alpha * (exp(x) - 1) (torch.nn.ELU)."""
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace)


class GELU(Module):
    """Applies the Gaussian error linear unit, exact or approximate='tanh' (torch.nn.GELU)."""
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """Applies x * sigmoid(x) elementwise (torch.nn.SiLU)."""
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace, first=True)


class Softplus(Module):
    """Applies log(1 + exp(beta * x)) / beta, linear above threshold (torch.nn.Softplus)."""
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class LogSigmoid(Module):
    """Applies log(sigmoid(x)) elementwise (torch.nn.LogSigmoid)."""
    def forward(self, input):
        return F.logsigmoid(input)


class Sigmoid(Module):
    """Applies the logistic sigmoid elementwise (torch.nn.Sigmoid)."""
    def forward(self, input):
        return input.sigmoid()


class Tanh(Module):
    """Applies the hyperbolic tangent elementwise (torch.nn.Tanh)."""
    def forward(self, input):
        return input.tanh()


class _AlongDim(Module):
    """The dim that Softmax, LogSoftmax and Softmin keep (siblings, as in torch, where none is
    a subclass of another)."""
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """Applies softmax along dim (torch.nn.Softmax; dim=None picks torch's legacy dim, with its
    warning)."""
    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_AlongDim):
    """Applies log-softmax along dim (torch.nn.LogSoftmax)."""
    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


class _InplaceActivation(Module):
    """An activation whose only argument is `inplace`: forward is `_function(input, inplace)`.
    torch shows inplace in the repr of some (SELU, Mish) and not of others (Hardswish)."""
    _function = None
    _show_inplace = True

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._function(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace, first=True) if self._show_inplace else ""


class SELU(_InplaceActivation):
    """Applies the scaled exponential linear unit elementwise (torch.nn.SELU)."""
    _function = F.selu


class Mish(_InplaceActivation):
    """Applies x * tanh(softplus(x)) elementwise (torch.nn.Mish)."""
    _function = F.mish


class Hardswish(_InplaceActivation):
    """Applies x * relu6(x + 3) / 6 elementwise (torch.nn.Hardswish)."""
    _function = F.hardswish
    _show_inplace = False


class Hardsigmoid(_InplaceActivation):
    """Applies relu6(x + 3) / 6 elementwise (torch.nn.Hardsigmoid)."""
    _function = F.hardsigmoid
    _show_inplace = False


class CELU(Module):
    """Applies max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) elementwise (torch.nn.CELU)."""
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + _inplace_repr(self.inplace)


class Softsign(Module):
    """Applies x / (1 + |x|) elementwise (torch.nn.Softsign)."""
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """Applies x - tanh(x) elementwise (torch.nn.Tanhshrink)."""
    def forward(self, input):
        return F.tanhshrink(input)


class _Shrink(Module):
    """The threshold that Softshrink and Hardshrink keep (siblings, as in torch)."""
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self):
        return str(self.lambd)


class Softshrink(_Shrink):
    """Applies soft thresholding by lambd elementwise (torch.nn.Softshrink)."""
    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Hardshrink(_Shrink):
    """Applies hard thresholding: x where |x| > lambd, else 0 (torch.nn.Hardshrink)."""
    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """Replaces elements not greater than threshold with value (torch.nn.Threshold)."""
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + _inplace_repr(self.inplace)


class GLU(Module):
    """Gated linear unit a * sigmoid(b) over the two halves of input along dim (torch.nn.GLU)."""
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(_AlongDim):
    """Applies softmax of -x along dim (torch.nn.Softmin)."""
    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


class PReLU(Module):
    """max(0, x) + a·min(0, x) with a learnt slope `a`: one, or one per channel."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(mt.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) in training, their mean in eval
    (torch.nn.RReLU)."""
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + _inplace_repr(self.inplace)


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: packed (or, with kdim/vdim, separate) in-projection,
    batch_first, bool or float masks, bias_kv / zero_attn, averaged or per-head weights. With
    need_weights=False it runs F.scaled_dot_product_attention, as torch does."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self._projection_weights(factory)
        if bias:
            self.in_proj_bias = Parameter(mt.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        **factory)
        if add_bias_kv:
            self.bias_k = Parameter(mt.empty(1, 1, embed_dim, **factory))
            self.bias_v = Parameter(mt.empty(1, 1, embed_dim, **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _projection_weights(self, factory):
        names = ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(mt.empty(3 * self.embed_dim, self.embed_dim,
                                                     **factory))
            for name in names[1:]:
                self.register_parameter(name, None)
        else:
            for name, dim in zip(names[1:], (self.embed_dim, self.kdim, self.vdim)):
                setattr(self, name, Parameter(mt.empty(self.embed_dim, dim, **factory)))
            self.register_parameter(names[0], None)

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask,
                                      self.num_heads)
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype,
                                           attn_mask, "attn_mask")
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        self_attention = query is key and key is value
        if self.batch_first and is_batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not is_batched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                               "Transformer module method `generate_square_subsequent_mask` to "
                               "create this mask.")
        if is_causal and key_padding_mask is None and not need_weights:
            attn_mask = None        # scaled_dot_product_attention builds the causal mask
        else:
            is_causal = False
        out, weights = self._attend(query, key, value, key_padding_mask, attn_mask, need_weights,
                                    is_causal, self_attention)
        if not is_batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0) if weights is not None else None
        if self.batch_first and is_batched:
            out = out.transpose(0, 1)
        if weights is not None and average_attn_weights:
            weights = weights.mean(-3)
        return out, weights

    def _attend(self, query, key, value, key_padding_mask, attn_mask, need_weights, is_causal,
                self_attention):
        """Attention over (L, B, E) query and (S, B, E) key/value; the output is (L, B, E) and
        the weights (B, H, L, S) or None."""
        length, batch, embed_dim = query.shape
        if embed_dim != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {embed_dim}")
        if self._qkv_same_embed_dim and key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if not self._qkv_same_embed_dim and key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        q, k, v = self._in_projection(query, key, value, self_attention)
        attn_mask = _check_attn_mask(attn_mask, length, key.shape[0], batch, self.num_heads)
        if self.bias_k is not None:
            k = mt.cat([k, self.bias_k.repeat(1, batch, 1)])
            v = mt.cat([v, self.bias_v.repeat(1, batch, 1)])
            attn_mask, key_padding_mask = (_pad_last(m) for m in (attn_mask, key_padding_mask))
        q, k, v = (self._heads(t, batch) for t in (q, k, v))         # (B, H, len, D)
        if self.add_zero_attn:
            zeros = mt.zeros(batch, self.num_heads, 1, self.head_dim, dtype=k.dtype,
                             device=k.device)
            k, v = mt.cat([k, zeros], dim=2), mt.cat([v, zeros], dim=2)
            attn_mask, key_padding_mask = (_pad_last(m) for m in (attn_mask, key_padding_mask))
        attn_mask = self._merge_masks(attn_mask, key_padding_mask, batch, k.shape[2])
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * math.sqrt(1.0 / self.head_dim)) @ k.mT       # (B, H, L, S)
            if attn_mask is not None:
                scores = scores + attn_mask
            weights = F.softmax(scores, -1)
            if dropout_p > 0.0:
                weights = F.dropout(weights, dropout_p)
            attended = weights @ v
        else:
            weights = None
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        out = attended.permute(2, 0, 1, 3).reshape(length, batch, embed_dim)
        return self.out_proj(out), weights

    def _in_projection(self, query, key, value, self_attention):
        """q, k, v projections; self-attention with the packed weight is one GEMM."""
        bias = self.in_proj_bias
        b_q, b_k, b_v = bias.chunk(3) if bias is not None else (None, None, None)
        if not self._qkv_same_embed_dim:
            return (F.linear(query, self.q_proj_weight, b_q),
                    F.linear(key, self.k_proj_weight, b_k),
                    F.linear(value, self.v_proj_weight, b_v))
        if self_attention:
            return F.linear(query, self.in_proj_weight, bias).chunk(3, dim=-1)
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def _heads(self, x, batch):
        """(len, B, E) → (B, H, len, D) as a view (the batched GEMM reads its strides)."""
        return x.reshape(x.shape[0], batch, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def _merge_masks(self, attn_mask, key_padding_mask, batch, source):
        """The additive masks as one tensor broadcasting over (B, H, L, S), or None."""
        if attn_mask is not None:
            attn_mask = attn_mask.reshape(-1, self.num_heads, *attn_mask.shape[-2:]) \
                if attn_mask.shape[0] != 1 else attn_mask.unsqueeze(0)
        if key_padding_mask is None:
            return attn_mask
        if key_padding_mask.shape[0] != batch:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {batch}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != source:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {source}, but got "
                                 f"{key_padding_mask.shape[1]}")
        padding = key_padding_mask.reshape(batch, 1, 1, source)
        return padding if attn_mask is None else attn_mask + padding


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """torch's _mha_shape_check: whether the input is batched, with its AssertionErrors."""
    if query.ndim == 3:
        kind, expected_mask = "batched (3-D)", 2
    elif query.ndim == 2:
        kind, expected_mask = "unbatched (2-D)", 1
    else:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor")
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be "
                             f"{query.ndim}-D but found {key.ndim}-D and {value.ndim}-D tensors "
                             "respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != expected_mask:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{expected_mask}-D but found {key_padding_mask.ndim}-D tensor "
                             "instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or "
                                 f"3-D but found {attn_mask.ndim}-D tensor instead")
        if query.ndim == 2 and attn_mask.ndim == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
    return query.ndim == 3


def _canonical_mask(mask, name, dtype, other=None, other_name=""):
    """A bool mask (True = masked) as an additive float mask of -inf; float masks as given."""
    if mask is None:
        return None
    if mask.dtype is not mt.bool and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and other.dtype is not mask.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      "type for both instead.", stacklevel=3)
    if mask.dtype is mt.bool:
        zeros = mt.zeros(*mask.shape, dtype=dtype, device=mask.device)
        mask = zeros.masked_fill(mask, -math.inf)
    return mask


def _check_attn_mask(attn_mask, length, source, batch, num_heads):
    """attn_mask as (1 or B·H, L, S), with torch's shape errors."""
    if attn_mask is None:
        return None
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != (length, source):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should "
                               f"be {(length, source)}.")
        return attn_mask.unsqueeze(0)
    if tuple(attn_mask.shape) != (batch * num_heads, length, source):
        raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                           f"{(batch * num_heads, length, source)}.")
    return attn_mask


def _pad_last(mask):
    """A mask with one more (unmasked) key position, for bias_kv / zero_attn."""
    return None if mask is None else F.pad(mask, (0, 1))


class Softmax2d(Module):
    """Softmax over the channels of every pixel of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)
