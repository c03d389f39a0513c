"""torch.autograd: the tape engine (engine.py) and torch's module names around it.

engine.py imports nothing above ndarray.py, so ops and Tensor build on it. function.py,
grad_mode.py, anomaly_mode.py and graph.py are torch's submodule spellings of its parts (plus
once_differentiable and the saved-tensor hooks). functional.py, gradcheck.py and variable.py sit
above Tensor: minitorch/__init__.py imports them once Tensor exists and puts gradcheck,
gradgradcheck, GradcheckError and Variable on this namespace, as torch.autograd has them.
"""
from .engine import (AccumulateGrad, Function, KernelFunction, RemovableHandle, TensorBase,
                     _grad_mode, _is_tensor, backward, detect_anomaly, enable_grad, grad,
                     inference_mode, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                     is_grad_enabled, is_inference_mode_enabled, no_grad, set_detect_anomaly,
                     set_grad_enabled)
from . import anomaly_mode, function, grad_mode, graph  # noqa: E402,F401  (torch's submodules)
