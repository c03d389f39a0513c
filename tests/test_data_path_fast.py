"""The data path's fast paths (stack / cat / default_collate of unrecorded alike tensors, basic
getitem / setitem with one int or slice, unbind): the same values, dtypes, errors, views and
version counters as the checked paths and torch, and a fall back wherever the fast path
doesn't apply (promotion, autograd, odd keys and values)."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.utils.data import default_collate

torch = pytest.importorskip("torch", reason="compares with torch")


def _pair(array):
    return mt.tensor(array), torch.tensor(array)


def _same(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _inputs(seed=0):
    """Compact tensors, and views (rows at offsets of one storage, a transposed copy viewed
    back), each as (minitorch, torch)."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((6, 4, 3)).astype(np.float32)
    m, t = _pair(base)
    return {
        "compact": [_pair(rng.standard_normal((4, 3)).astype(np.float32)) for _ in range(5)],
        "views": [(m[i], t[i]) for i in range(6)] +
                 [(m[0].transpose(0, 1).contiguous().transpose(0, 1), t[0])],
    }


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("kind", ["compact", "views"])
def test_stack_matches_torch(kind, dim):
    pairs = _inputs()[kind]
    _same(mt.stack([m for m, _ in pairs], dim), torch.stack([t for _, t in pairs], dim))
    _same(mt.stack(tuple(m for m, _ in pairs), dim), torch.stack([t for _, t in pairs], dim))


def test_stack_and_cat_of_strided_views():
    m, t = _pair(np.arange(120, dtype=np.int64).reshape(5, 4, 6))
    ms, ts = [m[i].transpose(0, 1)[1:5] for i in range(5)], [t[i].transpose(0, 1)[1:5]
                                                              for i in range(5)]
    for dim in (0, 1, -1):
        _same(mt.stack(ms, dim), torch.stack(ts, dim))
        _same(mt.cat(ms, dim), torch.cat(ts, dim))


def test_stack_of_scalars_and_cat_of_varied_lengths():
    _same(mt.stack([mt.tensor(float(i)) for i in range(4)]),
          torch.stack([torch.tensor(float(i)) for i in range(4)]))
    arrays = [np.arange(n * 3, dtype=np.float32).reshape(n, 3) for n in (2, 0, 5, 1)]
    _same(mt.cat([mt.tensor(a) for a in arrays]), torch.cat([torch.tensor(a) for a in arrays]))
    _same(mt.cat([mt.tensor(a.T) for a in arrays], 1),
          torch.cat([torch.tensor(a.T) for a in arrays], 1))


def test_cat_legacy_empty_and_promotion_fall_back():
    a, b = np.ones((2, 3), np.float32), np.arange(6).reshape(2, 3)
    _same(mt.cat([mt.tensor(a), mt.zeros(0), mt.tensor(a)]),
          torch.cat([torch.tensor(a), torch.zeros(0), torch.tensor(a)]))
    _same(mt.cat([mt.tensor(a), mt.tensor(b)]), torch.cat([torch.tensor(a), torch.tensor(b)]))
    _same(mt.stack([mt.tensor(b), mt.tensor(a)]), torch.stack([torch.tensor(b),
                                                              torch.tensor(a)]))
    # bool and uint8 share a byte store: the fast path must not skip the promotion
    bits, bytes_ = np.array([True, False]), np.array([7, 200], np.uint8)
    _same(mt.stack([mt.tensor(bits), mt.tensor(bytes_)]),
          torch.stack([torch.tensor(bits), torch.tensor(bytes_)]))
    _same(mt.cat([mt.tensor(bits), mt.tensor(bytes_)]),
          torch.cat([torch.tensor(bits), torch.tensor(bytes_)]))


def test_join_results_are_fresh_storage():
    x = mt.arange(12.0).reshape(3, 4)
    out = mt.stack([x[0], x[1]])
    out[0, 0] = 100.0
    assert x[0, 0].item() == 0.0
    out = mt.cat([x[0], x[1]])
    out[1] = -1.0
    assert x[0, 1].item() == 1.0


@pytest.mark.parametrize("op", ["stack", "cat"])
def test_errors_match_torch(op):
    ours, theirs = getattr(mt, op), getattr(torch, op)
    cases = [
        lambda lib: [lib.ones(2, 3), lib.ones(2, 4)],
        lambda lib: [lib.ones(2, 3), lib.ones(2, 3, 4)],
        lambda lib: [lib.ones(2, 3), lib.ones(2, 3, 1)],
        lambda lib: [lib.ones(2, 3), 5],
        lambda lib: [lib.tensor(1.0), lib.tensor(2.0)] if op == "cat" else [lib.ones(2), 5],
        lambda lib: [],
    ]
    for make in cases:
        with pytest.raises(Exception) as expected:
            theirs(make(torch))
        with pytest.raises(type(expected.value)) as got:
            ours(make(mt))
        assert str(got.value) == str(expected.value)
    for dim in (3, -4):
        with pytest.raises(IndexError) as expected:
            theirs([torch.ones(2, 3), torch.ones(2, 3)], dim)
        with pytest.raises(IndexError) as got:
            ours([mt.ones(2, 3), mt.ones(2, 3)], dim)
        assert str(got.value) == str(expected.value)
    with pytest.raises(TypeError):
        ours(mt.ones(2, 3))


@pytest.mark.parametrize("op", ["stack", "cat"])
def test_autograd_through_the_checked_path(op):
    a = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    b = mt.randn(2, 3, dtype=mt.float64)
    out = getattr(mt, op)([a, b, a], 1)
    assert out.requires_grad and out.grad_fn is not None
    assert mt.autograd.gradcheck(lambda x: getattr(mt, op)([x, b, x], 1), (a,))
    with mt.no_grad():
        plain = getattr(mt, op)([a, b], 0)
    assert not plain.requires_grad and plain.grad_fn is None


def test_parameters_and_tuples_are_tensors():
    p = mt.nn.Parameter(mt.ones(2, 2))
    with mt.no_grad():
        _same(mt.stack((p, p)), torch.ones(2, 2, 2))
    _same(mt.cat((mt.ones(2), mt.zeros(1))), torch.tensor([1.0, 1.0, 0.0]))


def test_collate_matches_torch():
    from torch.utils.data import default_collate as torch_collate
    rng = np.random.default_rng(1)
    images = [rng.standard_normal((3, 4, 4)).astype(np.float32) for _ in range(6)]
    ours = default_collate([(mt.tensor(x), i) for i, x in enumerate(images)])
    theirs = torch_collate([(torch.tensor(x), i) for i, x in enumerate(images)])
    assert isinstance(ours, list) and len(ours) == 2
    for o, t in zip(ours, theirs):
        _same(o, t)
    for labels in ([True, False, True], [1, 2.5, 3], [1, np.int64(4)], [3, -7, 2 ** 62],
                   [0.5, -2.0, float("inf")], [1.5, 2], [0.25, np.float32(3)]):
        _same(default_collate(labels), torch_collate(labels))
    with pytest.raises(Exception) as expected:
        torch_collate([1, 2 ** 64])
    with pytest.raises(type(expected.value)) as got:
        default_collate([1, 2 ** 64])
    assert str(got.value) == str(expected.value)
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([(1, 2), (1, 2, 3)])


# ---- getitem / setitem / unbind ---------------------------------------------------------------
@pytest.mark.parametrize("key", [2, -1, slice(1, 6), slice(None, 3), slice(4, None),
                                 slice(-3, -1), slice(5, 2), slice(None)])
def test_basic_setitem_matches_torch(key):
    m, t = mt.zeros(8, 3), torch.zeros(8, 3)
    m_rows, t_rows = m[key], t[key]
    value = np.arange(np.prod(t_rows.shape), dtype=np.float32).reshape(t_rows.shape)
    m[key], t[key] = mt.tensor(value), torch.tensor(value)
    _same(m, t)
    m[key], t[key] = 1.5, 1.5
    _same(m, t)
    m[key], t[key] = 7, 7
    _same(m, t)
    _same(m_rows, t_rows)           # the earlier views see the writes


def test_setitem_bumps_the_shared_version():
    x = mt.zeros(4, 3)
    row = x[1]
    before = x._version[0]
    x[2] = 1.0
    row[0:2] = mt.ones(2)
    assert x._version[0] == before + 2 and row._version is x._version
    assert x.numpy()[1].tolist() == [1.0, 1.0, 0.0]


def test_setitem_fall_backs_and_errors_match_torch():
    cases = [
        lambda lib: (lib.zeros(4, 3), 9, 1.0),                      # out of range
        lambda lib: (lib.zeros(4, 3), 1, lib.ones(4)),              # shape mismatch
        lambda lib: (lib.zeros(4, dtype=lib.uint8), 1, 256),        # overflow
        lambda lib: (lib.zeros(4, dtype=lib.int64), 1, float("nan")),
        lambda lib: (lib.tensor(1.0), 0, 2.0),                      # 0-d
        lambda lib: (lib.zeros(4, 3), slice(0, 2), "a"),
    ]
    for make in cases:
        target, key, value = make(torch)
        with pytest.raises(Exception) as expected:
            target[key] = value
        target, key, value = make(mt)
        with pytest.raises(type(expected.value)) as got:
            target[key] = value
        assert str(got.value) == str(expected.value)
    m, t = mt.zeros(4, 3), torch.zeros(4, 3)
    m[1:3], t[1:3] = mt.tensor([1, 2, 3]), torch.tensor([1, 2, 3])       # cast and broadcast
    m[0], t[0] = mt.tensor(True), torch.tensor(True)
    _same(m, t)
    m, t = mt.arange(6.0), torch.arange(6.0)
    m[3:6], t[3:6] = m[0:3], t[0:3]                                     # the same storage
    _same(m, t)
    ms, ts = mt.arange(10.0), torch.arange(10.0)
    m[2:5], t[2:5] = ms[0:9:3], ts[0:9:3]                               # a strided source
    _same(m, t)


def test_setitem_records_when_it_must():
    leaf = mt.zeros(3, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf[1] = 2.0
    with mt.no_grad():
        leaf[1] = 2.0
    assert leaf.grad_fn is None
    x = leaf * 1
    v = mt.ones(2, requires_grad=True)
    x[0] = v
    assert x.grad_fn.name() == "CopySlices"
    x.sum().backward()
    assert v.grad.tolist() == [1.0, 1.0] and leaf.grad.numpy()[0].tolist() == [0.0, 0.0]
    y = mt.zeros(3, 2)
    y[2] = v
    assert y.requires_grad and y.grad_fn is not None


def test_getitem_views_and_autograd():
    m, t = _pair(np.arange(24, dtype=np.float32).reshape(6, 4))
    for key in (0, -2, slice(1, 4), slice(None, 2), slice(5, 1), slice(None)):
        view = m[key]
        _same(view, t[key])
        assert view._version is m._version
    with pytest.raises(IndexError, match="out of bounds"):
        m[6]
    with pytest.raises(IndexError):
        mt.tensor(1.0)[0]
    a = mt.randn(4, 3, dtype=mt.float64, requires_grad=True)
    assert a[1].grad_fn.name() == "SelectBackward0"
    assert a[1:3].grad_fn.name() == "SliceBackward0"
    assert mt.autograd.gradcheck(lambda x: x[1:3] * x[0], (a,))
    with mt.no_grad():
        assert a[1].grad_fn is None


def test_unbind_and_iteration_match_torch():
    m, t = _pair(np.arange(60, dtype=np.float32).reshape(3, 4, 5))
    for dim in (0, 1, 2, -1):
        ours, theirs = m.unbind(dim), t.unbind(dim)
        assert len(ours) == len(theirs)
        for o, th in zip(ours, theirs):
            _same(o, th)
            assert o._version is m._version
    rows = [r[1:3] for r in m[1:]]
    _same(mt.cat(rows), torch.cat([r[1:3] for r in t[1:]]))
    a = mt.randn(3, 2, dtype=mt.float64, requires_grad=True)
    assert mt.autograd.gradcheck(lambda x: mt.stack(x.unbind(1), 0), (a,))


def test_fast_paths_on_device(device):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(5)]
    ts = [mt.tensor(a, device=device) for a in arrays]
    np.testing.assert_array_equal(mt.stack(ts, 1).cpu().numpy(), np.stack(arrays, 1))
    np.testing.assert_array_equal(mt.cat(ts, 1).cpu().numpy(), np.concatenate(arrays, 1))
    np.testing.assert_array_equal(mt.cat([t[1:] for t in ts]).cpu().numpy(),
                                  np.concatenate([a[1:] for a in arrays]))
    x, expected = mt.zeros(6, 4, device=device), np.zeros((6, 4), np.float32)
    x[1:4], expected[1:4] = ts[0], arrays[0]
    x[5], expected[5] = 2.5, 2.5
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    np.testing.assert_array_equal(x[2].cpu().numpy(), expected[2])
    x[0] = mt.ones(4)                   # a value on another device is moved (checked path)
    expected[0] = 1.0
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    batch = default_collate([(t, i) for i, t in enumerate(ts)])
    assert batch[0].device.type == device and batch[1].tolist() == list(range(5))


def test_setitem_into_a_no_grad_view_raises_torchs_error():
    """A view made under no_grad of a tensor that requires grad may not be written with grad
    mode on, by any key (int and slice keys name torch's Select / Slice view)."""
    cases = [(0, "Output 0 of Select is a view of a view which was created in no_grad mode"),
             (slice(0, 1), "Output 0 of Slice is a view of a view which was created in no_grad"),
             (..., "A view was created in no_grad mode")]
    for key, message in cases:
        a = mt.ones(3, requires_grad=True)
        with mt.no_grad():
            view = a[0:2]
        with pytest.raises(RuntimeError, match=message):
            view[key] = 5.0
        assert a.tolist() == [1.0, 1.0, 1.0]           # rejected before any write
    with mt.no_grad():                                   # both inside no_grad: allowed
        view = a[0:2]
        view[0] = 3.0
    assert a.tolist() == [3.0, 1.0, 1.0]
