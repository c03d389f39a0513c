"""torch.hub's checkpoint downloads (file:// URLs: no network here): cached once, the hash in
the file name checked, loaded with mt.load; the cache directory rules; hubconf loading refused."""
import hashlib
import os

import pytest

import minitorch as mt
from minitorch.utils.model_zoo import load_url


@pytest.fixture
def hub_dir(tmp_path):
    previous = mt.hub._hub_dir
    mt.hub.set_dir(str(tmp_path / "hub"))
    yield tmp_path / "hub"
    mt.hub._hub_dir = previous


def _published(tmp_path, name):
    """A checkpoint at a file:// URL whose name carries its sha256 prefix."""
    source = tmp_path / "source.pt"
    mt.save({"weight": mt.arange(4.0)}, source)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    target = tmp_path / name.format(digest[:10])
    os.replace(source, target)
    return target, digest


def test_download_once_check_the_hash_and_load(tmp_path, hub_dir, capsys):
    path, digest = _published(tmp_path, "resnet-{}.pth")
    url = path.as_uri()
    state = mt.hub.load_state_dict_from_url(url, check_hash=True)
    assert state["weight"].tolist() == [0.0, 1.0, 2.0, 3.0]
    cached = hub_dir / "checkpoints" / path.name
    assert cached.exists() and "Downloading" in capsys.readouterr().out
    path.unlink()                                  # a second call reads the cache
    assert mt.hub.load_state_dict_from_url(url)["weight"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert "Downloading" not in capsys.readouterr().out


def test_model_zoo_load_url_into_its_own_directory(tmp_path, hub_dir):
    path, _ = _published(tmp_path, "weights-{}.pt")
    state = load_url(path.as_uri(), model_dir=str(tmp_path / "zoo"), file_name="renamed.pt")
    assert state["weight"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert os.listdir(tmp_path / "zoo") == ["renamed.pt"]


def test_a_wrong_hash_leaves_nothing_behind(tmp_path, hub_dir):
    path, digest = _published(tmp_path, "model-{}.pth")
    wrong = path.with_name("model-0123abcd.pth")
    os.replace(path, wrong)
    with pytest.raises(RuntimeError, match=f'invalid hash value \\(expected "0123abcd", got '
                                           f'"{digest}"\\)'):
        mt.hub.load_state_dict_from_url(wrong.as_uri(), check_hash=True)
    assert os.listdir(hub_dir / "checkpoints") == []
    target = tmp_path / "direct.pt"
    mt.hub.download_url_to_file(wrong.as_uri(), str(target), hash_prefix=digest[:6])
    assert mt.load(target)["weight"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_cache_directory_rules(monkeypatch):
    previous = mt.hub._hub_dir
    try:
        mt.hub._hub_dir = None
        monkeypatch.setenv("TORCH_HOME", "/somewhere/torch")
        assert mt.hub.get_dir() == "/somewhere/torch/hub"
        monkeypatch.delenv("TORCH_HOME")
        monkeypatch.setenv("XDG_CACHE_HOME", "/cache")
        assert mt.hub.get_dir() == "/cache/torch/hub"
        mt.hub.set_dir("~/models")
        assert mt.hub.get_dir() == os.path.expanduser("~/models")
    finally:
        mt.hub._hub_dir = previous


def test_hubconf_models_are_refused():
    with pytest.raises(NotImplementedError, match="hubconf.py"):
        mt.hub.load("pytorch/vision", "resnet18")
