"""Work: the handle an `async_op=True` collective returns (torch's Work: wait, is_completed)."""
import time

from ..futures import Future
from .errors import DistBackendError
from .watchdog import timeout_message


class Work:
    """A collective in flight. `pending` is the engine's handle (test() -> bool and
    wait(deadline) -> bool); `finish` runs once, after completion, in the caller's thread
    (write-back of compacted tensors, the division of ReduceOp.AVG)."""

    def __init__(self, pending, operation, rank, timeout_s, finish=(), result=None):
        self._pending, self._operation, self._rank = pending, operation, rank
        self._timeout_s, self._finish, self._result = timeout_s, finish, result
        self._done = pending is None
        self._started = time.monotonic()
        if self._done:
            self._run_finish()

    def is_completed(self):
        if not self._done and self._pending.test():
            self._complete()
        return self._done

    def wait(self, timeout=None):
        """Block until done; a DistBackendError (a RuntimeError) naming the operation once the
        timeout passes."""
        limit = self._timeout_s if timeout is None else _seconds(timeout)
        if not self.wait_until(self._started + limit):
            raise DistBackendError(timeout_message(self._rank, self._operation,
                                                   time.monotonic() - self._started, limit))
        return True

    def wait_until(self, deadline):
        """Block until done (True) or until time.monotonic() passes deadline (False)."""
        if self._done:
            return True
        if not self._pending.wait(deadline):
            return False
        self._complete()
        return True

    def get_future(self):
        """A Future completed with result() (the collective's tensors) when this completes,
        or holding the error if it times out (torch's Work.get_future)."""
        future = Future()

        def drive(block):
            try:
                finished = self.wait() if block else self.is_completed()
            except DistBackendError as error:
                future.set_exception(error)
                return
            if finished and not future._event.is_set():
                future.set_result(self.result())
        future._source = drive
        if self._done:
            future.set_result(self.result())
        return future

    def result(self):
        self.wait()
        return self._result if self._result is not None else []

    def _complete(self):
        self._done = True
        self._pending = None
        self._run_finish()

    def _run_finish(self):
        for step in self._finish:
            step()
        self._finish = ()

    def __repr__(self):
        state = "completed" if self._done else "pending"
        return f"<Work {self._operation} {state}>"


def _seconds(timeout):
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
