"""Batched strided matrix multiply for the CPU backend: a packed GEMM in the BLIS/GotoBLAS style.

out (compact batch x m x n) = a (batch x m x k) @ b (batch x k x n), each operand read through
its own (batch, row, col) element strides, so transposes and broadcast batches cost nothing: they
are absorbed by the packing step, which copies blocks of a and b into contiguous, zero-padded
panels laid out in exactly the order the micro-kernel reads them.

Loop nest for one product (or one thread's rectangle of it), as in BLIS:
    for jc in n by NC:
      for pc in k by KC:
        pack B[pc:, jc:] -> panels of nr columns (KC x nr each, k-major)
        for ic in m by MC:
          pack A[ic:, pc:] -> panels of MR rows (or read A in place when n is narrow)
          for jr in nc by nr:          one B panel ...
            for ir in mc by MR:        ... meets every A panel of the block
              micro-kernel: the MR x nr tile of out (=|+=) A panel @ B panel

Register tiles are MR rows by a panel width of NR_WIDE or NR_NARROW columns, chosen per product
(panel_width): a 16-wide tile keeps narrow products (a classifier's 10 outputs, a first conv layer's
16 channels) from computing mostly padding.

Threads: tasks are whole batch items, or rectangles of out (see choose_split); every task packs
what it needs into its thread's buffers, so threads share nothing and never wait on each other.

A right operand that many products share (an RNN's W_hh, every time step) can be packed once
(pack_panels) and passed to panel_matmul, which reads its panels as they are.
"""
from cython cimport floating
from cython.parallel cimport prange, threadid
from libc.stdlib cimport free, malloc
from libc.string cimport memset
cimport numpy as cnp

from minitorch._cpu.common cimport omp_get_max_threads

cnp.import_array()

cdef enum:
    # Register tile: MR x NR_WIDE accumulators. NR_WIDE = 32 is 2 zmm of float: 16 independent
    # FMA chains, plenty to hide the FMA latency. Double products always take the narrow tile
    # (MR x 16 doubles, the same 16 zmm): the wide one needs all 32 zmm for its accumulators,
    # and its spills cost 20-30% (Sapphire Rapids, 1 thread: 512^3 58 -> 70 GFLOP/s, an LSTM
    # cell's 97x51x204 41 -> 50 with the narrow tile; measured). 6 x 32 is as fast on
    # square sizes, but MR = 8 divides the power-of-two row counts of typical models (64 rows:
    # 3% of padding work with MR = 6). The narrow tile, MR x 16, runs at the same peak on one
    # core (114 GFLOP/s float, Zen 4) only because setup.py stops gcc from fully unrolling loops
    # of more than 12 trips before vectorizing: by default it unrolls the 16-trip column loop,
    # then vectorizes the k loop with shuffles instead (11 GFLOP/s; measured).
    MR = 8
    NR_WIDE = 32
    NR_NARROW = 16
    # Cache blocks, chosen by measurement on Zen 4 (32 KiB L1d, 1 MiB L2 per core). A deep k
    # block means out is read and written fewer times; a wide B panel (KC x 32, 64 KiB) and the A
    # block (MC x KC, 192 KiB) then both stream from L2, which keeps up with the kernel.
    KC_BYTES = 2048   # k depth of a block: 512 floats or 256 doubles
    MC = 96           # rows of a packed A block (multiple of MR)
    NC = 3072         # columns of a packed B block (multiple of both tile widths)
    DIRECT_A_MAX_N = 4 * NR_WIDE   # n up to this: read a column-major A in place (a_in_place)
    DIRECT_A_MAX_STRIDE = 2048     # ... if its k stride is below this many bytes
    B_IN_PLACE_MAX_M = 32   # out rows up to this: B's panels are read in place (b_in_place)
    # Parallel tasks: when column blocks of out cost no extra packing, cut out into up to
    # TASKS_PER_THREAD blocks per thread (each at least MIN_TASK_PANELS B panels wide), handed
    # out dynamically, so that a thread that loses its core to another process (a DataLoader
    # worker, another job) does not hold everyone up.
    TASKS_PER_THREAD = 4
    MIN_TASK_PANELS = 4
    # m*n*k below which a plain loop beats packing. Packing pays off early (16^3: 0.8 us
    # packed vs 1.2 us plain; equal at 8^3) because the plain loop cannot keep a row of out in
    # registers.
    SMALL_WORK = 1024
    # batch*m*n*k below which one OpenMP region (~3 us) costs more than it saves (2 threads
    # break even near 80^3).
    PARALLEL_MIN_WORK = 524288
    L1_PANEL_BYTES = 32768    # a B panel's k block read from L1 (pre-packed B, see run)
    K_SLICE_MIN = 1024    # k per thread for which summing per-thread partial products pays


cdef struct Plan:
    Py_ssize_t mc, kc, nc      # block sizes actually used (balanced so the last block is not tiny)
    Py_ssize_t nr              # panel width: NR_WIDE or NR_NARROW
    Py_ssize_t b_panels        # B packed beforehand (pack_panels): its panels' stride; else 0


cdef inline Py_ssize_t cdiv(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    return (a + b - 1) // b


cdef inline Py_ssize_t round_up(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    return cdiv(a, b) * b


cdef inline floating* aligned(floating* p) noexcept nogil:
    """Round a scratch pointer up to a 64-byte boundary (one cache line, one zmm)."""
    return <floating*>((<size_t>p + 63) & ~(<size_t>63))


cdef inline Py_ssize_t panel_width(Py_ssize_t n) noexcept nogil:
    """The register tile's width for a product n columns wide: the narrow one where the wide
    one would mostly compute padding (n <= 16: 10 classes, 16 channels)."""
    return NR_NARROW if n <= NR_NARROW else NR_WIDE


cdef inline Py_ssize_t tile_width(Py_ssize_t n, size_t itemsize) noexcept nogil:
    """The register tile's width for a product n columns wide of this element size: double
    products always take the narrow tile (see MR)."""
    return NR_NARROW if itemsize == sizeof(double) else panel_width(n)


cdef Plan make_plan(Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, Py_ssize_t nr,
                    size_t itemsize) noexcept nogil:
    """Block sizes for one thread's m x n x k product, evened out so that the last block is not
    a sliver (k = 300 runs as 150 + 150, not 256 + 44)."""
    cdef Plan plan
    cdef Py_ssize_t nblocks = cdiv(k, KC_BYTES // itemsize)
    plan.nr = nr
    plan.b_panels = 0
    plan.kc = cdiv(k, nblocks)
    nblocks = cdiv(n, NC)
    plan.nc = round_up(cdiv(n, nblocks), nr)
    nblocks = cdiv(m, MC)
    plan.mc = round_up(cdiv(m, nblocks), MR)
    return plan


cdef struct Scratch:
    void* a                    # per-thread packing buffers, nthreads of each, one after another
    void* b
    Py_ssize_t a_size, b_size  # elements per thread (+ 64: room to align each to a cache line)


cdef int scratch_alloc(Scratch* s, Plan plan, int nthreads, size_t itemsize) noexcept nogil:
    """Packing buffers for nthreads threads working to `plan`; -1 (nothing held) when out of
    memory."""
    s.a_size = plan.mc * plan.kc + 64
    s.b_size = plan.nc * plan.kc + 64
    s.a = malloc(nthreads * s.a_size * itemsize)
    s.b = malloc(nthreads * s.b_size * itemsize)
    if s.a == NULL or s.b == NULL:
        scratch_free(s)
        return -1
    return 0


cdef void scratch_free(Scratch* s) noexcept nogil:
    free(s.a)
    free(s.b)
    s.a = s.b = NULL


cdef struct Epilogue:
    # Applied to each finished block of out, while it is still in cache: out[i, j] += bias[i·rs +
    # j·cs] (bias NULL: none), then relu. A Linear layer's bias (rs = 0, cs = 1) and a following
    # ReLU cost no pass of their own. `bias` is a float* or double* like out.
    const void* bias
    Py_ssize_t rs, cs
    bint relu


cdef void epilogue(floating* c, Py_ssize_t rsc, Py_ssize_t csc, Py_ssize_t rows,
                   Py_ssize_t cols, Epilogue ep, Py_ssize_t i0, Py_ssize_t j0) noexcept nogil:
    """The epilogue on the rows x cols block at c (strides rsc, csc), whose first element is
    out[i0, j0]: the same float operations as the separate bias add and relu, so the same bits."""
    cdef Py_ssize_t i, j, brs = ep.rs, bcs = ep.cs, t
    cdef const floating* bias = <const floating*>ep.bias
    cdef floating* crow
    cdef const floating* brow
    cdef floating b0
    if bias != NULL:
        bias = bias + i0 * brs + j0 * bcs
    if csc != 1:       # walk the unit-stride axis innermost (a swapped product has rsc = 1)
        t = rsc; rsc = csc; csc = t
        t = rows; rows = cols; cols = t
        t = brs; brs = bcs; bcs = t
    for i in range(rows):
        crow = c + i * rsc
        if bias != NULL:
            brow = bias + i * brs
            if bcs == 0:
                b0 = brow[0]
                for j in range(cols):
                    crow[j] = crow[j] + b0
            else:
                for j in range(cols):
                    crow[j] = crow[j] + brow[j * bcs]
        if ep.relu:     # torch's relu: x < 0 ? 0 : x, so NaN passes and -0.0 stays
            for j in range(cols):
                crow[j] = 0 if crow[j] < 0 else crow[j]


cdef inline void tile_product(Py_ssize_t kc, const floating* a, Py_ssize_t rs, Py_ssize_t cs,
                              const floating* b, Py_ssize_t ldb, floating* acc,
                              const Py_ssize_t nr) noexcept nogil:
    """acc (MR x nr) = a (MR x kc, strides rs, cs) @ b (kc x nr panel, rows ldb apart: ldb = nr
    when packed k-major, B's row stride when read in place).

    A packed A panel is just rs = 1, cs = MR; A can also be read in place (only single elements
    of it are broadcast, so its layout hardly matters). acc is a local array of the caller with
    constant bounds and nr is a constant of the caller too: once this is inlined gcc keeps acc
    in registers and turns the j loop into FMAs on full vectors (objdump: 16 vfmadd231ps on
    zmm per k step for float at nr = 32, no memory traffic for acc inside the loop)."""
    cdef floating ai
    cdef Py_ssize_t p, i, j
    for i in range(MR):             # p = 0 initialises acc (kc >= 1): zeroing it first made
        ai = a[i * rs]              # gcc call memset on every tile
        for j in range(nr):
            acc[i * nr + j] = ai * b[j]
    for p in range(1, kc):
        for i in range(MR):
            ai = a[i * rs + p * cs]
            for j in range(nr):
                acc[i * nr + j] += ai * b[p * ldb + j]


cdef inline void full_tile(Py_ssize_t kc, const floating* a, Py_ssize_t rs, Py_ssize_t cs,
                           const floating* b, Py_ssize_t ldb, floating* c, Py_ssize_t ldc,
                           bint accumulate, floating* acc, const Py_ssize_t nr) noexcept nogil:
    """c[:MR, :nr] (row stride ldc) (=|+=) a @ b: the hot path, full tiles only. Every value
    live across the k loop costs a register the loop needs, so edge cases live elsewhere
    (edge_tile: 5% slower loop, measured)."""
    cdef Py_ssize_t i, j
    tile_product(kc, a, rs, cs, b, ldb, acc, nr)
    if accumulate:
        for i in range(MR):
            for j in range(nr):
                c[i * ldc + j] += acc[i * nr + j]
    else:
        for i in range(MR):
            for j in range(nr):
                c[i * ldc + j] = acc[i * nr + j]


cdef inline void edge_tile(Py_ssize_t kc, const floating* a, Py_ssize_t rs, Py_ssize_t cs,
                           const floating* b, Py_ssize_t ldb, floating* c, Py_ssize_t rsc,
                           Py_ssize_t csc, Py_ssize_t mr, Py_ssize_t nr, bint accumulate,
                           floating* acc, const Py_ssize_t width) noexcept nogil:
    """c[:mr, :nr] (=|+=) a @ b for edge tiles and for out written transposed (csc != 1). For
    unit csc, the constant-length j loop + `if` compiles to masked vector stores (a loop to nr
    became one memcpy call per row)."""
    cdef Py_ssize_t i, j
    tile_product(kc, a, rs, cs, b, ldb, acc, width)
    if csc == 1 and accumulate:
        for i in range(mr):
            for j in range(width):
                if j < nr:
                    c[i * rsc + j] += acc[i * width + j]
    elif csc == 1:
        for i in range(mr):
            for j in range(width):
                if j < nr:
                    c[i * rsc + j] = acc[i * width + j]
    else:
        for j in range(nr):
            for i in range(mr):
                if accumulate:
                    c[i * rsc + j * csc] += acc[i * width + j]
                else:
                    c[i * rsc + j * csc] = acc[i * width + j]


# One out-of-line instance per (dtype, tile width), each with its accumulators and the width
# as constants. The kernels are only ever called through pointers. That keeps gcc from
# inlining them into a caller: inlined into `run`, gcc once kept the i loop rolled and the
# accumulators in memory (a 2.5x slowdown, depending only on unrelated code nearby). Out of
# line they compile the same way every time; one indirect call per tile is noise.
cdef void wide_kernel(Py_ssize_t kc, const floating* a, Py_ssize_t rs, Py_ssize_t cs,
                      const floating* b, Py_ssize_t ldb, floating* c, Py_ssize_t ldc,
                      bint accumulate) noexcept nogil:
    cdef floating acc[MR * NR_WIDE]
    full_tile(kc, a, rs, cs, b, ldb, c, ldc, accumulate, acc, NR_WIDE)


cdef void narrow_kernel(Py_ssize_t kc, const floating* a, Py_ssize_t rs, Py_ssize_t cs,
                        const floating* b, Py_ssize_t ldb, floating* c, Py_ssize_t ldc,
                        bint accumulate) noexcept nogil:
    cdef floating acc[MR * NR_NARROW]
    full_tile(kc, a, rs, cs, b, ldb, c, ldc, accumulate, acc, NR_NARROW)


cdef void wide_edge(Py_ssize_t kc, const floating* a, Py_ssize_t rs, Py_ssize_t cs,
                    const floating* b, Py_ssize_t ldb, floating* c, Py_ssize_t rsc,
                    Py_ssize_t csc, Py_ssize_t mr, Py_ssize_t nr, bint accumulate) noexcept nogil:
    cdef floating acc[MR * NR_WIDE]
    edge_tile(kc, a, rs, cs, b, ldb, c, rsc, csc, mr, nr, accumulate, acc, NR_WIDE)


cdef void narrow_edge(Py_ssize_t kc, const floating* a, Py_ssize_t rs, Py_ssize_t cs,
                      const floating* b, Py_ssize_t ldb, floating* c, Py_ssize_t rsc,
                      Py_ssize_t csc, Py_ssize_t mr, Py_ssize_t nr, bint accumulate) noexcept nogil:
    cdef floating acc[MR * NR_NARROW]
    edge_tile(kc, a, rs, cs, b, ldb, c, rsc, csc, mr, nr, accumulate, acc, NR_NARROW)


ctypedef void (*kernel_f32_t)(Py_ssize_t, const float*, Py_ssize_t, Py_ssize_t, const float*,
                              Py_ssize_t, float*, Py_ssize_t, bint) noexcept nogil
ctypedef void (*kernel_f64_t)(Py_ssize_t, const double*, Py_ssize_t, Py_ssize_t, const double*,
                              Py_ssize_t, double*, Py_ssize_t, bint) noexcept nogil
ctypedef void (*edge_f32_t)(Py_ssize_t, const float*, Py_ssize_t, Py_ssize_t, const float*,
                            Py_ssize_t, float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                            bint) noexcept nogil
ctypedef void (*edge_f64_t)(Py_ssize_t, const double*, Py_ssize_t, Py_ssize_t, const double*,
                            Py_ssize_t, double*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                            bint) noexcept nogil
# [0]: the wide tile, [1]: the narrow one
cdef kernel_f32_t kernel_f32[2]
cdef kernel_f64_t kernel_f64[2]
cdef edge_f32_t edge_f32[2]
cdef edge_f64_t edge_f64[2]
kernel_f32[0], kernel_f32[1] = wide_kernel[float], narrow_kernel[float]
kernel_f64[0], kernel_f64[1] = wide_kernel[double], narrow_kernel[double]
edge_f32[0], edge_f32[1] = wide_edge[float], narrow_edge[float]
edge_f64[0], edge_f64[1] = wide_edge[double], narrow_edge[double]


cdef void pack_a(floating* dst, const floating* a, Py_ssize_t rs, Py_ssize_t cs,
                 Py_ssize_t mc, Py_ssize_t kc) noexcept nogil:
    """Copy the mc x kc block at a (row stride rs, col stride cs) into panels of MR rows, each
    stored k-major (dst[p*MR + i]). Rows past mc are zero-filled: the kernel computes them
    (the edge kernel then drops them), so they must hold numbers, not leftovers."""
    cdef Py_ssize_t ib, ir, i, p, mr, first = 0
    cdef const floating* src
    if rs == 1 and mc // MR > 1:
        first = mc // MR
        pack_a_column_major(dst, a, cs, first, kc)
    for ib in range(first, cdiv(mc, MR)):
        ir = ib * MR
        mr = min(MR, mc - ir)
        src = a + ir * rs
        if mr == MR:
            for p in range(kc):
                for i in range(MR):
                    dst[ib * MR * kc + p * MR + i] = src[i * rs + p * cs]
        else:
            for p in range(kc):
                for i in range(mr):
                    dst[ib * MR * kc + p * MR + i] = src[i * rs + p * cs]
                for i in range(mr, MR):
                    dst[ib * MR * kc + p * MR + i] = 0


cdef void pack_a_column_major(floating* dst, const floating* a, Py_ssize_t cs,
                              Py_ssize_t panels, Py_ssize_t kc) noexcept nogil:
    """pack_a's full panels of a column-major A (a transposed operand: every weight gradient
    gᵀ @ x), a column of the block at a time: panel by panel, each cache line of a column is
    fetched once per panel that reads it, and the columns, m elements apart (often a power of
    two), evict each other in between (an LSTM's dgatesᵀ, m = 1024: packing took a quarter of
    the product's time)."""
    cdef Py_ssize_t ib, i, p
    cdef const floating* src
    for p in range(kc):
        src = a + p * cs
        for ib in range(panels):
            for i in range(MR):
                dst[ib * MR * kc + p * MR + i] = src[ib * MR + i]


# A transposing copy of 8 x 8 floats in registers (minitorch/_kernels/transpose8.h): packing a
# transposed B (x @ w.T of every Linear layer, a conv's rows @ w.T) took a quarter of such a
# product's time element by element.
cdef extern from "transpose8.h":
    void transpose8_32(const void* src, Py_ssize_t ss, void* dst, Py_ssize_t ds) nogil


cdef void pack_b_panel(floating* dst, const floating* b, Py_ssize_t rs, Py_ssize_t cs,
                       Py_ssize_t kc, Py_ssize_t nr, Py_ssize_t width) noexcept nogil:
    """Copy the kc x nr slab at b into one k-major panel dst[p*width + j], columns past nr
    zeroed. Walk whichever axis of b is contiguous so a transposed b is read sequentially too."""
    cdef Py_ssize_t p, j, p0, nfull, kfull
    cdef const floating* src
    if nr < width:
        memset(dst, 0, kc * width * sizeof(floating))
    if cs == 1:
        for p in range(kc):
            for j in range(nr):
                dst[p * width + j] = b[p * rs + j]
    elif floating is float and rs == 1:
        # 8 x 8 blocks transposed in registers; the ragged rows and columns element-wise
        nfull, kfull = nr // 8 * 8, kc // 8 * 8
        for p0 in range(0, kfull, 8):
            for j in range(0, nfull, 8):
                transpose8_32(b + j * cs + p0, cs, dst + p0 * width + j, width)
        for p in range(kc):
            for j in range(nfull if p < kfull else 0, nr):
                dst[p * width + j] = b[j * cs + p]
    else:   # a transposing copy, in slabs of 16 rows: reads and writes stay in few cache lines
        for p0 in range(0, kc, 16):
            for j in range(nr):
                src = b + j * cs
                for p in range(p0, min(p0 + 16, kc)):
                    dst[p * width + j] = src[p * rs]


cdef void macro_kernel(const floating* a, Py_ssize_t rs, Py_ssize_t cs, Py_ssize_t panel_step,
                       const floating* bp, Py_ssize_t ldb, Py_ssize_t b_step,
                       const floating* b_last, floating* c, Py_ssize_t rsc, Py_ssize_t csc,
                       Py_ssize_t mc, Py_ssize_t nc, Py_ssize_t kc, Py_ssize_t width,
                       bint accumulate) noexcept nogil:
    """c[:mc, :nc] (=|+=) A block (mc x kc; its panels of MR rows start panel_step apart and are
    read with strides rs, cs) @ the B block (kc x nc): full panels `width` wide start b_step
    apart at bp, rows ldb apart (packed: ldb = width; B read in place: its row stride); a
    last, partial panel is always packed, at b_last. B panel outer: it stays in cache while
    the A panels of the block stream past it."""
    cdef Py_ssize_t jp, ib, mr, nr, lb
    cdef int narrow = width == NR_NARROW
    cdef const floating* ap
    cdef const floating* bpanel
    cdef floating* ct
    for jp in range(cdiv(nc, width)):
        nr = min(width, nc - jp * width)
        bpanel, lb = (bp + jp * b_step, ldb) if nr == width else (b_last, width)
        for ib in range(cdiv(mc, MR)):
            mr = min(MR, mc - ib * MR)
            ap = a + ib * panel_step
            ct = c + ib * MR * rsc + jp * width * csc
            if mr == MR and nr == width and csc == 1:
                if floating is float:
                    kernel_f32[narrow](kc, ap, rs, cs, bpanel, lb, ct, rsc, accumulate)
                else:
                    kernel_f64[narrow](kc, ap, rs, cs, bpanel, lb, ct, rsc, accumulate)
            elif floating is float:
                edge_f32[narrow](kc, ap, rs, cs, bpanel, lb, ct, rsc, csc, mr, nr, accumulate)
            else:
                edge_f64[narrow](kc, ap, rs, cs, bpanel, lb, ct, rsc, csc, mr, nr, accumulate)


cdef void gemm_naive(const floating* a, Py_ssize_t ars, Py_ssize_t acs,
                     const floating* b, Py_ssize_t brs, Py_ssize_t bcs, floating* c,
                     Py_ssize_t m, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """Tiny products: row of c += a[i, p] * row p of b (vectorizes when b's rows are contiguous)."""
    cdef Py_ssize_t i, p, j
    cdef floating aip
    cdef floating* crow
    cdef const floating* brow
    for i in range(m):
        crow = c + i * n
        for j in range(n):
            crow[j] = 0
        for p in range(k):
            aip = a[i * ars + p * acs]
            brow = b + p * brs
            if bcs == 1:
                for j in range(n):
                    crow[j] += aip * brow[j]
            else:
                for j in range(n):
                    crow[j] += aip * brow[j * bcs]


cdef inline bint a_in_place(Py_ssize_t ars, Py_ssize_t acs, Py_ssize_t n,
                            size_t itemsize) noexcept nogil:
    """Read A in place instead of packing it? The kernel only broadcasts single elements of A,
    so a row-major A (8 row streams) runs as fast as a packed one (measured at 1024^2, 2048^2)
    and costs no copy; that also makes cutting out into column blocks free (see choose_split).
    A column-major A is read in place only when n is a few panels wide: then packing would cost
    about as much as using it, while for wide products its k stride (m elements, often a power
    of two) would make the panel's rows collide in cache. The same collisions rule out a k
    stride of 2 KiB or more (m >= 512 floats) at any n: an LSTM's input weight gradient
    dgatesᵀ @ x, (1024 x 2048)ᵀ-read @ (2048 x 128), took 1.5x as long in place as packed (1 and
    2 threads; 512 x 128 x 512 1.04-1.1x, while at m = 256, 1 KiB, in place is 7% faster)."""
    return acs == 1 or (ars == 1 and n <= DIRECT_A_MAX_N and
                        acs * <Py_ssize_t>itemsize < DIRECT_A_MAX_STRIDE)


cdef inline bint b_in_place(Py_ssize_t brs, Py_ssize_t bcs, Py_ssize_t m, Py_ssize_t n,
                            Py_ssize_t width) noexcept nogil:
    """Read B's full panels in place instead of packing them? Yes when B is row-major and
    either already one packed panel (a compact b exactly one panel wide: the output gradient
    in a conv layer's weight gradient) or out has few rows: packing a panel pays off over the
    A panels that meet it, only m / MR of them (16 rows: packing took 1.13-1.23x the time, 32:
    0.91-1.07x, 64: 0.85-0.88x, a conv weight gradient's g.T @ rows on a Cooper Lake Xeon,
    in-process A/B). For taller products the panel's rows, a row stride apart (often a power
    of two), would collide in L1 (512^3: 0.75x in place)."""
    return bcs == 1 and ((brs == width and n == width) or m <= B_IN_PLACE_MAX_M)


cdef void gemm_block(const floating* a, Py_ssize_t ars, Py_ssize_t acs,
                     const floating* b, Py_ssize_t brs, Py_ssize_t bcs, floating* c,
                     Py_ssize_t rsc, Py_ssize_t csc, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k,
                     Plan plan, floating* abuf, floating* bbuf, Epilogue ep, Py_ssize_t i0,
                     Py_ssize_t j0) noexcept nogil:
    """c[:m, :n] (strides rsc, csc) = a @ b on one thread, through the packed loop nest, then
    the epilogue (c[0, 0] being out[i0, j0]) on each block of c as its last k block is done,
    while the block is in L2: after the whole product, a (2048 x 1024) gi of an LSTM took the
    bias add from memory (1.3 ms of 4.8 on one thread).
    A is read in place when `a_in_place` says so; only its last partial panel is then packed,
    for the zero padding. B's full panels are read in place when `b_in_place` says so (only
    a partial last panel is packed), and all of them when B was packed beforehand
    (plan.b_panels: pack_panels' panels, rows brs = nr apart, zero-padded)."""
    cdef Py_ssize_t jb, pb, ib, jc, pc, ic, nc, kc, mc, jp, npanels, full, width = plan.nr
    cdef Py_ssize_t ldb = width, b_step, nfull
    cdef bint direct_a = a_in_place(ars, acs, n, sizeof(floating))
    cdef bint packed_b = plan.b_panels != 0
    cdef bint direct_b = packed_b or b_in_place(brs, bcs, m, n, width)
    cdef const floating* ablk
    cdef const floating* bblk = bbuf
    cdef const floating* b_last
    if direct_b:
        ldb = brs
    for jb in range(cdiv(n, plan.nc)):
        jc = jb * plan.nc
        nc = min(plan.nc, n - jc)
        npanels = cdiv(nc, width)
        nfull = nc // width
        for pb in range(cdiv(k, plan.kc)):
            pc = pb * plan.kc
            kc = min(plan.kc, k - pc)
            b_step = width * kc
            if packed_b:
                bblk = b + pc * brs + jc // width * plan.b_panels
                b_step = plan.b_panels
            elif direct_b:
                bblk = b + pc * brs + jc
                b_step = width
            else:
                for jp in range(nfull):
                    pack_b_panel(bbuf + jp * width * kc, b + pc * brs + (jc + jp * width) * bcs,
                                 brs, bcs, kc, width, width)
            b_last = bblk + nfull * b_step if packed_b else bbuf + nfull * width * kc
            if nfull < npanels and not packed_b:
                pack_b_panel(<floating*>b_last, b + pc * brs + (jc + nfull * width) * bcs,
                             brs, bcs, kc, nc - nfull * width, width)
            for ib in range(cdiv(m, plan.mc)):
                ic = ib * plan.mc
                mc = min(plan.mc, m - ic)
                ablk = a + ic * ars + pc * acs
                full = (mc // MR) * MR if direct_a else 0
                if full > 0:
                    macro_kernel(ablk, ars, acs, MR * ars, bblk, ldb, b_step, b_last,
                                 c + ic * rsc + jc * csc, rsc, csc, full, nc, kc, width, pc > 0)
                if full < mc:
                    pack_a(abuf, ablk + full * ars, ars, acs, mc - full, kc)
                    macro_kernel(abuf, 1, MR, MR * kc, bblk, ldb, b_step, b_last,
                                 c + (ic + full) * rsc + jc * csc, rsc, csc, mc - full, nc, kc,
                                 width, pc > 0)
                if pc + kc == k and (ep.bias != NULL or ep.relu):
                    epilogue(c + ic * rsc + jc * csc, rsc, csc, mc, nc, ep, i0 + ic, j0 + jc)


cdef struct Split:
    Py_ssize_t tm, tn         # out is cut into tm x tn rectangles (whole MR x nr tiles), one
                              # task each; panel counts of neighbours differ by at most one


cdef Split choose_split(Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, Py_ssize_t nr, int nthreads,
                        bint direct_a) noexcept nogil:
    """How to cut one product into tasks. Every task packs the B columns (and, unless A is read
    in place, the A rows) of its own rectangle, so tasks share nothing and never wait on each
    other; the price is packing some data more than once: a row cut re-packs B, a column cut
    re-packs a packed A.
    With A read in place, column cuts are free: several tasks per thread. Otherwise one
    rectangle per thread, the grid whose slowest thread has the least (multiply-adds / 16 per
    cycle + packed elements) to do."""
    cdef Split best
    cdef Py_ssize_t mp = cdiv(m, MR), np_ = cdiv(n, nr), tm, tn, rows, cols
    cdef double cost, best_cost = -1
    best.tm = best.tn = 1
    if nthreads <= 1:
        return best
    if direct_a:
        tn = min(TASKS_PER_THREAD * nthreads, np_ // MIN_TASK_PANELS)
        if tn >= nthreads:
            best.tn = tn
            return best
    for tm in range(1, nthreads + 1):
        if nthreads % tm:
            continue
        tn = nthreads // tm
        rows = min(cdiv(mp, tm) * MR, m)
        cols = min(cdiv(np_, tn) * nr, n)
        cost = <double>rows * cols * k / 16.0 + <double>(rows + cols) * k
        if best_cost < 0 or cost < best_cost:
            best.tm, best.tn, best_cost = tm, tn, cost
    return best


cdef struct Batch:
    # Batch item bi of an operand starts at (bi // inner)·outer + (bi % inner)·its batch stride:
    # two batch axes, so attention's (batch, head) views of one (B, T, heads·D) array are read
    # in place (their two strides are not multiples of each other). One axis: inner = batch.
    Py_ssize_t inner, a_outer, b_outer


cdef inline Py_ssize_t item(Py_ssize_t bi, Py_ssize_t inner, Py_ssize_t outer,
                            Py_ssize_t stride) noexcept nogil:
    return bi // inner * outer + bi % inner * stride


cdef void run_task(Py_ssize_t t, Split split, Plan plan, Batch bt,
                   const floating* a, Py_ssize_t as0, Py_ssize_t as1, Py_ssize_t as2,
                   const floating* b, Py_ssize_t bs0, Py_ssize_t bs1, Py_ssize_t bs2,
                   floating* c, Py_ssize_t rsc, Py_ssize_t csc, Py_ssize_t m, Py_ssize_t n,
                   Py_ssize_t k, floating* abuf, floating* bbuf, Epilogue ep) noexcept nogil:
    """Task t: batch item t // (tm*tn), and rectangle t % (tm*tn) of its out, epilogue
    included."""
    cdef Py_ssize_t per_item = split.tm * split.tn, bi = t // per_item, r = t % per_item
    cdef Py_ssize_t nr = plan.nr, mp = cdiv(m, MR), np_ = cdiv(n, nr)
    cdef Py_ssize_t ti = r // split.tn, tj = r % split.tn
    cdef Py_ssize_t i0 = ti * mp // split.tm * MR, i1 = min(m, (ti + 1) * mp // split.tm * MR)
    cdef Py_ssize_t j0 = tj * np_ // split.tn * nr, j1 = min(n, (tj + 1) * np_ // split.tn * nr)
    cdef Py_ssize_t b_j0 = j0 // nr * plan.b_panels if plan.b_panels else j0 * bs2
    if i0 < i1 and j0 < j1:
        gemm_block(a + item(bi, bt.inner, bt.a_outer, as0) + i0 * as1, as1, as2,
                   b + item(bi, bt.inner, bt.b_outer, bs0) + b_j0, bs1, bs2,
                   c + bi * m * n + i0 * rsc + j0 * csc, rsc, csc, i1 - i0, j1 - j0, k, plan,
                   abuf, bbuf, ep, i0, j0)


cdef int run_k_slices(const floating* a, Py_ssize_t as1, Py_ssize_t as2, const floating* b,
                      Py_ssize_t bs1, Py_ssize_t bs2, floating* c, Py_ssize_t rsc,
                      Py_ssize_t csc, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, Py_ssize_t nr,
                      Py_ssize_t b_panels, int nthreads, Epilogue ep) noexcept nogil:
    """out = the sum over threads t of a[:, K_t] @ b[K_t, :], K_t the t-th slice of k. For
    products whose out is a tile or two but whose k is long (a conv layer's weight gradient:
    9 x 16 from k = 100352), where cutting out would leave threads idle or re-reading all of
    b. Each thread writes its partial product to scratch; the partials are then summed."""
    cdef Plan plan = make_plan(m, n, cdiv(k, nthreads), nr, sizeof(floating))
    cdef Py_ssize_t t, k0, k1, i, j
    cdef floating total
    cdef Scratch scratch
    cdef floating* partial = <floating*>malloc(nthreads * m * n * sizeof(floating))
    cdef Epilogue none
    none.bias, none.relu = NULL, False      # applied to the sum of the partial products
    plan.b_panels = b_panels
    if partial == NULL or scratch_alloc(&scratch, plan, nthreads, sizeof(floating)) < 0:
        free(partial)
        return -1
    for t in prange(nthreads, schedule='static', num_threads=nthreads):
        k0 = t * k // nthreads
        k1 = (t + 1) * k // nthreads
        gemm_block(a + k0 * as2, as1, as2, b + k0 * bs1, bs1, bs2, partial + t * m * n, n, 1,
                   m, n, k1 - k0, plan, aligned(<floating*>scratch.a + t * scratch.a_size),
                   aligned(<floating*>scratch.b + t * scratch.b_size), none, 0, 0)
    for i in range(m):
        for j in range(n):
            total = 0
            for t in range(nthreads):
                total = total + partial[t * m * n + i * n + j]
            c[i * rsc + j * csc] = total
    if ep.bias != NULL or ep.relu:
        epilogue(c, rsc, csc, m, n, ep, 0, 0)
    scratch_free(&scratch)
    free(partial)
    return 0


cdef int run(const floating* a, Py_ssize_t as0, Py_ssize_t as1, Py_ssize_t as2,
             const floating* b, Py_ssize_t bs0, Py_ssize_t bs1, Py_ssize_t bs2, floating* c,
             Py_ssize_t batch, Batch bt, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k,
             Py_ssize_t b_panels, Epilogue ep) noexcept nogil:
    """Pick the orientation and the tasks (whole batch items, or rectangles of each product),
    then run them on one thread or hand them out to all; returns -1 when out of memory.
    b_panels: b is pack_panels' output, panels b_panels apart (0: b is read through its
    strides); it is then the right operand as packed, whatever the sizes."""
    cdef Py_ssize_t work = m * n * k, bi, t, ntasks, rsc = n, csc = 1, nr
    cdef int nthreads = omp_get_max_threads()
    cdef bint by_batch
    cdef Split split
    cdef Plan plan
    cdef Scratch scratch
    if batch * work < PARALLEL_MIN_WORK:
        nthreads = 1
    # tiny products, maybe many of them, or k = 0: not worth packing
    if work < SMALL_WORK and (b_panels == 0 or k == 0):
        if nthreads == 1:
            for bi in range(batch):
                gemm_naive(a + item(bi, bt.inner, bt.a_outer, as0), as1, as2,
                           b + item(bi, bt.inner, bt.b_outer, bs0), bs1, bs2, c + bi * m * n,
                           m, n, k)
                if ep.bias != NULL or ep.relu:
                    epilogue(c + bi * m * n, n, 1, m, n, ep, 0, 0)
        else:
            for bi in prange(batch, schedule='static', num_threads=nthreads):
                gemm_naive(a + item(bi, bt.inner, bt.a_outer, as0), as1, as2,
                           b + item(bi, bt.inner, bt.b_outer, bs0), bs1, bs2, c + bi * m * n,
                           m, n, k)
                if ep.bias != NULL or ep.relu:
                    epilogue(c + bi * m * n, n, 1, m, n, ep, 0, 0)
        return 0
    # The register tile pads m up to MR and n up to its width. When n is the narrow side,
    # computing out.T = b.T @ a.T (out written with strides (1, n)) pads far less: for n = 1,
    # 8x instead of 16x the useful work. Only done when a is stored column-major (a.T of a
    # compact array), so that a.T, now the packed-B operand, is copied row by row; a
    # transposing copy of a row-major a costs about what the swap saves (measured).
    if n < NR_WIDE and as1 == 1 and b_panels == 0 and round_up(n, MR) * round_up(
            m, panel_width(m)) < round_up(m, MR) * round_up(n, panel_width(n)):
        a, as0, as1, as2, b, bs0, bs1, bs2 = b, bs0, bs2, bs1, a, as0, as2, as1
        bt.a_outer, bt.b_outer = bt.b_outer, bt.a_outer
        m, n, rsc, csc = n, m, 1, n
        ep.rs, ep.cs = ep.cs, ep.rs
    nr = tile_width(n, sizeof(floating))
    if batch == 1 and nthreads > 1 and cdiv(m, MR) * cdiv(n, nr) < 2 * nthreads and \
            k >= nthreads * K_SLICE_MIN:
        return run_k_slices(a, as1, as2, b, bs1, bs2, c, rsc, csc, m, n, k, nr, b_panels,
                            nthreads, ep)
    # Whole batch items are tasks when there are enough to share evenly; otherwise each
    # product is cut into rectangles.
    by_batch = batch >= nthreads and (
        batch % nthreads == 0 or batch >= 4 * nthreads or work < 4 * PARALLEL_MIN_WORK)
    split = choose_split(m, n, k, nr, 1 if by_batch else nthreads,
                         a_in_place(as1, as2, n, sizeof(floating)))
    ntasks = batch * split.tm * split.tn
    plan = make_plan(min(cdiv(cdiv(m, MR), split.tm) * MR, m),
                     min(cdiv(cdiv(n, nr), split.tn) * nr, n), k, nr, sizeof(floating))
    plan.b_panels = b_panels
    if b_panels and m <= MC:
        # one A block: k blocks whose B panel fits L1 beside A's, each read from L1 by every A
        # panel, cost only the re-reading of a small out (an LSTM's backward step, (32 x 1024)
        # @ (1024 x 256): 103 -> 98.5 us on one thread; 64 and 96 rows: -5%)
        plan.kc = cdiv(k, cdiv(k * nr * sizeof(floating), L1_PANEL_BYTES))
    if scratch_alloc(&scratch, plan, nthreads, sizeof(floating)) < 0:
        return -1
    if nthreads == 1:
        for t in range(ntasks):
            run_task(t, split, plan, bt, a, as0, as1, as2, b, bs0, bs1, bs2, c, rsc, csc, m, n, k,
                     aligned(<floating*>scratch.a), aligned(<floating*>scratch.b), ep)
    else:
        for t in prange(ntasks, schedule='dynamic', num_threads=nthreads):
            run_task(t, split, plan, bt, a, as0, as1, as2, b, bs0, bs1, bs2, c, rsc, csc, m, n, k,
                     aligned(<floating*>scratch.a + threadid() * scratch.a_size),
                     aligned(<floating*>scratch.b + threadid() * scratch.b_size), ep)
    scratch_free(&scratch)
    return 0


cdef int check_view(cnp.ndarray buf, str name, Py_ssize_t offset, Py_ssize_t d0, Py_ssize_t s0,
                    Py_ssize_t d1, Py_ssize_t s1, Py_ssize_t d2, Py_ssize_t s2, Py_ssize_t d3,
                    Py_ssize_t s3) except -1:
    """Raise ValueError unless every element of the (d0, d1, d2, d3) strided view lies inside
    buf: a few integer ops, so a wrong stride is an error instead of a crash. Negative strides
    work."""
    cdef Py_ssize_t lo = offset, hi = offset
    if d0 == 0 or d1 == 0 or d2 == 0 or d3 == 0:
        return 0
    lo += min(0, (d0 - 1) * s0) + min(0, (d1 - 1) * s1) + min(0, (d2 - 1) * s2) + \
        min(0, (d3 - 1) * s3)
    hi += max(0, (d0 - 1) * s0) + max(0, (d1 - 1) * s1) + max(0, (d2 - 1) * s2) + \
        max(0, (d3 - 1) * s3)
    if lo < 0 or hi >= cnp.PyArray_SIZE(buf):
        shape, strides = (d0, d1, d2, d3), (s0, s1, s2, s3)
        if d0 == 1:        # one batch axis: report the 3-D view the caller passed
            shape, strides = shape[1:], strides[1:]
        raise ValueError(f"matmul: {name} view (shape {shape}, strides {strides}, "
                         f"offset {offset}) reaches outside its buffer of "
                         f"{cnp.PyArray_SIZE(buf)} elements")
    return 0


cdef int check_buffer(cnp.ndarray buf, str name) except -1:
    if not cnp.PyArray_IS_C_CONTIGUOUS(buf):
        raise ValueError(f"matmul: {name} must be a C-contiguous buffer")
    return 0


def matmul(cnp.ndarray a not None, cnp.ndarray b not None, cnp.ndarray out not None,
           batch, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k,
           a_strides=None, Py_ssize_t a_offset=0, b_strides=None, Py_ssize_t b_offset=0,
           cnp.ndarray bias=None, Py_ssize_t bias_offset=0, bias_strides=(0, 1),
           bint relu=False):
    """out (compact batch x m x n, overwritten) = a (batch x m x k) @ b (batch x k x n), then
    the epilogue: out[bi, i, j] += bias[bias_offset + i*bias_strides[0] + j*bias_strides[1]]
    (when bias is given: (0, 1) is a Linear layer's bias, (1, 0) a conv's per-channel one),
    then relu(out) when relu.

    a is read as a[a_offset + bi*a_strides[0] + i*a_strides[1] + p*a_strides[2]] (element
    strides, None = compact); b likewise. Stride 0 broadcasts, transposes are free. All the
    buffers are 1-D C-contiguous float32 or float64 of one dtype.

    `batch` is the number of products, or a pair (outer, inner) of batch axes: then the
    strides are 4-tuples (outer, inner, row, col) and out is compact (outer·inner, m, n)."""
    product(a, b, out, batch, m, n, k, a_strides, a_offset, b_strides, b_offset, bias,
            bias_offset, bias_strides, relu, False)


def panel_matmul(cnp.ndarray a not None, cnp.ndarray b not None, cnp.ndarray out not None,
                 batch, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, a_strides=None,
                 Py_ssize_t a_offset=0, cnp.ndarray bias=None, Py_ssize_t bias_offset=0,
                 bias_strides=(0, 1), bint relu=False):
    """matmul with b = `pack_panels(b', k, n)` of a k x n b', which every batch item uses (CPU
    only, not a KernelBackend method)."""
    product(a, b, out, batch, m, n, k, a_strides, a_offset, None, 0, bias, bias_offset,
            bias_strides, relu, True)


cdef product(cnp.ndarray a, cnp.ndarray b, cnp.ndarray out, batch, Py_ssize_t m, Py_ssize_t n,
             Py_ssize_t k, a_strides, Py_ssize_t a_offset, b_strides, Py_ssize_t b_offset,
             cnp.ndarray bias, Py_ssize_t bias_offset, bias_strides, bint relu,
             bint b_panels):
    """matmul's and panel_matmul's checks and call (b_panels: b is pack_panels' output)."""
    cdef int dtype = cnp.PyArray_TYPE(a)
    cdef Py_ssize_t outer, count, as0 = m * k, as1 = k, as2 = 1, bs0 = k * n, bs1 = n, bs2 = 1
    cdef Py_ssize_t width, panel = 0
    cdef int status
    cdef Epilogue ep
    cdef Batch bt
    bt.a_outer = bt.b_outer = 0
    if isinstance(batch, tuple):
        outer, bt.inner = batch
        count = outer * bt.inner
        bt.a_outer, bt.b_outer = bt.inner * m * k, bt.inner * k * n     # compact by default
        if a_strides is not None:
            bt.a_outer, as0, as1, as2 = a_strides
        if b_strides is not None:
            bt.b_outer, bs0, bs1, bs2 = b_strides
        a_strides = b_strides = None
    else:
        outer, count = 1, batch
        bt.inner = count
    if dtype != cnp.NPY_FLOAT32 and dtype != cnp.NPY_FLOAT64:
        raise TypeError(f"matmul: unsupported dtype {a.dtype} (expected float32 or float64)")
    if cnp.PyArray_TYPE(b) != dtype or cnp.PyArray_TYPE(out) != dtype or (
            bias is not None and cnp.PyArray_TYPE(bias) != dtype):
        raise TypeError(f"matmul: dtypes differ: a {a.dtype}, b {b.dtype}, out {out.dtype}"
                        + ("" if bias is None else f", bias {bias.dtype}"))
    if outer < 0 or bt.inner < 0 or m < 0 or n < 0 or k < 0:
        raise ValueError(f"matmul: negative size (batch={batch}, m={m}, n={n}, k={k})")
    check_buffer(a, "a")
    check_buffer(b, "b")
    check_buffer(out, "out")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("matmul: out is read-only")
    if cnp.PyArray_SIZE(out) < count * m * n:
        raise ValueError(f"matmul: out has {cnp.PyArray_SIZE(out)} elements, "
                         f"needs {count * m * n} (batch={batch}, m={m}, n={n})")
    if a_strides is not None:
        as0, as1, as2 = a_strides
    if b_strides is not None:
        bs0, bs1, bs2 = b_strides
    check_view(a, "a", a_offset, outer, bt.a_outer, bt.inner, as0, m, as1, k, as2)
    if b_panels:
        width = tile_width(n, cnp.PyArray_ITEMSIZE(b))
        panel = k * width
        if cnp.PyArray_SIZE(b) < cdiv(n, width) * panel:
            raise ValueError(f"matmul: b has {cnp.PyArray_SIZE(b)} elements, too few for the "
                             f"panels of a ({k}, {n}) operand")
        b_offset, bt.b_outer, bs0, bs1, bs2 = 0, 0, 0, width, 1
    else:
        check_view(b, "b", b_offset, outer, bt.b_outer, bt.inner, bs0, k, bs1, n, bs2)
    ep.bias = NULL
    ep.rs, ep.cs = bias_strides
    ep.relu = relu
    if bias is not None:
        check_buffer(bias, "bias")
        check_view(bias, "bias", bias_offset, 1, 0, 1, 0, m, ep.rs, n, ep.cs)
        ep.bias = (<char*>cnp.PyArray_DATA(bias)) + bias_offset * cnp.PyArray_ITEMSIZE(bias)
    if count == 0 or m == 0 or n == 0:
        return
    with nogil:
        if dtype == cnp.NPY_FLOAT32:
            status = run((<const float*>cnp.PyArray_DATA(a)) + a_offset, as0, as1, as2,
                         (<const float*>cnp.PyArray_DATA(b)) + b_offset, bs0, bs1, bs2,
                         <float*>cnp.PyArray_DATA(out), count, bt, m, n, k, panel, ep)
        else:
            status = run((<const double*>cnp.PyArray_DATA(a)) + a_offset, as0, as1, as2,
                         (<const double*>cnp.PyArray_DATA(b)) + b_offset, bs0, bs1, bs2,
                         <double*>cnp.PyArray_DATA(out), count, bt, m, n, k, panel, ep)
    if status < 0:
        raise MemoryError("matmul: cannot allocate packing buffers")


def pack_panels(cnp.ndarray b not None, Py_ssize_t k, Py_ssize_t n, b_strides=None,
                Py_ssize_t b_offset=0):
    """The k x n matrix b[b_offset + p*b_strides[0] + j*b_strides[1]] (None: compact) packed
    as the GEMM packs its right operand, for `panel_matmul`: an operand that
    many products share is packed once instead of by each (an RNN's W_hh, every time step;
    read in place, its rows a power of two apart collide in L1: (32 x 256) @ (256 x 1024)
    took 1.3x as long). Panels of the tile's width side by side, each k-major and
    zero-padded."""
    cdef int dtype = cnp.PyArray_TYPE(b)
    cdef Py_ssize_t rs = n, cs = 1, width, jp
    if dtype != cnp.NPY_FLOAT32 and dtype != cnp.NPY_FLOAT64:
        raise TypeError(f"pack_panels: unsupported dtype {b.dtype} (expected float32 or "
                        "float64)")
    if k < 0 or n < 0:
        raise ValueError(f"pack_panels: negative size (k={k}, n={n})")
    check_buffer(b, "b")
    if b_strides is not None:
        rs, cs = b_strides
    check_view(b, "b", b_offset, 1, 0, 1, 0, k, rs, n, cs)
    width = tile_width(n, cnp.PyArray_ITEMSIZE(b))
    cdef cnp.ndarray packed = cnp.PyArray_EMPTY(1, [cdiv(n, width) * width * k], dtype, 0)
    with nogil:
        for jp in range(cdiv(n, width) if k else 0):
            if dtype == cnp.NPY_FLOAT32:
                pack_b_panel((<float*>cnp.PyArray_DATA(packed)) + jp * width * k,
                             (<const float*>cnp.PyArray_DATA(b)) + b_offset + jp * width * cs,
                             rs, cs, k, min(width, n - jp * width), width)
            else:
                pack_b_panel((<double*>cnp.PyArray_DATA(packed)) + jp * width * k,
                             (<const double*>cnp.PyArray_DATA(b)) + b_offset + jp * width * cs,
                             rs, cs, k, min(width, n - jp * width), width)
    return packed


# ---- conv_matmul: the convolution as a GEMM whose right operand is the image itself ------------
# out[bi, i, position j] = Σ_p a[bi, i, p] · b[bi's image + koff(p) + j]: row p of the right
# operand is the padded image (C, Hp, Wp) read from offset koff(p) = c·s0 + y·s1 + x·s2 for
# p = (c, y, x) over a window, so column j = oh·Wp + ow is output position (oh, ow) of a stride-1
# convolution ("wide" columns ow ≥ OW straddle two image rows and are dropped when storing).
# Nothing is copied or packed on that side: the micro-kernel loads 32 consecutive floats of
# the image per window element (the GEMM kernel's packed panel, read in place), so no im2col
# rows or shifted copies are built. The left operand (weights) is packed per task.
cdef enum:
    CONV_KC = 256       # window elements per k block: a 32-column tile of them is 32 KiB (float)
    CONV_TASK_PANELS = 4


cdef inline void conv_tile(Py_ssize_t kc, const floating* a, const Py_ssize_t* koff,
                           const floating* b, floating* acc) noexcept nogil:
    """acc (MR x NR_WIDE) = a (packed MR-row panel, kc deep) @ rows koff[p] of b."""
    cdef floating ai
    cdef const floating* brow = b + koff[0]
    cdef Py_ssize_t p, i, j
    for i in range(MR):
        ai = a[i]
        for j in range(NR_WIDE):
            acc[i * NR_WIDE + j] = ai * brow[j]
    for p in range(1, kc):
        brow = b + koff[p]
        for i in range(MR):
            ai = a[p * MR + i]
            for j in range(NR_WIDE):
                acc[i * NR_WIDE + j] += ai * brow[j]


cdef void conv_kernel(Py_ssize_t kc, const floating* a, const Py_ssize_t* koff,
                      const floating* b, floating* c, Py_ssize_t ldc, const Py_ssize_t* runs,
                      Py_ssize_t nruns, Py_ssize_t mr, bint accumulate) noexcept nogil:
    """Rows i < mr of the tile (=|+=) into c, run by run: run r moves tile columns
    runs[3r] .. + runs[3r + 2] to c's columns from runs[3r + 1] (see conv_task). Out of line for
    the reason wide_kernel is."""
    cdef floating acc[MR * NR_WIDE]
    cdef Py_ssize_t i, r, t, j0, d0, length
    cdef floating* crow
    cdef const floating* arow
    conv_tile(kc, a, koff, b, acc)
    for i in range(mr):
        for r in range(nruns):
            j0, d0, length = runs[3 * r], runs[3 * r + 1], runs[3 * r + 2]
            crow = c + i * ldc + d0
            arow = acc + i * NR_WIDE + j0
            if accumulate:
                for t in range(length):
                    crow[t] += arow[t]
            else:
                for t in range(length):
                    crow[t] = arow[t]


cdef void conv_task(Py_ssize_t t, Py_ssize_t per_item, Py_ssize_t panels,
                    const floating* a, Py_ssize_t as0, Py_ssize_t as1, Py_ssize_t as2,
                    const floating* b, Py_ssize_t bs0, const Py_ssize_t* koff,
                    floating* c, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, Py_ssize_t wide,
                    Py_ssize_t valid, Py_ssize_t n_out, floating* apack, floating* edge,
                    Py_ssize_t* ptab, Py_ssize_t* packed) noexcept nogil:
    """Task t: batch item t // per_item, its panels [p0, p1) of 32 columns, every row;
    *packed is the batch item whose left operand apack holds (-1: none yet)."""
    cdef Py_ssize_t bi = t // per_item, r = t % per_item
    cdef Py_ssize_t jp0 = r * panels // per_item, jp1 = (r + 1) * panels // per_item
    cdef Py_ssize_t mp = cdiv(m, MR), ib, i, p, j, col, pb, pc, kc, jp, j0
    # the panel's valid columns as runs (tile column, out column, length): the valid columns of
    # one image row land side by side in out, so a 32-column panel is at most a few runs, each
    # stored as one vector copy instead of 32 scalar stores behind a test each
    cdef Py_ssize_t runs[3 * NR_WIDE]
    cdef Py_ssize_t nruns, d
    cdef const floating* ai = a + bi * as0
    cdef const floating* bimg = b + bi * bs0
    cdef const floating* base
    cdef const Py_ssize_t* tab
    cdef floating* cimg = c + bi * m * n_out
    # the whole left operand in MR-row panels, k-major, zero rows past m (once per thread
    # when every batch item shares it)
    if packed[0] != (0 if as0 == 0 else bi):
        packed[0] = 0 if as0 == 0 else bi
        for ib in range(mp):
            for p in range(k):
                for i in range(MR):
                    apack[ib * MR * k + p * MR + i] = (ai[(ib * MR + i) * as1 + p * as2]
                                                       if ib * MR + i < m else 0)
    for jp in range(jp0, jp1):
        j0 = jp * NR_WIDE
        nruns = 0
        for j in range(NR_WIDE):
            col = j0 + j
            if col >= n or col % wide >= valid:
                continue
            d = (col // wide) * valid + col % wide
            if nruns and runs[3 * nruns - 3] + runs[3 * nruns - 1] == j and \
                    runs[3 * nruns - 2] + runs[3 * nruns - 1] == d:
                runs[3 * nruns - 1] += 1
            else:
                runs[3 * nruns], runs[3 * nruns + 1], runs[3 * nruns + 2] = j, d, 1
                nruns += 1
        for pb in range(cdiv(k, CONV_KC)):
            pc = pb * CONV_KC
            kc = min(CONV_KC, k - pc)
            if j0 + NR_WIDE <= n:
                base = bimg + j0
                tab = koff + pc
            else:       # the last panel: a zero-padded copy, so no read passes the image
                memset(edge, 0, kc * NR_WIDE * sizeof(floating))
                for p in range(kc):
                    for j in range(n - j0):
                        edge[p * NR_WIDE + j] = bimg[koff[pc + p] + j0 + j]
                base = edge
                tab = ptab
            for ib in range(mp):
                conv_kernel(kc, apack + ib * MR * k + pc * MR, tab, base,
                            cimg + ib * MR * n_out, n_out, runs, nruns, min(MR, m - ib * MR),
                            pc > 0)


cdef int conv_run(const floating* a, Py_ssize_t as0, Py_ssize_t as1, Py_ssize_t as2,
                  const floating* b, Py_ssize_t bs0, const Py_ssize_t* koff, floating* c,
                  Py_ssize_t batch, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, Py_ssize_t wide,
                  Py_ssize_t valid, Py_ssize_t n_out) noexcept nogil:
    """Tasks: per batch item, runs of CONV_TASK_PANELS column panels; -1 when out of memory."""
    cdef int nthreads = omp_get_max_threads()
    cdef Py_ssize_t panels = cdiv(n, NR_WIDE), per_item, t, ntasks, p, tid
    cdef Py_ssize_t a_size = round_up(m, MR) * k + 16, e_size = CONV_KC * NR_WIDE + 16
    cdef floating* apack
    cdef floating* edge
    cdef Py_ssize_t* ptab
    cdef Py_ssize_t* packed         # per thread, 8 apart (no false sharing): see conv_task
    if batch * m * n * k < PARALLEL_MIN_WORK:
        nthreads = 1
    per_item = max(1, min(panels, cdiv(panels, CONV_TASK_PANELS)))
    if nthreads > 1 and batch * per_item < 2 * nthreads:
        per_item = min(panels, cdiv(2 * nthreads, batch))
    ntasks = batch * per_item
    apack = <floating*>malloc(nthreads * (a_size + e_size) * sizeof(floating))
    ptab = <Py_ssize_t*>malloc((CONV_KC + 8 * nthreads) * sizeof(Py_ssize_t))
    if apack == NULL or ptab == NULL:
        free(apack)
        free(ptab)
        return -1
    edge = apack + nthreads * a_size
    packed = ptab + CONV_KC
    for p in range(8 * nthreads):
        packed[p] = -1
    for p in range(CONV_KC):
        ptab[p] = p * NR_WIDE
    if nthreads == 1:
        for t in range(ntasks):
            conv_task(t, per_item, panels, a, as0, as1, as2, b, bs0, koff, c, m, n, k, wide,
                      valid, n_out, aligned(apack), aligned(edge), ptab, packed)
    else:
        for t in prange(ntasks, schedule='dynamic', num_threads=nthreads):
            tid = threadid()
            conv_task(t, per_item, panels, a, as0, as1, as2, b, bs0, koff, c, m, n, k, wide,
                      valid, n_out, aligned(apack + tid * a_size),
                      aligned(edge + tid * e_size), ptab, packed + 8 * tid)
    free(apack)
    free(ptab)
    return 0


cdef int check_conv_buffers(str op, str a_name, cnp.ndarray a, str b_name, cnp.ndarray b,
                            cnp.ndarray out) except -1:
    """The conv GEMMs' two operands and out: one float dtype (returned), C-contiguous, out
    writable."""
    cdef int dtype = cnp.PyArray_TYPE(a)
    if dtype != cnp.NPY_FLOAT32 and dtype != cnp.NPY_FLOAT64:
        raise TypeError(f"{op}: unsupported dtype {a.dtype} (expected float32 or float64)")
    if cnp.PyArray_TYPE(b) != dtype or cnp.PyArray_TYPE(out) != dtype:
        raise TypeError(f"{op}: dtypes differ: {a_name} {a.dtype}, {b_name} {b.dtype}, "
                        f"out {out.dtype}")
    for buf, name in ((a, a_name), (b, b_name), (out, "out")):
        if not cnp.PyArray_IS_C_CONTIGUOUS(buf):
            raise ValueError(f"{op}: {name} must be a C-contiguous buffer")
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError(f"{op}: out is read-only")
    return dtype


cdef int check_image_windows(str op, str name, cnp.ndarray image, Py_ssize_t offset,
                             Py_ssize_t batch, Py_ssize_t image_stride, Py_ssize_t k0,
                             Py_ssize_t k1, Py_ssize_t k2, Py_ssize_t s0, Py_ssize_t s1,
                             Py_ssize_t s2, Py_ssize_t n) except -1:
    """Every image row the conv GEMMs read, koff(p) + j (j < n) of every batch item, lies in
    the image buffer."""
    cdef Py_ssize_t lo = offset + min(0, (batch - 1) * image_stride) + min(0, (k0 - 1) * s0) + \
        min(0, (k1 - 1) * s1) + min(0, (k2 - 1) * s2)
    cdef Py_ssize_t hi = offset + max(0, (batch - 1) * image_stride) + \
        max(0, (k0 - 1) * s0) + max(0, (k1 - 1) * s1) + max(0, (k2 - 1) * s2) + n - 1
    if lo < 0 or hi >= cnp.PyArray_SIZE(image):
        raise ValueError(f"{op}: {name}'s windows reach outside its buffer of "
                         f"{cnp.PyArray_SIZE(image)} elements")
    return 0



def conv_matmul(cnp.ndarray a not None, cnp.ndarray b not None, cnp.ndarray out not None,
                Py_ssize_t batch, Py_ssize_t m, Py_ssize_t k, a_strides, Py_ssize_t a_offset,
                Py_ssize_t b_image_stride, Py_ssize_t b_offset, k_sizes, k_strides,
                Py_ssize_t rows, Py_ssize_t wide, Py_ssize_t valid):
    """out (compact batch x m x rows·valid, overwritten) = a (batch x m x k, element strides
    a_strides) @ the image rows of b: out[bi, i, r·valid + q] = Σ_p a[bi, i, p] ·
    b[b_offset + bi·b_image_stride + koff(p) + r·wide + q] for q < valid, where p runs over
    k_sizes (3 sizes, product k) and koff(p) = p0·k_strides[0] + p1·k_strides[1] +
    p2·k_strides[2]. A stride-1 convolution of a padded image (C, Hp, Wp): k_sizes (C, kh, kw),
    k_strides (Hp·Wp, dh·Wp, dw), rows OH, wide Wp, valid OW."""
    cdef int dtype
    cdef Py_ssize_t as0, as1, as2, k0, k1, k2, s0, s1, s2, n, p, status = 0
    cdef Py_ssize_t* koff
    dtype = check_conv_buffers("conv_matmul", "a", a, "b", b, out)
    as0, as1, as2 = a_strides
    k0, k1, k2 = k_sizes
    s0, s1, s2 = k_strides
    if min(batch, m, k, k0, k1, k2, rows, valid) < 0 or valid > wide or k0 * k1 * k2 != k:
        raise ValueError(f"conv_matmul: bad sizes (batch={batch}, m={m}, k={k}, "
                         f"k_sizes={tuple(k_sizes)}, rows={rows}, wide={wide}, valid={valid})")
    if cnp.PyArray_SIZE(out) < batch * m * rows * valid:
        raise ValueError(f"conv_matmul: out has {cnp.PyArray_SIZE(out)} elements, needs "
                         f"{batch * m * rows * valid}")
    if batch == 0 or m == 0 or rows == 0 or valid == 0:
        return
    if k == 0:
        memset(cnp.PyArray_DATA(out), 0, batch * m * rows * valid * cnp.PyArray_ITEMSIZE(out))
        return
    n = (rows - 1) * wide + valid
    check_view(a, "a", a_offset, 1, 0, batch, as0, m, as1, k, as2)
    check_image_windows("conv_matmul", "b", b, b_offset, batch, b_image_stride, k0, k1, k2, s0,
                        s1, s2, n)
    koff = <Py_ssize_t*>malloc(k * sizeof(Py_ssize_t))
    if koff == NULL:
        raise MemoryError("conv_matmul: cannot allocate its offset table")
    for p in range(k):
        koff[p] = (p // (k1 * k2)) * s0 + (p // k2 % k1) * s1 + (p % k2) * s2
    with nogil:
        if dtype == cnp.NPY_FLOAT32:
            status = conv_run((<const float*>cnp.PyArray_DATA(a)) + a_offset, as0, as1, as2,
                              (<const float*>cnp.PyArray_DATA(b)) + b_offset, b_image_stride,
                              koff, <float*>cnp.PyArray_DATA(out), batch, m, n, k, wide, valid,
                              rows * valid)
        else:
            status = conv_run((<const double*>cnp.PyArray_DATA(a)) + a_offset, as0, as1, as2,
                              (<const double*>cnp.PyArray_DATA(b)) + b_offset, b_image_stride,
                              koff, <double*>cnp.PyArray_DATA(out), batch, m, n, k, wide, valid,
                              rows * valid)
    free(koff)
    if status < 0:
        raise MemoryError("conv_matmul: cannot allocate packing buffers")


# ---- conv_weight_matmul: the convolution's weight gradient from the image in place -------------
# grad_w[oc, p] = Σ_n Σ_positions g[n, oc, position] · x[n's image + koff(p) + position]: computed
# as grad_wᵀ (K x OC) = X (K x positions) @ gᵀ, whose left operand's row p is the padded image
# read from koff(p) (the rows conv_matmul reads, now as the broadcast operand: MR row pointers,
# no copy) and whose right operand is g, packed per image and k block with zeros at the wide
# columns. Threads own runs of MR rows of grad_wᵀ, summing over every image: no reduction.
cdef inline void wgrad_tile(Py_ssize_t kc, const floating* const* rows, const floating* b,
                            floating* acc, const Py_ssize_t nr) noexcept nogil:
    """acc (MR x nr) = rows[i][0:kc] @ b (packed kc x nr panel)."""
    cdef floating ai
    cdef Py_ssize_t p, i, j
    for i in range(MR):
        ai = rows[i][0]
        for j in range(nr):
            acc[i * nr + j] = ai * b[j]
    for p in range(1, kc):
        for i in range(MR):
            ai = rows[i][p]
            for j in range(nr):
                acc[i * nr + j] += ai * b[p * nr + j]


cdef inline void wgrad_store(const floating* acc, floating* c, Py_ssize_t ldc, Py_ssize_t mr,
                             Py_ssize_t ncols, const Py_ssize_t nr) noexcept nogil:
    """c[col * ldc + i] += acc[i, col]: grad_w (OC x K) receives the transposed tile."""
    cdef Py_ssize_t i, j
    for j in range(ncols):
        for i in range(mr):
            c[j * ldc + i] += acc[i * nr + j]


cdef void wgrad_wide(Py_ssize_t kc, const floating* const* rows, const floating* b, floating* c,
                     Py_ssize_t ldc, Py_ssize_t mr, Py_ssize_t ncols) noexcept nogil:
    cdef floating acc[MR * NR_WIDE]
    wgrad_tile(kc, rows, b, acc, NR_WIDE)
    wgrad_store(acc, c, ldc, mr, ncols, NR_WIDE)


cdef void wgrad_narrow(Py_ssize_t kc, const floating* const* rows, const floating* b,
                       floating* c, Py_ssize_t ldc, Py_ssize_t mr, Py_ssize_t ncols) noexcept nogil:
    cdef floating acc[MR * NR_NARROW]
    wgrad_tile(kc, rows, b, acc, NR_NARROW)
    wgrad_store(acc, c, ldc, mr, ncols, NR_NARROW)


cdef void wgrad_task(Py_ssize_t t0, Py_ssize_t t1, const floating* x, Py_ssize_t xs0,
                     const Py_ssize_t* koff, const floating* g, Py_ssize_t gs0, floating* c,
                     Py_ssize_t batch, Py_ssize_t oc, Py_ssize_t k, Py_ssize_t n,
                     Py_ssize_t wide, Py_ssize_t valid, Py_ssize_t g_plane,
                     floating* bpack, Py_ssize_t* colmap) noexcept nogil:
    """Rows tiles [t0, t1) of grad_wᵀ (rows p of MR each), summed over every image; colmap
    (CONV_KC entries) is scratch."""
    cdef Py_ssize_t nr = panel_width(oc), npanels = cdiv(oc, nr), bi, pb, pc, kc, r, col
    cdef Py_ssize_t jp, j, ti, i, row, ncols, mr
    cdef const floating* rows[MR]
    cdef const floating* ximg
    cdef const floating* gimg
    cdef const floating* src
    cdef floating* panel
    for bi in range(batch):
        ximg = x + bi * xs0
        gimg = g + bi * gs0
        for pb in range(cdiv(n, CONV_KC)):
            pc = pb * CONV_KC
            kc = min(CONV_KC, n - pc)
            # g's block as panels of nr channels: bpack[jp][r][j] = g[oc, position of r] or 0
            for r in range(kc):
                col = pc + r
                colmap[r] = (col // wide) * valid + col % wide if col % wide < valid else -1
            memset(bpack, 0, npanels * kc * nr * sizeof(floating))
            for jp in range(npanels):
                for j in range(min(nr, oc - jp * nr)):
                    src = gimg + (jp * nr + j) * g_plane
                    panel = bpack + jp * kc * nr + j
                    for r in range(kc):
                        if colmap[r] >= 0:
                            panel[r * nr] = src[colmap[r]]
            for ti in range(t0, t1):
                mr = min(MR, k - ti * MR)
                for i in range(MR):     # rows past k repeat the last one; their sums are dropped
                    row = min(ti * MR + i, k - 1)
                    rows[i] = ximg + koff[row] + pc
                for jp in range(npanels):
                    panel = bpack + jp * kc * nr
                    ncols = min(nr, oc - jp * nr)
                    if nr == NR_WIDE:
                        wgrad_wide(kc, rows, panel, c + jp * nr * k + ti * MR, k, mr, ncols)
                    else:
                        wgrad_narrow(kc, rows, panel, c + jp * nr * k + ti * MR, k, mr, ncols)


def conv_weight_matmul(cnp.ndarray x not None, cnp.ndarray g not None,
                       cnp.ndarray out not None, Py_ssize_t batch, Py_ssize_t out_channels,
                       Py_ssize_t k, Py_ssize_t x_image_stride, Py_ssize_t x_offset, k_sizes,
                       k_strides, Py_ssize_t g_image_stride, Py_ssize_t g_offset,
                       Py_ssize_t rows, Py_ssize_t wide, Py_ssize_t valid):
    """out (compact out_channels x k, overwritten) = the weight gradient of conv_matmul's
    product: out[oc, p] = Σ_bi Σ_{r < rows, q < valid} g[g_offset + bi·g_image_stride +
    oc·rows·valid + r·valid + q] · x[x_offset + bi·x_image_stride + koff(p) + r·wide + q], koff
    as in conv_matmul (g compact per image: (out_channels, rows·valid))."""
    cdef int dtype
    cdef Py_ssize_t k0, k1, k2, s0, s1, s2, n, p, tiles, t, nthreads, nr, b_size
    cdef Py_ssize_t* koff
    cdef void* scratch
    dtype = check_conv_buffers("conv_weight_matmul", "x", x, "g", g, out)
    k0, k1, k2 = k_sizes
    s0, s1, s2 = k_strides
    if min(batch, out_channels, k, k0, k1, k2, rows, valid) < 0 or valid > wide or \
            k0 * k1 * k2 != k:
        raise ValueError(f"conv_weight_matmul: bad sizes (batch={batch}, "
                         f"out_channels={out_channels}, k={k}, k_sizes={tuple(k_sizes)}, "
                         f"rows={rows}, wide={wide}, valid={valid})")
    if cnp.PyArray_SIZE(out) < out_channels * k:
        raise ValueError(f"conv_weight_matmul: out has {cnp.PyArray_SIZE(out)} elements, "
                         f"needs {out_channels * k}")
    if out_channels == 0 or k == 0:
        return
    memset(cnp.PyArray_DATA(out), 0, out_channels * k * cnp.PyArray_ITEMSIZE(out))
    if batch == 0 or rows == 0 or valid == 0:
        return
    n = (rows - 1) * wide + valid
    check_view(g, "g", g_offset, 1, 0, batch, g_image_stride, out_channels, rows * valid,
               rows * valid, 1)
    check_image_windows("conv_weight_matmul", "x", x, x_offset, batch, x_image_stride, k0, k1,
                        k2, s0, s1, s2, n)
    nr = panel_width(out_channels)
    tiles = cdiv(k, MR)
    nthreads = omp_get_max_threads()
    if batch * out_channels * k * n < PARALLEL_MIN_WORK:
        nthreads = 1
    nthreads = max(1, min(nthreads, tiles))
    b_size = cdiv(out_channels, nr) * nr * CONV_KC + 16
    koff = <Py_ssize_t*>malloc((k + nthreads * CONV_KC) * sizeof(Py_ssize_t))
    scratch = malloc(nthreads * b_size * cnp.PyArray_ITEMSIZE(out))
    if koff == NULL or scratch == NULL:
        free(koff)
        free(scratch)
        raise MemoryError("conv_weight_matmul: cannot allocate its buffers")
    for p in range(k):
        koff[p] = (p // (k1 * k2)) * s0 + (p // k2 % k1) * s1 + (p % k2) * s2
    with nogil:
        if dtype == cnp.NPY_FLOAT32:
            for t in prange(nthreads, schedule='static', num_threads=nthreads):
                wgrad_task(t * tiles // nthreads, (t + 1) * tiles // nthreads,
                           (<const float*>cnp.PyArray_DATA(x)) + x_offset, x_image_stride,
                           koff, (<const float*>cnp.PyArray_DATA(g)) + g_offset,
                           g_image_stride, <float*>cnp.PyArray_DATA(out), batch, out_channels,
                           k, n, wide, valid, rows * valid,
                           aligned(<float*>scratch + t * b_size), koff + k + t * CONV_KC)
        else:
            for t in prange(nthreads, schedule='static', num_threads=nthreads):
                wgrad_task(t * tiles // nthreads, (t + 1) * tiles // nthreads,
                           (<const double*>cnp.PyArray_DATA(x)) + x_offset, x_image_stride,
                           koff, (<const double*>cnp.PyArray_DATA(g)) + g_offset,
                           g_image_stride, <double*>cnp.PyArray_DATA(out), batch, out_channels,
                           k, n, wide, valid, rows * valid,
                           aligned(<double*>scratch + t * b_size), koff + k + t * CONV_KC)
    free(koff)
    free(scratch)
