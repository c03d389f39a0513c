"""torch.profiler.profiler: the profiler with a schedule. Each recording cycle is one
minitorch.autograd.profiler.profile; `step()` moves through torch's ProfilerAction states with
torch's transition table (prepare / start / stop the trace, call on_trace_ready), and with a
schedule every step is a "ProfilerStep#N" range."""
import enum
import os
import socket
import time
import warnings
from functools import partial

from ..autograd import profiler as prof


class ProfilerActivity(enum.Enum):
    """torch's activity groups. CPU is recorded; CUDA (when a GPU is there) is accepted, but
    device kernels are not traced."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (the values a schedule returns)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """{CPU}, plus CUDA where a GPU is available (torch's answer; no device kernels are traced
    here)."""
    from .. import cuda
    activities = {ProfilerActivity.CPU}
    if cuda.is_available():
        activities.add(ProfilerActivity.CUDA)
    return activities


def kineto_available():
    return False


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """torch's schedule: skip `skip_first` steps, then cycles of `wait` steps doing nothing,
    `warmup` steps warming up and `active` steps recording (the last one RECORD_AND_SAVE),
    `repeat` times (0: forever)."""

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False,
                              use_python_export=False):
    """An on_trace_ready handler writing each cycle's chrome trace to
    `dir_name/<worker_name>.<time_ns>.pt.trace.json[.gz]` (TensorBoard's profiler plugin reads
    that directory)."""

    def handler_fn(p):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        p.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


class _KinetoProfile:
    """The profiler without a schedule: start() / stop() one recording."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, with_modules=False, experimental_config=None,
                 execution_trace_observer=None, acc_events=False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        self.activities = set(activities) if activities is not None else supported_activities()
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.profiler = None
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None
        self.preset_metadata = {}

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        if self.profiler is None or not self.acc_events:
            self.profiler = prof.profile(
                use_cpu=ProfilerActivity.CPU in self.activities, use_device=self.use_device,
                record_shapes=self.record_shapes, with_flops=self.with_flops,
                profile_memory=self.profile_memory, with_stack=self.with_stack,
                with_modules=self.with_modules, use_kineto=True,
                experimental_config=self.experimental_config, acc_events=self.acc_events,
                custom_trace_id_callback=self.custom_trace_id_callback)
        self.profiler._prepare_trace()

    def start_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler._start_trace()

    def stop_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)

    def _results(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting trace")
        return self.profiler._ensure_function_events()

    def export_chrome_trace(self, path):
        """Write the last recording as chrome trace JSON (gzip when path ends with .gz)."""
        return self._results().export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting stacks")
        return self.profiler.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """The last recording's events averaged by name (see EventList.key_averages)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def events(self):
        """The last recording's FunctionEvents."""
        return self._results()

    def add_metadata(self, key, value):
        self.preset_metadata[key] = value

    def add_metadata_json(self, key, value):
        self.preset_metadata[key] = value

    def export_memory_timeline(self, path, device=None):
        raise NotImplementedError("minitorch's profiler does not record memory")


class profile(_KinetoProfile):
    """torch.profiler.profile: `with profile(activities=[ProfilerActivity.CPU],
    schedule=schedule(wait=1, warmup=1, active=3), on_trace_ready=handler) as p:` then
    `p.step()` after each training step."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        activities_set = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                activities_set.add(ProfilerActivity.CUDA)
            elif ProfilerActivity.CUDA in activities_set:
                activities_set.remove(ProfilerActivity.CUDA)
        if len(activities_set) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities_set, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events, custom_trace_id_callback=custom_trace_id_callback)
        if schedule:
            self.schedule = schedule
            self.record_steps = True        # step ranges in the trace and the table
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        A = ProfilerAction
        self.action_map = {     # torch's transitions: (previous, current) -> what to do
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [partial(warnings.warn,
                                         "Incorrect schedule: WARMUP followed by NONE"),
                                 self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warnings.warn,
                                         "Incorrect schedule: RECORD followed by NONE"),
                                 self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warnings.warn,
                                           "Incorrect schedule: RECORD followed by WARMUP"),
                                   self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace, self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready,
                                                     self.prepare_trace, self.start_trace],
            # leaving the profiler
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """The next step begins: the schedule's action for it is taken."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action), ()):
            action()
