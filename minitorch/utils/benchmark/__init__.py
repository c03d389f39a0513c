"""torch.utils.benchmark's Timer and Measurement: `Timer(stmt, setup, globals=...)` times a
statement with Python's timeit, on `num_threads` of minitorch's threads, and returns a
Measurement (times per run, median, IQR, torch's printout). Callgrind, Compare and the fuzzers
are not here."""
import statistics
import textwrap
import timeit as _timeit


__all__ = ["Timer", "Measurement", "TaskSpec"]


class TaskSpec:
    """What was timed: the statement, its setup and the labels (torch's TaskSpec fields)."""

    def __init__(self, stmt, setup, global_setup="", label=None, sub_label=None,
                 description=None, env=None, num_threads=1):
        self.stmt, self.setup, self.global_setup = stmt, setup, global_setup
        self.label, self.sub_label, self.description = label, sub_label, description
        self.env, self.num_threads = env, num_threads

    @property
    def title(self):
        """The label (and sub_label) when given, else the statement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        return self.stmt


def _unit(seconds):
    for scale, name in ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms")):
        if seconds < scale * 1000:
            return scale, name
    return 1.0, "s"


class Measurement:
    """Runs of a statement: `raw_times` are the seconds of each block of `number_per_run`
    calls, `times` the seconds per call."""

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run, self.raw_times = number_per_run, list(raw_times)
        self.task_spec, self.metadata = task_spec, metadata

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self):
        return statistics.fmean(self.times)

    @property
    def median(self):
        return statistics.median(self.times)

    def _quartiles(self):
        times = sorted(self.times)
        if len(times) < 2:
            return times[0], times[0]
        q = statistics.quantiles(times, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def iqr(self):
        low, high = self._quartiles()
        return high - low

    @property
    def title(self):
        return self.task_spec.title

    def __repr__(self):
        scale, unit = _unit(self.median)
        lines = [object.__repr__(self), self.title]
        if self.task_spec.description:
            lines.append(self.task_spec.description)
        threads = self.task_spec.num_threads
        thread_text = f"{threads} thread" + ("s" if threads != 1 else "")
        if len(self.times) == 1:
            lines.append(f"  {self.median / scale:.2f} {unit}")
            lines.append(f"  1 measurement, {self.number_per_run} runs , {thread_text}")
        else:
            low, high = self._quartiles()
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            lines.append(f"  IQR:    {(high - low) / scale:.2f} {unit} ({low / scale:.2f} to "
                         f"{high / scale:.2f})")
            lines.append(f"  {len(self.times)} measurements, {self.number_per_run} runs per "
                         f"measurement, {thread_text}")
        return "\n".join(lines)


class Timer:
    """torch.utils.benchmark.Timer for Python statements (language="python" only)."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=None, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language="python"):
        if str(getattr(language, "name", language)).lower() != "python":
            raise ValueError("minitorch's Timer runs Python statements only")
        self._task_spec = TaskSpec(textwrap.dedent(stmt).strip(), textwrap.dedent(setup),
                                   global_setup, label, sub_label, description, env,
                                   num_threads)
        self._timer = _timeit.Timer(stmt=self._task_spec.stmt, setup=self._task_spec.setup,
                                    timer=timer or _timeit.default_timer,
                                    globals=dict(globals or {}))

    def _run(self, number):
        from ... import get_num_threads, set_num_threads
        previous = get_num_threads()
        set_num_threads(self._task_spec.num_threads)
        try:
            return self._timer.timeit(number)
        finally:
            set_num_threads(previous)

    def timeit(self, number=1000000):
        """One block of `number` calls (after one warm-up call), as one measurement."""
        self._run(1)
        return Measurement(number, [self._run(number)], self._task_spec)

    def _calls_per_block(self):
        """Calls per block: enough for a block of at least 10 ms (torch's heuristic)."""
        number = 1
        while True:
            if self._run(number) >= 0.01 or number >= 10 ** 9:
                return number
            number *= 10

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of a fixed number of calls until min_run_time has passed."""
        number = self._calls_per_block()
        raw, total = [], 0.0
        while total < min_run_time or not raw:
            elapsed = self._run(number)
            if callback is not None:
                callback(number, elapsed)
            raw.append(elapsed)
            total += elapsed
        return Measurement(number, raw, self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        """Blocks until the IQR is within `threshold` of the median (after min_run_time, at
        most max_run_time)."""
        number = self._calls_per_block()
        raw, total = [], 0.0
        while total < max_run_time:
            elapsed = self._run(number)
            if callback is not None:
                callback(number, elapsed)
            raw.append(elapsed)
            total += elapsed
            measurement = Measurement(number, raw, self._task_spec)
            if total >= min_run_time and len(raw) > 3 and \
                    measurement.iqr / measurement.median < threshold:
                break
        return Measurement(number, raw, self._task_spec)
