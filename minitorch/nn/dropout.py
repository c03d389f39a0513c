"""Dropout, Dropout1d/2d/3d (channel-wise), AlphaDropout and FeatureAlphaDropout."""
from . import functional as F
from .module import Module


class _DropoutNd(Module):
    """The probability and in-place flag of every dropout (torch's _DropoutNd: the dropouts
    are siblings, so `isinstance(m, nn.Dropout)` is False for a Dropout2d, as in torch)."""
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p) in training;
    identity in eval (torch.nn.Dropout)."""
    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability p in training
    (torch.nn.Dropout1d)."""
    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) or (C, H, W) input with probability p in training
    (torch.nn.Dropout2d)."""
    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p in
    training (torch.nn.Dropout3d)."""
    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalisation; like torch, it never works in place."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (keeping SELU's mean and variance) in training
    (torch.nn.FeatureAlphaDropout)."""
    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
