"""Stride arithmetic shared by NDArray and the backends' launch planning."""


def merge_axes(shape, strides_list):
    """Drop size-1 axes and merge neighbours that step evenly in every operand (one stride
    list per operand): (sizes, merged strides per operand), both possibly empty."""
    sizes, merged = [], [[] for _ in strides_list]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if sizes and all(m[-1] == st[d] * size for m, st in zip(merged, strides_list)):
            sizes[-1] *= size
            for m, st in zip(merged, strides_list):
                m[-1] = st[d]
            continue
        sizes.append(size)
        for m, st in zip(merged, strides_list):
            m.append(st[d])
    return sizes, merged
