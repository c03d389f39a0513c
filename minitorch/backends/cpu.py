"""mt.backends.cpu: get_cpu_capability() names the vector instruction set torch would
dispatch to. Our kernels are compiled once for the build machine (-march=native, or portable)
with no run-time dispatch, so this answers "DEFAULT" (torch's name for no special dispatch)."""


def get_cpu_capability():
    return "DEFAULT"
