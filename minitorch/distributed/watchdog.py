"""The timeout of blocking collectives: a daemon thread that ends the whole job, naming the
operation, when one collective runs past the process group's timeout (MPI offers no way to
cancel a blocking collective, so like torch's NCCL watchdog it tears the job down)."""
import sys
import threading
import time


class Watchdog:
    """begin(operation, timeout) and end() around each blocking engine call."""

    def __init__(self, rank, abort, period_s=0.25):
        self.rank, self.abort, self.period_s = rank, abort, period_s
        self._current = None            # (operation name, start time, timeout) while one runs
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="minitorch-distributed-watchdog",
                                        daemon=True)
        self._thread.start()

    def begin(self, operation, timeout_s):
        self._current = (operation, time.monotonic(), timeout_s)

    def end(self):
        self._current = None

    def stop(self):
        self._stopped.set()

    def _run(self):
        while not self._stopped.wait(self.period_s):
            current = self._current
            if current is None:
                continue
            operation, start, timeout_s = current
            elapsed = time.monotonic() - start
            if elapsed > timeout_s:
                sys.stderr.write(timeout_message(self.rank, operation, elapsed, timeout_s)
                                 + "; aborting the job\n")
                sys.stderr.flush()
                self.abort()
                return


def timeout_message(rank, operation, elapsed_s, timeout_s):
    """torch's watchdog wording, with our operation's name."""
    return (f"[Rank {rank}] Watchdog caught collective operation timeout: "
            f"{operation} (Timeout(ms)={int(timeout_s * 1000)}) ran for "
            f"{int(elapsed_s * 1000)} milliseconds before timing out")
