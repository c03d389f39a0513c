"""The CPU backend: Cython kernels (see minitorch.backend.KernelBackend) and numpy buffers."""
from .attention import attention_backward, attention_forward
from .binary import binary, where
from .eig import eig_general
from .factor import cholesky_factor, lu_factor, lu_permutation, triangular_solve
from .fused import (adam_step, cross_entropy_rows, cross_entropy_rows_backward,
                    softmax_backward_last, softmax_last)
from .foreach import foreach_adadelta, foreach_adam, foreach_rmsprop, foreach_sgd
from .grid import grid_gather, grid_scatter_add
from .grid_sample import grid_sample_backward, grid_sample_forward
from .index import (gather, index_add, index_select, put, scatter, scatter_add, scatter_reduce,
                    take)
from .matmul import matmul, pack_panels, panel_matmul   # a right operand many products share
from .matmul import conv_matmul, conv_weight_matmul   # convolution GEMMs reading the image in place
from .norm import norm_rows, norm_rows_backward
from .pool import max_pool_backward, max_pool_forward
from .recurrent import recurrent_backward, recurrent_forward
from .resample import lerp_resample, lerp_resample_backward
from .reduce import reduce_last, scan_index_last, scan_last
from .sort import searchsorted, sort_last, top_last
from .spectral import eigh_jacobi, qr_form_q, qr_householder, svd_jacobi
from .strided import cast, compact, join, strided_add, strided_set
from .threads import get_num_threads, set_num_threads
from .unary import unary
# Buffers: numpy arrays; the large ones are recycled by our cache (see allocator.py). empty/full
# take a length and a numpy storage dtype.
from .allocator import empty, full


# Kernels that functions call directly and that loop over the compute dtypes only: their narrow
# (float16, bfloat16, int8/16/32) buffers are widened around the call (widen.py). Pure data
# movement (compact, join, gather, take, …) moves narrow elements as they are; NDArray widens
# the elementwise, reduction, scan and softmax kernels itself (they sit on every op's path).
from .widen import NARROW_VIA_WIDE, wrap_kernels
wrap_kernels(globals(), NARROW_VIA_WIDE, empty, cast)
# complex64 / complex128 buffers move through the same kernels as their (re, im) float pairs
from . import complex_pairs as _complex_pairs
_complex_pairs.wrap_kernels(globals())
from .complex import complex_binary, complex_binary_strided, complex_polar, complex_unary
from .fft import fft_rows


def from_host(array):
    """A host array becomes a CPU buffer as it is (callers pass a fresh copy)."""
    return array


def to_host(buffer):
    return buffer


def data_ptr(buffer):
    return buffer.ctypes.data
