"""The small example scripts run and do what they say."""
import importlib.util
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_feature_extraction_hooks():
    features, gradient_norms = load("feature_extraction_hooks").main()
    assert features == {}                      # hooks removed: nothing captured any more
    assert gradient_norms["Conv2d"] > 0


def test_custom_dataset_trains_with_workers():
    assert load("custom_dataset").main(epochs=2, num_workers=2) > 0.9


def test_gaussian_process_fits_its_hyperparameters():
    start, final, error = load("gaussian_process").main(n=30, steps=15)
    assert final < start and error < 0.2
