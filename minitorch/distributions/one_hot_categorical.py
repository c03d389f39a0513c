"""OneHotCategoricalStraightThrough: OneHotCategorical with the straight-through gradient
estimator (OneHotCategorical itself lives in discrete.py and is re-exported here, as torch's
one_hot_categorical module has both)."""
from ..tensor import Size
from .discrete import OneHotCategorical

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A reparameterizable OneHotCategorical: rsample returns the one-hot sample, with the
    gradient of the probabilities passed straight through it (Bengio et al., 2013, "Estimating
    or Propagating Gradients Through Stochastic Neurons for Conditional Computation")."""
    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs     # cached by its lazy_property
        return samples + (probs - probs.detach())
