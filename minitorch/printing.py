"""torch-style `repr` for tensors, and `mt.set_printoptions`."""
import math

import numpy as np

from . import dtypes

_options = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
            "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """torch.set_printoptions: the same knobs and profiles."""
    if profile == "default":
        _options.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    elif profile == "short":
        _options.update(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        _options.update(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            _options[key] = value
    _options["sci_mode"] = sci_mode


def get_printoptions():
    """A copy of the current print options as a dict (torch._tensor_str.get_printoptions)."""
    return dict(_options)


class _Formatter:
    """Chooses one width and notation for all elements, as torch's _Formatter does."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode, self.sci_mode = True, False
        precision = _options["precision"]
        if not floating:
            self.width = max((len(self._plain(v)) for v in values.ravel()), default=1)
            return
        finite = values[np.isfinite(values)]
        nonzero = np.abs(finite[finite != 0])
        if nonzero.size:
            self.int_mode = bool(np.all(np.ceil(nonzero) == nonzero))
            big, small = float(nonzero.max()), float(nonzero.min())
            if self.int_mode:
                self.sci_mode = big / small > 1000.0 or big > 1e8
            else:
                self.sci_mode = big / small > 1000.0 or big > 1e8 or small < 1e-4
        if _options["sci_mode"] is not None:
            self.sci_mode = _options["sci_mode"]
        self.precision = precision
        # torch sizes the column by the nonzero finite values only: inf, nan (and a 0.) may
        # come out wider or narrower, unpadded
        self.width = max((len(self._float(v)) for v in finite[finite != 0]), default=1)

    @staticmethod
    def _plain(v):
        return str(bool(v)) if isinstance(v, (bool, np.bool_)) else str(v)

    def _float(self, v):
        v = float(v)
        if self.sci_mode:
            return f"{v:.{self.precision}e}"
        if self.int_mode:
            text = f"{v:.0f}"
            return text + "." if math.isfinite(v) else text
        return f"{v:.{self.precision}f}"

    def format(self, v):
        text = self._float(v) if self.floating else self._plain(v)
        return " " * (self.width - len(text)) + text


class _ComplexFormatter:
    """torch's pair of formatters for complex tensors: one for the real parts, one for the
    imaginary parts, each element printed as `re+imj` (`1.+2.j`, `0.5000-1.0000j`)."""

    def __init__(self, values):
        self.real = _Formatter(values.real.astype(np.float64), True)
        self.imag = _Formatter(values.imag.astype(np.float64), True)
        self.width = self.real.width + self.imag.width + 1      # the "j"

    def format(self, v):
        real_text = self.real.format(v.real)
        imag_text = (self.imag.format(v.imag) + "j").lstrip()
        if imag_text[0] in "+-":        # negative numbers and -0.
            return real_text + imag_text
        return real_text + "+" + imag_text


def _format_array(values, formatter, indent, summarize):
    """Nested-bracket text of `values` with torch's line wrapping and '...' summarization."""
    edge = _options["edgeitems"]
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        items = [formatter.format(v) for v in values.tolist()] if not (
            summarize and values.shape[0] > 2 * edge) else (
            [formatter.format(v) for v in values[:edge].tolist()] + [" ..."] +
            [formatter.format(v) for v in values[-edge:].tolist()])
        per_line = max(1, (_options["linewidth"] - indent) // (formatter.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = range(values.shape[0])
    if summarize and values.shape[0] > 2 * edge:
        rows = list(range(edge)) + [None] + list(range(values.shape[0] - edge, values.shape[0]))
    parts = ["..." if i is None else _format_array(values[i], formatter, indent + 1, summarize)
             for i in rows]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(parts) + "]"


def _summary_values(values, edge):
    """The elements that will be printed when summarizing (so the formatter sees only them)."""
    if values.ndim == 0:
        return values.reshape(1)
    if values.shape[0] > 2 * edge:
        values = np.concatenate([values[:edge], values[-edge:]])
    return np.concatenate([_summary_values(v, edge).ravel() for v in values]) if \
        values.ndim > 1 else values


def _meta_repr(t):
    """torch's text for a tensor without values: tensor(..., device='meta', size=(2, 3))."""
    suffixes = [f"device='{t.device}'", f"size={tuple(t.shape)}"]
    if t.dtype is not dtypes.get_default_dtype():     # int64 and bool are shown here too
        suffixes.append(f"dtype={t.dtype!r}")
    return _with_grad_suffix(t, "tensor(...", suffixes)


def _with_grad_suffix(t, head, suffixes):
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(head, suffixes, len("tensor("))


def _add_suffixes(text, suffixes, indent):
    """torch's _add_suffixes: each suffix after ", " on the last line while that stays within
    the line width, else on a line of its own at the indent."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _options["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_repr(t):
    if t.device.type == "meta":
        return _meta_repr(t)
    values = t.detach().cpu()._data.values()
    summarize = values.size > _options["threshold"]
    shown = _summary_values(values, _options["edgeitems"]) if summarize else values
    if t.dtype.is_complex:
        formatter = _ComplexFormatter(shown)
    else:
        formatter = _Formatter(shown.astype(np.float64) if t.dtype.is_floating_point else shown,
                               t.dtype.is_floating_point)
    prefix = "tensor("
    if values.size == 0 and values.ndim == 1:
        body = "[]"
    elif values.size == 0:
        body = "[]"
    else:
        body = _format_array(values, formatter, len(prefix), summarize)
    suffixes = []
    if values.size == 0 and values.ndim != 1:
        suffixes.append(f"size={tuple(values.shape)}")
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default_float = dtypes.get_default_dtype()
    if t.dtype not in (dtypes.bool_, dtypes.int64, default_float, default_float.complex_dtype):
        suffixes.append(f"dtype={t.dtype!r}")
    return _with_grad_suffix(t, prefix + body, suffixes)
