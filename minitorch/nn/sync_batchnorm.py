"""SyncBatchNorm (torch.nn.SyncBatchNorm): batch normalization whose training statistics are
those of the global batch, every rank of the process group contributing its part.

The statistics are two differentiable all-reduces (torch.distributed.nn's): the per-channel sums
with the element count, then the sums of squared deviations from the global mean. autograd
then gives each rank the gradient of the global batch's normalization (the backward of an
all-reduce is the all-reduce of the gradients), as torch's hand-written kernels do; the weight
and bias gradients stay per rank, for DistributedDataParallel to average. Unlike torch, which
synchronises CUDA tensors only, CPU tensors synchronise too (over MPI)."""
import minitorch as mt
from .. import distributed as dist
from ..distributed.nn import all_reduce
from . import functional as F
from .normalization import _BatchNorm


class SyncBatchNorm(_BatchNorm):
    """torch.nn.SyncBatchNorm(num_features, eps=1e-5, momentum=0.1, affine=True,
    track_running_stats=True, process_group=None, device=None, dtype=None, *, bias=True)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        """torch's SyncBatchNorm.forward: the global batch's statistics in training when the
        group has more than one rank, F.batch_norm otherwise (evaluation, one rank, or no
        process group)."""
        self._check_input(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with mt.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / self.num_batches_tracked.item()
        use_batch_stats = self.training or (self.running_mean is None and
                                            self.running_var is None)
        tracked = not self.training or self.track_running_stats
        running_mean = self.running_mean if tracked else None
        running_var = self.running_var if tracked else None
        if not (use_batch_stats and self.training and dist.is_initialized()
                and dist.get_world_size(self.process_group) > 1):
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                use_batch_stats, momentum, self.eps)
        return _global_batch_norm(input, self.weight, self.bias, running_mean, running_var,
                                  self.eps, momentum, self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d in it (itself included) replaced by a SyncBatchNorm
        sharing its parameters and buffers (torch's classmethod)."""
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group,
                            bias=module.bias is not None)
            if module.affine:
                with mt.no_grad():
                    converted.weight, converted.bias = module.weight, module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


def _global_batch_norm(input, weight, bias, running_mean, running_var, eps, momentum, group):
    """Batch normalization with the mean and (biased) variance of every rank's input together;
    the running statistics take the unbiased global variance, as F.batch_norm's do."""
    channels = input.shape[1]
    dims = (0,) + tuple(range(2, input.ndim))
    shape = (1, channels) + (1,) * (input.ndim - 2)
    count = mt.full((1,), input.numel() // channels, dtype=input.dtype, device=input.device)
    totals = all_reduce(mt.cat([input.sum(dims), count]), group=group)
    n = totals[channels]
    mean = totals[:channels] / n
    centered = input - mean.reshape(shape)
    var = all_reduce((centered * centered).sum(dims), group=group) / n
    with mt.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(var.detach() * (n / (n - 1)) * momentum)
    out = centered * (var + eps).rsqrt().reshape(shape)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out
