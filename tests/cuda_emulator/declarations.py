"""What each kernel declares, parsed from the CUDA text the backend compiles, and a check that a
launch passes exactly those parameters (a wrong type or order would silently misread on a GPU)."""
import re

import numpy as np

from minitorch._gpu import launch

C_TYPES = {"float": np.float32, "double": np.float64, "long long": np.int64, "i64": np.int64,
           "unsigned char": np.uint8, "u64": np.uint64, "int": np.int32, "short": np.int16,
           "signed char": np.int8, "unsigned short": np.uint16}
NULLABLE = {"in_idx", "out_v", "out_i", "err_flag", "claims", "max_v", "sorter", "bias", "cell",
            "cell_prev", "carry", "dgh", "weight", "grad_input", "grad_grid"}


def kernel_signatures(module):
    """{kernel: (template parameter names, [(type, name)], body)} parsed from the module text."""
    source = launch.module_source(module)
    found = {}
    for match in re.finditer(r"__global__\s+void\s+", source):
        head = source[:match.start()].rstrip()
        template = re.search(r"template\s*<([^<>]*)>\s*$", head)
        params_t = [p.split()[-1] for p in template.group(1).split(",")] if template else []
        pos = match.end()
        if source.startswith("__launch_bounds__", pos):
            pos = _skip_parens(source, source.index("(", pos)) + 1
        name = re.match(r"\s*(\w+)\s*\(", source[pos:])
        open_at = pos + name.end() - 1
        close_at = _skip_parens(source, open_at)
        params = [_split_param(" ".join(text.replace("__restrict__", "")
                                        .replace("const ", "").split()))
                  for text in _top_level_split(source[open_at + 1:close_at])]
        body_end = _skip_braces(source, source.index("{", close_at))
        found[name.group(1)] = (params_t, params, source[close_at:body_end])
    return found


def _skip_parens(text, at):
    return _closing(text, at, "(", ")")


def _skip_braces(text, at):
    return _closing(text, at, "{", "}")


def _closing(text, at, opening, closing):
    """The index of the bracket closing the one at text[at]."""
    depth = 0
    for i in range(at, len(text)):
        depth += text[i] == opening
        depth -= text[i] == closing
        if depth == 0:
            return i
    raise ValueError(f"unbalanced {opening}{closing}")


def _split_param(text):
    kind, _, name = text.rpartition(" ")
    if name.startswith("*"):
        kind, name = kind + "*", name[1:]
    return kind.replace(" *", "*"), name


def _top_level_split(text):
    """Split a parameter list at commas outside <...> (Geometry<1, MAXD> is one parameter)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def check_launch(name, signature, grid, block, args, is_buffer):
    """Assert that launching the instance `name` (e.g. "compact_kernel<float, 8>") with these
    arguments matches its declaration, and that grid and block have the shapes it needs."""
    base, _, rest = name.partition("<")
    values = [v.strip() for v in rest.rstrip(">").split(",")] if rest else []
    params_t, params, body = signature
    assert len(values) == len(params_t), name
    subst = dict(zip(params_t, values))
    assert len(args) == len(params), f"{name}: {len(args)} args for {len(params)} params"
    for arg, (kind, pname) in zip(args, params):
        kind = re.sub(r"\b\w+\b", lambda m: subst.get(m.group(0), m.group(0)), kind)
        _check_argument(name, kind, pname, arg, is_buffer)
    assert all(isinstance(g, (int, np.integer)) and 1 <= g < 2 ** 31 for g in grid)
    threads = int(np.prod(block))
    if "FOR_EACH_" in body or "THREADS" in body:
        assert tuple(block) == (launch.THREADS,), f"{name}: flat kernels need 256 threads"
    elif base == "matmul_kernel":
        bm, bn, _, tm, tn = (int(v) for v in values[1:])
        assert threads == (bm // tm) * (bn // tn)
    else:
        assert threads <= 256 and threads % 32 == 0, (name, block)


def _check_argument(kernel, kind, name, arg, is_buffer):
    where = f"{kernel}: parameter {kind} {name}"
    if kind.endswith("*"):
        if arg is None:
            assert name in NULLABLE, f"{where} got a null pointer"
            return
        assert is_buffer(arg), f"{where} got {type(arg).__name__}"
        base = kind[:-1].strip()
        if base != "void":
            want = np.dtype(C_TYPES[base])
            # bool travels as bytes, float16 as 16-bit words (bfloat16's storage is uint16)
            ok = arg.dtype == want or (want == np.uint8 and arg.dtype == np.bool_) or (
                want == np.uint16 and arg.dtype == np.float16)
            assert ok, f"{where} got a {arg.dtype} buffer"
    elif kind.startswith("Geometry<"):
        nargs, dims = (int(v) for v in kind[9:-1].split(","))
        assert isinstance(arg, np.ndarray) and arg.size == 1 and arg.dtype.kind == "V", where
        assert arg.dtype.itemsize == (1 + (3 + nargs) * dims) * 8, where
    else:
        want = np.dtype(C_TYPES[kind])
        assert isinstance(arg, np.generic) and arg.dtype == want, f"{where} got {arg!r}"
