"""A process forked after it used CUDA cannot use it: as in torch, its CUDA calls raise "Cannot
re-initialize CUDA in forked subprocess" (a DataLoader worker whose dataset holds cuda tensors)
instead of dying in the driver. Runs on the emulated CuPy, so no GPU is needed."""
import multiprocessing
import sys

import pytest

import minitorch as mt
from minitorch import _gpu

import cuda_emulator


@pytest.fixture
def fresh_cuda(monkeypatch):
    """CUDA through the emulated CuPy, with no backend created yet in this process."""
    monkeypatch.setitem(sys.modules, "cupy", cuda_emulator.cupy_module())
    cuda_emulator.forget_backends(monkeypatch)
    monkeypatch.setattr(_gpu, "_forked", False)


def _child(connection):
    try:
        _gpu.backend_for(0).empty(4, "float32")
        connection.send("no error")
    except RuntimeError as error:
        connection.send(str(error))


def test_a_forked_child_refuses_cuda(fresh_cuda):
    _gpu.backend_for(0)                     # CUDA used here, then fork
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child, args=(send,))
    child.start()
    child.join(timeout=60)
    assert receive.recv() == _gpu.FORKED_MESSAGE
    assert not _gpu._forked                 # the parent goes on using CUDA


def test_a_child_forked_before_cuda_was_used_may_use_it(fresh_cuda):
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child, args=(send,))
    child.start()
    child.join(timeout=60)
    assert receive.recv() == "no error"


class _CudaDataset(mt.utils.data.Dataset):
    def __init__(self):
        self.data = mt.arange(8.0).to("cuda")

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.data[i]


@pytest.mark.skipif(not cuda_emulator.can_execute(), reason="the emulator needs g++")
def test_dataloader_worker_with_cuda_tensors_raises_torchs_error(fresh_cuda):
    loader = mt.utils.data.DataLoader(_CudaDataset(), batch_size=4, num_workers=1,
                                      multiprocessing_context="fork")
    with pytest.raises(RuntimeError, match="Cannot re-initialize CUDA in forked subprocess"):
        next(iter(loader))
