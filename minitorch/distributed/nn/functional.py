"""torch.distributed.nn.functional's all_reduce and all_gather: collectives that return new
tensors and take part in autograd, so a loss on one rank can depend on every rank's tensors
(SyncBatchNorm's statistics, a contrastive loss over the embeddings of the whole global batch).

The gradient of an all-reduce is the all-reduce of the gradients (each rank's input reached
every rank's output); the gradient of an all-gather is the sum over ranks of the gradients of
this rank's slot, a reduce-scatter. Like torch's, every rank must run the backward too, in the
same order, since each backward step is a collective."""
from ... import distributed as dist
from ...autograd import Function
from ...functions.joining import stack
from ...tensor import empty_like
from ..reduce_op import ReduceOp


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        result = tensor.contiguous().clone()       # the collective works in place: not on ours
        dist.all_reduce(result, op=op, group=group)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        # torch's rule for every op (the sum's gradient)
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad_output)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        tensor = tensor.contiguous()
        gathered = [empty_like(tensor) for _ in range(dist.get_world_size(group))]
        dist.all_gather(gathered, tensor, group=group)
        return tuple(gathered)

    @staticmethod
    def backward(ctx, *grad_outputs):
        grad = empty_like(grad_outputs[0])
        dist.reduce_scatter_tensor(grad, stack(grad_outputs).contiguous(), op=ReduceOp.SUM,
                                   group=ctx.group)
        return None, grad


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """The reduction of `tensor` over the group's ranks, as a new tensor that autograd
    differentiates (the input is left as it is)."""
    return _AllReduce.apply(op, group, tensor)


def all_gather(tensor, group=None):
    """A tuple of every rank's `tensor`, in rank order, that autograd differentiates."""
    return _AllGather.apply(group, tensor)
