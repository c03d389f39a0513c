"""einops on minitorch tensors (the backend and layers of minitorch/_einops.py): results as
numpy's einops gives them, gradients through every operation, layers inside nn.Sequential.

minitorch never imports einops itself; our backend is registered when both are loaded, in
either order (minitorch/_einops_hook.py).
"""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import minitorch as mt

einops = pytest.importorskip("einops", reason="einops is not installed")
mt_einops = pytest.importorskip("minitorch._einops")

from einops import einsum, pack, rearrange, reduce, repeat  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]     # this checkout's minitorch


def _values(rng, *shape):
    return rng.standard_normal(shape)


def test_the_seed_patterns(rng):
    values = _values(rng, 2, 3)
    a = mt.tensor(values)
    assert rearrange(a, "h w -> w h").tolist() == values.T.tolist()
    assert rearrange(a, "h w -> 1 1 h w").shape == (1, 1, 2, 3)


CASES = {
    "transpose": lambda f, x: rearrange(x, "b c h w -> b h w c"),
    "merge": lambda f, x: rearrange(x, "b c h w -> b (c h w)"),
    "split": lambda f, x: rearrange(x, "b c (h h2) w -> b (c h2) h w", h2=2),
    "reduce mean": lambda f, x: reduce(x, "b c h w -> b c", "mean"),
    "reduce max": lambda f, x: reduce(x, "b c h w -> c w", "max"),
    "reduce sum pool": lambda f, x: reduce(x, "b c (h 2) w -> b c h w", "sum"),
    "reduce min": lambda f, x: reduce(x, "b c h w -> b", "min"),
    "reduce prod": lambda f, x: reduce(x, "b c h w -> b h", "prod"),
    "repeat new": lambda f, x: repeat(x, "b c h w -> b c h w k", k=2),
    "repeat tile": lambda f, x: repeat(x, "b c h w -> b c (2 h) w"),
    "einsum": lambda f, x: einsum(x, x, "b c h w, b c h w -> b c"),
    "pack": lambda f, x: pack([x, x[:, 0]], "b * w")[0],
}


@pytest.mark.parametrize("case", list(CASES))
def test_operations_match_numpy(rng, case):
    values = _values(rng, 2, 3, 4, 2)
    expected = CASES[case](np, values)
    got = CASES[case](mt, mt.tensor(values))
    assert isinstance(got, mt.Tensor)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", ["transpose", "split", "reduce mean", "reduce max",
                                  "reduce sum pool", "reduce prod", "repeat new", "repeat tile",
                                  "einsum", "pack"])
def test_gradients_flow(rng, case):
    x = mt.tensor(_values(rng, 2, 3, 4, 2), requires_grad=True)
    assert mt.autograd.gradcheck(lambda x: CASES[case](mt, x), (x,))


def test_layers_in_sequential(rng):
    model = mt.nn.Sequential(mt_einops.Rearrange("b c h w -> b (c h w)"), mt.nn.Linear(24, 5),
                             mt_einops.Reduce("b k -> k", "mean"))
    x = mt.tensor(_values(rng, 2, 3, 4, 2), dtype=mt.float32)
    out = model(x)
    assert out.shape == (5,)
    out.sum().backward()
    assert model[1].weight.grad.shape == (5, 24)
    assert repr(model[0]) == "Rearrange('b c h w -> b (c h w)')"


@pytest.mark.parametrize("imports", ["import einops, minitorch as mt",
                                     "import minitorch as mt, einops",
                                     "import minitorch as mt; from einops import rearrange; "
                                     "import einops"])
def test_backend_is_found_whichever_is_imported_first(imports):
    """einops loaded before minitorch, or after it (its first import loads our backend)."""
    code = (f"{imports}; import sys; "
            "assert einops.rearrange(mt.ones(2, 3), 'a b -> b a').shape == (3, 2); "
            "assert 'minitorch._einops' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=REPO)


def test_minitorch_does_not_import_einops():
    code = "import sys, minitorch; assert 'einops' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=REPO)
