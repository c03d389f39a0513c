"""torch.utils.tensorboard: SummaryWriter, writing TensorBoard event files through the
`tensorboard` package's event-file writer and protocol buffers (like torch's, it needs
`pip install tensorboard`; minitorch's `tensorboard` extra installs it)."""
try:
    import tensorboard  # noqa: F401
except ImportError as error:
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above") \
        from error

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "SummaryWriter"]
