"""Helpers shared by the scripts that tests/test_distributed*.py start (under mpiexec or as one
plain process): deterministic per-rank data and exception checks."""
import numpy as np

import minitorch as mt

DTYPES = {"float32": mt.float32, "float64": mt.float64, "float16": mt.float16,
          "bfloat16": mt.bfloat16, "int64": mt.int64, "int32": mt.int32, "int16": mt.int16,
          "int8": mt.int8, "uint8": mt.uint8, "bool": mt.bool}
HALF = ("float16", "bfloat16")      # numpy has no bfloat16: its data is float32 numpy arrays


def rank_data(rank, shape, dtype_name, salt=0):
    """Small values (products of a few ranks' int8 values must not wrap; 16-bit floats hold
    the halves exactly, so sums and products of a few ranks' are exact too)."""
    rng = np.random.default_rng(1000 * rank + salt)
    if dtype_name == "bool":
        return rng.random(shape) < 0.5
    if dtype_name.startswith(("int", "uint")):
        return rng.integers(1, 4, shape).astype(dtype_name)
    if dtype_name in HALF:
        return (rng.integers(-4, 5, shape) / 2).astype(np.float32 if dtype_name == "bfloat16"
                                                        else np.float16)
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
    if isinstance(actual, mt.Tensor) and actual.dtype in (mt.float16, mt.bfloat16):
        rtol = atol = 1e-2      # an average of 3 ranks' halves is rounded to 16 bits
        actual = actual.float() if actual.dtype is mt.bfloat16 else actual
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


def check_scaled_bucket_takes(device):
    """A gradient's way into its DDP bucket at world size > 1 (one scaling kernel writing the
    bucket's slot, a view of its flat buffer), transposed and narrow gradients included."""
    from minitorch.nn import Parameter
    from minitorch.nn.parallel.buckets import Bucket, SoloBucket
    weights = [Parameter(mt.zeros(3, 4, device=device)), Parameter(mt.zeros(5, device=device))]
    bucket = Bucket(weights, factor=0.5)
    bucket.take(0, mt.arange(12.0, device=device).reshape(4, 3).t())
    bucket.take(1, mt.arange(5.0, device=device))
    assert_close(bucket.tensor.cpu(), np.concatenate([np.arange(12.0).reshape(4, 3).T.ravel(),
                                                      np.arange(5.0)]).astype(np.float32) * 0.5,
                 "bucket take, scaled")
    half = Parameter(mt.zeros(2, 3, dtype=mt.float16, device=device))
    solo = SoloBucket(half, factor=0.5)
    grad = mt.arange(6.0, device=device).reshape(2, 3).to(mt.float16)
    solo.take(0, grad)
    assert solo.tensor is grad and grad.cpu().tolist() == [[0, 0.5, 1], [1.5, 2, 2.5]], grad
