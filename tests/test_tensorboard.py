"""torch.utils.tensorboard's SummaryWriter: event files TensorBoard reads back (scalars,
histograms, images, text, hyperparameters, several series in one chart), the same Summary
protocol buffers as torch's for the same values, and the errors and refusals."""
import numpy as np
import pytest

import minitorch as mt

tensorboard = pytest.importorskip("tensorboard", reason="the tensorboard package is not "
                                  "installed (minitorch's test and tensorboard extras have it)")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa

from minitorch.utils.tensorboard import SummaryWriter  # noqa: E402
from minitorch.utils.tensorboard import summary as S  # noqa: E402

try:
    from torch.utils.tensorboard import summary as torch_summary
    import torch
except ImportError:
    torch = None


def _read(directory):
    accumulator = EventAccumulator(str(directory))
    accumulator.Reload()
    return accumulator


def test_written_events_read_back(tmp_path, device):
    rng = np.random.default_rng(0)
    weights = rng.standard_normal(1000)
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalar("loss", mt.tensor(1.0 / (step + 1), device=device), step)
            writer.add_scalar("lr", 0.1 * step, step)
        writer.add_histogram("weights", mt.tensor(weights, device=device), 7)
        writer.add_image("image", mt.tensor(rng.random((3, 8, 10)), device=device), 0)
        writer.add_images("batch", mt.tensor(rng.random((5, 1, 4, 4)), device=device), 0)
        writer.add_text("note", "hello", 0)
        writer.add_scalars("run", {"train": 1.0, "test": mt.tensor([2.0])}, 4)
        writer.add_hparams({"lr": 0.1, "optimizer": "sgd"}, {"hparam/accuracy": 0.9},
                           run_name="trial")
    events = _read(tmp_path)
    assert [(e.step, round(e.value, 6)) for e in events.Scalars("loss")] == \
        [(0, 1.0), (1, 0.5), (2, round(1 / 3, 6))]
    histogram = events.Histograms("weights")[0]
    assert histogram.step == 7
    value = histogram.histogram_value
    assert value.num == 1000 and sum(value.bucket) == 1000
    assert np.isclose(value.sum, weights.sum()) and np.isclose(value.min, weights.min())
    image = events.Images("image")[0]
    assert (image.width, image.height) == (10, 8)
    assert (events.Images("batch")[0].width, events.Images("batch")[0].height) == (20, 4)
    assert "note/text_summary" in events.Tags()["tensors"]
    for series, number in (("train", 1.0), ("test", 2.0)):
        assert _read(tmp_path / f"run_{series}").Scalars("run")[0].value == number
    trial = _read(tmp_path / "trial")
    assert trial.Scalars("hparam/accuracy")[0].value == pytest.approx(0.9)


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_summaries_are_torchs():
    values = np.random.default_rng(1).standard_normal(500)
    bins = [-1.0, 0.0, 0.5, 1.0, 3.0]
    pairs = [(S.scalar("x", mt.tensor(2.5)), torch_summary.scalar("x", torch.tensor(2.5))),
             (S.scalar("x", 2.5, new_style=True, double_precision=True),
              torch_summary.scalar("x", 2.5, new_style=True, double_precision=True)),
             (S.histogram("h", mt.tensor(values), bins),
              torch_summary.histogram("h", torch.tensor(values), bins)),
             (S.histogram("h", mt.tensor(values), 64, max_bins=10),
              torch_summary.histogram("h", torch.tensor(values), 64, max_bins=10)),
             (S.text("t", "words"), torch_summary.text("t", "words")),
             (S.image("i", mt.tensor(np.ones((1, 2, 3))), "CHW"),
              torch_summary.image("i", torch.tensor(np.ones((1, 2, 3))), dataformats="CHW"))]
    for ours, theirs in pairs:
        assert ours == theirs
    ours = S.hparams({"lr": 0.1, "bs": 4, "name": "a"}, {"m": 1.0}, {"bs": [4, 8]})
    theirs = torch_summary.hparams({"lr": 0.1, "bs": 4, "name": "a"}, {"m": 1.0}, {"bs": [4, 8]})
    assert list(ours) == list(theirs)


@pytest.mark.parametrize("call, kind, message", [
    (lambda w: w.add_scalar("x", mt.ones(2)), AssertionError,
     "Tensor should contain one element"),
    (lambda w: w.add_hparams([1], {}), TypeError, "should be dictionary"),
    (lambda w: w.add_hparams({"a": [1]}, {}), ValueError, "value should be one of"),
    (lambda w: w.add_histogram("h", mt.ones(0)), ValueError, "The input has no element."),
    (lambda w: w.add_image("i", mt.ones(3, 4), dataformats="CHW"), AssertionError,
     "size of input tensor and input format are different"),
    (lambda w: w.add_graph(mt.nn.Linear(2, 2)), NotImplementedError, "graphs, embeddings"),
])
def test_errors(tmp_path, call, kind, message):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(kind, match=message):
            call(writer)


def test_default_log_dir_and_reopening(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_trial")
    assert writer.get_logdir().startswith("runs") and writer.get_logdir().endswith("_trial")
    writer.close()
    writer.add_scalar("after", 1.0, 0)        # writing again after close opens a new file
    writer.close()
    assert _read(tmp_path / writer.get_logdir()).Scalars("after")[0].value == 1.0
