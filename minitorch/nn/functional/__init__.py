"""torch.nn.functional: layers as functions, one module per family (no module shares a name with
one of its functions, so each name here means one thing):

    activation     relu, gelu, softmax, … and the in-place spellings (relu_, …)
    linear_maps    linear, bilinear
    pooling        max/avg/adaptive/lp pooling in 1-3 dimensions, max_unpool
    normalization  batch/layer/group/instance/rms/local-response norm, normalize
    dropouts       dropout, dropout1d/2d/3d, alpha dropouts
    sparse         embedding, embedding_bag, one_hot (torch's "sparse functions")
    padding        pad
    vision         interpolate, upsample*, pixel_(un)shuffle, channel_shuffle, grid_sample,
                   affine_grid
    loss           every loss function
    distance       pairwise_distance, pdist, cosine_similarity
    attention      scaled_dot_product_attention

Convolution (conv1d/2d/3d, conv_transpose1d/2d/3d) is functions/conv.py, and fold/unfold are
functions/window.py: both are published here. The autograd nodes the families run (Linear,
Hardtanh, Embedding, ConvProduct, MaxPool, …) live in minitorch/functions/.

Argument checks follow torch's order and wording (ATen's shape checks for convolution,
pooling, normalization and the losses), so that a bad call fails here as it would there,
before any state (running statistics, embedding rows) is touched.
"""
# the private names: nn/toplevel.py (_feature_dropout), nn/loss.py (_legacy_reduction),
# nn/pooling.py (_ntuple) and nn/normalization.py (_verify_batch_size) share these helpers
from .activation import (celu, celu_, elu, elu_, gelu, glu, gumbel_softmax, hardshrink,
                         hardsigmoid, hardswish, hardtanh, hardtanh_, leaky_relu, leaky_relu_,
                         log_softmax, logsigmoid, mish, prelu, relu, relu6, relu_, rrelu, rrelu_,
                         selu, selu_, sigmoid, silu, softmax, softmin, softplus, softshrink,
                         softsign, tanh, tanhshrink, threshold, threshold_)
from .linear_maps import bilinear, linear
from ...functions.conv import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
                              conv_transpose3d)
from .pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,
                      adaptive_max_pool1d, adaptive_max_pool1d_with_indices, adaptive_max_pool2d,
                      adaptive_max_pool2d_with_indices, adaptive_max_pool3d,
                      adaptive_max_pool3d_with_indices, avg_pool1d, avg_pool2d, avg_pool3d,
                      lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d, max_pool1d_with_indices,
                      max_pool2d, max_pool2d_with_indices, max_pool3d, max_pool3d_with_indices,
                      max_unpool1d, max_unpool2d, max_unpool3d, _ntuple)
from .normalization import (batch_norm, group_norm, instance_norm, layer_norm, local_response_norm,
                            normalize, rms_norm, _verify_batch_size)
from .dropouts import (alpha_dropout, dropout, dropout1d, dropout2d, dropout3d,
                      feature_alpha_dropout, _feature_dropout)
from .sparse import embedding, embedding_bag, one_hot
from .padding import pad
from .vision import (affine_grid, channel_shuffle, grid_sample, interpolate,
                     native_channel_shuffle, pixel_shuffle, pixel_unshuffle, upsample,
                     upsample_bilinear, upsample_nearest)
from .loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,
                   cross_entropy, ctc_loss, gaussian_nll_loss, hinge_embedding_loss, huber_loss,
                   kl_div, l1_loss, _legacy_reduction, margin_ranking_loss, mse_loss,
                   multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss,
                   nll_loss, poisson_nll_loss, smooth_l1_loss, soft_margin_loss,
                   triplet_margin_loss, triplet_margin_with_distance_loss)
from .distance import cosine_similarity, pairwise_distance, pdist
from .attention import scaled_dot_product_attention
from .fractional_pooling import (fractional_max_pool2d, fractional_max_pool2d_with_indices,
                                 fractional_max_pool3d, fractional_max_pool3d_with_indices)
from ...functions.window import fold, unfold

__all__ = [
    "celu_", "elu_", "hardtanh_", "leaky_relu_", "native_channel_shuffle", "pdist", "relu_",
    "rrelu_", "selu_", "threshold_",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices", "affine_grid", "alpha_dropout", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "batch_norm", "bilinear", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "celu", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_embedding_loss", "cosine_similarity", "cross_entropy", "ctc_loss", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "elu", "embedding", "embedding_bag",
    "feature_alpha_dropout", "fold", "gaussian_nll_loss", "gelu", "glu", "grid_sample",
    "group_norm", "gumbel_softmax", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hinge_embedding_loss", "huber_loss", "instance_norm", "interpolate", "kl_div", "l1_loss",
    "layer_norm", "leaky_relu", "linear", "local_response_norm", "log_softmax", "logsigmoid",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "margin_ranking_loss", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "max_pool3d",
    "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "mish",
    "mse_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "nll_loss", "normalize",
    "one_hot", "pad", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle",
    "poisson_nll_loss", "prelu", "relu", "relu6", "rms_norm", "rrelu",
    "scaled_dot_product_attention", "selu", "sigmoid", "silu", "smooth_l1_loss",
    "soft_margin_loss", "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh",
    "tanhshrink", "threshold", "triplet_margin_loss", "triplet_margin_with_distance_loss",
    "unfold", "upsample", "upsample_bilinear", "upsample_nearest",
]
