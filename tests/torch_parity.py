"""Helpers shared by the tests that compare minitorch with torch (skipped without torch)."""
import re
import warnings

import numpy as np
import pytest

import minitorch as mt


def value(t):
    return t.detach().cpu().numpy()


def flatten(result):
    """The tensors of a nested (output, (h, c)) result, in order."""
    if isinstance(result, (tuple, list)):
        return [t for part in result for t in flatten(part)]
    return [result]


def check_against_torch(ours, theirs, arrays, device, call, constants=()):
    """Copy torch's float64 weights into ours (in eval mode), run
    `call(module, *inputs, *constants)` in both libraries on the same arrays (inputs require
    grad, constants such as masks do not), backpropagate the same random weighting of every
    output, and compare outputs, input gradients and parameter gradients."""
    torch = pytest.importorskip("torch")
    theirs = theirs.double().eval()
    ours = ours.double().to(device).eval()
    ours.load_state_dict({k: mt.tensor(v.detach().numpy(), device=device)
                          for k, v in theirs.state_dict().items()})
    our_inputs = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
    their_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    outputs = flatten(call(ours, *our_inputs, *(mt.tensor(c, device=device) for c in constants)))
    expected = flatten(call(theirs, *their_inputs, *(torch.tensor(c) for c in constants)))
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(tuple(e.shape)) for e in expected]
    for out, exp in zip(outputs, expected, strict=True):
        assert out.shape == tuple(exp.shape) and out.device.type == device
        np.testing.assert_allclose(value(out), exp.detach().numpy(), rtol=1e-10, atol=1e-12)
    sum((o * mt.tensor(w, device=device)).sum() for o, w in zip(outputs, weights)).backward()
    sum((e * torch.tensor(w)).sum() for e, w in zip(expected, weights)).backward()
    for mine, theirs_input in zip(our_inputs, their_inputs):
        np.testing.assert_allclose(value(mine.grad), theirs_input.grad.numpy(), atol=1e-10)
    their_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        np.testing.assert_allclose(value(param.grad), their_params[name].grad.numpy(),
                                   atol=1e-10, err_msg=name)


def seq(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def torch_version():
    """The installed torch's (major, minor), or None without torch. A GPU machine has an older
    torch than this one: checks of behaviour that changed between versions ask this."""
    try:
        import torch
    except ImportError:
        return None
    return tuple(int(part) for part in torch.__version__.split(".")[:2])


PINNED_TORCH = (2, 13)     # the torch whose messages and reprs ours follow word for word


def same_error(call):
    """The exception type and message torch raises for call(torch) equal ours for call(mt).
    Another torch version may word (or type) an error differently: there a difference skips,
    saying so, instead of failing; the pinned version checks every word."""
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            call(torch)
        with pytest.raises(Exception) as ours:
            call(mt)
    same = type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
    if not same and torch_version() != PINNED_TORCH:
        pytest.skip(f"torch {torch.__version__} raises {type(theirs.value).__name__}"
                    f"({str(theirs.value)!r}); ours follows torch {PINNED_TORCH[0]}."
                    f"{PINNED_TORCH[1]}: {type(ours.value).__name__}({str(ours.value)!r})")
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def error_of(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as exc:      # noqa: BLE001 - the type itself is compared
            return type(exc), re.sub(r"\btorch\.", "minitorch.", str(exc))
    return None


def same_errors(make_ours, make_theirs):
    """make_ours() and make_theirs() raise the same exception type and message."""
    error = error_of(make_ours)
    assert error is not None
    assert error == error_of(make_theirs)


# ---- distributions ---------------------------------------------------------------------------
# The methods and properties the distribution tests ask of both libraries.
DISTRIBUTION_QUERIES = ("mean", "mode", "variance", "stddev", "entropy", "log_prob", "cdf",
                        "icdf", "enumerate_support")


def query_distribution(dist, what, value):
    """One method's or property's result on `dist`, or the type of the exception it raises
    (icdf is asked at 0.3 in every batch position)."""
    try:
        if what in ("log_prob", "cdf"):
            return getattr(dist, what)(value)
        if what == "icdf":
            return dist.icdf(dist.mean.new_full(tuple(dist.batch_shape), 0.3))
        if what in ("entropy", "enumerate_support"):
            return getattr(dist, what)()
        return getattr(dist, what)
    except (NotImplementedError, AttributeError) as error:
        return type(error)


def assert_same_queries(name, ours, value, theirs, tvalue, queries=DISTRIBUTION_QUERIES):
    """Each query gives torch's result (shape, dtype name, values to 1e-9), or raises what
    torch's raises."""
    for what in queries:
        want, got = query_distribution(theirs, what, tvalue), query_distribution(ours, what, value)
        if isinstance(want, type):
            assert got is want, (what, got)
            continue
        assert tuple(got.shape) == tuple(want.shape), what
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], what
        np.testing.assert_allclose(value_of(got), value_of(want), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name}.{what}")


def value_of(t):
    """A tensor's (either library's) values as a numpy array; anything else as it is."""
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)
