"""Arguments torch honours that minitorch used to accept and drop (issue 16): F.normalize's and
zeros/ones' out=, memory_format in clone / contiguous / is_contiguous / empty / *_like. Each is
now honoured as torch 2.13 does, or refused with torch's error naming the format."""
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F

FORMATS = ("preserve_format", "contiguous_format", "channels_last", "channels_last_3d")


def _torch():
    return pytest.importorskip("torch")


def _layouts(make):
    """The same values under several layouts: make(shape) gives a fresh contiguous tensor
    (mt or torch); each layout is built with the same calls on both."""
    return {
        "contiguous": make((2, 3, 4, 5)),
        "nhwc": make((2, 4, 5, 3)).permute(0, 3, 1, 2),         # a channels-last tensor
        "transposed": make((3, 4)).t(),
        "size1_axis": make((60,)).as_strided((5, 1, 3, 4), (1, 60, 20, 5)),  # odd size-1 stride
        "gapped": make((2, 3, 4, 5)).permute(0, 2, 3, 1)[:, :, ::2],
        "gapped_nhwc": make((2, 4, 5, 3)).permute(0, 3, 1, 2)[:, :, ::2],
        "expanded": make((2, 3, 4)).expand(2, 2, 3, 4),
        "empty": make((1,)).as_strided((3, 0), (1, 3)),
        "5d_ndhwc": make((2, 3, 4, 5, 6)).permute(0, 4, 1, 2, 3),
        "scalar": make(()),
    }


def _pair():
    torch = _torch()

    def make(lib):
        counter = iter(range(1000))     # the same seeds, in the same order, for both

        def build(shape):
            seed = next(counter)
            values = np.random.default_rng(seed).standard_normal(shape)
            return lib.tensor(values)
        return build
    ours, theirs = _layouts(make(mt)), _layouts(make(torch))
    return torch, ours, theirs


# ---- clone(memory_format) ---------------------------------------------------------------------
def test_clone_lays_out_every_format_as_torch():
    torch, ours, theirs = _pair()
    for name in ours:
        for fmt in (None,) + FORMATS:
            kwargs = {} if fmt is None else {"memory_format": getattr(mt, fmt)}
            torch_kwargs = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
            try:
                expected = theirs[name].clone(**torch_kwargs)
            except RuntimeError as error:
                with pytest.raises(RuntimeError, match=str(error)):
                    ours[name].clone(**kwargs)
                continue
            got = ours[name].clone(**kwargs)
            assert got.stride() == expected.stride(), (name, fmt)
            np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_clone_refuses_what_is_no_memory_format():
    x = mt.ones(2, 3)
    with pytest.raises(TypeError, match="clone\\(\\): argument 'memory_format' must be "
                                        "torch.memory_format, not str"):
        x.clone(memory_format="channels_last")
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        mt.clone(x, memory_format=mt.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        x.clone(memory_format=mt.channels_last_3d)


def test_clone_in_channels_last_carries_the_gradient(device):
    x = mt.randn(2, 3, 4, 5, device=device, requires_grad=True)
    y = x.clone(memory_format=mt.channels_last)
    assert y.stride() == (60, 1, 15, 3) and y.device == x.device
    np.testing.assert_array_equal(y.detach().cpu().numpy(), x.detach().cpu().numpy())
    (y * mt.arange(5.0, device=device)).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(),
                                  np.broadcast_to(np.arange(5.0), (2, 3, 4, 5)))


# ---- contiguous / is_contiguous -----------------------------------------------------------------
def test_contiguous_and_is_contiguous_with_a_memory_format():
    torch, ours, theirs = _pair()
    for name in ours:
        for fmt in FORMATS:
            kwargs, torch_kwargs = {"memory_format": getattr(mt, fmt)}, \
                {"memory_format": getattr(torch, fmt)}
            assert ours[name].is_contiguous(**kwargs) == theirs[name].is_contiguous(
                **torch_kwargs), (name, fmt)
            try:
                expected = theirs[name].contiguous(**torch_kwargs)
            except RuntimeError as error:
                with pytest.raises(RuntimeError, match=str(error)):
                    ours[name].contiguous(**kwargs)
                continue
            got = ours[name].contiguous(**kwargs)
            assert got.stride() == expected.stride(), (name, fmt)
            assert (got is ours[name]) == (expected is theirs[name]), (name, fmt)


def test_contiguous_refuses_preserve_format():
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the "
                                           "contiguous operator"):
        mt.ones(3, 4).t().contiguous(memory_format=mt.preserve_format)


# ---- empty / *_like ----------------------------------------------------------------------------
def test_like_functions_lay_out_as_torch():
    torch, ours, theirs = _pair()
    functions = [("zeros_like", ()), ("ones_like", ()), ("empty_like", ()), ("full_like", (7,))]
    for name in ours:
        for function, args in functions:
            for fmt in (None,) + FORMATS:
                kwargs = {} if fmt is None else {"memory_format": getattr(mt, fmt)}
                torch_kwargs = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
                try:
                    expected = getattr(torch, function)(theirs[name], *args, **torch_kwargs)
                except RuntimeError as error:
                    with pytest.raises(RuntimeError, match=str(error)):
                        getattr(mt, function)(ours[name], *args, **kwargs)
                    continue
                got = getattr(mt, function)(ours[name], *args, **kwargs)
                assert got.stride() == expected.stride(), (name, function, fmt)
                if function != "empty_like":
                    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_empty_with_a_memory_format():
    torch = _torch()
    for shape in [(2, 3, 4, 5), (2, 1, 3, 1), (2, 0, 3, 4), (2, 3), (2, 3, 4, 5, 6)]:
        for fmt in FORMATS:
            try:
                expected = torch.empty(*shape, memory_format=getattr(torch, fmt))
            except RuntimeError as error:
                with pytest.raises(RuntimeError, match=str(error)):
                    mt.empty(*shape, memory_format=getattr(mt, fmt))
                continue
            got = mt.empty(*shape, memory_format=getattr(mt, fmt))
            assert got.shape == expected.shape and got.stride() == expected.stride()
    with pytest.raises(TypeError, match="empty\\(\\): argument 'memory_format' must be "
                                        "torch.memory_format, not int"):
        mt.empty(2, memory_format=1)


# ---- out= -------------------------------------------------------------------------------------
def test_normalize_writes_out_and_returns_it():
    x = mt.tensor([[3.0, 4.0], [1.0, 0.0]])
    out = mt.empty(2, 2)
    result = F.normalize(x, out=out)
    assert result is out and out._version_counter > 0
    np.testing.assert_allclose(out.numpy(), [[0.6, 0.8], [1.0, 0.0]], rtol=1e-6)
    strided = mt.empty(2, 2).t()            # out keeps its own layout
    assert F.normalize(x, dim=0, out=strided).stride() == (1, 2)
    np.testing.assert_allclose(strided.numpy(), F.normalize(x, dim=0).numpy())
    wide = mt.empty(2, 2, dtype=mt.float64)  # a float64 out takes the float32 quotient
    np.testing.assert_allclose(F.normalize(x, out=wide).numpy(), out.numpy(), rtol=1e-6)


def test_normalize_out_follows_torch():
    torch = _torch()
    values = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    cases = [((5,), "float32"), ((0,), "float32"), ((3, 4), "float64"), ((3, 4), "int64")]
    for shape, dtype in cases:
        theirs = torch.empty(*shape, dtype=getattr(torch, dtype))
        ours = mt.empty(*shape, dtype=getattr(mt, dtype))
        try:
            with warnings.catch_warnings(record=True) as torch_warnings:
                warnings.simplefilter("always")
                torch.nn.functional.normalize(torch.tensor(values), out=theirs)
        except RuntimeError as error:
            with pytest.raises(RuntimeError, match=str(error)):
                F.normalize(mt.tensor(values), out=ours)
            continue
        with warnings.catch_warnings(record=True) as our_warnings:
            warnings.simplefilter("always")
            F.normalize(mt.tensor(values), out=ours)
        assert len(our_warnings) == len(torch_warnings)
        assert ours.shape == theirs.shape and ours.dtype.name == str(theirs.dtype)[6:]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_normalize_out_is_refused_while_recording():
    x = mt.ones(2, 3, requires_grad=True)
    message = "div\\(\\): functions with out=... arguments don't support automatic " \
              "differentiation, but one of the arguments requires grad."
    out = mt.zeros(2, 3)
    with pytest.raises(RuntimeError, match=message):
        F.normalize(x, out=out)
    assert out._version_counter == 0            # refused before writing
    with pytest.raises(RuntimeError, match=message):
        F.normalize(x.detach(), out=mt.zeros(2, 3, requires_grad=True))
    with mt.no_grad():
        assert F.normalize(x, out=out) is out


def test_zeros_and_ones_write_out():
    torch = _torch()
    for function in ("zeros", "ones"):
        for out_shape, out_dtype, dtype in [((5,), "float32", None), ((2, 3), "int64", None),
                                            ((2, 3), "bool", None), ((2, 3), "float32",
                                                                     "float64")]:
            theirs = torch.empty(*out_shape, dtype=getattr(torch, out_dtype))
            ours = mt.empty(*out_shape, dtype=getattr(mt, out_dtype))
            kwargs = {} if dtype is None else {"dtype": getattr(mt, dtype)}
            torch_kwargs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
            try:
                getattr(torch, function)(2, 3, out=theirs, **torch_kwargs)
            except RuntimeError as error:
                with pytest.raises(RuntimeError, match=str(error).replace("(", "\\(")
                                   .replace(")", "\\)")):
                    getattr(mt, function)(2, 3, out=ours, **kwargs)
                continue
            assert getattr(mt, function)(2, 3, out=ours, **kwargs) is ours
            assert ours.dtype.name == str(theirs.dtype)[6:]
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_resize_with_a_memory_format_restrides_as_torch():
    torch = _torch()
    for fmt in FORMATS:
        for sizes in [(2, 3, 2, 2), (4, 6), (2, 3, 1, 2, 2), (3, 3, 3, 3)]:
            theirs = torch.arange(24.0).reshape(2, 3, 4)
            ours = mt.arange(24.0).reshape(2, 3, 4)
            try:
                theirs.resize_(*sizes, memory_format=getattr(torch, fmt))
            except RuntimeError as error:
                with pytest.raises(RuntimeError, match=str(error)):
                    ours.resize_(*sizes, memory_format=getattr(mt, fmt))
                continue
            assert ours.resize_(*sizes, memory_format=getattr(mt, fmt)) is ours
            assert ours.stride() == theirs.stride(), (fmt, sizes)
            if ours.numel() <= 24:            # torch leaves grown memory uninitialised
                np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    target = mt.empty(2, 3, 2, 2).contiguous(memory_format=mt.channels_last)
    assert mt.zeros(5).resize_as_(target).stride() == (12, 4, 2, 1)
    assert mt.zeros(5).resize_as_(target, memory_format=mt.channels_last).stride() == \
        (12, 1, 6, 3)


def test_repeat_interleave_checks_output_size():
    x = mt.tensor([1, 2, 3])
    assert mt.repeat_interleave(x, 2, output_size=6).tolist() == [1, 1, 2, 2, 3, 3]
    assert mt.repeat_interleave(x, mt.tensor([1, 2, 0]), output_size=3).tolist() == [1, 2, 2]
    assert mt.repeat_interleave(mt.tensor([2, 1]), output_size=3).tolist() == [0, 0, 1]
    with pytest.raises(RuntimeError, match="repeat_interleave: Invalid output_size, expected 6 "
                                           "but got 5"):
        mt.repeat_interleave(x, 2, output_size=5)
    for call in (lambda: mt.repeat_interleave(x, mt.tensor([1, 2, 0]), output_size=5),
                 lambda: mt.repeat_interleave(mt.tensor([2, 1]), output_size=4)):
        with pytest.raises(RuntimeError, match="allocated size does not match required size"):
            call()


def test_index_and_linalg_functions_write_out(device):
    """out= was accepted and ignored by these: now written (resized as torch) and returned."""
    x = mt.arange(5.0, device=device)
    cases = [
        (lambda out: mt.gather(x, 0, mt.tensor([4, 0], device=device), out=out),
         mt.empty(0, device=device), [4.0, 0.0]),
        (lambda out: mt.index_select(x, 0, mt.tensor([1, 3], device=device), out=out),
         mt.empty(2, device=device), [1.0, 3.0]),
        (lambda out: mt.nonzero(mt.tensor([0, 1, 1], device=device), out=out),
         mt.empty(0, dtype=mt.int64, device=device), [[1], [2]]),
        (lambda out: mt.tensordot(mt.ones(2, 3, device=device), mt.ones(3, 2, device=device),
                                  dims=1, out=out),
         mt.empty(0, device=device), [[3.0, 3.0], [3.0, 3.0]]),
    ]
    for call, out, expected in cases:
        assert call(out) is out
        assert out.tolist() == expected


def test_linalg_functions_write_out_tuples(device):
    a = mt.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=mt.float64, device=device)
    values, vectors = mt.empty(0, dtype=mt.float64, device=device), \
        mt.empty(0, dtype=mt.float64, device=device)
    result = mt.linalg.eigh(a, out=(values, vectors))
    assert result.eigenvalues is values and result.eigenvectors is vectors
    np.testing.assert_allclose(values.cpu().numpy(), np.linalg.eigvalsh(a.cpu().numpy()))
    singular = mt.empty(0, dtype=mt.float64, device=device)
    assert mt.linalg.svdvals(a, out=singular) is singular
    np.testing.assert_allclose(singular.cpu().numpy(),
                               np.linalg.svd(a.cpu().numpy(), compute_uv=False))
    with pytest.raises(TypeError, match="argument 'out' must be tuple of 2 Tensors"):
        mt.linalg.eigh(a, out=values)
    with pytest.raises(RuntimeError, match="can't be cast"):
        mt.linalg.svdvals(a, out=mt.empty(0, dtype=mt.int64, device=device))
