"""torch's top-level spellings of nn.functional (`torch.conv2d`, `torch.dropout`, …): the same
functions, or thin adapters where torch's top-level signature orders or names its arguments
its own way (`torch.embedding(weight, input)`, `torch.batch_norm`'s positional order, the
`train` flag of the dropouts, the extra cudnn flags, the losses' `reduction` as an int).
`minitorch/__init__.py` publishes NAMES."""
from . import functional as F

_SAME = ("conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d avg_pool1d "
         "adaptive_avg_pool1d prelu hardshrink pixel_shuffle pixel_unshuffle channel_shuffle "
         "native_channel_shuffle cosine_similarity pairwise_distance pdist bilinear relu_ selu "
         "selu_ celu celu_ rrelu rrelu_ threshold threshold_ max_pool1d max_pool2d max_pool3d "
         "max_pool1d_with_indices rms_norm")


def dropout(input, p, train):
    """Dropout with probability p when train is True (torch.dropout)."""
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    """In-place dropout with probability p when train is True (torch.dropout_)."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """Alpha dropout (keeps SELU's mean and variance) with probability p when train is True
    (torch.alpha_dropout)."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """In-place alpha dropout with probability p when train is True (torch.alpha_dropout_)."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """Alpha dropout of whole channels with probability p when train is True
    (torch.feature_alpha_dropout)."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """In-place alpha dropout of whole channels with probability p when train is True
    (torch.feature_alpha_dropout_)."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):
    """Whole channels of an (N, C, …) input dropped (F.dropout2d's rule for any rank)."""
    return F._feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    """In-place dropout of whole channels with probability p when train is True
    (torch.feature_dropout_)."""
    return F._feature_dropout(input, p, train, True)


def adaptive_max_pool1d(input, output_size):
    """torch's top-level form returns (values, indices)."""
    return F.adaptive_max_pool1d_with_indices(input, output_size)


def embedding(weight, input, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of weight picked by the indices in input, torch's argument order (weight, input)
    with padding_idx=-1 for none (torch.embedding)."""
    return F.embedding(input, weight, padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """Layer normalization over the trailing normalized_shape dims (torch.layer_norm).
    cudnn_enable is accepted and ignored (there is no cuDNN path)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Group normalization over num_groups channel groups (torch.group_norm). cudnn_enabled is
    accepted and ignored (there is no cuDNN path)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """Batch normalization with torch's positional order (torch.batch_norm). cudnn_enabled is
    accepted and ignored (there is no cuDNN path)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled):
    """Instance normalization with torch's positional order (torch.instance_norm).
    cudnn_enabled is accepted and ignored (there is no cuDNN path)."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


# ---- the losses: torch's top-level forms take `reduction` as ATen's int enum (0 none, 1 mean,
# 2 sum; torch treats any other int as none) and, called without one, do not reduce
_REDUCTIONS = {1: "mean", 2: "sum"}


def _reduction(function, reduction):
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{function}(): argument 'reduction' must be int, not "
                        f"{type(reduction).__name__}")
    return _REDUCTIONS.get(reduction, "none")


def kl_div(input, target, reduction=0, *, log_target=False):
    """F.kl_div with an int reduction (torch.kl_div); 1 is the mean over every element."""
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    how = _reduction("kl_div", reduction)
    return loss if how == "none" else getattr(loss, how)()


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """F.binary_cross_entropy_with_logits with torch's top-level order and an int reduction."""
    return F.binary_cross_entropy_with_logits(
        input, target, weight, pos_weight=pos_weight,
        reduction=_reduction("binary_cross_entropy_with_logits", reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.cosine_embedding_loss with an int reduction (torch.cosine_embedding_loss)."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """F.hinge_embedding_loss with an int reduction (torch.hinge_embedding_loss)."""
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.margin_ranking_loss with an int reduction (torch.margin_ranking_loss)."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """F.poisson_nll_loss with every argument required and an int reduction, as
    torch.poisson_nll_loss."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction=0):
    """F.triplet_margin_loss with an int reduction (torch.triplet_margin_loss)."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """F.ctc_loss with an int reduction (torch.ctc_loss); 1 is F's mean (each loss divided by
    its target length, then averaged)."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction("ctc_loss", reduction), zero_infinity)


NAMES = {name: getattr(F, name) for name in _SAME.split()}
NAMES.update({fn.__name__: fn for fn in (
    dropout, dropout_, alpha_dropout, alpha_dropout_, feature_alpha_dropout,
    feature_alpha_dropout_, feature_dropout, feature_dropout_, adaptive_max_pool1d, embedding,
    layer_norm, group_norm, batch_norm, instance_norm, kl_div, binary_cross_entropy_with_logits,
    cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss, poisson_nll_loss,
    triplet_margin_loss, ctc_loss)})
