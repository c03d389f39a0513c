"""Helpers shared by the scripts that tests/test_distributed*.py start (under mpiexec or as one
plain process): deterministic per-rank data and exception checks."""
import numpy as np

import minitorch as mt

DTYPES = {"float32": mt.float32, "float64": mt.float64, "int64": mt.int64, "uint8": mt.uint8,
          "bool": mt.bool}


def rank_data(rank, shape, dtype_name, salt=0):
    """Small values (products of a few ranks' uint8 values must not wrap)."""
    rng = np.random.default_rng(1000 * rank + salt)
    if dtype_name == "bool":
        return rng.random(shape) < 0.5
    if dtype_name in ("uint8", "int64"):
        return rng.integers(1, 4, shape).astype(dtype_name)
    return rng.standard_normal(shape).astype(dtype_name)


def expect(kind, fragment, call):
    """call() must raise `kind` whose message contains `fragment`."""
    try:
        call()
    except kind as error:
        if fragment not in str(error):
            raise AssertionError(f"{kind.__name__} message {str(error)!r} lacks {fragment!r}")
        return
    except Exception as error:
        raise AssertionError(f"expected {kind.__name__} ({fragment!r}), got "
                             f"{type(error).__name__}: {error}") from error
    raise AssertionError(f"expected {kind.__name__} ({fragment!r}), nothing raised")


def assert_close(actual, expected, what, rtol=1e-5, atol=1e-6):
    actual = actual.numpy() if isinstance(actual, mt.Tensor) else np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        raise AssertionError(f"{what}: got {actual.dtype}{actual.shape}, expected "
                             f"{expected.dtype}{expected.shape}")
    if expected.dtype.kind in "f":
        ok = np.allclose(actual, expected, rtol=rtol, atol=atol)
    else:
        ok = np.array_equal(actual, expected)
    if not ok:
        raise AssertionError(f"{what}: got\n{actual}\nexpected\n{expected}")
