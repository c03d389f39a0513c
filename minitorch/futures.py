"""torch.futures: Future, the result of asynchronous work (a collective's `Work.get_future()`,
what a DDP communication hook returns), with `then` for chained steps; collect_all / wait_all.

A Future is completed by `set_result` / `set_exception`, from any thread, or by its source:
the async work it stands for, which `wait()` (blocking) and `done()` (polling) drive, since
MPI advances a non-blocking collective only inside MPI calls."""
import threading


class Future:
    """torch.futures.Future: wait() blocks for the value (raising a set exception), then()
    chains a callback whose return value completes a new Future."""

    def __init__(self, *, devices=None):
        self._event = threading.Event()
        self._value = self._error = None
        self._callbacks = []
        self._source = None       # drive(block) of the work that completes this Future

    def done(self):
        """Whether a value or an exception is set (advancing the work it stands for)."""
        if not self._event.is_set() and self._source is not None:
            self._source(False)
        return self._event.is_set()

    def wait(self):
        """Block until complete; the value, or the exception set on it raised."""
        self._settle()
        if self._error is not None:
            raise self._error
        return self._value

    def _settle(self):
        """Block until complete (driving the source), without raising a set exception."""
        if not self._event.is_set() and self._source is not None:
            self._source(True)
        self._event.wait()

    def value(self):
        """The value of a completed Future (its exception raised); a RuntimeError before."""
        if not self._event.is_set():
            raise RuntimeError("Future::value() called on a Future that is not completed")
        if self._error is not None:
            raise self._error
        return self._value

    def set_result(self, result):
        self._complete(result, None)

    def set_exception(self, result):
        if not isinstance(result, BaseException):
            raise TypeError(f"{result!r} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def then(self, callback):
        """A new Future completed by callback(self) once this one completes (or holding the
        exception callback raised)."""
        child = Future()

        def run(parent):
            try:
                child.set_result(callback(parent))
            except Exception as error:      # the chain carries it to whoever waits
                child.set_exception(error)
        child._source = lambda block: self._settle() if block else self.done()
        self.add_done_callback(run)
        return child

    def add_done_callback(self, callback):
        """callback(self) once complete (now, if it already is)."""
        if self._event.is_set():
            callback(self)
        else:
            self._callbacks.append(callback)

    def _complete(self, value, error):
        if self._event.is_set():
            raise RuntimeError("Future can only be marked completed once.")
        self._value, self._error = value, error
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def __repr__(self):
        return f"<Future {'completed' if self._event.is_set() else 'pending'}>"


def collect_all(futures):
    """A Future completed with the list of `futures` once all of them are (exceptions stay in
    the futures that hold them)."""
    futures = list(futures)
    combined = Future()

    def drive(block):
        for f in futures:
            if block:
                f._settle()
            elif not f.done():
                return
        if not combined._event.is_set():
            combined.set_result(futures)
    combined._source = drive
    if not futures:
        combined.set_result([])
    return combined


def wait_all(futures):
    """The values of `futures`, waiting for each (the first exception raised)."""
    return [f.wait() for f in futures]
