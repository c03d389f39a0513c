"""mt.backends.cuda: torch.backends.cuda's switches that scripts set. `matmul.allow_tf32` is
tied to mt.set_float32_matmul_precision as in torch (True is "high", False "highest"); both
only record the request: our float32 matmul kernels always compute in full float32 (no TF32,
no reduced-precision reductions), so no setting changes a result."""
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
