"""minitorch.nn: Module and Parameter, containers, layers, functional, init and utils (torch.nn's
layout). Each layer module's classes are re-exported here, one import line per module.
"""
from . import attention, common_types, functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401  (DistributedDataParallel)
from .parallel import DataParallel  # noqa: F401
from .activation import (CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid,  # noqa: F401
                         Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
                         MultiheadAttention, PReLU, ReLU, ReLU6, RReLU, SELU, Sigmoid, SiLU,
                         Softmax, Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanh,
                         Tanhshrink, Threshold)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .channelshuffle import ChannelShuffle  # noqa: F401
from .containers import (Container, ModuleDict, ModuleList, ParameterDict,  # noqa: F401
                         ParameterList, Sequential)
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d,  # noqa: F401
                   ConvTranspose2d, ConvTranspose3d)
from .cross_map_lrn import CrossMapLRN2d  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .dropout import (AlphaDropout, Dropout, Dropout1d, Dropout2d,  # noqa: F401
                      Dropout3d, FeatureAlphaDropout)
from .fold import Fold, Unfold  # noqa: F401
from .fractional_pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: F401
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,  # noqa: F401
                   LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
                   LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
                   LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, LazyModuleMixin)
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CTCLoss,  # noqa: F401
                   CrossEntropyLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss,
                   L1Loss, MarginRankingLoss, MSELoss, MultiLabelMarginLoss,
                   MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, NLLLoss2d,
                   PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss,
                   TripletMarginWithDistanceLoss)
from .module import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d,  # noqa: F401
                            GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
                            LayerNorm, LocalResponseNorm, RMSNorm)
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d,  # noqa: F401
                      ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
                      ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d,  # noqa: F401
                      AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
                      AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d,
                      LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d,
                      MaxUnpool3d)
from .rnn import (GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase,  # noqa: F401
                  RNNCell, RNNCellBase)
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .sync_batchnorm import SyncBatchNorm  # noqa: F401
from .transformer import (Transformer, TransformerDecoder,  # noqa: F401
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from . import modules  # noqa: F401,E402  (torch.nn.modules' layout)
