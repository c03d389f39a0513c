"""MixtureSameFamily(mixture_distribution, component_distribution): a batch of mixtures whose
components are one distribution family, indexed by the component's rightmost batch dim."""
from ..autograd import no_grad
from ..tensor import Size
from . import constraints
from .discrete import Categorical
from .distribution import Distribution
from .utils import as_size

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture: a Categorical `mixture_distribution` over k components chooses, for each
    batch element, one of the k distributions of `component_distribution` (whose rightmost batch
    dimension is k). No rsample, as in torch (the choice is discrete)."""
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = mixture_distribution.batch_shape
        cdbs = as_size(component_distribution.batch_shape[:-1])
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 f"compatible with `component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, new._component_distribution.event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        # the law of total variance: Var(Y) = E[Var(Y | X)] + Var(E[Y | X])
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(dim)
        var_cond_mean = (probs * (self.component_distribution.mean
                                  - self._pad(self.mean)).pow(2.0)).sum(dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))      # [S, B, k]
        log_mix_prob = self.mixture_distribution.logits.log_softmax(-1)     # [B, k]
        return (log_prob_x + log_mix_prob).logsumexp(-1)                    # [S, B]

    def sample(self, sample_shape=Size()):
        with no_grad():
            sample_shape = as_size(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)         # [n, B]
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)    # [n, B, k, E]
            # each sample's component index, repeated over its event, picks along k
            index = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            index = index.repeat((1,) * len(mix_shape) + (1,) + es)
            return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self):
        return ("MixtureSameFamily(\n  " + repr(self.mixture_distribution) + ",\n  "
                + repr(self.component_distribution) + ")")
