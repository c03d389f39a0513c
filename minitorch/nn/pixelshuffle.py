"""PixelShuffle and PixelUnshuffle."""
from . import functional as F
from .module import Module


class PixelShuffle(Module):
    """Rearranges (*, C * r**2, H, W) into (*, C, H * r, W * r) for upscale_factor r
    (torch.nn.PixelShuffle)."""
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearranges (*, C, H * r, W * r) into (*, C * r**2, H, W) for downscale_factor r
    (torch.nn.PixelUnshuffle)."""
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
