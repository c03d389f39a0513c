"""Every public callable has a docstring of its own (issue 16, item 7), as listed by
bench/docstring_probe.py over torch's namespaces (mt, nn, F, optim, linalg, special, ...)."""
import importlib.util
import pathlib

PROBE = pathlib.Path(__file__).resolve().parent.parent / "bench" / "docstring_probe.py"

# Pending: these modules were being edited on other branches while the docstrings were written;
# the lead documents them after merging those branches, then drops this exclusion.
PENDING = (
    "minitorch.tensor",
    "minitorch.random",
    "minitorch.functions.joining",
    "minitorch.functions.indexing",
    "minitorch.utils.data._collate",
    "minitorch._gpu",
    "minitorch.backends",
    "minitorch.accelerator",
)


def _undocumented():
    spec = importlib.util.spec_from_file_location("docstring_probe", PROBE)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    return probe.undocumented()


def _pending(module):
    return any(module == p or module.startswith(p + ".") for p in PENDING)


def test_every_public_callable_has_a_docstring():
    missing, total = _undocumented()
    assert total > 900          # the probe still walks the namespaces
    lacking = {m: names for m, names in missing.items() if not _pending(m)}
    assert not lacking, f"public callables without a docstring of their own: {lacking}"
