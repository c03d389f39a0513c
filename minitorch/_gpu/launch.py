"""Host-side planning for the GPU kernels, in plain Python and numpy (no CuPy): kernel sources and
the template instances each module is compiled with, axis collapsing, the by-value geometry
struct with its magic-number dividers, launch shapes, and the overlap test that decides between
plain and atomic / claimed writes. Everything here is testable without a GPU.
"""
import math
import pathlib

import numpy as np

from ..opcodes import BinaryOp, UnaryOp, c_constants
from ..strides import merge_axes

KERNEL_DIR = pathlib.Path(__file__).resolve().parent / "kernels"
SHARED_DIR = KERNEL_DIR.parent.parent / "_kernels"    # C headers shared with the CPU kernels
MODULES = ("strided", "elementwise", "fused", "reduce", "matmul", "index", "sort", "factor",
           "spectral", "pool", "recurrent", "grid", "norm", "foreach", "attention", "resample",
           "grid_sample", "complex")
# The files a module may `#include "..."`: the loader pastes them (NVRTC sees one text).
INCLUDES = {"common.cuh": KERNEL_DIR / "common.cuh",
            "special_math.h": SHARED_DIR / "special_math.h", "half.h": SHARED_DIR / "half.h"}

THREADS = 256           # block size of the flat kernels (common.cuh)
BLOCK = (THREADS,)      # the same as a launch's block argument
ITEMS = 4               # elements per thread in the flat kernels (common.cuh)
NARROW_DIMS = 8         # geometry size compiled by default; views that still have more axes
WIDE_DIMS = 64          # after collapsing use the 64-axis instances (compiled on first need)
MAX_GRID = 2 ** 31 - 1
SORT_TILE = 2048        # longest row sorted in shared memory (sort.cu)

# storage dtype name → C++ type
CTYPES = {"float32": "float", "float64": "double", "int64": "long long", "uint8": "unsigned char",
          "int32": "int", "int16": "short", "int8": "signed char",
          # the 16-bit floats are words to every kernel but cast's (half.h converts them)
          "float16": "unsigned short", "bfloat16": "unsigned short"}
HALF_FORMATS = {"float16": 1, "bfloat16": 2}      # cast16_kernel's SRC16 / DST16 codes
# Storage formats whose arithmetic runs widened (minitorch/_cpu/widen.py): they only move here.
NARROW = ("int32", "int16", "int8", "float16", "bfloat16")


def cast_name(src, dst):
    """The cast kernel instance from storage dtype `src` to `dst` (names as in CTYPES)."""
    s16, d16 = HALF_FORMATS.get(src, 0), HALF_FORMATS.get(dst, 0)
    if s16 or d16:
        return f"cast16_kernel<{CTYPES[src]}, {CTYPES[dst]}, {s16}, {d16}>"
    return f"cast_kernel<{CTYPES[src]}, {CTYPES[dst]}>"
FLOAT_TYPES = ("float32", "float64")

# matmul tile shapes: (BM, BN, BK, TM, TN); the big one for large products, the small one when the
# big tiles would leave most multiprocessors idle
MATMUL_TILES = {"large": (128, 128, 8, 8, 8), "small": (64, 64, 8, 4, 4)}
# the float32 fast path (sgemm_kernel): (BM, BN, BK, WM, WN, TM, TN), 256 threads each
SGEMM_TILES = {"large": (128, 128, 8, 32, 64, 8, 8), "small": (64, 64, 16, 16, 32, 4, 4)}
MAX_GRID_YZ = 65535


# ---------------------------------------------------------------------------------------------
# sources and template instances

def opcode_prelude():
    """`#define UNARY_EXP 4`-style lines from minitorch.opcodes, and X-macros listing every
    unary and binary op (`UNARY_OPS(X)` expands to X(UNARY_IDENTITY) X(UNARY_NEG) ...) for the
    kernels' dispatch switches: that file stays the only place where ops are written down."""
    lines = [f"#define {name} {value}\n" for name, value in c_constants()]
    for enum, prefix in ((UnaryOp, "UNARY"), (BinaryOp, "BINARY")):
        cases = " ".join(f"X({prefix}_{op.name})" for op in enum)
        lines.append(f"#define {prefix}_OPS(X) {cases}\n")
    return "".join(lines)


def module_source(module):
    """The complete text NVRTC compiles for `module`: opcode prelude, then the module with each
    of its `#include "..."` lines (common.cuh first, special_math.h where used) replaced by that
    file's text."""
    text = (KERNEL_DIR / f"{module}.cu").read_text()
    if '#include "common.cuh"\n' not in text:
        raise RuntimeError(f"{module}.cu must include common.cuh")
    for name, path in INCLUDES.items():
        text = text.replace(f'#include "{name}"\n', path.read_text(), 1)
    return opcode_prelude() + text


def name_expressions(module, key):
    """The template instances compiled together for (module, key). key is a storage dtype name,
    with ":wide" for the 64-axis strided instances, or "check" for the index validator."""
    dtype, _, variant = key.partition(":")
    if module == "index" and key == "check":
        return ["index_umax_kernel"]
    t = CTYPES[dtype]
    dims = WIDE_DIMS if variant == "wide" else NARROW_DIMS
    if module == "strided":
        names = [f"compact_kernel<{t}, {dims}>", f"strided_set_kernel<{t}, {dims}>"]
        if dtype not in NARROW:     # narrow dtypes only move (no 8/16-bit atomic adds)
            names.append(f"strided_add_kernel<{t}, {dims}>")
        if variant != "wide":
            names += [f"fill_kernel<{t}>"] + [cast_name(dtype, d) for d in CTYPES]
        return names
    if module == "elementwise":
        names = [f"binary_kernel<{t}, {dims}>", f"where_kernel<{t}, {dims}>"]
        if variant == "wide":
            return names
        return [f"unary_kernel<{t}>", f"binary_rows_kernel<{t}>"] + names
    if module == "fused":
        return [f"softmax_rows_kernel<{t}>", f"softmax_backward_rows_kernel<{t}>",
                f"cross_entropy_rows_kernel<{t}>", f"cross_entropy_rows_backward_kernel<{t}>",
                f"adam_kernel<{t}>"]
    if module == "norm":
        return [f"{kernel}<{t}>" for kernel in ("norm_rows_kernel", "norm_rows_backward_kernel",
                                                "norm_params_cols_kernel",
                                                "norm_params_blocks_kernel")]
    if module == "foreach":
        return [f"foreach_{rule}_kernel<{t}>" for rule in ("sgd", "adam", "adadelta", "rmsprop")]
    if module == "reduce":
        return [f"reduce_rows_kernel<{t}>", f"reduce_cols_kernel<{t}>",
                f"reduce_rows_vec_kernel<{t}>", f"reduce_rows_group_kernel<{t}>",
                f"reduce_cols_vec_kernel<{t}>", f"scan_rows_kernel<{t}>", f"scan_cols_kernel<{t}>",
                f"scan_index_rows_kernel<{t}>", f"scan_index_cols_kernel<{t}>"]
    if module == "matmul":
        names = [matmul_name(t, tiles) for tiles in MATMUL_TILES.values()]
        if dtype == "float32":
            names += [sgemm_name(tiles, a_k, b_k) for tiles in SGEMM_TILES.values()
                      for a_k in (True, False) for b_k in (True, False)]
        return names
    if module == "index":
        kernels = ("gather_kernel", "index_select_kernel", "take_kernel")
        if dtype not in NARROW:
            kernels += ("scatter_kernel", "scatter_add_kernel", "scatter_reduce_kernel",
                        "index_add_kernel", "put_kernel")
        return [f"{kernel}<{t}>" for kernel in kernels]
    if module == "sort":
        return [f"{kernel}<{t}>" for kernel in ("sort_rows_kernel", "sort_pad_kernel",
                                                "sort_stage_kernel", "sort_unpad_kernel",
                                                "searchsorted_kernel")]
    if module == "factor":
        return [f"{kernel}<{t}>" for kernel in ("lu_factor_kernel", "triangular_solve_kernel",
                                                "cholesky_factor_kernel")] + \
            ["lu_permutation_kernel"]
    if module == "pool":
        names = [f"max_pool_forward_kernel<{t}>"]
        return names + ([f"max_pool_backward_kernel<{t}>"] if dtype in FLOAT_TYPES else [])
    if module == "spectral":
        return [f"{kernel}<{t}>" for kernel in ("eigh_jacobi_kernel", "svd_jacobi_kernel",
                                                "qr_householder_kernel", "qr_form_q_kernel")]
    if module == "recurrent":
        return [f"recurrent_forward_kernel<{t}>", f"recurrent_backward_kernel<{t}>"]
    if module == "grid":
        names = [f"grid_gather_kernel<{t}>"]
        return names + ([f"grid_scatter_add_kernel<{t}>"] if dtype in FLOAT_TYPES else [])
    if module == "resample":
        return [f"lerp_resample_kernel<{t}>", f"lerp_resample_backward_kernel<{t}>"]
    if module == "grid_sample":
        return [f"grid_sample_forward_kernel<{t}>", f"grid_sample_backward_kernel<{t}>"]
    if module == "complex":       # keyed by the pair's float dtype
        return [f"{kernel}<{t}>" for kernel in ("complex_binary_kernel", "complex_unary_kernel",
                                                "complex_polar_kernel")]
    if module == "attention":
        return [f"{kernel}<{t}>" for kernel in ("attention_forward_kernel",
                                                "attention_backward_dq_kernel",
                                                "attention_backward_dkv_kernel")]
    raise ValueError(f"unknown kernel module {module!r}")


def matmul_name(ctype, tiles):
    return "matmul_kernel<{}, {}, {}, {}, {}, {}>".format(ctype, *tiles)


def sgemm_name(tiles, a_k, b_k):
    flags = ("true" if a_k else "false", "true" if b_k else "false")
    return "sgemm_kernel<{}, {}, {}, {}, {}, {}, {}, {}, {}>".format(*tiles, *flags)


def module_keys(module):
    """Every key the backend may request for `module` (what the compile test instantiates)."""
    if module in ("matmul", "factor", "spectral", "fused", "recurrent", "norm", "foreach",
                  "attention", "resample", "grid_sample", "complex"):
        return list(FLOAT_TYPES)
    # the narrow dtypes only move (NDArray and widen.py run their arithmetic widened)
    keys = list(CTYPES) if module in ("strided", "index") else \
        [d for d in CTYPES if d not in NARROW]
    if module in ("strided", "elementwise"):
        keys += [f"{d}:wide" for d in keys]
    if module == "index":
        keys.append("check")
    return keys


# ---------------------------------------------------------------------------------------------
# geometry

def collapse(shape, strides_list):
    """Drop size-1 axes and merge neighbours that are contiguous in every operand (the same rule
    as the CPU's collapse_dims). Returns (shape, strides_list), at least one axis."""
    sizes, merged = merge_axes(shape, strides_list)
    if not sizes:
        return (1,), [(0,) for _ in strides_list]
    return tuple(sizes), [tuple(s) for s in merged]


def contiguous(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def magic_divider(d):
    """(magic, shift) with q = (umulhi(n, magic) + n) >> shift == n // d for 0 <= n < 2**63 and
    1 <= d < 2**63 (Granlund & Montgomery's round-up method; exact integer arithmetic here)."""
    if not 1 <= d < 2 ** 63:
        raise ValueError(f"divisor {d} out of range")
    shift = (d - 1).bit_length()            # smallest s with 2**s >= d
    magic = (2 ** 64 * (2 ** shift - d)) // d + 1
    if not 1 <= magic < 2 ** 64:
        raise AssertionError(f"magic for {d} does not fit in 64 bits")
    return magic, shift


def magic_quotient(n, magic, shift):
    """What the device computes (for tests): ((n * magic) >> 64) + n, shifted."""
    return (((n * magic) >> 64) + n) >> shift


def pack_geometry(shape, strides_list, max_dims):
    """The Geometry<NARGS, max_dims> struct of common.cuh as one numpy element of a void dtype
    (CuPy passes a size-1 numpy array by value). Axes are written innermost first."""
    nargs, nd = len(strides_list), len(shape)
    if not 1 <= nd <= max_dims:
        raise ValueError(f"geometry with {nd} axes does not fit {max_dims}")
    words = np.zeros(1 + (3 + nargs) * max_dims, np.uint64)
    signed = words.view(np.int64)
    words[0] = nd
    for j, d in enumerate(reversed(range(nd))):
        magic, shift = magic_divider(shape[d])
        words[1 + j] = shape[d]
        words[1 + max_dims + j] = magic
        words[1 + 2 * max_dims + j] = shift
        for k, strides in enumerate(strides_list):
            signed[1 + (3 + k) * max_dims + j] = strides[d]
    return words.view(np.dtype((np.void, words.nbytes)))


def geometry_dims(nd):
    """Which compiled geometry size serves a collapsed view of nd axes."""
    return NARROW_DIMS if nd <= NARROW_DIMS else WIDE_DIMS


def view_extent(shape, strides, offset):
    """(lowest, highest) element a non-empty view touches."""
    lo = hi = offset
    for size, stride in zip(shape, strides):
        reach = (size - 1) * stride
        if reach > 0:
            hi += reach
        else:
            lo += reach
    return lo, hi


def is_injective(shape, strides):
    """Sufficient test that no two indices of a view share an element: sorted by |stride|, each
    stride exceeds the span of all smaller ones (fails for stride 0 and overlapping windows)."""
    span = 0
    for size, stride in sorted(zip(shape, strides), key=lambda p: abs(p[1])):
        if size == 1:
            continue
        if abs(stride) <= span:
            return False
        span += (size - 1) * abs(stride)
    return True


# ---------------------------------------------------------------------------------------------
# launch shapes

def row_warp_grid(rows):
    """Blocks for a kernel with one warp per row (THREADS // 32 rows per block)."""
    return max(1, min(MAX_GRID, -(-rows // (THREADS // 32))))


def flat_grid(n):
    """Blocks for a flat kernel over n elements (each block covers THREADS * ITEMS)."""
    return max(1, min(MAX_GRID, -(-n // (THREADS * ITEMS))))


def reduce_plan(rows, n, columns, sm_count, align=1):
    """(parts, chunk) splitting each reduced axis of length n into `parts` chunks, so that about
    four blocks per multiprocessor have work even when there are few output rows. `columns` is
    the number of column blocks per row (1 for a row reduction); chunks are a multiple of
    `align` elements (so every chunk of an aligned row starts aligned)."""
    tasks = rows * columns
    want = 4 * sm_count
    min_chunk = 4096 if columns == 1 else 256
    if tasks >= want or n <= min_chunk:
        return 1, n
    parts = min(-(-want // tasks), -(-n // min_chunk), 1024)
    chunk = -(-n // parts)
    chunk = -(-chunk // align) * align
    return -(-n // chunk), chunk


VECTOR_BYTES = 16       # the value-only reductions and elementwise fast paths load 16 bytes
GROUP_ROW_MAX = 1024    # rows up to this long are reduced by lane groups, longer ones by blocks


def vector_width(name):
    """Elements of dtype `name` in one 16-byte vector load."""
    return VECTOR_BYTES // np.dtype(name).itemsize


def row_group(n, width):
    """Lanes per row for reduce_rows_group_kernel: enough for one vector (or element) each, a
    power of two from 1 to 32."""
    units = n // width if n % width == 0 else n
    return min(32, 1 << max(0, (units - 1).bit_length()))


def row_group_grid(rows, group):
    """Blocks of THREADS threads, THREADS // group rows each."""
    return max(1, min(MAX_GRID, -(-rows // (THREADS // group))))


def row_threads(n):
    """Threads per block for a row reduction or scan: a power of two from 32 to 256."""
    return min(256, max(32, 1 << max(0, (n - 1).bit_length())))


def column_block(inner):
    """(x, y) block for column reductions: x threads across columns, y along the reduced axis."""
    x = min(32, 1 << max(0, (inner - 1).bit_length()))
    return x, 256 // x


def bitonic_length(n):
    """The power of two (at least 1) a row of n is padded to for the bitonic sort."""
    return 1 << max(0, (n - 1).bit_length())


def bitonic_stages(padded):
    """The (k, j) stages of a bitonic sorting network over `padded` elements, in order."""
    stages, k = [], 2
    while k <= padded:
        j = k // 2
        while j:
            stages.append((k, j))
            j //= 2
        k *= 2
    return stages


def matmul_tiles(batch, m, n, sm_count):
    """The tile shape for a product: large tiles unless they would leave multiprocessors idle."""
    bm, bn = MATMUL_TILES["large"][:2]
    if batch * math.ceil(m / bm) * math.ceil(n / bn) >= sm_count:
        return "large"
    return "small"


def matmul_strides(strides, inner, rows, cols):
    """A matmul operand's (outer, inner, row, col) element strides from the caller's 3-tuple
    (one batch axis: the outer stride is never stepped), 4-tuple or None (compact)."""
    if strides is None:
        return (inner * rows * cols, rows * cols, cols, 1)
    strides = tuple(strides)
    return strides if len(strides) == 4 else (0,) + strides


def sgemm_layout(batch, m, n, k, a_strides, b_strides):
    """(a_k, b_k, a_strides, b_strides) when sgemm_kernel can read both operands as aligned
    float4 (given 16-byte aligned pointers and offsets that are multiples of 4, which the caller
    checks per call), else None. batch is (outer, inner), the strides (outer, inner, row, col).
    a_k: A's k axis is the contiguous one (else its m axis); b_k: B's k axis (else its n
    axis). Strides of size-1 axes are zeroed (never stepped along), so torch's arbitrary
    strides there do not defeat the check; the grid's y and z limits apply."""
    outer, inner = batch
    if -(-m // SGEMM_TILES["small"][0]) > MAX_GRID_YZ or outer * inner > MAX_GRID_YZ:
        return None
    a = tuple(0 if size == 1 else s for size, s in zip((outer, inner, m, k), a_strides))
    b = tuple(0 if size == 1 else s for size, s in zip((outer, inner, k, n), b_strides))

    def pick(batch_strides, x_stride, k_stride, x):
        """True (k contiguous), False (x contiguous) or None (no float4 reads)."""
        if any(s % 4 for s in batch_strides):
            return None
        if k_stride in (0, 1) and k % 4 == 0 and x_stride % 4 == 0:
            return True
        if x_stride in (0, 1) and x % 4 == 0 and k_stride % 4 == 0:
            return False
        return None

    a_k, b_k = pick(a[:2], a[2], a[3], m), pick(b[:2], b[3], b[2], n)
    if a_k is None or b_k is None:
        return None
    return a_k, b_k, a, b


def sgemm_tiles(batch, m, n, sm_count):
    """sgemm_kernel's tile shape: large tiles unless they would leave multiprocessors idle."""
    bm, bn = SGEMM_TILES["large"][:2]
    if batch * math.ceil(m / bm) * math.ceil(n / bn) >= sm_count:
        return "large"
    return "small"


def sgemm_grid(batch, m, n, tiles):
    """(n tiles, m tiles, batch): n fastest, so consecutive blocks share A's row panel."""
    bm, bn = tiles[:2]
    return (-(-n // bn), -(-m // bm), batch)


BINARY_RUNS = 2         # runs of 16 bytes per thread in binary_rows_kernel (RUN_UNROLL)


def binary_rows_layout(shape, strides_list, width):
    """((rows, inner_rows, cols), [(outer stride, row stride, column stride)] per operand,
    vector-friendly) when a collapsed view has one to three axes and every operand's column
    stride is 0 or 1 (what binary_rows_kernel reads: row r is (r // inner_rows, r % inner_rows)),
    else None. Vector-friendly: cols and the other strides of the unit-stride operands are
    multiples of `width` (offsets and pointers are checked per call)."""
    if len(shape) > 3 or any(s[-1] not in (0, 1) for s in strides_list):
        return None
    pad = 3 - len(shape)
    shape = (1,) * pad + tuple(shape)
    strides = [(0,) * pad + tuple(s) for s in strides_list]
    outer, inner_rows, cols = shape
    aligned = cols % width == 0 and all(s[0] % width == 0 and s[1] % width == 0
                                        for s in strides if s[2] == 1)
    return (outer * inner_rows, inner_rows, cols), strides, aligned


def binary_rows_launch(rows, cols, width):
    """(grid, block) of binary_rows_kernel: bx threads along a row's runs (a power of two up to
    THREADS, enough for one run each), THREADS // bx rows per block; grid y is capped (the
    kernel strides over the remaining rows)."""
    runs = -(-cols // width)
    bx = min(THREADS, 1 << max(0, (runs - 1).bit_length()))
    by = THREADS // bx
    grid = (max(1, min(MAX_GRID, -(-runs // (bx * BINARY_RUNS)))),
            max(1, min(MAX_GRID_YZ, -(-rows // by))))
    return grid, (bx, by)

