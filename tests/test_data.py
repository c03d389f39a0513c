"""mt.utils.data in the main process: datasets, samplers, collation, DataLoader arguments."""
import collections

import numpy as np
import pytest

import minitorch as mt
from minitorch.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                                  IterableDataset, RandomSampler, Sampler, SequentialSampler,
                                  Subset, SubsetRandomSampler, TensorDataset,
                                  WeightedRandomSampler, default_collate, default_convert,
                                  get_worker_info, random_split)

Point = collections.namedtuple("Point", "x y")


class Squares(Dataset):
    """i → (i, i*i); the plain per-sample map-style protocol."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i, i * i

    def __len__(self):
        return self.n


class Counter(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def _xy(device, n=10):
    x = mt.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3), device=device)
    y = mt.tensor(np.arange(n) % 4, device=device)
    return x, y


# ---- datasets -----------------------------------------------------------------------------------
def test_tensor_dataset_items_and_len(device):
    x, y = _xy(device)
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    xi, yi = ds[3]
    np.testing.assert_array_equal(xi.cpu().numpy(), [9, 10, 11])
    assert yi.item() == 3 and yi.ndim == 0
    xs, ys = ds[-1]
    assert ys.item() == 9 % 4


def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(mt.zeros(3, 2), mt.zeros(4))


def test_tensor_dataset_getitems_matches_getitem(device):
    x, y = _xy(device)
    ds = TensorDataset(x, y)
    samples = ds.__getitems__([4, 0, 9, 4])
    assert isinstance(samples, list) and len(samples) == 4
    for i, (xi, yi) in zip([4, 0, 9, 4], samples):
        np.testing.assert_array_equal(xi.cpu().numpy(), ds[i][0].cpu().numpy())
        assert yi.item() == ds[i][1].item() and yi.shape == ()
    # negative indices take the per-sample path and wrap like t[i]
    assert ds.__getitems__([-1])[0][1].item() == ds[9][1].item()


def test_tensor_dataset_collated_batch_equals_default_collate(device):
    x, y = _xy(device)
    ds = TensorDataset(x, y)
    fast = ds._getitems_collated([7, 2, 5])
    slow = default_collate([ds[7], ds[2], ds[5]])
    assert isinstance(fast, list) and len(fast) == 2
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())


def test_tensor_dataset_subclass_overriding_getitem_is_respected():
    class Doubled(TensorDataset):
        def __getitem__(self, i):
            (x,) = super().__getitem__(i)
            return (x * 2,)

    ds = Doubled(mt.arange(5))
    (batch,) = next(iter(DataLoader(ds, batch_size=5)))
    np.testing.assert_array_equal(batch.numpy(), [0, 2, 4, 6, 8])


def test_tensor_dataset_requires_grad_keeps_graph():
    w = mt.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    (batch,) = next(iter(DataLoader(TensorDataset(w), batch_size=2)))
    batch.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[1, 1], [1, 1], [0, 0]])


def test_subset_and_its_batched_fetch():
    x = mt.arange(10) * 10
    sub = Subset(TensorDataset(x), [9, 3, 5])
    assert len(sub) == 3 and sub[0][0].item() == 90
    assert [s[0].item() for s in sub.__getitems__([2, 0])] == [50, 90]
    (batch,) = sub._getitems_collated([1, 2])
    np.testing.assert_array_equal(batch.numpy(), [30, 50])
    plain = Subset(Squares(10), [4, 2])
    assert plain.__getitems__([0, 1]) == [(4, 16), (2, 4)]
    np.testing.assert_array_equal(plain._getitems_collated([0, 1])[1].numpy(), [16, 4])


def test_concat_dataset():
    ds = ConcatDataset([Squares(3), Squares(2)])
    assert len(ds) == 5 and ds.cumulative_sizes == [3, 5]
    assert [ds[i][0] for i in range(5)] == [0, 1, 2, 0, 1]
    assert ds[-1] == (1, 1) and ds[-5] == (0, 0)
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset "
                                         "length"):
        ds[-6]
    assert len(Squares(3) + Squares(4)) == 7
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Counter(2)])


def test_chain_dataset():
    chained = Counter(2) + Counter(3)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5


def test_dataset_base_raises():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement "
                                                  "__getitem__."):
        Dataset()[0]


def test_random_split_lengths_and_fractions():
    mt.manual_seed(0)
    a, b = random_split(Squares(10), [7, 3])
    assert len(a) == 7 and len(b) == 3
    assert sorted(list(a.indices) + list(b.indices)) == list(range(10))
    parts = random_split(Squares(10), [0.5, 0.3, 0.2], generator=mt.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [5, 3, 2]
    odd = random_split(Squares(11), [0.5, 0.5])  # remainder dealt round-robin, as torch does
    assert [len(p) for p in odd] == [6, 5]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the "
                                         "input dataset!"):
        random_split(Squares(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(Squares(10), [0.0, 1.5, -0.5])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Squares(1), [1.0, 0.0])


def test_random_split_reproducible():
    first = random_split(Squares(20), [10, 10], generator=mt.Generator().manual_seed(3))
    second = random_split(Squares(20), [10, 10], generator=mt.Generator().manual_seed(3))
    assert first[0].indices == second[0].indices


# ---- samplers -----------------------------------------------------------------------------------
def test_sequential_and_batch_sampler():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, True)) == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4
    assert len(BatchSampler(range(10), 3, True)) == 3


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_batch_sampler_checks_batch_size(bad):
    with pytest.raises(ValueError, match=f"batch_size should be a positive integer value, but "
                                         f"got batch_size={bad}"):
        BatchSampler(range(3), bad, False)


def test_batch_sampler_checks_drop_last():
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got "
                                         "drop_last=1"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler_permutation_and_seed():
    mt.manual_seed(0)
    first = list(RandomSampler(range(50)))
    assert sorted(first) == list(range(50)) and first != list(range(50))
    mt.manual_seed(0)
    assert list(RandomSampler(range(50))) == first
    g = mt.Generator().manual_seed(5)
    assert list(RandomSampler(range(50), generator=g)) != \
        list(RandomSampler(range(50), generator=g))  # a shared generator moves on


def test_random_sampler_num_samples_and_replacement():
    drawn = list(RandomSampler(range(4), num_samples=10))
    assert len(drawn) == 10 and set(drawn) == {0, 1, 2, 3}
    with_replacement = list(RandomSampler(range(3), replacement=True, num_samples=70))
    assert len(with_replacement) == 70 and set(with_replacement) <= {0, 1, 2}
    assert len(RandomSampler(range(4), num_samples=10)) == 10
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got "
                                        "replacement=0"):
        RandomSampler(range(3), replacement=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but "
                                         "got num_samples=0"):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_sampler():
    indices = [10, 20, 30, 40]
    drawn = list(SubsetRandomSampler(indices, generator=mt.Generator().manual_seed(0)))
    assert sorted(drawn) == indices and len(SubsetRandomSampler(indices)) == 4


def test_weighted_random_sampler():
    drawn = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200))
    assert len(drawn) == 200 and set(drawn) == {1, 3}
    assert drawn.count(3) > drawn.count(1)
    no_repeat = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(no_repeat) == [0, 1, 2]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights "
                                         r"have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


def test_sampler_base():
    with pytest.raises(NotImplementedError):
        iter(Sampler())


# ---- collate ------------------------------------------------------------------------------------
def test_collate_numbers_like_torch():
    ints = default_collate([1, 2, 3])
    assert ints.dtype == mt.int64 and ints.tolist() == [1, 2, 3]
    floats = default_collate([1.5, 2.0])
    assert floats.dtype == mt.float64  # Python floats collate to float64 in torch
    bools = default_collate([True, False])
    assert bools.dtype == mt.bool and bools.tolist() == [True, False]
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_collate_tensors_stack(device):
    batch = default_collate([mt.ones(2, 3, device=device), mt.zeros(2, 3, device=device)])
    assert batch.shape == (2, 2, 3) and batch.device == mt.device(device)
    np.testing.assert_array_equal(batch.cpu().numpy()[:, 0, 0], [1, 0])
    scalars = default_collate([mt.tensor(1.0, device=device), mt.tensor(2.0, device=device)])
    assert scalars.shape == (2,)


def test_collate_numpy():
    arrays = default_collate([np.zeros((2,), np.float64), np.ones((2,), np.float64)])
    assert arrays.dtype == mt.float64 and arrays.shape == (2, 2)
    scalars = default_collate([np.float64(1.0), np.float64(2.5)])
    assert scalars.dtype == mt.float64 and scalars.tolist() == [1.0, 2.5]
    ints = default_collate([np.int64(1), np.int64(2)])
    assert ints.dtype == mt.int64
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                                        "arrays, numbers, dicts or lists; found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_collate_uint8_like_torch():
    """uint8 images (MNIST's `.data` rows, numpy pixels) batch as uint8, as in torch."""
    arrays = default_collate([np.full((2, 2), 200, np.uint8), np.zeros((2, 2), np.uint8)])
    assert arrays.dtype == mt.uint8 and arrays.shape == (2, 2, 2)
    assert arrays[:, 0, 0].tolist() == [200, 0]
    scalars = default_collate([np.uint8(3), np.uint8(250)])
    assert scalars.dtype == mt.uint8 and scalars.tolist() == [3, 250]
    pixels = mt.tensor(np.arange(24).reshape(6, 2, 2) * 10, dtype=mt.uint8)
    batches = list(DataLoader(TensorDataset(pixels), batch_size=4))
    assert [b[0].dtype for b in batches] == [mt.uint8, mt.uint8]
    np.testing.assert_array_equal(mt.cat([b[0] for b in batches]).numpy(), pixels.numpy())


def test_collate_containers():
    out = default_collate([{"a": 1, "b": (1.0, "x")}, {"a": 2, "b": (2.0, "y")}])
    assert set(out) == {"a", "b"} and out["a"].tolist() == [1, 2]
    assert isinstance(out["b"], list) and out["b"][1] == ("x", "y")  # as torch: list, tuple
    points = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(points, Point) and points.x.tolist() == [1, 3]
    lists = default_collate([[1, 2], [3, 4]])
    assert isinstance(lists, list) and lists[0].tolist() == [1, 3]
    ordered = default_collate([collections.OrderedDict(z=1), collections.OrderedDict(z=2)])
    assert isinstance(ordered, collections.OrderedDict)


def test_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal "
                                           "size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                                        "arrays, numbers, dicts or lists; found <class "
                                        "'object'>"):
        default_collate([object(), object()])


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": (np.float64(1.0), "s"), "t": mt.ones(1)})
    assert isinstance(out["a"], mt.Tensor) and out["a"].tolist() == [0, 1, 2]
    assert isinstance(out["b"], list) and out["b"][0].dtype == mt.float64
    assert out["b"][1] == "s"
    assert default_convert(Point(np.array([1]), 2)).x.tolist() == [1]
    strings = np.array(["a"])
    assert default_convert(strings) is strings
    assert default_convert(5) == 5


# ---- DataLoader (single process) ----------------------------------------------------------------
def test_loader_batches_in_order(device):
    x, y = _xy(device)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    np.testing.assert_array_equal(mt.cat([b[1] for b in batches]).cpu().numpy(),
                                  np.arange(10) % 4)
    assert batches[0][0].device == mt.device(device)


def test_loader_drop_last_and_len():
    loader = DataLoader(Squares(10), batch_size=4, drop_last=True)
    assert len(loader) == 2 and len(list(loader)) == 2


def test_loader_shuffle_reproducible_with_manual_seed():
    loader = DataLoader(TensorDataset(mt.arange(20)), batch_size=5, shuffle=True)
    mt.manual_seed(7)
    first = mt.cat([b[0] for b in loader]).tolist()
    mt.manual_seed(7)
    second = mt.cat([b[0] for b in loader]).tolist()
    assert first == second and sorted(first) == list(range(20)) and first != list(range(20))


def test_loader_shuffle_with_generator():
    orders = []
    for _ in range(2):
        g = mt.Generator().manual_seed(3)
        loader = DataLoader(Squares(12), batch_size=12, shuffle=True, generator=g)
        orders.append(next(iter(loader))[0].tolist())
    assert orders[0] == orders[1]


def test_loader_custom_collate_receives_list_of_samples():
    seen = []

    def collate(batch):
        seen.append(batch)
        return len(batch)

    ds = TensorDataset(mt.arange(5), mt.arange(5) * 2)
    assert list(DataLoader(ds, batch_size=2, collate_fn=collate)) == [2, 2, 1]
    assert isinstance(seen[0], list) and isinstance(seen[0][0], tuple)
    assert seen[0][1][1].item() == 2


def test_loader_uses_getitems_once_per_batch():
    calls = []

    class Batched(Squares):
        def __getitems__(self, indices):
            calls.append(list(indices))
            return [self[i] for i in indices]

    out = list(DataLoader(Batched(5), batch_size=2))
    assert calls == [[0, 1], [2, 3], [4]]
    assert out[0][1].tolist() == [0, 1]


def test_loader_batch_size_none_uses_default_convert():
    loader = DataLoader(Squares(3), batch_size=None)
    assert list(loader) == [[0, 0], [1, 1], [2, 4]]  # tuples converted to lists, like torch
    arrays = DataLoader([np.ones(2), np.zeros(2)], batch_size=None)
    assert all(isinstance(a, mt.Tensor) for a in arrays)


def test_loader_custom_samplers():
    loader = DataLoader(Squares(6), sampler=[5, 0, 3], batch_size=2)
    assert [b[0].tolist() for b in loader] == [[5, 0], [3]]
    loader = DataLoader(Squares(6), batch_sampler=[[1, 2], [4]])
    assert [b[0].tolist() for b in loader] == [[1, 2], [4]] and len(loader) == 2
    assert loader.batch_size is None


def test_loader_iterable_dataset():
    loader = DataLoader(Counter(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(loader) == 3
    assert len(DataLoader(Counter(7), batch_size=3, drop_last=True)) == 2
    assert [b.tolist() for b in DataLoader(Counter(7), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Counter(3), batch_size=None)) == [0, 1, 2]


def test_get_worker_info_is_none_in_main_process():
    assert get_worker_info() is None


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(num_workers=-1), ValueError, "num_workers option should be non-negative; use "
                                       "num_workers=0 to disable multiprocessing."),
    (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
    (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified in "
                                          "multiprocessing.let num_workers > 0 to enable "
                                          "multiprocessing, otherwise set prefetch_factor to "
                                          "None."),
    (dict(num_workers=1, prefetch_factor=-1), ValueError, "prefetch_factor option should be "
                                                          "non-negative"),
    (dict(persistent_workers=True), ValueError, "persistent_workers option needs "
                                                "num_workers > 0"),
    (dict(sampler=[0], shuffle=True), ValueError, "sampler option is mutually exclusive with "
                                                  "shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), ValueError, "batch_sampler option is mutually "
                                                          "exclusive with batch_size, shuffle, "
                                                          "sampler, and drop_last"),
    (dict(batch_sampler=[[0]], drop_last=True), ValueError, "batch_sampler option is mutually "
                                                            "exclusive"),
    (dict(batch_size=None, drop_last=True), ValueError, "batch_size=None option disables "
                                                        "auto-batching and is mutually "
                                                        "exclusive with drop_last"),
    (dict(multiprocessing_context="fork"), ValueError, "multiprocessing_context can only be "
                                                       "used with multi-process loading "
                                                       "\\(num_workers > 0\\), but got "
                                                       "num_workers=0"),
    (dict(num_workers=1, multiprocessing_context="nope"), ValueError,
     "multiprocessing_context option should specify a valid start method in"),
    (dict(num_workers=1, multiprocessing_context=3), TypeError,
     "multiprocessing_context option should be a valid context object or a string specifying "
     "the start method, but got multiprocessing_context=3"),
])
def test_loader_argument_checks(kwargs, error, message):
    with pytest.raises(error, match=message):
        DataLoader(Squares(4), **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(shuffle=True), "DataLoader with IterableDataset: expected unspecified shuffle "
                         "option, but got shuffle=True"),
    (dict(sampler=[0]), "DataLoader with IterableDataset: expected unspecified sampler "
                        "option, but got sampler=\\[0\\]"),
    (dict(batch_sampler=[[0]]), "DataLoader with IterableDataset: expected unspecified "
                                "batch_sampler option, but got batch_sampler=\\[\\[0\\]\\]"),
])
def test_loader_iterable_argument_checks(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(Counter(3), **kwargs)


def test_loader_frozen_attributes():
    loader = DataLoader(Squares(4))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        loader.batch_size = 3
    loader.num_workers = 0  # other attributes stay writable, as in torch


def test_loader_timeout_needs_workers():
    with pytest.raises(AssertionError, match="_SingleProcessDataLoaderIter requires "
                                             "timeout == 0"):
        iter(DataLoader(Squares(4), timeout=1))


def test_loader_matches_torch_order_and_values():
    torch = pytest.importorskip("torch")
    data = np.arange(24, dtype=np.float32).reshape(12, 2)
    ours = DataLoader(TensorDataset(mt.tensor(data)), batch_size=5, drop_last=False)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(data)),
                                         batch_size=5)
    for (a,), (b,) in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for batch in ([1, 2.5], [1.5, 2.5], [True, False], [{"k": 1}, {"k": 2}]):
        ref = torch.utils.data.default_collate(batch)
        got = default_collate(batch)
        if isinstance(ref, dict):
            ref, got = ref["k"], got["k"]
        assert str(ref.dtype).split(".")[-1] == got.dtype.name
        assert ref.tolist() == got.tolist()


def test_loader_default_collate_takes_the_batched_path(monkeypatch):
    """With default_collate, TensorDataset batches come from one gather per tensor, never from
    per-sample indexing (what keeps an MNIST-sized epoch fast)."""
    def per_sample(self, index):
        raise AssertionError("per-sample __getitem__ called")

    monkeypatch.setattr(TensorDataset, "__getitem__", per_sample)
    ds = TensorDataset(mt.arange(1000), mt.arange(1000) * 2)
    batches = list(DataLoader(ds, batch_size=128, shuffle=True))
    assert sorted(mt.cat([b[0] for b in batches]).tolist()) == list(range(1000))
    assert all((b[1] == b[0] * 2).all().item() for b in batches)
