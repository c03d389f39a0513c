"""torch's default DDP communication hooks. `state` is the process group to average over
(None: the default group). Each divides the bucket by the group's size before the sum, as
DDP's own reduction does."""
from .... import distributed as dist
from ....dtypes import bfloat16, float16


def _group(process_group):
    return process_group if process_group is not None else dist.group.WORLD


def allreduce_hook(process_group, bucket):
    """The average over the group, as DDP without a hook computes it."""
    group = _group(process_group)
    tensor = bucket.buffer()
    tensor.div_(group.size())
    return dist.all_reduce(tensor, group=group, async_op=True).get_future().then(
        lambda fut: fut.value()[0])


def fp16_compress_hook(process_group, bucket):
    """The average over the group computed in float16: half the bytes on the wire, float16's
    precision (and range) in the sum."""
    return _compressed_allreduce(process_group, bucket, float16)


def bf16_compress_hook(process_group, bucket):
    """The average over the group computed in bfloat16: half the bytes on the wire, bfloat16's
    precision in the sum."""
    return _compressed_allreduce(process_group, bucket, bfloat16)


def _compressed_allreduce(process_group, bucket, dtype):
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())
    future = dist.all_reduce(compressed, group=group, async_op=True).get_future()

    def decompress(fut):
        buffer.copy_(fut.value()[0])      # back into the bucket, in its own dtype
        return buffer
    return future.then(decompress)
