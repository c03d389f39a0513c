"""torch.profiler: `profile` (with `schedule`, `on_trace_ready` and `step()`),
`ProfilerActivity`, `ProfilerAction`, `schedule`, `tensorboard_trace_handler`,
`record_function` and `supported_activities`, over the recorder of minitorch.autograd.profiler
(profiler.py). CPU activity only is measured; see autograd/profiler.py for what is recorded."""
from ..autograd.profiler import record_function
from ..autograd.profiler_util import DeviceType
from . import profiler  # torch.profiler.profiler
from .profiler import (ProfilerAction, ProfilerActivity, _KinetoProfile, kineto_available,
                       profile, schedule, supported_activities, tensorboard_trace_handler)

__all__ = ["DeviceType", "ProfilerAction", "ProfilerActivity", "_KinetoProfile",
           "kineto_available", "profile", "profiler", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]
