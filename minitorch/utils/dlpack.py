"""torch.utils.dlpack: DLPack capsules in and out (the older interface; torch.from_dlpack and
Tensor.__dlpack__ are the current one)."""
import enum

from ..functions.interop import from_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (dlpack.h)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor):
    """A DLPack capsule sharing the tensor's memory, to be consumed once by another library's
    from_dlpack (or ours)."""
    return tensor.__dlpack__()
