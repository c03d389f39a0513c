"""The GPU's `join` (see minitorch.backend.KernelBackend.join), for now a loop over the existing
kernels: each source compacted, then scattered into its slot of the output. A single-launch
kernel taking a table of source pointers would replace it."""


def join(self, sources, out, shapes, strides, offsets, out_strides, out_offsets):
    """out[out_offsets[i] + Σ idx_d·out_strides_d] = sources[i][offsets[i] + Σ idx_d·strides[i]_d]
    for each source i; one compact and one strided_set per source."""
    n = len(sources)
    if len(shapes) != n or len(strides) != n or len(offsets) != n or len(out_offsets) != n:
        raise ValueError(f"join: {n} sources but {len(shapes)} shapes, {len(strides)} strides, "
                         f"{len(offsets)} offsets and {len(out_offsets)} out_offsets")
    for src, shape, src_strides, offset, out_offset in zip(sources, shapes, strides, offsets,
                                                            out_offsets):
        size = 1
        for s in shape:
            size *= s
        if size == 0:
            continue
        packed = self.empty(size, out.dtype)
        self.compact(src, packed, shape, src_strides, offset)
        self.strided_set(packed, out, shape, out_strides, out_offset)
