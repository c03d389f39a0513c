"""Distribution, the base of every distribution (torch.distributions.Distribution)."""
import warnings

from ..autograd import no_grad
from ..functions.elementwise import exp
from ..tensor import Size, Tensor
from . import constraints
from .utils import as_size, format_value, lazy_property

__all__ = ["Distribution", "ExponentialFamily"]


def _satisfies(constraint, value):
    """Whether every element of value satisfies constraint. Checked without recording: the
    answer is a bool, so the nodes of the check's arithmetic (a simplex's sum, say) would only
    be garbage."""
    with no_grad():
        return bool(constraint.check(value).all())


class Distribution:
    """A batch of probability distributions: parameters broadcast to `batch_shape`, and each
    sample (one event) has `event_shape`. Subclasses list the tensors that carry the batch in
    `_batched_params` (expand() expands them) and plain state in `_copied_attrs`."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    _batched_params = ()
    _copied_attrs = ()

    @staticmethod
    def set_default_validate_args(value):
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = as_size(batch_shape)
        self._event_shape = as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self):
        """Raise torch's ValueError for the first parameter outside its constraint."""
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
            return
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                         lazy_property):
                continue    # the other parametrisation was given; this one is derived
            value = getattr(self, param)
            if not _satisfies(constraint, value):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"{constraint!r}, but found invalid values:\n{format_value(value)}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded (no copy) to `batch_shape`."""
        if not self._batched_params:
            raise NotImplementedError
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = as_size(batch_shape)
        for name in self._batched_params:
            if name in self.__dict__:
                value = self.__dict__[name]
                event_part = tuple(value.shape[len(self._batch_shape):])
                setattr(new, name, value.expand(tuple(batch_shape) + event_part))
        for name in self._copied_attrs:
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name])
        return self._finish_expand(new, batch_shape)

    def _finish_expand(self, new, batch_shape):
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        return self.__new__(type(self)) if _instance is None else _instance

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return exp(self.entropy())

    def _extended_shape(self, sample_shape=Size()):
        return as_size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        """torch's checks of a value to score: a tensor, event shape matching, broadcastable
        with batch_shape + event_shape, and inside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.shape} vs {self._event_shape}.")
        expected = as_size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(value.shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{value.shape} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
            return
        if not _satisfies(support, value):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{format_value(value)}")

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: " + (format_value(self.__dict__[p])
                                     if self.__dict__[p].numel() == 1
                                     else str(self.__dict__[p].size())) for p in names)
        return self.__class__.__name__ + "(" + args + ")"


class ExponentialFamily(Distribution):
    """Marker base of the exponential-family distributions (torch's class hierarchy, which
    kl_divergence's dispatch follows). Entropies are written out in each subclass rather than
    derived from the log-normaliser by autograd."""
