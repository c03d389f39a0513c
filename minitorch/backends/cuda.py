"""mt.backends.cuda: torch.backends.cuda's switches that scripts set. `matmul.allow_tf32` is
tied to mt.set_float32_matmul_precision as in torch (True is "high", False "highest"); both
only record the request: our float32 matmul kernels always compute in full float32 (no TF32,
no reduced-precision reductions), so no setting changes a result."""
import contextlib
import functools
import warnings

from .. import settings
from ._flags import check_bool


def is_built():
    """True when the GPU backend can load (CuPy importable), as torch answers for its build."""
    try:
        import cupy  # noqa: F401
        return True
    except ImportError:
        return False


class _Matmul:
    """torch.backends.cuda.matmul: allow_tf32 and the reduced-precision-reduction flags
    (stored; see the module docstring)."""
    _names = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        object.__setattr__(self, "_stored", {"allow_fp16_reduced_precision_reduction": True,
                                             "allow_bf16_reduced_precision_reduction": True})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return settings.get_float32_matmul_precision() != "highest"
        if name in self._names:
            return self._stored[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name not in self._names:
            raise AttributeError(f"Unknown attribute {name}")
        check_bool("set_allow_tf32_cublas" if name == "allow_tf32" else f"set_{name}", value)
        if name == "allow_tf32":
            settings.set_float32_matmul_precision("high" if value else "highest")
        else:
            self._stored[name] = value


matmul = _Matmul()


# Scaled-dot-product-attention backend switches (torch.backends.cuda.enable_flash_sdp, ...):
# stored only. nn.functional.scaled_dot_product_attention here is one implementation (the math
# one, on our matmul and softmax kernels), whatever these say.
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _sdp_switches(kind):
    def enable(enabled):
        check_bool(f"set_sdp_use_{kind}", enabled)
        _sdp[kind] = enabled

    def is_enabled():
        return _sdp[kind]
    return enable, is_enabled


enable_flash_sdp, flash_sdp_enabled = _sdp_switches("flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _sdp_switches("mem_efficient")
enable_math_sdp, math_sdp_enabled = _sdp_switches("math")
enable_cudnn_sdp, cudnn_sdp_enabled = _sdp_switches("cudnn")


def _sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
                enable_cudnn=True):
    from ..nn.attention import SDPBackend, sdpa_kernel
    backends = [backend for backend, enabled in (
        (SDPBackend.FLASH_ATTENTION, enable_flash), (SDPBackend.EFFICIENT_ATTENTION,
                                                     enable_mem_efficient),
        (SDPBackend.MATH, enable_math), (SDPBackend.CUDNN_ATTENTION, enable_cudnn)) if enabled]
    with sdpa_kernel(backends) as context:
        yield context


@functools.wraps(_sdp_kernel)
def _deprecated_sdp_kernel(*args, **kwargs):
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
                  "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the "
                  "new context manager, with updated signature.", FutureWarning, stacklevel=2)
    return _sdp_kernel(*args, **kwargs)


# torch.backends.cuda.sdp_kernel: the deprecated form of nn.attention.sdpa_kernel (enable_* flags
# instead of a backend list); its FutureWarning names contextlib's line, as torch's does.
sdp_kernel = contextlib.contextmanager(_deprecated_sdp_kernel)
sdp_kernel.__name__ = sdp_kernel.__qualname__ = "sdp_kernel"
