"""torch.hub's checkpoint downloads: load_state_dict_from_url (into $TORCH_HOME/hub/checkpoints,
checked against the sha256 prefix a file name may carry, then mt.load, which reads torch's
zip checkpoints), download_url_to_file, get_dir and set_dir. Loading models from a GitHub repo's
hubconf.py (torch.hub.load, list, help) runs that repo's code, written against torch: those
raise NotImplementedError."""
import os
import re
import sys
import warnings
from urllib.parse import urlparse

from .datasets._download import download_url

ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_hub_dir = None


def _get_torch_home():
    return os.path.expanduser(os.getenv(
        ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


def get_dir():
    """The cache directory: set_dir's, else $TORCH_HOME/hub ($TORCH_HOME defaults to
    $XDG_CACHE_HOME/torch, that to ~/.cache)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    return _hub_dir if _hub_dir is not None else os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Use directory d for downloads from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download url to the file dst (through a temporary file beside it, moved into place when
    complete, with a progress line on stderr when `progress`); with hash_prefix, the file's
    sha256 must start with it."""
    def verify(digest):
        if hash_prefix is not None and not digest.startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
    download_url(url, os.path.abspath(os.path.expanduser(dst)), verify, progress)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """The checkpoint at url, downloaded once into model_dir (default get_dir()/checkpoints)
    and loaded with mt.load (torch's zip checkpoints included). check_hash: the file name's
    "-<hex>." part must prefix the file's sha256."""
    from .serialization import load
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stdout.write(f'Downloading: "{url}" to {cached}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress)
    return load(cached, map_location=map_location, weights_only=weights_only)


def _runs_repository_code(*args, **kwargs):
    raise NotImplementedError(
        "minitorch.hub cannot load models from a repository's hubconf.py (that code is written "
        "against torch); build the model with minitorch and load its weights with "
        "load_state_dict_from_url")


load = list = help = _runs_repository_code

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]
