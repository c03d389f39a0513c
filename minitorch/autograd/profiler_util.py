"""torch.autograd.profiler_util: what a profile's results are made of. `FunctionEvent` (one
recorded range: an op, a backward node, a record_function block), `FunctionEventAvg` (their sum
per key), and `EventList` (a list of either, with torch's `table()`, `key_averages()`,
`total_average()` and `export_chrome_trace()`). Times are in microseconds, as torch's."""
import enum
import gzip
import json
import math
import os
from collections import defaultdict


class DeviceType(enum.Enum):
    """Where an event ran (torch's DeviceType; minitorch records CPU events only)."""
    CPU = 0
    CUDA = 1


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    for limit, unit in ((1024 ** 3, "GB"), (1024 ** 2, "MB"), (1024, "KB")):
        if abs(nbytes) >= limit:
            return f"{nbytes * 1.0 / limit:.2f} {unit}"
    return f"{nbytes} B"


class Interval:
    """An event's [start, end) in microseconds since the profile started."""

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class FormattedTimesMixin:
    """The `*_str` spellings of an event's times, and its average per call."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time
    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    device_time_str = property(lambda self: _format_time(self.device_time))
    device_time_total_str = property(lambda self: _format_time(self.device_time_total))
    self_device_time_total_str = property(
        lambda self: _format_time(self.self_device_time_total))

    # no device time is measured: these read 0, as torch's do for a CPU-only profile
    device_time_total = 0.0
    self_device_time_total = 0.0
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)


class FunctionEvent(FormattedTimesMixin):
    """One recorded range. `cpu_children` are the ranges opened directly inside it (on its
    thread), `cpu_parent` the one it was opened in; its self time is its total less its
    children's totals."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, stack=None,
                 is_user_annotation=False, trace_name=None, flops=0, sequence_nr=-1,
                 use_device=None):
        self.id = id
        self.node_id = -1
        self.name = name
        self.overload_name = ""
        self.trace_name = trace_name if trace_name is not None else name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = None
        self.kernels = []
        self.count = 1
        self.cpu_children = []
        self.cpu_parent = None
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.concrete_inputs = []
        self.kwinputs = {}
        self.stack = stack if stack is not None else []
        self.scope = 0
        self.use_device = use_device
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.is_async = False
        self.is_remote = False
        self.sequence_nr = sequence_nr
        self.device_type = DeviceType.CPU
        self.device_index = 0
        self.is_legacy = False
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return 0

    @property
    def self_device_memory_usage(self):
        return 0

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name}"
                f" device_type={self.device_type} node_id={self.node_id} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} "
                f"cpu_children={[child.id for child in self.cpu_children]} "
                f"thread={self.thread} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} is_async={self.is_async} "
                f"is_remote={self.is_remote} seq_nr={self.sequence_nr} "
                f"is_legacy={self.is_legacy}>")


class FunctionEventAvg(FormattedTimesMixin):
    """The sum of the events sharing a key (key_averages' rows, total_average())."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    def add(self, other):
        if self.key is None:
            # the first event added sets what the group shares
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.input_shapes = other.input_shapes
            self.overload_name = other.overload_name
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise TypeError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.count += other.count
        self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of FunctionEvents (a profile's events()) or FunctionEventAvgs (key_averages())."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False,
                 trace_start_us=0.0):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._trace_start_us = trace_start_us

    @property
    def self_cpu_time_total(self):
        return sum(event.self_cpu_time_total for event in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """torch's summary table: one row per event (or per key after key_averages()), sorted by
        `sort_by` (an attribute: "cpu_time_total", "self_cpu_time_total", "count", ...)."""
        return _build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width,
                            with_flops=self._with_flops, profile_memory=self._profile_memory,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One FunctionEventAvg per event name (and input shapes / top stack frames when asked),
        in order of first appearance."""
        stats = defaultdict(FunctionEventAvg)
        for event in self:
            key = [event.key, str(event.node_id), str(event.device_type),
                   str(event.is_user_annotation)]
            if group_by_input_shapes:
                key.append(str(event.input_shapes))
            if group_by_stack_n > 0:
                key += event.stack[:group_by_stack_n]
            if group_by_overload_name:
                key.append(event.overload_name)
            stats[tuple(key)].add(event)
        averages = EventList(stats.values(), use_device=self._use_device,
                             profile_memory=self._profile_memory, with_flops=self._with_flops)
        for average in averages:
            average.stack = average.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                average.input_shapes = ""
        return averages

    def total_average(self):
        """All events summed into one FunctionEventAvg with key "Total"."""
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
            total.key = None
        total.key = "Total"
        return total

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace JSON ("X" complete events, microseconds; gzip when
        `path` ends with .gz), for chrome://tracing, Perfetto or TensorBoard."""
        pid = os.getpid()
        events = []
        for event in self:
            if not isinstance(event, FunctionEvent):
                continue
            args = {"External id": event.id}
            if event.input_shapes:
                args["Input Dims"] = event.input_shapes
            if event.stack:
                args["Call stack"] = ";".join(event.stack)
            events.append({
                "ph": "X", "cat": "user_annotation" if event.is_user_annotation else "cpu_op",
                "name": event.trace_name, "pid": pid, "tid": event.thread,
                "ts": self._trace_start_us + event.time_range.start,
                "dur": event.time_range.elapsed_us(), "args": args})
        trace = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": events,
                 "traceName": str(path)}
        text = json.dumps(trace)
        if str(path).endswith(".gz"):
            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Stacks and their `metric` (microseconds) in the flame-graph format torch writes
        (events recorded with with_stack=True)."""
        with open(path, "w") as f:
            for event in self:
                if event.stack:
                    stack = ";".join(reversed(event.stack)).replace(" ", "_")
                    f.write(f"{stack};{event.name} {int(getattr(event, metric))}\n")


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                 profile_memory=False, top_level_events_only=False, time_unit=None):
    """torch's table layout (profiler_util._build_table), for CPU events."""
    if len(events) == 0:
        return ""
    has_input_shapes = any(event.input_shapes is not None and len(event.input_shapes) > 0
                           for event in events)
    if sort_by is not None:
        attribute = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda event: getattr(event, attribute), reverse=True)
    name_width = max(len(event.key) for event in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(event.input_shapes)) for event in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [event.stack for event in events if event.stack]
    src_width = None
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [(name_width, ">")] + [(12, ">")] * (len(headers) - 1)
    if has_input_shapes:
        headers.append("Input Shapes")
        widths.append((shapes_width, ">"))
    if stacks:
        headers.append("Source Location")
        widths.append((src_width, "<"))
    flops_scale = None
    if with_flops:
        raw = [event.flops for event in events if event.flops > 0]
        if raw:
            names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
            level = int(max(0, min(math.log10(min(raw)) / 3, len(names) - 1)))
            flops_scale = 10.0 ** (-3 * level)
            headers.append(f"Total {names[level]}")
            widths.append((12, ">"))
    row_format = "".join("{: " + align + str(width) + "}  " for width, align in widths)
    header_sep = "".join("-" * width + "  " for width, _ in widths)
    line_length = sum(width + 2 for width, _ in widths) - 2

    def time_text(value, default):
        if time_unit == "s":
            return f"{value / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{value / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{value:.3f}us"
        return default

    def trim_path(path):
        if len(path) > src_width:
            path = path[len(path) - src_width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total_self = sum(event.self_cpu_time_total for event in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [header_sep, row_format.format(*headers), header_sep]
    shown = 0
    for event in events:
        if shown == row_limit:
            break
        if top_level_events_only and event.cpu_parent is not None:
            continue
        shown += 1
        name = event.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        event.self_cpu_percent = _format_time_share(event.self_cpu_time_total, total_self)
        event.total_cpu_percent = _format_time_share(event.cpu_time_total, total_self)
        row = [name, event.self_cpu_percent,
               time_text(event.self_cpu_time_total, event.self_cpu_time_total_str),
               event.total_cpu_percent,
               time_text(event.cpu_time_total, event.cpu_time_total_str),
               time_text(event.cpu_time, event.cpu_time_str)]
        if profile_memory:
            row += [_format_memory(event.cpu_memory_usage),
                    _format_memory(event.self_cpu_memory_usage)]
        row.append(event.count)
        if has_input_shapes:
            row.append(str(event.input_shapes)[:shapes_width])
        if stacks:
            row.append(trim_path(event.stack[0]) if event.stack else "")
        if flops_scale is not None:
            row.append("--" if event.flops <= 0 else f"{event.flops * flops_scale:8.3f}")
        lines.append(row_format.format(*row))
        if stacks and event.stack:
            # the further frames of the stack, one per line under the row, then a blank row
            at = headers.index("Source Location")
            for entry in event.stack[1:]:
                blank = [""] * len(headers)
                blank[at] = trim_path(entry)
                lines.append(row_format.format(*blank))
            lines.append(row_format.format(*([""] * len(headers))))
    lines += [header_sep, f"Self CPU time total: {time_text(total_self, _format_time(total_self))}"]
    return "\n".join(lines) + "\n"
