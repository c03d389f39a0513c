"""torch.autograd.functional: jacobian, hessian, vjp, jvp, vhp and hvp of a Python function
of tensors, built on reverse-mode `autograd.grad`.

Forward-mode products (jvp, hvp) use the double-backward trick: the gradient w.r.t. the
inputs, taken with a dummy grad_output that requires grad, is linear in that dummy, and
differentiating it w.r.t. the dummy in direction v gives J v. Inputs and outputs are a Tensor
or a tuple of Tensors, and results are unpacked the way torch unpacks them.
"""
from contextlib import nullcontext

from .engine import enable_grad, grad as autograd_grad, is_grad_enabled, set_grad_enabled
from ..functions.joining import stack
from ..tensor import Tensor, zeros_like

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ---- argument packing ----------------------------------------------------------------------------
def _as_tuple(inp, arg_name, fn_name):
    """(was it a tuple, the tensors as a tuple), every element checked to be a Tensor."""
    is_tuple = isinstance(inp, tuple)
    inp = inp if is_tuple else (inp,)
    for i, element in enumerate(inp):
        if not isinstance(element, Tensor):
            where = f"the value at index {i} has type" if is_tuple else \
                f"the given {arg_name} has type"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where} {type(element)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Unwrap the one-element tuples of the arguments that were given as plain tensors;
    to_unpack is one flag or (outputs flag, inputs flag) for nested results."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh leaves for the function (a differentiable view when the caller's graph must be
    kept, so the results stay connected to the caller's tensors)."""
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad
                 else inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


def _prepare_v(v, reference, is_reference_tuple, fn_name, create_graph, none_message):
    """The direction v as a checked tuple; None only allowed for one one-element reference."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, reference, is_reference_tuple)
    elif len(reference) != 1 or reference[0].nelement() != 1:
        raise RuntimeError(f"The vector v can only be None if the {none_message} a single "
                           "Tensor with a single element.")
    return v


_NOT_DIFFERENTIABLE = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
               "independent of the input. This is not allowed in strict mode. You should ensure "
               "that your function is thrice differentiable and that the hessian depends on the "
               "inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
                   "user-provided function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when "
               "running in strict mode.",
}


def _check_requires_grad(inputs, input_type, strict):
    """strict mode: every tensor must exist and depend differentiably on the inputs."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad; None for inputs that do not matter."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(out, g) for out, g in zip(outputs, grad_outputs)
            if out is not None and out.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    new_outputs, new_grad_outputs = zip(*kept)
    return autograd_grad(new_outputs, inputs, new_grad_outputs, allow_unused=True,
                         create_graph=create_graph, retain_graph=retain_graph)


_MISSING_GRAD = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward mode "
                         "AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """None gradients become zeros (strict mode refuses them instead)."""
    result = ()
    for i, grad_i in enumerate(grads):
        if grad_i is None:
            if strict:
                raise RuntimeError(_MISSING_GRAD[stage].format(i=i))
            grad_i = zeros_like(refs[i])
        elif strict and create_graph and not grad_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        result += (grad_i,)
    return result


def _call(func, inputs, fn_name, strict):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


# ---- products ------------------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _call(func, inputs, "vjp", strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, "vjp", create_graph,
                       "user-provided function returns")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_inputs_tuple))


def _inputs_and_v(inputs, v, fn_name, create_graph):
    """(whether inputs was a tuple, the inputs made differentiable, v checked against them):
    the preparation jvp, vhp and hvp share."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _prepare_v(v, inputs, is_inputs_tuple, fn_name, create_graph,
                   "input to the user-provided function is")
    return is_inputs_tuple, inputs, v


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product at `inputs` (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, "jvp", create_graph)
        is_outputs_tuple, outputs = _call(func, inputs, "jvp", strict)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with enable_grad() if create_graph else nullcontext():
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_outputs_tuple))


def _single_scalar_output(func, inputs, fn_name, strict):
    """func(inputs) for hvp/vhp, which need one one-element tensor."""
    is_outputs_tuple, outputs = _call(func, inputs, fn_name, strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    return is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, "vhp", create_graph)
        is_outputs_tuple, outputs = _single_scalar_output(func, inputs, "vhp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, "hvp", create_graph)
        is_outputs_tuple, outputs = _single_scalar_output(func, inputs, "hvp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_inputs_tuple))


# ---- full matrices -------------------------------------------------------------------------------
def _check_strategy(strategy, create_graph, strict, vectorize):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             "Hint: If your function has more outputs than inputs, "
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      'and `strategy="forward-mode"` are not supported together '
                                      "(yet). Please either set `create_graph=False` or "
                                      '`strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               '`strategy="forward-mode"` are not supported together (yet). '
                               'Please either set `strict=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-"
                                      "reverse Hessian isonly implemented for `vectorize=True`.")
    elif vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """d func(inputs) / d inputs: for output i and input j a tensor of shape
    out_i.shape + in_j.shape. vectorize and forward-mode give the same values (computed here
    by the same row-by-row reverse-mode loop: minitorch has no vmap or forward AD)."""
    _check_strategy(strategy, create_graph, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _call(func, inputs, "jacobian", strict)
        result = tuple(_jacobian_of_output(i, out, inputs, create_graph, strict)
                       for i, out in enumerate(outputs))
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def _jacobian_of_output(i, out, inputs, create_graph, strict):
    """One output's Jacobian blocks, one backward pass per output element."""
    rows = tuple([] for _ in inputs)
    flat = out.reshape(-1)
    for j in range(out.nelement()):
        vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        for el_idx, (rows_el, vj_el, inp_el) in enumerate(zip(rows, vj, inputs)):
            if vj_el is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is "
                                       f"independent of input {el_idx}. This is not allowed in "
                                       "strict mode.")
                vj_el = zeros_like(inp_el)
            elif strict and create_graph and not vj_el.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode when "
                                   "create_graph=True.")
            rows_el.append(vj_el)
    return tuple(stack(rows_el, dim=0).view(tuple(out.shape) + tuple(inputs[el_idx].shape))
                 for el_idx, rows_el in enumerate(rows))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: for inputs i, j a tensor of shape
    in_i.shape + in_j.shape (a plain tensor for a single input)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
