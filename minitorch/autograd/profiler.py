"""torch.autograd.profiler: `profile` records every op, backward node and `record_function`
range run while it is on, with wall times from `time.perf_counter_ns`, nested per thread.

How it hooks in (docs/ARCHITECTURE.md, "Around the ops"): the op paths test one flag,
`autograd.engine._profiling` (and `functions.operators._profiling` on the kernel-only path of
`a + b`); while a profile records it is True and `engine._profiler` is the `_Recorder` below,
whose `op` runs the op (engine._apply) inside a range named as torch names it ("aten::mul")
and whose `node` wraps a backward node in torch's two ranges ("autograd::engine::
evaluate_function: MulBackward0", then "MulBackward0"). Nothing else changes: results are
bit-identical with and without a profile.

Not measured: device (CUDA) time, memory (`profile_memory` columns read 0), and ops that run a
kernel without going through a Function: the in-place `x += y` / `add_` fast path, creation
functions (`ones`, `randn`) and non-differentiable kernels called directly.
"""
import contextlib
import itertools
import os
import re
import sys
import threading
import time
import warnings

from ..functions import operators as _operators
from . import engine
from .profiler_util import (  # noqa: F401
    DeviceType,
    EventList,
    FunctionEvent,
    FunctionEventAvg,
    Interval,
    _format_time,
)

__all__ = [
    "DeviceType",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "emit_itt",
    "emit_nvtx",
    "kineto_available",
    "profile",
    "record_function",
]

_EVALUATE = "autograd::engine::evaluate_function: "

# Function class -> torch's op name where snake-casing the class name does not give it.
_ATEN_NAMES = {
    "ReluBackward": "aten::threshold_backward", "SigmoidBackward": "aten::sigmoid_backward",
    "TanhBackward": "aten::tanh_backward", "GeluBackward": "aten::gelu_backward",
    "SiluBackward": "aten::silu_backward", "SoftmaxBackward": "aten::_softmax_backward_data",
    "LogSoftmaxBackward": "aten::_log_softmax_backward_data",
    "NllLossBackward": "aten::nll_loss_backward", "ToCopy": "aten::_to_copy",
    "ToDevice": "aten::_to_copy", "UnsafeView": "aten::_unsafe_view", "PowTensor": "aten::pow",
    "MaxPoolBackward": "aten::max_pool2d_with_indices_backward", "AddRelu": "aten::add",
    "GridSampler2D": "aten::grid_sampler_2d", "GridSampler3D": "aten::grid_sampler_3d",
    "GridSampler2DBackward": "aten::grid_sampler_2d_backward",
    "GridSampler3DBackward": "aten::grid_sampler_3d_backward", "Index": "aten::index",
    "ScaledDotProductFlashAttentionForCpu": "aten::_scaled_dot_product_flash_attention_for_cpu",
    "CrossEntropyRows": "aten::cross_entropy_loss", "ConvProduct": "aten::convolution",
    "ConvProductBackward": "aten::convolution_backward", "StandardGamma": "aten::_standard_gamma",
    "StandardGammaGrad": "aten::_standard_gamma_grad", "T": "aten::t",
}
_names = {}


def _op_name(cls):
    """torch's name for an op's event: aten::<snake_case class name> for minitorch's ops
    (Mul -> aten::mul, LinalgSolveEx -> aten::linalg_solve_ex), the class name for a user's
    Function (torch records "MyFn")."""
    name = _names.get(cls)
    if name is None:
        if not cls._internal:
            name = cls.__name__
        else:
            base = cls.__name__.lstrip("_")
            name = _ATEN_NAMES.get(base)
            if name is None:
                snake = re.sub(r"(\d)D\b", r"\1d", base)
                snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", snake)
                name = "aten::" + snake.lower()
        _names[cls] = name
    return name


def _shape_of(x):
    data = getattr(x, "_data", None) if isinstance(x, engine.TensorBase) else None
    return list(data.shape) if data is not None else []


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _python_stack():
    """The caller's Python frames outside minitorch, innermost first, as torch prints them
    ("file.py(12): fn")."""
    frames = []
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_PACKAGE):
            frames.append(f"{path}({frame.f_lineno}): {frame.f_code.co_name}")
        frame = frame.f_back
    return frames


class _Recorder:
    """The one recorder of the process. While any profile records, `records` grows by one
    list per range: [name, start_ns, end_ns, parent record, input shapes, stack, thread id,
    kind (0 op, 1 user range, 2 backward)]; each profile keeps the slice recorded while it was
    on, so profiles nest. Open ranges are kept per thread."""

    def __init__(self):
        self.records = []
        self.sessions = []          # the profiles recording now, in start order
        self.shapes = False
        self.stacks = False
        self.local = threading.local()

    # -- the hooks the engine calls ------------------------------------------------------------
    def op(self, cls, args):
        record = self.push(_op_name(cls), args, 0)
        try:
            return engine._apply(cls, args)
        finally:
            self.pop(record)

    def node(self, name, grads, run, args):
        outer = self.push(_EVALUATE + name, (), 2)
        inner = self.push(name, grads, 2)
        try:
            return run(*args)
        finally:
            self.pop(inner)
            self.pop(outer)

    # -- ranges --------------------------------------------------------------------------------
    def push(self, name, args, kind):
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        record = [name, 0, None, stack[-1] if stack else None,
                  [_shape_of(a) for a in args] if self.shapes else None,
                  _python_stack() if self.stacks else None, threading.get_native_id(), kind]
        stack.append(record)
        self.records.append(record)
        record[1] = time.perf_counter_ns()
        return record

    def pop(self, record):
        record[2] = time.perf_counter_ns()
        stack = getattr(self.local, "stack", None)
        if stack:
            if stack[-1] is record:
                stack.pop()
            else:       # closed out of order (a range left open inside): drop what it holds
                for i in range(len(stack) - 1, -1, -1):
                    if stack[i] is record:
                        del stack[i:]
                        break

    # -- sessions ------------------------------------------------------------------------------
    def start(self, session):
        self.sessions.append(session)
        self._configure()
        session._first = len(self.records)
        session._start_ns = time.perf_counter_ns()
        session._start_epoch_us = time.time_ns() / 1000.0
        engine._profiler = self
        engine._profiling = _operators._profiling = True

    def stop(self, session):
        stop_ns = time.perf_counter_ns()
        records = self.records[session._first:]
        if session in self.sessions:
            self.sessions.remove(session)
        if not self.sessions:
            engine._profiling = _operators._profiling = False
            self.records = []
            self.local = threading.local()
        else:
            self._configure()
        return records, stop_ns

    def _configure(self):
        self.shapes = any(s.record_shapes or s.with_flops for s in self.sessions)
        self.stacks = any(s.with_stack for s in self.sessions)


_recorder = _Recorder()


def _flops(name, shapes):
    """torch's FLOP formulas for the matrix products (2 per multiply-add)."""
    try:
        if name == "aten::mm" or name == "aten::matmul" and len(shapes[0]) == 2 == len(shapes[1]):
            (m, k), (_, n) = shapes[0], shapes[1]
            return 2 * m * k * n
        if name == "aten::addmm":
            (m, k), (_, n) = shapes[1], shapes[2]
            return 2 * m * k * n
        if name == "aten::bmm":
            (b, m, k), (_, _, n) = shapes[0], shapes[1]
            return 2 * b * m * k * n
        if name == "aten::linear":
            rows = 1
            for size in shapes[0][:-1]:
                rows *= size
            return 2 * rows * shapes[0][-1] * shapes[1][0]
    except (IndexError, ValueError, TypeError):
        pass
    return 0


_STEP = re.compile(r"ProfilerStep#\d+$")


def _events(session, records, stop_ns):
    """FunctionEvents from one profile's slice of records (times in us from its start)."""
    base = session._start_ns
    events, by_record = [], {}
    ids = itertools.count(session._next_id)
    for record in records:
        name, start, end, parent, shapes, stack, thread, kind = record
        trace_name = name
        if kind == 1 and _STEP.match(name):
            name = "ProfilerStep*"      # torch's key for the step ranges
        flops = _flops(name, shapes) if session.with_flops and shapes else 0
        event = FunctionEvent(next(ids), name, thread, (start - base) / 1000.0,
                              ((end if end is not None else stop_ns) - base) / 1000.0,
                              input_shapes=shapes if session.record_shapes and shapes else [],
                              stack=stack if session.with_stack and stack else [],
                              is_user_annotation=kind == 1, trace_name=trace_name,
                              flops=flops, use_device=session.use_device)
        owner = by_record.get(id(parent)) if parent is not None else None
        if owner is not None:
            event.cpu_parent = owner
            owner.cpu_children.append(event)
        by_record[id(record)] = event
        events.append(event)
    session._next_id = next(ids)
    return events


def kineto_available():
    """Whether torch's Kineto backend is there: minitorch records without it (False)."""
    return False


class profile:
    """Records the ops run inside `with profile() as prof:` (torch.autograd.profiler.profile);
    then `prof.key_averages().table(sort_by="self_cpu_time_total")`, `prof.events()`,
    `prof.export_chrome_trace(path)`. CPU wall time only: device time and memory are not
    measured (use_device="cuda" on a machine without a GPU warns, as torch does)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):
        self.enabled = enabled
        if not enabled:
            return
        self.use_cuda = use_cuda
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            self.use_device = "cuda"
        else:
            self.use_device = use_device
        if self.use_device == "cuda":
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
                self.use_cuda = False
                self.use_device = None
        self.function_events = None
        self.entered = False
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.record_shapes |= self.with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.experimental_config = experimental_config
        self.custom_trace_id_callback = custom_trace_id_callback
        self.kineto_activities = set()
        self._recording = False
        self._next_id = 0
        self._start_epoch_us = None

    def config(self):
        return {"record_shapes": self.record_shapes, "with_stack": self.with_stack,
                "with_flops": self.with_flops, "profile_memory": self.profile_memory}

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self):
        self.entered = True

    def _start_trace(self):
        self.entered = True
        if self.use_cpu and not self._recording:
            self._recording = True
            _recorder.start(self)

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        records, stop_ns = (_recorder.stop(self) if self._recording
                            else ([], time.perf_counter_ns()))
        trace_start = self._start_epoch_us or time.time_ns() / 1000.0
        events = _events(self, records, stop_ns) if self._recording else []
        self._recording = False
        if self.acc_events and self.function_events is not None:
            # accumulated cycles keep their own start times: events of later cycles follow
            events = list(self.function_events) + events
        self.function_events = EventList(events, use_device=self.use_device,
                                         profile_memory=self.profile_memory,
                                         with_flops=self.with_flops, trace_start_us=trace_start)
        return False

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def _ensure_function_events(self):
        if self.function_events is None:
            if self.entered:
                raise RuntimeError("Profiler didn't finish running")
            self.function_events = EventList()
        return self.function_events

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        return self._ensure_function_events().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        return self._ensure_function_events().export_chrome_trace(path)

    export_chrome_trace.__doc__ = EventList.export_chrome_trace.__doc__

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self._ensure_function_events().export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._ensure_function_events().key_averages(
            group_by_input_shape, group_by_stack_n, group_by_overload_name)

    key_averages.__doc__ = EventList.key_averages.__doc__

    def total_average(self):
        return self._ensure_function_events().total_average()

    def events(self):
        return self._ensure_function_events()

    @property
    def self_cpu_time_total(self):
        """The sum of every event's self CPU time (us)."""
        return self._ensure_function_events().self_cpu_time_total


class record_function(contextlib.ContextDecorator):
    """A named range in the profile around a block (`with record_function("fwd"):`) or every
    call of a decorated function; nothing is recorded (at the cost of one flag test) when no
    profile is on."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self.record = None

    def _recreate_cm(self):
        return record_function(self.name, self.args)    # a decorated call gets its own range

    def __enter__(self):
        if engine._profiling:
            self.record = engine._profiler.push(self.name, (), 1)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.run_callbacks_on_exit:
            return False
        record, self.record = self.record, None
        if record is not None:
            _recorder.pop(record)
        return False

    def _call_end_callbacks_on_future(self, fut):
        """Ends the range when the future completes (torch's async record_function)."""
        self.run_callbacks_on_exit = False
        record, self.record = self.record, None

        def end(result):
            if record is not None:
                _recorder.pop(record)
            return result.value() if hasattr(result, "value") else result
        return fut.then(end) if hasattr(fut, "then") else fut


class emit_nvtx:
    """torch's NVTX ranges for nvprof / Nsight: accepted and does nothing here (minitorch emits
    no NVTX markers; use `profile` and export_chrome_trace instead)."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class emit_itt(emit_nvtx):
    """torch's Intel ITT ranges: accepted and does nothing here, as emit_nvtx."""
