"""ReduceOp (torch.distributed.ReduceOp) and its meaning for each engine's reductions."""
import enum


class ReduceOp(enum.Enum):
    """The reductions collectives accept: `dist.ReduceOp.SUM`, …"""
    SUM = 0
    PRODUCT = 1
    MIN = 2
    MAX = 3
    AVG = 4

    # Members are singletons: hashed by identity in C rather than Enum's hash of the name in
    # Python, which every all-reduce paid twice (the engine's op table, its set of direct ops).
    __hash__ = object.__hash__

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self):
        return f"RedOpType.{self.name}"


def check_op(op):
    """torch's TypeError for anything but a ReduceOp member."""
    if not isinstance(op, ReduceOp):
        raise TypeError("(): incompatible function arguments. The following argument types are "
                        "supported:\n    1. (self, arg0: ReduceOp) -> None\n\n"
                        f"Invoked with: {op!r}")
    return op


def supports_complex(reduceOp):
    """Whether reduceOp means the same on complex tensors as on their (re, im) pairs, which is
    how engines reduce them: sums and averages do, max, min and product do not
    (torch.distributed.supports_complex)."""
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT)


def for_bool(op):
    """Bools are stored as 0/1 bytes: a sum or a product must stay 0/1 (torch's logical or/and),
    which the byte max/min give."""
    if op is ReduceOp.SUM or op is ReduceOp.MAX:
        return ReduceOp.MAX
    if op is ReduceOp.PRODUCT or op is ReduceOp.MIN:
        return ReduceOp.MIN
    raise RuntimeError("ReduceOp.AVG is not supported for bool tensors")
