"""Batching rules: how an op on BatchedTensors (batched.py) runs once on the whole batch.

A rule finds the highest vmap level among its tensor arguments, takes the values batched at
that level (batch at dim 0), runs the ordinary op on them with the logical dims shifted past
the batch dim, and wraps the result at that level. Arguments batched at a lower level (or not
at all) pass through unchanged: the op on them dispatches again at their own level, which is
how nested vmaps compose. The batch dim is never broadcast against an example's dims: values
are first given the same logical rank (`_aligned`), so broadcasting pairs logical dims only.

Rules come in two kinds: methods of BatchedTensor (`METHODS`, installed by `install`) and
rules for functions that carry the functions layer's dispatch point (`FUNCTIONS`, keyed by the
undecorated function's module and name, see functions/autocast_policy.BATCHING).
"""
from .batched import (BatchedTensor, Unbatchable, logical_dim, materialize, unwrap_level,
                      wrap)
from ..functions import elementwise
from ..functions.reduce import p_norm
from ..tensor import Tensor


# ---- levels and alignment ---------------------------------------------------------------------
def _level(x):
    if type(x) is BatchedTensor:
        return x._level
    if isinstance(x, (tuple, list)):
        return max((_level(item) for item in x), default=0)
    return 0


def top_level(args, kwargs=None):
    level = _level(args)
    if kwargs:
        level = max(level, _level(tuple(kwargs.values())))
    return level


def _logical_rank(x):
    return x.ndim if isinstance(x, Tensor) else 0


def _pad(value, rank):
    """A value (batch at 0) viewed with `rank` logical dims: size-1 dims after the batch dim."""
    missing = rank - (value.ndim - 1)
    if missing <= 0:
        return value
    return value.reshape((value.shape[0],) + (1,) * missing + tuple(value.shape[1:]))


def _aligned(args, level, rank):
    """args with the tensors batched at `level` replaced by their values padded to `rank`."""
    out = []
    for a in args:
        value, hit = unwrap_level(a, level)
        out.append(_pad(value, rank) if hit else a)
    return out


def _shift(dim, ndim):
    return logical_dim(dim, ndim) + 1


def _shift_dims(dims, ndim):
    if isinstance(dims, (tuple, list)):
        return type(dims)(_shift(d, ndim) for d in dims)
    return _shift(dims, ndim)


def _wrap_tree(result, level):
    """Wrap a result (a tensor, or a tuple / namedtuple of tensors) at `level`."""
    if isinstance(result, Tensor):
        return wrap(result, level)
    if isinstance(result, tuple):
        items = [_wrap_tree(item, level) for item in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if isinstance(result, list):
        return [_wrap_tree(item, level) for item in result]
    return result


# ---- elementwise ------------------------------------------------------------------------------
def _elementwise(name):
    """x.name(*args): every tensor argument batched at the top level aligned to the largest
    logical rank among them, so the batch dims meet each other and nothing else."""
    def method(first, *rest, **kwargs):
        return getattr(first, name)(*rest, **kwargs)

    def rule(self, *args, **kwargs):
        return _aligned_call(method, (self,) + args, kwargs)
    rule.__name__ = name
    return rule


def _aligned_call(fn, args, kwargs):
    """fn on the values of the tensor arguments batched at the top level, aligned to the
    largest logical rank among all tensor arguments; the result batched at that level."""
    level = top_level(args, kwargs)
    tensors = [a for a in args + tuple(kwargs.values()) if isinstance(a, Tensor)]
    rank = max(_logical_rank(t) for t in tensors)
    keys = list(kwargs)
    values = _aligned([kwargs[k] for k in keys], level, rank)
    return wrap(fn(*_aligned(args, level, rank), **dict(zip(keys, values))), level)


def _where_function(condition, input=None, other=None):
    """mt.where(condition, input, other) elementwise; the one-argument form (the indices of
    the true elements) has a data-dependent shape, so it maps."""
    if input is None or other is None:
        raise Unbatchable("where(condition)")
    return _aligned_call(elementwise.where, (condition, input, other), {})


ELEMENTWISE = """
abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh
asinh acosh atanh sigmoid relu erf erfc erfinv floor ceil round trunc frac sign sgn square
reciprocal clamp clip clamp_min clamp_max pow nan_to_num logit lgamma digamma float double half
bfloat16 long int bool to type_as contiguous clone detach isnan isinf isfinite logical_not
sinc deg2rad rad2deg add sub mul div true_divide floor_divide remainder fmod atan2 maximum
minimum fmax fmin eq ne lt le gt ge logical_and logical_or logical_xor where lerp hypot copysign
xlogy masked_fill bitwise_and bitwise_or bitwise_xor
__neg__ __pos__ __abs__ __invert__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__
__truediv__ __rtruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __eq__
__ne__ __lt__ __le__ __gt__ __ge__ __and__ __rand__ __or__ __ror__ __xor__ __rxor__
""".split()


def _requires_grad_(self, requires_grad=True):
    self._value.requires_grad_(requires_grad)
    return self


# ---- reductions -------------------------------------------------------------------------------
def _reduction(name, all_dims_name=None):
    """x.name(dim=None | int | tuple, keepdim, ...): logical dims shifted past the batch dim;
    no dim reduces every logical dim (a 0-d example: a size-1 dim added and reduced)."""
    def rule(self, *args, **kwargs):
        if top_level(args, kwargs) > self._level or any(isinstance(a, Tensor) for a in args):
            raise Unbatchable(name)
        args = list(args)
        dim = args.pop(0) if args else kwargs.pop("dim", None)
        value = self._value
        if dim is None:
            if all_dims_name is not None:       # max() / min(): no tuple dims, flatten first
                flat = value.reshape(value.shape[0], -1)
                return wrap(getattr(flat, all_dims_name)(1), self._level)
            if value.ndim == 1:                 # a 0-d example: a size-1 dim, reduced
                value, dims = value.unsqueeze(1), 1
                kwargs.pop("keepdim", None)
                args = [a for a in args if not isinstance(a, bool)]
            else:
                dims = tuple(range(1, value.ndim))
            return wrap(getattr(value, name)(dims, *args, **kwargs), self._level)
        if self.ndim == 0:      # dim 0 / -1 of a 0-d example: a size-1 dim, reduced
            _shift_dims(dim, 0)
            kwargs.pop("keepdim", None)
            if len(args) > 0 and isinstance(args[0], bool):
                args.pop(0)
            return _wrap_tree(getattr(value.unsqueeze(1), name)(1, *args, **kwargs),
                              self._level)
        return _wrap_tree(getattr(value, name)(_shift_dims(dim, self.ndim), *args, **kwargs),
                          self._level)
    rule.__name__ = name
    return rule


def _p_norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm and linalg.vector_norm (reduce.p_norm): the logical dims shifted, all of them
    when dim is None ('fro' then being the 2-norm, as for any number of dims)."""
    if out is not None or type(input) is not BatchedTensor or top_level((p, dim)):
        raise Unbatchable("norm")
    value = input._value
    if dim is None and (p is None or p == "fro"):
        p = 2.0
    if input.ndim == 0:                 # a 0-d example: a size-1 dim, reduced
        value, dims, keepdim = value.unsqueeze(1), (1,), False
    elif dim is None:
        dims = tuple(range(1, value.ndim))
    else:
        dims = _shift_dims(dim if isinstance(dim, (tuple, list)) else (dim,), input.ndim)
    return wrap(p_norm(value, p, dims, keepdim, None, dtype), input._level)


def _max_min(name):
    reduce = _reduction(name, "amax" if name == "max" else "amin")
    binary = _elementwise(name)

    def rule(self, *args, **kwargs):
        if args and isinstance(args[0], Tensor) or isinstance(kwargs.get("other"), Tensor):
            return binary(self, *args, **kwargs)
        return reduce(self, *args, **kwargs)
    return rule


def _arg_reduction(name):
    def rule(self, dim=None, keepdim=False):
        if dim is None:
            flat = self._value.reshape(self._value.shape[0], -1)
            return wrap(getattr(flat, name)(1), self._level)
        return wrap(getattr(self._value, name)(_shift(dim, self.ndim), keepdim), self._level)
    return rule


def _dim_op(name, position=0):
    """An op whose argument at `position` (or keyword dim) is one dim: shifted."""
    def rule(self, *args, **kwargs):
        if top_level(args, kwargs) > self._level:
            raise Unbatchable(name)
        if self.ndim == 0 and name in _SHAPE_KEEPING:   # a 0-d example as a size-1 dim
            return wrap(getattr(_unsqueezed(self), name)(*args, **kwargs)._value.squeeze(1),
                        self._level)
        args = list(args)
        if len(args) > position:
            args[position] = _shift(args[position], self.ndim)
        elif "dim" in kwargs:
            kwargs["dim"] = _shift(kwargs["dim"], self.ndim)
        else:
            raise Unbatchable(name)
        return _wrap_tree(getattr(self._value, name)(*args, **kwargs), self._level)
    rule.__name__ = name
    return rule


_SHAPE_KEEPING = {"softmax", "log_softmax", "cumsum", "cumprod", "flip", "roll"}


def _unsqueezed(t):
    return wrap(t._value.unsqueeze(1), t._level)


# ---- views and shapes -------------------------------------------------------------------------
def _sizes(args):
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def _reshape(self, *shape):
    value = self._value
    return wrap(value.reshape((value.shape[0],) + tuple(_sizes(shape))), self._level)


def _as(name):
    def rule(self, other):
        return getattr(self, name)(tuple(other.shape))
    return rule


def _flatten(self, start_dim=0, end_dim=-1):
    if self.ndim == 0:
        return _reshape(self, 1)
    return wrap(self._value.flatten(_shift(start_dim, self.ndim), _shift(end_dim, self.ndim)),
                self._level)


def _unflatten(self, dim, sizes):
    return wrap(self._value.unflatten(_shift(dim, self.ndim), sizes), self._level)


def _transpose(self, dim0, dim1):
    if self.ndim == 0:
        logical_dim(dim0, 0), logical_dim(dim1, 0)
        return self
    return wrap(self._value.transpose(_shift(dim0, self.ndim), _shift(dim1, self.ndim)),
                self._level)


def _t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.ndim}D")
    return self if self.ndim < 2 else _transpose(self, 0, 1)


def _permute(self, *dims):
    dims = _sizes(dims)
    return wrap(self._value.permute((0,) + tuple(_shift(d, self.ndim) for d in dims)),
                self._level)


def _movedim(self, source, destination):
    return wrap(self._value.movedim(_shift_dims(source, self.ndim),
                                    _shift_dims(destination, self.ndim)), self._level)


def _unsqueeze(self, dim):
    return wrap(self._value.unsqueeze(logical_dim(dim, self.ndim + 1) + 1), self._level)


def _squeeze(self, dim=None):
    if self.ndim == 0:
        for d in _as_tuple(0 if dim is None else dim):
            logical_dim(d, 0)
        return self
    shape = self.shape
    if dim is None:
        dims = tuple(i + 1 for i, s in enumerate(shape) if s == 1)
    else:
        dims = tuple(d for d in _as_tuple(_shift_dims(dim, self.ndim))
                     if self._value.shape[d] == 1)
    if not dims:
        return self
    return wrap(self._value.squeeze(dims), self._level)


def _as_tuple(dims):
    return tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)


def _expand(self, *sizes):
    sizes = tuple(_sizes(sizes))
    value = _pad(self._value, len(sizes))
    return wrap(value.expand((value.shape[0],) + sizes), self._level)


def _repeat(self, *sizes):
    sizes = tuple(_sizes(sizes))
    value = _pad(self._value, len(sizes))
    return wrap(value.repeat((1,) + sizes), self._level)


def _getitem(self, key):
    """Basic indexing (ints, slices, None, Ellipsis): a leading full slice keeps the batch dim.
    Tensor indices (advanced indexing moves dims around) have no rule."""
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        if not (part is None or part is Ellipsis or isinstance(part, (int, slice))) or \
                isinstance(part, bool):
            raise Unbatchable("advanced indexing")
    if self.ndim == 0 and any(p is not None and p is not Ellipsis for p in parts):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    return wrap(self._value[(slice(None),) + parts], self._level)


def _T(self):
    return _permute(self, *reversed(range(self.ndim)))


def _mT(self):
    return _transpose(self, -2, -1)


def _iter(self):
    return iter(self.unbind(0))


def _unbind(self, dim=0):
    return tuple(wrap(v, self._level) for v in self._value.unbind(_shift(dim, self.ndim)))


def _split_like(name):
    def rule(self, size_or_sections, dim=0):
        parts = getattr(self._value, name)(size_or_sections, _shift(dim, self.ndim))
        return tuple(wrap(p, self._level) for p in parts)
    return rule


def _size_only(name):
    """Methods that read nothing but the logical shape and dtype (new_zeros...) make plain
    tensors, as torch's do inside vmap."""
    def rule(self, *args, **kwargs):
        return getattr(Tensor, name)(self._value, *args, **kwargs)
    return rule


# ---- products ---------------------------------------------------------------------------------
def matmul(a, b):
    """torch.matmul's cases on logical ranks; matrix operands padded to one logical rank so the
    batch dims meet (or one side broadcasts) before the product's own broadcasting."""
    from ..functions.linalg import matmul as product
    ra, rb = _logical_rank(a), _logical_rank(b)
    if ra == 0 or rb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{ra}D and {rb}D")
    if ra == 1 and rb == 1:
        return (a * b).sum(-1)
    if ra == 1:
        return matmul(a.unsqueeze(0), b).squeeze(-2)
    if rb == 1:
        return matmul(a, b.unsqueeze(-1)).squeeze(-1)
    level = top_level((a, b))
    va, vb = _aligned((a, b), level, max(ra, rb))
    return wrap(product(va, vb), level)


def _mv(self, vec):
    return matmul(self, vec)


def _checked_product(name, ndims):
    """mv / dot: matmul on the batch when one example's shapes and dtypes are what the op takes;
    otherwise the op itself on stand-ins of one example's shapes raises its own error."""
    def rule(input, other):
        from ..functions import linalg
        ok = (input.ndim, other.ndim) == ndims and input.dtype is other.dtype
        if ok and input.shape[-1] == other.shape[0]:
            return matmul(input, other)
        plain = getattr(linalg, name)
        return plain(*(empty_like_example(x) for x in (input, other)))
    return rule


def empty_like_example(x):
    """An uninitialised plain tensor of one example's (logical) shape, dtype and device."""
    from ..tensor import empty
    return empty(tuple(x.shape), dtype=x.dtype, device=x.device)


def _joined(name, new_dim):
    """cat / stack (new_dim) of batched tensors: one join of their batches, the logical dim
    shifted past the batch dim. Anything the join would refuse or treat as a legacy case (0-d,
    1-d empty or mismatched examples) goes to the per-index path, which raises the op's own
    error on one example."""
    def rule(tensors, dim=0):
        from ..functions import joining
        tensors = list(tensors)
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise Unbatchable(name)
        shapes = [tuple(t.shape) for t in tensors]
        ndim = len(shapes[0])
        if ndim == 0 or (0,) in shapes or any(len(shape) != ndim for shape in shapes):
            raise Unbatchable(name)
        level = top_level((tensors,))
        physical_dim = logical_dim(dim, ndim + new_dim) + 1
        join = getattr(joining, name)
        return wrap(join([materialize(t, level) for t in tensors], physical_dim), level)
    return rule


def linear(input, weight, bias=None):
    level = top_level((input, weight, bias))
    from ..nn.functional.linear_maps import linear as plain_linear
    if _level(weight) < level and _level(bias) < level and input.ndim >= 1:
        return wrap(plain_linear(input._value, weight, bias), level)
    out = matmul(input, weight.transpose(-1, -2) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


def linear_relu(input, weight, bias=None):
    return linear(input, weight, bias).relu()


# ---- softmax and losses -----------------------------------------------------------------------
def _softmax_rule(public):
    def rule(input, dim=None, _stacklevel=3, dtype=None):
        if dim is None or top_level((input,)) != _level(input):
            raise Unbatchable("softmax without dim")
        return wrap(public()(input._value, _shift(dim, input.ndim), dtype=dtype), input._level)
    return rule


def _softmax():
    from ..nn.functional import softmax
    return softmax


def _log_softmax():
    from ..nn.functional import log_softmax
    return log_softmax


def _per_example(losses, level, reduction, denominator=None):
    """Per-example reduction of elementwise losses shaped (B, ...)."""
    if reduction == "none":
        return wrap(losses, level)
    dims = tuple(range(1, losses.ndim))
    total = losses.sum(dims) if dims else losses
    if reduction == "sum":
        return wrap(total, level)
    if denominator is None:
        denominator = losses[0].numel()
    return wrap(total / denominator, level)


def _class_losses(public, input, target, weight, ignore_index, reduction, **extra):
    """cross_entropy / nll_loss with class-index targets: examples folded into the loss's
    own batch dim, per-example reduction after (a mean divides by the example's own weight
    of non-ignored targets, as torch's does)."""
    level = top_level((input, target, weight))
    if _level(weight) == level or target.dtype.is_floating_point or \
            reduction not in ("none", "mean", "sum"):
        raise Unbatchable("loss")
    x, t = materialize(input, level), materialize(target, level)
    size = x.shape[0]
    if input.ndim == 1:             # one unbatched example: class scores (C,), target ()
        losses = public(x, t, weight, ignore_index=ignore_index, reduction="none", **extra)
        if reduction == "mean":
            losses = losses / _picked_weight(weight, t, ignore_index, losses.dtype)
        return wrap(losses, level)
    folded = public(x.flatten(0, 1), t.flatten(0, 1), weight, ignore_index=ignore_index,
                    reduction="none", **extra)
    losses = folded.reshape((size,) + tuple(target.shape))
    if reduction != "mean":
        return _per_example(losses, level, reduction)
    dims = tuple(range(1, losses.ndim))
    picked = _picked_weight(weight, t, ignore_index, losses.dtype)
    return wrap(losses.sum(dims) / picked.sum(dims), level)


def _picked_weight(weight, target, ignore_index, dtype):
    """Each target's class weight (1 without weights), 0 where the target is ignored."""
    kept = (target != ignore_index)
    if weight is None:
        return kept.to(dtype)
    return weight[target.masked_fill(~kept, 0)] * kept


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    from ..nn.functional import cross_entropy as public
    if size_average is not None or reduce is not None or \
            (label_smoothing and weight is not None):
        raise Unbatchable("legacy reduction arguments")
    out = _class_losses(public, input, target, weight, ignore_index, reduction,
                        label_smoothing=label_smoothing)
    return out.to(input.dtype) if out.dtype is not input.dtype else out


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    from ..nn.functional import nll_loss as public
    if size_average is not None or reduce is not None:
        raise Unbatchable("legacy reduction arguments")
    out = _class_losses(public, input, target, weight, ignore_index, reduction)
    return out.to(input.dtype) if out.dtype is not input.dtype else out


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if size_average is not None or reduce is not None or weight is not None:
        raise Unbatchable("mse_loss arguments")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    level = top_level((input, target))
    rank = max(input.ndim, target.ndim)
    a, b = (_pad(materialize(x, level), rank) for x in (input, target))
    losses = (a - b).square()
    return _per_example(losses, level, reduction, max(losses[0].numel(), 1) if
                        losses[0].numel() else 0)


# ---- convolution ------------------------------------------------------------------------------
def _conv(spatial, input, weight, bias, stride, padding, dilation, groups, relu=False):
    """Examples folded into the convolution's N when only the input is batched; with batched
    weights, examples become groups (N stays the example's own batch)."""
    from ..functions.conv import conv1d, conv2d, conv3d
    conv = (conv1d, conv2d, conv3d)[spatial - 1]
    level = top_level((input, weight, bias))
    unbatched_input = input.ndim == spatial + 1
    x = materialize(input, level)
    if unbatched_input:
        x = x.unsqueeze(1)
    size, n = x.shape[0], x.shape[1]
    if _level(weight) < level and _level(bias) < level:
        out = conv(x.flatten(0, 1), weight, bias, stride, padding, dilation, groups)
        out = out.unflatten(0, (size, n))
    else:
        w = materialize(weight, level)
        b = None if bias is None else materialize(bias, level).flatten(0, 1)
        grouped = x.transpose(0, 1).flatten(1, 2)            # (N, B·C, ...)
        out = conv(grouped, w.flatten(0, 1), b, stride, padding, dilation, groups * size)
        out = out.unflatten(1, (size, -1)).transpose(0, 1)  # (B, N, OC, ...)
    if unbatched_input:
        out = out.squeeze(1)
    if relu:
        out = out.relu()
    return wrap(out, level)


def _conv_rule(spatial):
    def rule(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        return _conv(spatial, input, weight, bias, stride, padding, dilation, groups)
    return rule


def conv_relu(spatial, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
              pool=None):
    if pool is not None:
        raise Unbatchable("fused pool")
    return _conv(spatial, input, weight, bias, stride, padding, dilation, groups, relu=True)


# ---- pooling, activations ---------------------------------------------------------------------
def _fold_into_n(public, spatial):
    """An (N, C, *spatial) op whose other arguments are not tensors: examples folded into N
    (an unbatched (C, *spatial) example's batch is N itself)."""
    def rule(input, *args, **kwargs):
        level = _level(input)
        if top_level(args, kwargs) > level or level == 0:
            raise Unbatchable("pooling arguments")
        x = input._value
        if input.ndim == spatial + 1:
            return _wrap_tree(public()(x, *args, **kwargs), level)
        out = public()(x.flatten(0, 1), *args, **kwargs)
        unfold = lambda t: t.unflatten(0, tuple(x.shape[:2]))     # noqa: E731
        return _wrap_tree(tuple(map(unfold, out)) if isinstance(out, tuple) else unfold(out),
                          level)
    return rule


def _pool(name):
    def public():
        from ..nn import functional
        return getattr(functional, name)
    return public


def _gelu(input, approximate="none"):
    from ..nn.functional import gelu
    return wrap(gelu(input._value, approximate), input._level)


# ---- tables -----------------------------------------------------------------------------------
def _methods():
    table = {name: _elementwise(name) for name in ELEMENTWISE}
    for name in ("sum", "mean", "prod", "amax", "amin", "logsumexp", "all", "any", "std",
                 "var", "nansum"):
        table[name] = _reduction(name)
    for name in ("max", "min"):
        table[name] = _max_min(name)
    for name in ("argmax", "argmin"):
        table[name] = _arg_reduction(name)
    for name in ("softmax", "log_softmax", "cumsum", "cumprod", "select", "narrow", "flip",
                 "index_select", "roll"):
        table[name] = _dim_op(name, 1 if name == "roll" else 0)
    table.update(
        requires_grad_=_requires_grad_, reshape=_reshape, view=_reshape,
        view_as=_as("view"), reshape_as=_as("reshape"), expand_as=_as("expand"),
        flatten=_flatten, unflatten=_unflatten, transpose=_transpose, swapaxes=_transpose,
        swapdims=_transpose, t=_t, permute=_permute, movedim=_movedim, moveaxis=_movedim,
        unsqueeze=_unsqueeze, squeeze=_squeeze, expand=_expand, repeat=_repeat,
        __getitem__=_getitem, T=property(_T), mT=property(_mT), __iter__=_iter,
        unbind=_unbind, split=_split_like("split"), chunk=_split_like("chunk"),
        mv=_mv, dot=_mv, new_zeros=_size_only("new_zeros"), new_ones=_size_only("new_ones"),
        new_full=_size_only("new_full"), new_empty=_size_only("new_empty"),
        new_tensor=_size_only("new_tensor"))
    return table


def _flip_dims(self, *dims):
    dims = _sizes(dims)
    return wrap(self._value.flip(_shift_dims(tuple(dims), self.ndim)), self._level)


def install():
    """Put the method rules on BatchedTensor (once, on import)."""
    for name, rule in METHODS.items():
        if hasattr(Tensor, name):
            setattr(BatchedTensor, name, rule)


def _unary_function(fn, a, integer_ok=False):
    """elementwise._unary, the path of every one-input elementwise function (mt.exp(x),
    mt.sigmoid(x), …): the op on the batch, which it maps element by element."""
    return wrap(elementwise._unary(fn, a._value, integer_ok), a._level)


def _unary_apply(cls, a):
    """A _Unary node applied directly (mt.abs, mt.relu, mt.neg, …): the node on the batch."""
    return wrap(cls.apply(a._value), a._level)


def _binary_function(fn, a, b, floating=False):
    """elementwise._binary (mt.add(x, y), mt.maximum(x, y), …): both operands aligned at the
    top level, as the method rules align them."""
    return _aligned_call(lambda x, y: elementwise._binary(fn, x, y, floating), (a, b), {})


FUNCTIONS = {
    "minitorch.functions.elementwise._unary": _unary_function,
    "minitorch.functions.elementwise._binary": _binary_function,
    "minitorch.functions.elementwise.apply_unary": _unary_apply,
    "minitorch.functions.reduce.sum":
        lambda input, dim=None, keepdim=False, dtype=None: input.sum(dim, keepdim, dtype=dtype),
    "minitorch.functions.reduce.mean":
        lambda input, dim=None, keepdim=False, dtype=None: input.mean(dim, keepdim, dtype=dtype),
    "minitorch.functions.linalg.matmul": matmul,
    "minitorch.functions.linalg.mm": matmul,
    "minitorch.functions.linalg.bmm": matmul,
    "minitorch.functions.joining.cat": _joined("cat", 0),
    "minitorch.functions.joining.stack": _joined("stack", 1),
    "minitorch.functions.linalg.mv": _checked_product("mv", (2, 1)),
    "minitorch.functions.linalg.dot": _checked_product("dot", (1, 1)),
    "minitorch.nn.functional.linear_maps.linear": linear,
    "minitorch.nn.functional.linear_maps.linear_relu": linear_relu,
    "minitorch.nn.functional.activation.softmax": _softmax_rule(_softmax),
    "minitorch.nn.functional.activation.log_softmax": _softmax_rule(_log_softmax),
    "minitorch.nn.functional.loss.cross_entropy": cross_entropy,
    "minitorch.nn.functional.loss.nll_loss": nll_loss,
    "minitorch.nn.functional.loss.mse_loss": mse_loss,
    "minitorch.functions.conv.conv1d": _conv_rule(1),
    "minitorch.functions.conv.conv2d": _conv_rule(2),
    "minitorch.functions.conv.conv3d": _conv_rule(3),
    "minitorch.functions.conv.conv_relu": conv_relu,
    "minitorch.functions.movement.flatten": lambda input, *a, **k: _flatten(input, *a, **k),
    "minitorch.nn.functional.pooling.max_pool2d": _fold_into_n(_pool("max_pool2d"), 2),
    "minitorch.nn.functional.pooling.avg_pool2d": _fold_into_n(_pool("avg_pool2d"), 2),
    "minitorch.nn.functional.activation.gelu": _gelu,
}

_KEYS = {}


def _key(fn):
    key = _KEYS.get(fn)
    if key is None:
        key = _KEYS[fn] = f"{fn.__module__}.{fn.__qualname__}"
    return key


METHODS = _methods()
METHODS["flip"] = _flip_dims

# Function forms that are their Tensor method (mt.prod is Tensor.prod, mt.fmod is Tensor.fmod):
# their batching_point reaches the method's rule, with the input as self.
SHARED_WITH_METHODS = """
prod max min amax amin argmax argmin var std logsumexp softmax log_softmax cumsum cumprod all
any nansum floor_divide clamp clamp_min clamp_max nan_to_num lerp fmax fmin remainder fmod logit
sinc isnan isinf isfinite logical_not logical_and logical_or logical_xor masked_fill
""".split()
FUNCTIONS.update((_key(getattr(Tensor, name)), METHODS[name]) for name in SHARED_WITH_METHODS)
FUNCTIONS["minitorch.functions.elementwise.where"] = _where_function
FUNCTIONS[_key(p_norm)] = _p_norm


def handle(fn, args, kwargs):
    """The functions layer's dispatch point while a batched vmap runs: the op's rule when a
    batched tensor is among its arguments, NotImplemented (the op as usual) otherwise."""
    if not top_level(args, kwargs):
        return NotImplemented
    rule = FUNCTIONS.get(_key(fn))
    if rule is None:
        raise Unbatchable(_key(fn))
    return rule(*args, **kwargs)


install()
