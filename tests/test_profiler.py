"""minitorch.autograd.profiler and minitorch.profiler (torch.autograd.profiler, torch.profiler):
what is recorded (ops named as torch's aten ops, backward nodes, record_function ranges),
nesting and self times, shapes, the table, chrome traces, torch's schedule and its step
transitions, tensorboard_trace_handler, and that nothing is recorded (or changed) otherwise."""
import gzip
import json
import threading
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import engine
from minitorch.autograd import profiler as aprof
from minitorch.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

try:
    import torch
    import torch.profiler as tprof
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

EVALUATE = "autograd::engine::evaluate_function: "


class _MLP(mt.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = mt.nn.Linear(3, 8)
        self.fc2 = mt.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(mt.relu(self.fc1(x)))


def _mlp(device="cpu"):
    mt.manual_seed(0)
    return _MLP().to(device)


def _names(events):
    return [e.name for e in events]


def _count(events, name):
    return sum(1 for e in events if e.name == name)


def test_mlp_forward_backward_events(device):
    model = _mlp(device)
    x = mt.randn(4, 3, device=device)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    events = prof.events()
    assert _count(events, "forward") == 1
    assert _count(events, "aten::linear") == 2
    assert _count(events, "aten::relu") == 1
    assert _count(events, "aten::sum") == 1
    # backward: torch's two ranges per node, and one AccumulateGrad per parameter
    assert _count(events, EVALUATE + "SumBackward0") == 1
    assert _count(events, "SumBackward0") == 1
    assert _count(events, EVALUATE + "ReluBackward0") == 1
    assert _count(events, "aten::threshold_backward") == 1
    assert _count(events, "torch::autograd::AccumulateGrad") == 4
    assert _count(events, EVALUATE + "torch::autograd::AccumulateGrad") == 4
    for e in events:
        if e.name.startswith(EVALUATE):
            inner = e.name[len(EVALUATE):]
            assert [c.name for c in e.cpu_children] == [inner]
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::linear"].count == 2
    assert averages["torch::autograd::AccumulateGrad"].count == 4
    assert all(p.grad is not None for p in model.parameters())


def test_nesting_and_self_times():
    model = _mlp()
    x = mt.randn(4, 3)
    with aprof.profile() as prof:
        with aprof.record_function("outer"):
            with aprof.record_function("inner"):
                y = model(x)
            z = y.relu().sum()
        z.backward()
    events = prof.function_events
    outer = next(e for e in events if e.name == "outer")
    inner = next(e for e in events if e.name == "inner")
    assert inner.cpu_parent is outer and inner in outer.cpu_children
    assert [c.name for c in inner.cpu_children] == ["aten::linear", "aten::relu",
                                                    "aten::linear"]
    assert {c.name for c in outer.cpu_children} == {"inner", "aten::relu", "aten::sum"}
    for e in events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        children = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.self_cpu_time_total == pytest.approx(e.cpu_time_total - children, abs=1e-6)
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start <= c.time_range.end \
                <= e.time_range.end
        if e.cpu_parent is None:
            assert e.name in ("outer",) or e.name.startswith(EVALUATE) or e.name == "aten::add"
    # the self times add up to every top-level range's total
    top = sum(e.cpu_time_total for e in events if e.cpu_parent is None)
    assert events.self_cpu_time_total == pytest.approx(top)
    assert prof.self_cpu_time_total == pytest.approx(top)
    total = prof.total_average()
    assert total.key == "Total" and total.count == len(events)
    assert total.self_cpu_time_total == pytest.approx(top)


def test_record_shapes_and_flops():
    a, b = mt.randn(4, 3), mt.randn(3, 5)
    w = mt.randn(6, 5)
    with aprof.profile(record_shapes=True, with_flops=True) as prof:
        c = a @ b
        mt.nn.functional.linear(c, w)
        a + a
    by_name = {e.name: e for e in prof.function_events}
    assert by_name["aten::add"].input_shapes == [[4, 3], [4, 3]]
    assert by_name["aten::linear"].input_shapes[:2] == [[4, 5], [6, 5]]
    assert by_name["aten::linear"].flops == 2 * 4 * 5 * 6
    grouped = prof.key_averages(group_by_input_shape=True)
    assert "Input Shapes" in grouped.table().splitlines()[1]
    assert "[[4, 3], [4, 3]]" in grouped.table()
    assert "Total" in prof.key_averages().table().splitlines()[1]    # the FLOPs column
    # without record_shapes, no shapes (and no column)
    with aprof.profile() as plain:
        a + a
    assert plain.function_events[0].input_shapes == []
    assert "Input Shapes" not in plain.key_averages().table()


TORCH_COLUMNS = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                 "# of Calls"]


def _header_columns(table):
    lines = table.splitlines()
    assert set(lines[0]) <= {"-", " "} and set(lines[2]) <= {"-", " "}
    return [c.strip() for c in lines[1].split("  ") if c.strip()]


def test_table_has_torchs_columns():
    x = mt.randn(8, 8)
    with profile(record_shapes=True) as prof:
        for _ in range(3):
            x.mm(x).relu()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    assert _header_columns(table) == TORCH_COLUMNS
    assert table.rstrip().splitlines()[-1].startswith("Self CPU time total: ")
    rows = {line.split()[0]: line.split() for line in table.splitlines()[3:-2]}
    assert rows["aten::mm"][-1] == "3" and rows["aten::relu"][-1] == "3"
    shaped = prof.key_averages(group_by_input_shape=True).table()
    assert _header_columns(shaped) == TORCH_COLUMNS + ["Input Shapes"]
    assert "[[8, 8], [8, 8]]" in shaped
    # row_limit, sorting, top-level only
    assert len(prof.key_averages().table(row_limit=1).splitlines()) == 6
    ordered = prof.key_averages().table(sort_by="count")
    assert _header_columns(ordered) == TORCH_COLUMNS
    assert "This report only display top-level ops statistics" in \
        prof.events().table(top_level_events_only=True)


@needs_torch
def test_table_layout_matches_torchs():
    """Same events and times give torch's table character for character."""
    from torch.autograd.profiler_util import EventList as TorchEventList
    from torch.autograd.profiler_util import FunctionEvent as TorchEvent
    spans = [("aten::mm", 0.0, 12.5, None), ("aten::relu", 20.0, 23.25, None),
             ("my_range", 30.0, 130.0, None), ("aten::mul", 40.0, 41.5, 2)]
    ours = []
    theirs = []
    for i, (name, start, end, parent) in enumerate(spans):
        ours.append(aprof.FunctionEvent(i, name, 1, start, end))
        theirs.append(TorchEvent(i, name, 1, start, end, stack=[], input_shapes=[]))
        if parent is not None:
            ours[parent].append_cpu_child(ours[i])
            ours[i].set_cpu_parent(ours[parent])
            theirs[parent].append_cpu_child(theirs[i])
            theirs[i].set_cpu_parent(theirs[parent])
    for args in ({}, {"sort_by": "self_cpu_time_total"}, {"row_limit": 2},
                 {"header": "title"}):
        expected = TorchEventList(theirs)
        expected._tree_built = True     # (the links above are the tree)
        assert aprof.EventList(ours).key_averages().table(**args) == \
            expected.key_averages().table(**args)
        assert aprof.EventList(ours).table(**args) == expected.table(**args)


def test_export_chrome_trace(tmp_path):
    x = mt.randn(5, 5, requires_grad=True)
    with profile(record_shapes=True) as prof, record_function("step"):
        (x * x).sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert len(events) == len(prof.events())
    for event in events:
        assert event["ph"] == "X"
        assert {"name", "ts", "dur", "pid", "tid"} <= set(event)
        assert event["dur"] >= 0
    names = [e["name"] for e in events]
    assert "step" in names and "aten::mul" in names and EVALUATE + "MulBackward0" in names
    step = events[names.index("step")]
    mul = events[names.index("aten::mul")]
    assert step["ts"] <= mul["ts"] and mul["ts"] + mul["dur"] <= step["ts"] + step["dur"] + 1e-3
    assert mul["args"]["Input Dims"] == [[5, 5], [5, 5]]
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    with gzip.open(gz, "rt") as f:
        assert len(json.load(f)["traceEvents"]) == len(events)


SCHEDULES = [{"wait": 1, "warmup": 1, "active": 2},
             {"wait": 2, "warmup": 1, "active": 3, "repeat": 2},
             {"wait": 0, "warmup": 2, "active": 1, "repeat": 3, "skip_first": 2},
             {"wait": 3, "warmup": 1, "active": 2, "repeat": 1, "skip_first": 4,
              "skip_first_wait": 1}]


@needs_torch
@pytest.mark.parametrize("params", SCHEDULES)
def test_schedule_matches_torch(params):
    ours = schedule(**params)
    theirs = tprof.schedule(**params)
    assert [ours(i).name for i in range(40)] == [theirs(i).name for i in range(40)]


def test_schedule_actions_and_checks():
    s = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [s(i) for i in range(6)] == [ProfilerAction.NONE, ProfilerAction.WARMUP,
                                        ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
                                        ProfilerAction.NONE, ProfilerAction.NONE]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)


def _run_scheduled(lib, make_profile, sched, steps):
    """Per trace-ready call: the step numbers and the op count the cycle recorded."""
    cycles = []

    def ready(p):
        averages = {a.key: a.count for a in p.key_averages()}
        cycles.append((p.step_num, averages.get("ProfilerStep*", 0)))

    x = lib.ones(4)
    with make_profile(schedule=sched, on_trace_ready=ready) as p:
        for _ in range(steps):
            x = x * 1
            p.step()
    return cycles


@needs_torch
@pytest.mark.parametrize("params", SCHEDULES[:3])
def test_scheduled_profile_steps_as_torch(params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _run_scheduled(mt, lambda **k: profile(activities=[ProfilerActivity.CPU], **k),
                              schedule(**params), 14)
        theirs = _run_scheduled(torch, lambda **k: tprof.profile(
            activities=[tprof.ProfilerActivity.CPU], **k), tprof.schedule(**params), 14)
    assert ours == theirs and ours


def test_scheduled_profile_records_active_steps_only():
    seen = []
    x = mt.ones(3)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: seen.append(p.events())) as p:
        for _ in range(6):
            x = x * 2
            p.step()
    assert len(seen) == 1
    steps = [e for e in seen[0] if e.name == "ProfilerStep*"]
    assert [e.trace_name for e in steps] == ["ProfilerStep#2", "ProfilerStep#3"]
    assert all([c.name for c in e.cpu_children] == ["aten::mul"] for e in steps)
    assert _count(seen[0], "aten::mul") == 2


def test_start_stop_without_context_manager():
    p = profile(activities=[ProfilerActivity.CPU])
    p.start()
    mt.ones(3) * 2
    p.stop()
    mt.ones(3) * 2
    assert _count(p.events(), "aten::mul") == 1


def test_tensorboard_trace_handler(tmp_path):
    handler = tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                 on_trace_ready=handler) as p:
        for _ in range(5):
            mt.ones(2) + 1
            p.step()
    files = sorted((tmp_path / "tb").iterdir())
    assert len(files) == 2
    for f in files:
        assert f.name.startswith("w0.") and f.name.endswith(".pt.trace.json")
        names = [e["name"] for e in json.loads(f.read_text())["traceEvents"]]
        assert any(n.startswith("ProfilerStep#") for n in names)
    gz = tensorboard_trace_handler(str(tmp_path / "gz"), use_gzip=True)
    with profile() as p:
        mt.ones(2) + 1
    gz(p)
    (f,) = (tmp_path / "gz").iterdir()
    assert f.name.endswith(".pt.trace.json.gz")
    with gzip.open(f, "rt") as fh:
        assert json.load(fh)["traceEvents"]


def test_nothing_recorded_when_off():
    a, b = mt.randn(10), mt.randn(10)
    assert engine._profiling is False
    with record_function("ignored"):         # no profile: nothing to record into
        a + b
    with aprof.profile(enabled=False) as off:
        a + b
    assert off.enabled is False
    with aprof.profile() as prof:
        pass
    a + b
    mt.relu(a)
    assert len(prof.function_events) == 0
    assert engine._profiling is False and engine._profiler is not None  # (left, not used)
    from minitorch.functions import operators
    assert operators._profiling is False
    assert prof.key_averages().table() == ""


def test_profile_changes_no_result():
    model = _mlp()
    x = mt.randn(4, 3)
    model(x).pow(2).sum().backward()
    plain = [p.grad.clone() for p in model.parameters()]
    out = model(x)
    model.zero_grad()
    with profile(record_shapes=True, with_stack=True):
        profiled_out = model(x)
        profiled_out.pow(2).sum().backward()
    np.testing.assert_array_equal(profiled_out.detach().numpy(), out.detach().numpy())
    for g, p in zip(plain, model.parameters()):
        np.testing.assert_array_equal(g.numpy(), p.grad.numpy())


def test_record_function_decorator():
    @record_function("my_block")
    def block(t):
        return (t * 2).relu()

    x = mt.randn(3)
    with profile() as prof:
        block(x)
        block(x)
    blocks = [e for e in prof.events() if e.name == "my_block"]
    assert len(blocks) == 2
    for b in blocks:
        assert [c.name for c in b.cpu_children] == ["aten::mul", "aten::relu"]
    assert {a.key: a.count for a in prof.key_averages()}["my_block"] == 2


def test_user_function_and_nested_profiles():
    class Double(mt.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = mt.randn(3, requires_grad=True)
    with aprof.profile() as outer:
        y = Double.apply(x)
        with aprof.profile() as inner:
            y.sum().backward()
    names = _names(outer.function_events)
    assert names[:2] == ["Double", "aten::mul"]
    assert outer.function_events[1].cpu_parent.name == "Double"
    assert EVALUATE + "DoubleBackward" in names
    inner_names = _names(inner.function_events)
    assert "Double" not in inner_names and EVALUATE + "DoubleBackward" in inner_names
    assert engine._profiling is False


def test_ops_of_other_threads_are_recorded():
    def work():
        mt.ones(4).exp()

    with profile() as prof:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        mt.ones(4).exp()
    exps = [e for e in prof.events() if e.name == "aten::exp"]
    assert len(exps) == 2 and exps[0].thread != exps[1].thread


def test_with_stack_names_the_caller():
    with aprof.profile(with_stack=True) as prof:
        mt.ones(2) * 3
    event = next(e for e in prof.function_events if e.name == "aten::mul")
    assert "test_profiler.py" in event.stack[0]
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()


def test_activities_and_cuda_request():
    assert ProfilerActivity.CPU in supported_activities()
    if not mt.cuda.is_available():
        assert ProfilerActivity.CUDA not in supported_activities()
        p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
            p.start()       # (torch warns as the recording starts, too)
        mt.ones(2) + 1
        p.stop()
        assert _count(p.events(), "aten::add") == 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            aprof.profile(use_cuda=True)
        assert [w.category for w in caught] == [FutureWarning, UserWarning]
    # CUDA alone: no CPU ops are recorded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            mt.ones(2) + 1
    assert len(p.events()) == 0


def test_emit_nvtx_is_a_no_op():
    with aprof.emit_nvtx():
        y = mt.ones(2) + 1
    assert y.tolist() == [2.0, 2.0]


def test_module_paths():
    assert mt.autograd.profiler is aprof
    assert mt.profiler.record_function is aprof.record_function
    assert mt.profiler.profiler.profile is profile
    from minitorch.autograd.profiler_util import EventList, FunctionEvent  # noqa: F401
