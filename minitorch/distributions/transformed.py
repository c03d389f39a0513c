"""Elementwise bijections (ExpTransform, AffineTransform, SigmoidTransform), the
TransformedDistribution they define, and LogNormal = exp of a Normal."""
import math

from .. import dtypes
from ..functions import elementwise as E
from ..functions.joining import broadcast_shapes
from ..nn.functional import softplus
from ..autograd import no_grad
from ..tensor import Size, Tensor, full_like
from . import constraints
from .continuous import Normal
from .distribution import Distribution
from .independent import Independent
from .utils import as_size, sum_rightmost

__all__ = ["AffineTransform", "ExpTransform", "LogNormal", "SigmoidTransform", "Transform",
           "TransformedDistribution"]


class Transform:
    """An invertible map y = f(x) with log|df/dx|. The ones here act elementwise on events of
    `event_dim` dimensions and keep shapes (up to broadcasting with their parameters)."""
    bijective = True
    sign = 1
    domain = constraints.real
    codomain = constraints.real

    def __call__(self, x):
        return self._call(x)

    @property
    def inv(self):
        """The inverse transform, itself a Transform (t.inv(y) inverts; t.inv.inv is t)."""
        return _InverseTransform(self)

    def forward_shape(self, shape):
        return as_size(shape)

    def inverse_shape(self, shape):
        return as_size(shape)

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))

    def __repr__(self):
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """x = f⁻¹(y) of a Transform f, with log|dx/dy| = -log|dy/dx|."""

    def __init__(self, transform):
        self._inv = transform

    @property
    def inv(self):
        return self._inv

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def sign(self):
        return self._inv.sign

    def _call(self, y):
        return self._inv._inverse(y)

    def _inverse(self, x):
        return self._inv._call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __hash__(self):
        return hash((_InverseTransform, self._inv))

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"


class ExpTransform(Transform):
    """y = exp(x)."""
    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    """y = 1 / (1 + exp(-x))."""
    codomain = constraints.unit_interval

    def _call(self, x):
        return _clipped(E.sigmoid(x))

    def _inverse(self, y):
        y = _clipped(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x) - softplus(x)


def _clipped(probability):
    """torch's clamp of a sigmoid's value to [tiny, 1 - eps]: its logit stays finite (in
    float32, 1 - 1e-8 is already 1)."""
    info = dtypes.finfo(probability.dtype)
    return probability.clamp(min=info.tiny, max=1.0 - info.eps)


class AffineTransform(Transform):
    """y = loc + scale * x, with log|scale| summed over `event_dim` rightmost dims."""

    def __init__(self, loc, scale, event_dim=0):
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def domain(self):
        return constraints.independent(constraints.real, self._event_dim) \
            if self._event_dim else constraints.real

    codomain = domain

    @property
    def sign(self):
        if isinstance(self.scale, Tensor):
            return self.scale.sign()
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, Tensor):
            result = scale.abs().log().expand(tuple(broadcast_shapes(x.shape, scale.shape)))
        else:
            result = full_like(x, math.log(abs(scale)))
        return sum_rightmost(result, self._event_dim)

    def _shape(self, shape):
        params = [p.shape for p in (self.loc, self.scale) if isinstance(p, Tensor)]
        return as_size(broadcast_shapes(tuple(shape), *params))

    forward_shape = inverse_shape = _shape

    def __eq__(self, other):
        return (isinstance(other, AffineTransform) and self.loc is other.loc
                and self.scale is other.scale and self._event_dim == other._event_dim)

    __hash__ = Transform.__hash__


class TransformedDistribution(Distribution):
    """TransformedDistribution(base_distribution, transforms): samples of the base pushed
    through the transforms in order; log_prob by the change of variables."""
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        domain_event_dim = max([t.domain.event_dim for t in self.transforms], default=0)
        forward_shape = as_size(base_shape)
        for t in self.transforms:
            forward_shape = t.forward_shape(forward_shape)
        expanded_base_shape = forward_shape
        for t in reversed(self.transforms):
            expanded_base_shape = t.inverse_shape(expanded_base_shape)
        if tuple(expanded_base_shape) != base_shape:
            base_distribution = base_distribution.expand(
                tuple(expanded_base_shape)[:len(expanded_base_shape) - base_event_dim])
        if domain_event_dim > base_event_dim:
            base_distribution = Independent(base_distribution,
                                            domain_event_dim - base_event_dim)
        self.base_dist = base_distribution
        event_dim = max(domain_event_dim, base_event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = as_size(batch_shape)
        shape = as_size(tuple(batch_shape) + tuple(self._event_shape))
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        new.base_dist = self.base_dist.expand(shape[:len(shape) -
                                                    len(self.base_dist.event_shape)])
        new.transforms = self.transforms
        return self._finish_expand(new, batch_shape)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self._event_shape) > support.event_dim:
            support = constraints.independent(support,
                                              len(self._event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=Size()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            log_prob = log_prob - sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                event_dim - transform.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y),
                                        event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """cdf of a decreasing map is 1 - cdf of its preimage."""
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value


class LogNormal(TransformedDistribution):
    """LogNormal(loc, scale): exp of Normal(loc, scale)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc
