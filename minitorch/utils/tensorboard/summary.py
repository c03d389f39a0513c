"""The Summary protocol buffers a SummaryWriter writes, built from tensors and numbers: their
values are read to the host once (logging is not an op: numpy bins the histograms and PIL
encodes the images, as in torch)."""
import io
import numbers

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ...tensor import Tensor


def host_array(value):
    """A tensor's (detached, on the host), a number's or a sequence's values as numpy."""
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (numbers.Number, np.generic)):
        return np.array([value])
    return np.asarray(value)


def scalar(tag, value, new_style=False, double_precision=False):
    array = host_array(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given "
                             f"size: {array.size} and {array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    proto = TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision else \
        TensorProto(float_val=[number], dtype="DT_FLOAT")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


def histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    histogram = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                               bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=tag, histo=histogram)])


def histogram(tag, values, bins, max_bins=None):
    """TensorBoard's histogram of the values: counts per bin (merged down to max_bins), kept
    from one bin before the first non-empty one to the last non-empty one (TensorBoard reads
    right edges only)."""
    values = host_array(values).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(-1)
        limits = np.append(limits[:-1:group], limits[-1])
    filled = np.flatnonzero(counts)
    first, last = (filled[0], filled[-1]) if filled.size else (0, 0)
    counts = counts[first - 1:last + 1] if first > 0 else np.append(0, counts[:last + 1])
    limits = limits[first:last + 2]
    return histogram_raw(tag, values.min(), values.max(), values.size, values.sum(),
                         values.dot(values), limits.tolist(), counts.tolist())


def _grid(images, columns=8):
    """N images (N, C, H, W), C 1 or 3, tiled into one (3, rows * H, columns * W) canvas."""
    if images.shape[1] == 1:
        images = np.repeat(images, 3, axis=1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = images.shape
    columns = min(count, columns)
    rows = -(-count // columns)
    canvas = np.zeros((3, rows * height, columns * width), images.dtype)
    for i in range(count):
        y, x = divmod(i, columns)
        canvas[:, y * height:(y + 1) * height, x * width:(x + 1) * width] = images[i]
    return canvas


def to_hwc(array, dataformats):
    """An image array in `dataformats` (NCHW, NHWC, CHW, HWC, HW, …) as H x W x C (batches
    tiled into a grid, one channel repeated to three)."""
    if len(set(dataformats)) != len(dataformats):
        raise AssertionError(f"You can not use the same dimension shorthand twice. "
                             f"input_format: {dataformats}")
    if array.ndim != len(dataformats):
        raise AssertionError(f"size of input tensor and input format are different. tensor "
                             f"shape: {array.shape}, input_format: {dataformats}")
    order = dataformats.upper()
    if len(order) == 4:
        return _grid(array.transpose([order.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(order) == 3:
        image = array.transpose([order.find(c) for c in "HWC"])
        return np.repeat(image, 3, axis=2) if image.shape[2] == 1 else image
    return np.repeat(array.transpose([order.find(c) for c in "HW"])[:, :, None], 3, axis=2)


def image(tag, value, dataformats="CHW", rescale=1):
    """A PNG of the image; floats are taken in [0, 1] and uint8 in [0, 255]."""
    array = to_hwc(host_array(value), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    pixels = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=encode_png(pixels, rescale))])


def encode_png(pixels, rescale=1):
    from PIL import Image
    height, width, channels = pixels.shape
    picture = Image.fromarray(pixels)
    picture = picture.resize((int(width * rescale), int(height * rescale)),
                             Image.Resampling.LANCZOS)
    output = io.BytesIO()
    picture.save(output, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=output.getvalue())


def text(tag, text_string):
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=proto)])


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The hparams plugin's three summaries: the experiment (hyperparameter and metric
    names), this session's hyperparameter values, and its end."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import metadata as names
    from tensorboard.plugins.hparams.api_pb2 import (DataType, Experiment, HParamInfo,
                                                     MetricInfo, MetricName, Status)
    from tensorboard.plugins.hparams.plugin_data_pb2 import (HParamsPluginData,
                                                             SessionEndInfo, SessionStartInfo)
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing "
                        "logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or \
                not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")
    start, infos = SessionStartInfo(), []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            v = float(host_array(v).reshape(-1)[0])
        if isinstance(v, (int, float)):     # bools too, as torch logs them (numbers)
            kind, field = "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(v, str):
            kind, field = "DATA_TYPE_STRING", "string_value"
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(start.hparams[k], field, v)
        domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d})
                                              for d in domains[k]]) if k in domains else None
        infos.append(HParamInfo(name=k, type=DataType.Value(kind), domain_discrete=domain))

    def plugin_summary(tag, **content):
        data = HParamsPluginData(version=names.PLUGIN_DATA_VERSION, **content)
        metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name=names.PLUGIN_NAME, content=data.SerializeToString()))
        return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])
    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=k))
                                          for k in metric_dict])
    return (plugin_summary(names.EXPERIMENT_TAG, experiment=experiment),
            plugin_summary(names.SESSION_START_INFO_TAG, session_start_info=start),
            plugin_summary(names.SESSION_END_INFO_TAG, session_end_info=SessionEndInfo(
                status=Status.Value("STATUS_SUCCESS"))))
