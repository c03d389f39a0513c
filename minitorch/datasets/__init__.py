"""mt.datasets: ready-made datasets (torchvision.datasets' names and semantics)."""
from .mnist import MNIST

__all__ = ["MNIST"]
