"""Process groups: init_process_group / destroy_process_group / new_group, the default group
and the rank, size and backend queries (torch.distributed's names, errors and defaults)."""
import datetime
import os
import sys

from .watchdog import Watchdog

default_pg_timeout = datetime.timedelta(minutes=30)
NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")


class Backend(str):
    """torch.distributed.Backend: the backend names as strings."""
    UNDEFINED = "undefined"
    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {name}")
        value = name.lower()
        if value not in (cls.MPI, cls.NCCL):
            raise AssertionError(f"Unknown backend type {name}")
        return str.__new__(cls, value)


DEFAULT_DEVICE_BACKENDS = {"cpu": Backend.MPI, "cuda": Backend.NCCL}


class ProcessGroup:
    """A set of ranks and the engine communicator joining them (torch's ProcessGroup)."""

    def __init__(self, engine, ranks, timeout_s, name):
        self.engine, self.ranks, self.timeout_s, self.name = engine, tuple(ranks), timeout_s, name
        self._group_rank = {global_rank: i for i, global_rank in enumerate(self.ranks)}

    def rank(self):
        return self.engine.rank

    def size(self):
        return self.engine.size

    def group_rank(self, global_rank, role, operation):
        """The rank inside this group of a global src/dst rank (torch's checks)."""
        if not isinstance(global_rank, int) or isinstance(global_rank, bool):
            raise TypeError(f"{role} rank must be an int, got {type(global_rank).__name__}")
        rank = self._group_rank.get(global_rank)
        if rank is not None:
            return rank
        if _state.default is self:
            raise RuntimeError(f"ProcessGroup{self.engine.name.upper()}::{operation}: invalid "
                               f"root rank: {global_rank}")
        raise ValueError(f"Global rank {global_rank} is not part of group {self!r}")

    def __repr__(self):
        return f"<ProcessGroup {self.name} backend={self.engine.name} ranks={list(self.ranks)}>"


class GroupMember:
    """torch's GroupMember: WORLD is the default group once initialized."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class _State:
    def __init__(self):
        self.default = None
        self.groups = []              # every live group, the default first
        self.watchdog = None
        self.previous_excepthook = None
        self.created = 0              # groups made since init, this rank a member or not


_state = _State()


def is_initialized():
    """True once init_process_group has set up the default group
    (torch.distributed.is_initialized)."""
    return _state.default is not None


def resolve(group):
    """The ProcessGroup a collective runs on; None where this rank is outside `group`."""
    if group is None or group is GroupMember.WORLD:
        if _state.default is None:
            raise ValueError(NOT_INITIALIZED)
        return _state.default
    if group == GroupMember.NON_GROUP_MEMBER:
        return None
    if _state.default is None:
        raise ValueError(NOT_INITIALIZED)
    if not isinstance(group, ProcessGroup) or group not in _state.groups:
        raise ValueError(f"Group {group} is not registered, please create group with "
                         "torch.distributed.new_group API")
    return group


def get_rank(group=None):
    """This process's global rank, -1 where it is not in group (torch.distributed.get_rank)."""
    pg = resolve(group)
    if pg is None:
        return -1
    return pg.ranks[pg.rank()]


def get_world_size(group=None):
    """Number of ranks in group, -1 where this process is not in it
    (torch.distributed.get_world_size)."""
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    """The Backend name of group, the default group by default (torch.distributed.get_backend)."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return Backend(pg.engine.name)


def get_group_rank(group, global_rank):
    """The rank within group of the process with global rank global_rank
    (torch.distributed.get_group_rank)."""
    pg = resolve(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return pg.ranks.index(global_rank)


def get_global_rank(group, group_rank):
    """The global rank of the process with rank group_rank in group
    (torch.distributed.get_global_rank)."""
    pg = resolve(group)
    if not 0 <= group_rank < len(pg.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return pg.ranks[group_rank]


def get_process_group_ranks(group):
    """The global ranks of group's members, in group order
    (torch.distributed.get_process_group_ranks)."""
    return list(resolve(group).ranks)


def _timeout_seconds(timeout):
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout)}")
    return timeout.total_seconds()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join this process to the job: backend "mpi" (CPU tensors) or "nccl" (cuda tensors).

    Ranks come from the launcher (mpiexec, or our run.py); world_size/rank, when given, must
    agree with it. NCCL ranks exchange their unique id over MPI when launched by mpiexec, else
    through NCCL's own bootstrap at MASTER_ADDR:MASTER_PORT with RANK and WORLD_SIZE."""
    if _state.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if isinstance(backend, str) and backend.lower() == Backend.GLOO:
        raise RuntimeError("Distributed package doesn't have Gloo built in: use "
                           "backend='mpi' for CPU tensors (mpi4py), 'nccl' for cuda tensors")
    name = Backend(backend if backend is not None else Backend.MPI)
    timeout_s = _timeout_seconds(timeout)
    if store is not None:
        raise ValueError("store is not supported: ranks meet through MPI or NCCL's bootstrap")
    if device_id is not None:      # torch: bind this rank to its GPU (NCCL uses the current one)
        from .. import cuda
        cuda.set_device(device_id)
    if name == Backend.MPI:
        engine = _init_mpi(world_size, rank, timeout_s)
    else:
        from .nccl_backend import init_nccl
        engine = init_nccl(world_size, rank, timeout_s, init_method, _watchdog_for)
    pg = ProcessGroup(engine, range(engine.size), timeout_s, group_name or "default_pg")
    _state.default = pg
    _state.groups = [pg]
    _state.created = 1
    GroupMember.WORLD = pg
    if engine.size > 1:
        _install_excepthook(engine)


def _init_mpi(world_size, rank, timeout_s):
    from .mpi_backend import MPIBackend, load_mpi
    MPI = load_mpi()
    comm = MPI.COMM_WORLD
    _check_launcher_agrees(comm.Get_size(), comm.Get_rank(), world_size, rank)
    watchdog = _watchdog_for(comm.Get_rank(), lambda: MPI.COMM_WORLD.Abort(1))
    return MPIBackend(MPI, comm, watchdog, timeout_s)


def _watchdog_for(rank, abort):
    if _state.watchdog is None:
        _state.watchdog = Watchdog(rank, abort)
    return _state.watchdog


def _check_launcher_agrees(size, rank, world_size, requested_rank):
    """The launcher decides ranks: explicit or environment values must match it."""
    env_size, env_rank = os.environ.get("WORLD_SIZE"), os.environ.get("RANK")
    for what, wanted, actual in (("world_size", world_size, size), ("rank", requested_rank, rank),
                                 ("WORLD_SIZE", env_size, size), ("RANK", env_rank, rank)):
        if wanted in (None, -1) or int(wanted) == actual:
            continue
        raise ValueError(f"{what}={wanted} does not match the MPI launch, where this process "
                         f"is rank {rank} of {size} (launch with mpiexec -n N or "
                         "python -m minitorch.distributed.run)")


def _install_excepthook(engine):
    """An uncaught exception on one rank ends the whole job at once, rather than leaving the
    other ranks blocked in their next collective."""
    previous = sys.excepthook
    _state.previous_excepthook = previous

    def abort_job(kind, value, traceback):
        previous(kind, value, traceback)
        sys.stderr.write(f"[Rank {get_rank() if is_initialized() else '?'}] uncaught "
                         f"{kind.__name__}: ending the job\n")
        sys.stderr.flush()
        engine.abort(1)

    sys.excepthook = abort_job


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A group over `ranks` (every rank of the default group must call it, as in torch);
    ranks outside it get GroupMember.NON_GROUP_MEMBER."""
    default = resolve(None)
    world = default.size()
    ranks = list(range(world)) if ranks is None else [int(r) for r in ranks]
    if len(ranks) > world:
        raise ValueError("the new group's world size should be less or equal to the world size "
                         "set by init_process_group")
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < world for r in ranks):
        raise ValueError(f"The new group's rank should be within the world_size set by "
                         f"init_process_group, and unique; got {ranks}")
    if backend is not None and Backend(backend) != default.engine.name:
        raise ValueError(f"new_group: backend {backend} differs from the default group's "
                         f"{default.engine.name}")
    if sort_ranks:
        ranks = sorted(ranks)
    timeout_s = default.timeout_s if timeout is None else _timeout_seconds(timeout)
    engine = default.engine.subgroup(ranks, timeout_s)
    _state.created += 1
    if engine is None:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(engine, ranks, timeout_s, group_desc or f"group_{len(_state.groups)}")
    _state.groups.append(pg)
    return pg


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Consecutive groups of group_size ranks of group (the default one): (this rank's
    subgroup, all of them) (torch.distributed.new_subgroups). torch's default size is the GPU
    count; here, without GPUs, pass group_size."""
    if group_size is None:
        from .. import cuda
        if not cuda.is_available():
            raise ValueError("Default group size only takes effect when CUDA is available.If "
                             "your subgroup using a backend that does not depend on CUDA,please "
                             "pass in 'group_size' correctly.")
        group_size = cuda.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({world_size})")
    if world_size % group_size:
        raise ValueError(f"The world size ({world_size}) must be divisible by "
                         f"'group_size={group_size}'")
    ranks = get_process_group_ranks(resolve(group))
    return new_subgroups_by_enumeration(
        [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)], timeout=timeout,
        backend=backend, pg_options=pg_options, group_desc=group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """One group per list of ranks (every rank takes part in creating each, as new_group
    requires): (this rank's subgroup or None, all of them)
    (torch.distributed.new_subgroups_by_enumeration)."""
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    subgroups, current, owner = [], None, {}
    me = get_rank()
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend,
                             pg_options=pg_options, group_desc=group_desc)
        subgroups.append(subgroup)
        for rank in ranks:
            if rank in owner:
                raise ValueError(f"Rank {rank} has appeared in both subgroup {owner[rank]} and "
                                 f"{ranks}")
            owner[rank] = ranks
            if rank == me:
                current = subgroup
    return current, subgroups


def get_pg_count():
    """How many process groups were made since init_process_group, the default one and those
    this rank is not in included (torch.distributed.get_pg_count)."""
    return _state.created


def get_default_backend_for_device(device):
    """The backend collectives on this device type use: "mpi" for cpu (torch's gloo),
    "nccl" for cuda (torch.distributed.get_default_backend_for_device)."""
    kind = device if isinstance(device, str) else device.type
    kind = kind.split(":")[0]
    if kind not in DEFAULT_DEVICE_BACKENDS:
        raise ValueError(f"Default backend not registered for device : {device}")
    return DEFAULT_DEVICE_BACKENDS[kind]


def destroy_process_group(group=None):
    """Release one group, or (None) every group and the default one; init may follow again.
    MPI itself stays initialized until exit (MPI cannot be initialized twice)."""
    if _state.default is None:
        raise AssertionError("Process group cannot be None")
    if group is None or group is _state.default:
        for pg in reversed(_state.groups):
            pg.engine.destroy()
        _state.groups, _state.default, _state.created = [], None, 0
        GroupMember.WORLD = None
        if _state.previous_excepthook is not None:
            sys.excepthook = _state.previous_excepthook
            _state.previous_excepthook = None
        return
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    pg = resolve(group)
    pg.engine.destroy()
    _state.groups.remove(pg)
