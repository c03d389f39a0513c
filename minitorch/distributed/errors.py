"""torch.distributed's exception types: all RuntimeErrors, so `except RuntimeError` still
catches them. A collective that runs past its timeout raises DistBackendError, as torch's
NCCL watchdog does."""


class DistError(RuntimeError):
    """An error in the distributed library."""


class DistBackendError(DistError):
    """An error in a backend: a collective that failed or timed out."""


class DistNetworkError(DistError):
    """A network error between ranks."""


class DistStoreError(DistError):
    """An error in the rendezvous store (minitorch's ranks meet through MPI or NCCL's
    bootstrap and have no store; kept for code that catches it)."""


class QueueEmptyError(DistStoreError):
    """A store queue was empty (torch's store queues; kept for code that catches it)."""
