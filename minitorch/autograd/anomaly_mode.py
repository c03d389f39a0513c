"""torch.autograd.anomaly_mode: anomaly detection's switches (written in engine.py)."""
from .engine import detect_anomaly, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly"]
