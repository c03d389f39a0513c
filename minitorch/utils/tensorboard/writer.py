"""SummaryWriter and FileWriter (torch.utils.tensorboard's): events into TensorBoard's event
files through the tensorboard package's EventFileWriter, which writes them from a thread of
its own (every flush_secs, or when max_queue are pending)."""
import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as S


class FileWriter:
    """One event file in log_dir (torch.utils.tensorboard.writer.FileWriter)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


def _default_bins():
    """TensorBoard's histogram bins: ±1e-12 · 1.1^k up to 1e20, and 0."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


class SummaryWriter:
    """Writes scalars, histograms, images, text and hyperparameters for TensorBoard into
    log_dir (default runs/<date>_<time>_<host><comment>). Graphs, embeddings, PR curves,
    audio, video and meshes are not written: those methods raise NotImplementedError."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir, self.purge_step = log_dir, purge_step
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self.default_bins = _default_bins()
        self._get_file_writer()

    def _get_file_writer(self):
        """The default FileWriter, made again after close()."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:     # TensorBoard hides later steps of a crash
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step, session_log=SessionLog(
                    status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def _add(self, summary, global_step, walltime):
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """One value (a number or a one-element tensor) of the series `tag`."""
        self._add(S.scalar(tag, scalar_value, new_style, double_precision), global_step,
                  walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several series in one chart: each in its own run, log_dir/main_tag_tag."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run = os.path.join(root, main_tag.replace("/", "_") + "_" + tag)
            writer = self.all_writers.get(run)
            if writer is None:
                writer = self.all_writers[run] = FileWriter(run, self.max_queue,
                                                            self.flush_secs,
                                                            self.filename_suffix)
            writer.add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """The distribution of the values (bins: "tensorflow", TensorBoard's own, or numpy's
        bins argument)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(S.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        """A histogram already binned."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._add(S.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                  bucket_counts), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """One image (floats in [0, 1] or uint8), laid out as dataformats says."""
        self._add(S.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW"):
        """A batch of images, tiled into one."""
        self._add(S.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, tiled), rendered to an image."""
        if isinstance(figure, list):
            import numpy as np
            image, layout = np.stack([_render(f, close) for f in figure]), "NHWC"
        else:
            image, layout = _render(figure, close), "HWC"
        self._add(S.image(tag, image, layout), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._add(S.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None):
        """A run of the hparams plugin (log_dir/run_name, a timestamp by default) holding
        the hyperparameters and the metrics' values."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_name = run_name or str(time.time())
        with SummaryWriter(log_dir=os.path.join(self._get_file_writer().get_logdir(),
                                                run_name)) as writer:
            for summary in summaries:
                writer.file_writer.add_summary(summary)
            for k, v in metric_dict.items():
                writer.add_scalar(k, v, global_step)

    def _not_written(self, *args, **kwargs):
        raise NotImplementedError(
            "minitorch's SummaryWriter writes scalars, histograms, images, figures, text and "
            "hyperparameters; graphs, embeddings, PR curves, audio, video and meshes are not "
            "written")

    add_graph = add_onnx_graph = add_embedding = add_pr_curve = add_pr_curve_raw = \
        add_audio = add_video = add_mesh = add_custom_scalars = add_image_with_boxes = \
        add_tensor = _not_written

    def flush(self):
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self):
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self.close()


def _render(figure, close):
    """A matplotlib figure as H x W x 3 uint8 pixels (its alpha dropped, as torch does)."""
    import numpy as np
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())[:, :, :3]
    if close:
        plt.close(figure)
    return pixels
