"""Narrow buffers through a kernel that has loops for the compute dtypes only.

float16 and bfloat16 compute in float32, int8/int16/int32 in int64 (see minitorch.dtypes). The
elementwise, reduction and matmul paths widen in NDArray; the kernels that functions call
directly (convolution's GEMM, norms, attention, pooling, sorting, the recurrences, the fused
optimizer steps, …) are wrapped here instead, once per backend: every narrow buffer argument is
cast to its compute dtype before the call and cast back after it, so outputs written in the wide
copy land rounded (an input comes back unchanged: the round trip is exact). Both backends use
this with their own `empty` and `cast`.
"""
import numpy as np

COMPUTE = {np.dtype(np.float16): np.dtype(np.float32),
           np.dtype(np.uint16): np.dtype(np.float32),       # bfloat16 words
           np.dtype(np.int8): np.dtype(np.int64), np.dtype(np.int16): np.dtype(np.int64),
           np.dtype(np.int32): np.dtype(np.int64)}

# The kernels functions call directly whose loops cover the compute dtypes only.
NARROW_VIA_WIDE = ("attention_backward", "attention_forward", "adam_step", "foreach_adadelta",
                   "foreach_adam", "foreach_rmsprop", "foreach_sgd", "grid_gather",
                   "grid_scatter_add", "matmul", "norm_rows", "norm_rows_backward",
                   "max_pool_backward", "max_pool_forward", "recurrent_backward",
                   "recurrent_forward", "scan_index_last", "searchsorted", "sort_last",
                   "top_last", "strided_add", "scatter", "scatter_add", "scatter_reduce",
                   "index_add", "put",
                   "cross_entropy_rows", "cross_entropy_rows_backward", "lerp_resample",
                   "lerp_resample_backward", "grid_sample_forward", "grid_sample_backward")


def widening(kernel, empty, cast):
    """`kernel` taking narrow buffers (also inside list arguments) in their compute dtype. The
    first buffer argument decides (every one of these kernels takes its value buffers in one
    dtype): the common case costs a short loop, not a scan of every argument."""
    def call(*args, **kwargs):
        dtype = None
        for arg in args:
            if type(arg) is list:
                arg = arg[0] if arg else None
            dtype = getattr(arg, "dtype", None)
            if dtype is not None:
                break
        if dtype not in COMPUTE:
            return kernel(*args, **kwargs)
        copies = []
        wide_args = [_widen(a, empty, cast, copies) for a in args]
        wide_kwargs = {name: _widen(a, empty, cast, copies) for name, a in kwargs.items()}
        result = kernel(*wide_args, **wide_kwargs)
        for narrow, wide in copies:
            cast(wide, narrow, False)
        return result

    call.__name__ = getattr(kernel, "__name__", "kernel")
    call.__doc__ = kernel.__doc__
    call.__wrapped__ = kernel
    return call


def _widen(arg, empty, cast, copies):
    if isinstance(arg, (list, tuple)):
        return type(arg)(_widen(a, empty, cast, copies) for a in arg)
    wide_dtype = COMPUTE.get(getattr(arg, "dtype", None))
    if wide_dtype is None:
        return arg
    wide = empty(arg.size, wide_dtype)
    cast(arg, wide, False)
    copies.append((arg, wide))
    return wide


def wrap_kernels(namespace, names, empty, cast):
    """Replace each named kernel in `namespace` (a module's globals or an object) by its
    widening version."""
    for name in names:
        if isinstance(namespace, dict):
            namespace[name] = widening(namespace[name], empty, cast)
        else:
            setattr(namespace, name, widening(getattr(namespace, name), empty, cast))
