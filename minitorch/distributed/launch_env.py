"""What the launcher tells a rank through its environment (torchrun's variables, which
`python -m minitorch.distributed.run` sets too)."""
import os


def get_node_local_rank(fallback_rank=None):
    """This rank's index among the ranks of its machine, from LOCAL_RANK; fallback_rank when
    the launcher set none (torch.distributed.get_node_local_rank)."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
        "and want the code to run locally instead.")


def is_torchelastic_launched():
    """True when started by torchrun's launcher, here `python -m minitorch.distributed.run`
    (which sets TORCHELASTIC_RUN_ID as torchrun does); False under plain mpiexec."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None
