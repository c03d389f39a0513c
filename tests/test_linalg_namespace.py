"""mt.linalg's own functions (norms and products) against torch.linalg; the factorizations it
publishes are tested in test_factor.py and test_spectral.py."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck
from torch_parity import same_error, seq

torch = pytest.importorskip("torch")
ORDERS = ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2]


def close(ours, theirs, rtol=1e-10):
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=1e-12)


@pytest.mark.parametrize("ord", ORDERS, ids=str)
def test_matrix_norm_matches_torch(device, ord):
    a = seq(2, 3, 4)
    for dim in ((-2, -1), (0, 2), (2, 0), (1, 0)):
        for keepdim in (False, True):
            close(mt.linalg.matrix_norm(mt.tensor(a, device=device), ord, dim, keepdim),
                  torch.linalg.matrix_norm(torch.tensor(a), ord, dim, keepdim))
    x = mt.tensor(seq(3, 3), device=device, requires_grad=True)
    assert gradcheck(lambda t: mt.linalg.matrix_norm(t, ord), (x,))


def test_norm_dispatches_like_torch(device):
    a = seq(2, 3, 4)
    for ord in (None, 1, 2, math.inf, 0, -1, 3.5, "fro", "nuc"):
        for dim in (None, 0, (1,), (0, 2)):
            if isinstance(ord, str) and dim in (0, (1,)) or ord == 0 and dim == (0, 2):
                continue
            call = (lambda lib, t: lib.linalg.norm(t, ord, dim))
            try:
                expected = call(torch, torch.tensor(a))
            except RuntimeError:
                same_error(lambda lib: call(lib, lib.tensor(a)))
                continue
            close(call(mt, mt.tensor(a, device=device)), expected)
    close(mt.linalg.vector_norm(mt.tensor(a, device=device), 3, (0, 1), True),
          torch.linalg.vector_norm(torch.tensor(a), 3, (0, 1), True))
    close(mt.norm(mt.tensor(a[0], device=device), "nuc"), torch.norm(torch.tensor(a[0]), "nuc"))


def test_norm_errors_match_torch():
    for call in (lambda lib: lib.linalg.matrix_norm(lib.ones(3)),
                 lambda lib: lib.linalg.matrix_norm(lib.ones(3, 4), ord=3),
                 lambda lib: lib.linalg.matrix_norm(lib.ones(3, 4), dim=(0, 0)),
                 lambda lib: lib.linalg.matrix_norm(lib.ones(3, 4), dim=(0,)),
                 lambda lib: lib.linalg.norm(lib.ones(2, 3, 4), ord=2),
                 lambda lib: lib.linalg.norm(lib.ones(3, 4), dim=(0, 1, 1)),
                 lambda lib: lib.linalg.vector_norm(lib.arange(3)),
                 lambda lib: lib.linalg.matrix_norm(lib.ones(2, 3, dtype=lib.int64))):
        same_error(call)


def test_products_match_torch(device):
    x, m1, m2, y = seq(3), seq(3, 5, seed=1), seq(5, 2, seed=2), seq(2, seed=3)
    close(mt.linalg.multi_dot([mt.tensor(t, device=device) for t in (x, m1, m2, y)]),
          torch.linalg.multi_dot([torch.tensor(t) for t in (x, m1, m2, y)]))
    close(mt.linalg.multi_dot([mt.tensor(t, device=device) for t in (m1.T, m1, m2)]),
          torch.linalg.multi_dot([torch.tensor(t) for t in (m1.T, m1, m2)]))
    for call in (lambda lib: lib.linalg.multi_dot([lib.ones(3)]),
                 lambda lib: lib.linalg.multi_dot([lib.ones(2, 3, 3), lib.ones(3, 4)]),
                 lambda lib: lib.linalg.multi_dot([lib.ones(2, 3), lib.ones(4, 4)]),
                 lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(3, dtype=lib.float64)),
                 lambda lib: lib.linalg.vander(lib.tensor(2.))):
        same_error(call)
    a, b = seq(2, 3), seq(3, seed=4)
    close(mt.linalg.vecdot(mt.tensor(a, device=device), mt.tensor(b, device=device)),
          torch.linalg.vecdot(torch.tensor(a), torch.tensor(b)))
    close(mt.linalg.vander(mt.tensor(a, device=device), N=4),
          torch.linalg.vander(torch.tensor(a), N=4))
    close(mt.linalg.cross(mt.tensor(a, device=device), mt.tensor(b[None], device=device)),
          torch.linalg.cross(torch.tensor(a), torch.tensor(b[None])))
    same_error(lambda lib: lib.linalg.cross(lib.ones(2, 3), lib.ones(3)))
    close(mt.linalg.diagonal(mt.tensor(seq(2, 3, 3), device=device), offset=1),
          torch.linalg.diagonal(torch.tensor(seq(2, 3, 3)), offset=1))
    chain = [mt.tensor(t, device=device, requires_grad=True) for t in (m1.T, m1, m2)]
    assert gradcheck(lambda *ts: mt.linalg.multi_dot(ts), tuple(chain))


def test_tensorinv_and_tensorsolve_match_torch(device):
    a = seq(4, 6, 8, 3) + 5 * np.eye(24).reshape(4, 6, 8, 3)
    close(mt.linalg.tensorinv(mt.tensor(a, device=device), ind=2),
          torch.linalg.tensorinv(torch.tensor(a), ind=2), rtol=1e-8)
    b = seq(4, 6, seed=5)
    close(mt.linalg.tensorsolve(mt.tensor(a, device=device), mt.tensor(b, device=device)),
          torch.linalg.tensorsolve(torch.tensor(a), torch.tensor(b)), rtol=1e-8)
    same_error(lambda lib: lib.linalg.tensorinv(lib.ones(4, 6, 8, 3), ind=1))
