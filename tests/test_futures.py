"""mt.futures (torch.futures): completion, chaining with then, exceptions, collect_all /
wait_all, and completion from another thread."""
import threading

import pytest

import minitorch as mt
from minitorch.futures import Future, collect_all, wait_all


def test_set_result_then_chain_and_value():
    future = Future()
    doubled = future.then(lambda f: f.value() * 2)
    assert not future.done() and not doubled.done()
    with pytest.raises(RuntimeError, match="not completed"):
        future.value()
    future.set_result(21)
    assert future.done() and doubled.done()
    assert future.wait() == 21 and doubled.wait() == 42 and doubled.value() == 42
    with pytest.raises(RuntimeError, match="can only be marked completed once"):
        future.set_result(1)
    late = future.then(lambda f: f.value() + 1)     # on a completed future: runs at once
    assert late.done() and late.value() == 22


def test_exceptions_travel_down_the_chain():
    future = Future()
    chained = future.then(lambda f: f.value() + 1)
    future.set_exception(ValueError("bad"))
    with pytest.raises(ValueError, match="bad"):
        future.wait()
    with pytest.raises(ValueError, match="bad"):
        chained.wait()
    failing = Future()
    failing.set_result(1)
    with pytest.raises(ZeroDivisionError):
        failing.then(lambda f: 1 / 0).wait()
    with pytest.raises(TypeError, match="not an Exception"):
        Future().set_exception("text")


def test_collect_all_and_wait_all():
    futures = [Future() for _ in range(3)]
    combined = collect_all(futures)
    futures[0].set_result("a")
    futures[1].set_exception(KeyError("b"))
    assert not combined.done()
    futures[2].set_result("c")
    assert combined.done() and combined.wait() == futures
    with pytest.raises(KeyError):
        wait_all(futures)
    assert wait_all([f for f in futures if f is not futures[1]]) == ["a", "c"]
    assert collect_all([]).wait() == []
    assert mt.futures.Future is Future


def test_wait_blocks_until_another_thread_completes_it():
    future = Future()
    callbacks = []
    future.add_done_callback(lambda f: callbacks.append(f.value()))
    threading.Timer(0.05, future.set_result, args=(mt.ones(2),)).start()
    assert future.wait().tolist() == [1.0, 1.0]
    assert len(callbacks) == 1
