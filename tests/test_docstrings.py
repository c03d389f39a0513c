"""Every public callable has a docstring of its own (issue 16, item 7), as listed by
bench/docstring_probe.py over torch's namespaces (mt, nn, F, optim, linalg, special, ...)."""
import importlib.util
import pathlib

PROBE = pathlib.Path(__file__).resolve().parent.parent / "bench" / "docstring_probe.py"


def _undocumented():
    spec = importlib.util.spec_from_file_location("docstring_probe", PROBE)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    return probe.undocumented()


def test_every_public_callable_has_a_docstring():
    missing, total = _undocumented()
    assert total > 900          # the probe still walks the namespaces
    assert not missing, f"public callables without a docstring of their own: {dict(missing)}"
