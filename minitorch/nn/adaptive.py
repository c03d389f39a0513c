"""AdaptiveLogSoftmaxWithLoss (torch.nn.AdaptiveLogSoftmaxWithLoss, Grave et al.'s adaptive
softmax) and the `_ASMoutput` namedtuple its forward returns.

The classes are split by frequency: the shortlist (targets below cutoffs[0]) is scored by the
head alone; every later cluster gets one head logit, and its members are scored by that logit's
log-probability plus the log-softmax of a low-rank tail projection. Forward evaluates a tail only
on the rows whose target falls in it, as torch does.
"""
from collections import namedtuple

import minitorch as mt

from . import functional as F
from .containers import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _check_cutoffs(cutoffs, n_classes):
    """torch's cutoff checks: a non-empty, increasing list of unique ints in [1, n_classes-1]."""
    if len(cutoffs) == 0:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
        raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an "
                         "increasing order, where each value is between 1 and n_classes-1")


def _check_forward_shapes(input, target):
    """torch's shape checks: a 1-d target goes with a 2-d input of the same batch, a 0-d target
    with a 1-d input."""
    if target.dim() == 1:
        if input.size(0) != target.size(0):
            raise RuntimeError("Input and target should have the same size in the batch "
                               "dimension.")
        if input.dim() != 2:
            raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with "
                               f"size {input.size()}")
    elif target.dim() == 0:
        if input.dim() != 1:
            raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with "
                               f"size {input.size()}")
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax: log-probabilities of the targets and their mean negative log-likelihood
    (torch.nn.AdaptiveLogSoftmaxWithLoss). Labels must be sorted by frequency, 0 the most
    frequent; tail cluster i projects to in_features // div_value**(i+1) features."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        _check_cutoffs(cutoffs, n_classes)
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        factory = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self):
        """Re-draw every weight as the constructor did."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        """(output, loss): each target's log-probability, shape (N) or () as the target, and
        their mean negated."""
        _check_forward_shapes(input_, target_)
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        output, head_column = self._tail_log_probs(input, target)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        # torch squeezes all dims here: a batch of one adds a 0-d tensor (broadcast)
        output = output + head_logprob.gather(1, head_column.unsqueeze(1)).squeeze()
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _tail_log_probs(self, input, target):
        """Per row: the log-probability within its target's tail cluster (0 for shortlist
        targets), and the head column that scores it (the target itself, or the cluster's)."""
        batch = target.size(0)
        output = input.new_zeros(batch)
        head_column = target.new_empty(batch)
        used_rows = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            mask = (target >= bounds[i]) & (target < bounds[i + 1])
            rows = mask.nonzero().squeeze()
            if rows.numel() == 0:
                continue
            if i == 0:
                head_column.index_copy_(0, rows, target[mask])
            else:
                head_column.index_fill_(0, rows, self.shortlist_size + i - 1)
                logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
                local = logprob.gather(1, (target[mask] - bounds[i]).unsqueeze(1))
                output = output.index_copy(0, rows, local.squeeze(1))
            used_rows += rows.numel()
        if used_rows != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, {target.max().item()}] "
                               "were found. ")
        return output, head_column

    def _get_full_log_prob(self, input, head_output):
        """(N, n_classes) log-probabilities: the shortlist's from the head, each cluster's as
        its head log-probability plus the tail's log-softmax."""
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster_logprob = F.log_softmax(projection(input), dim=1)
            parts.append(cluster_logprob +
                         head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return mt.cat(parts, dim=1)

    def log_prob(self, input):
        """Log-probabilities of all n_classes classes, (N, in_features) -> (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each row, (N, in_features) -> (N): log_prob(input)'s
        argmax, with the tails evaluated only for rows whose head argmax is a cluster."""
        head_output = self.head(input)
        output = mt.argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not not_in_shortlist.any():
            return output
        if not_in_shortlist.all():
            return mt.argmax(self._get_full_log_prob(input, head_output), dim=1)
        log_prob = self._get_full_log_prob(input[not_in_shortlist],
                                           head_output[not_in_shortlist])
        output[not_in_shortlist] = mt.argmax(log_prob, dim=1)
        return output
