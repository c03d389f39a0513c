"""FractionalMaxPool2d and FractionalMaxPool3d: fractional max pooling as modules (the
functional forms are nn/functional/fractional_pooling.py)."""
from collections.abc import Iterable

from .functional.fractional_pooling import fractional_max_pool2d, fractional_max_pool3d
from .module import Module


def _ntuple(value, n):
    """torch's _pair/_triple: an iterable is taken as a tuple, anything else repeated."""
    return tuple(value) if isinstance(value, Iterable) else (value,) * n


class _FractionalMaxPoolNd(Module):
    """The arguments both fractional max pools keep, checked as torch checks them; fixed
    `_random_samples` (a buffer, None by default) make the windows deterministic."""
    _spatial = 2
    _pool = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        n = self._spatial
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, "
                             "or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return self._pool(input, self.kernel_size, self.output_size, self.output_ratio,
                          self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling over (N, C, H, W) or (C, H, W) to output_size or
    output_ratio × (H, W) (torch.nn.FractionalMaxPool2d)."""
    _spatial = 2
    _pool = staticmethod(fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling over (N, C, T, H, W) or (C, T, H, W) to output_size or
    output_ratio × (T, H, W) (torch.nn.FractionalMaxPool3d)."""
    _spatial = 3
    _pool = staticmethod(fractional_max_pool3d)

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        if (isinstance(kernel_size, int) and kernel_size <= 0) or (
                isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size)):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        super().__init__(kernel_size, output_size, output_ratio, return_indices,
                         _random_samples)
