"""mt.onnx: the name exists so `import torch.onnx` runs; export raises, since minitorch has no
graph capture to translate into ONNX."""

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, **kwargs):
    raise NotImplementedError("ONNX export is not supported by minitorch: it has no graph "
                              "capture to translate. Save the weights with "
                              "mt.save(model.state_dict(), path) instead.")


def is_in_onnx_export():
    """False: an export never runs here."""
    return False
