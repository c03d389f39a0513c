"""A job that goes wrong (started by tests/test_distributed.py): `raise` makes rank 1 raise
while rank 0 waits in a collective; `hang` keeps rank 1 away from a collective that rank 0
runs with a short timeout. The job must end promptly, saying why."""
import datetime
import sys
import time

import minitorch as mt
import minitorch.distributed as dist

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=1))
rank = dist.get_rank()
if mode == "raise":
    if rank == 1:
        raise ValueError("rank 1 failed on purpose")
    dist.all_reduce(mt.ones(3))
elif mode == "hang":
    if rank == 1:
        time.sleep(60)
    else:
        try:
            dist.all_reduce(mt.ones(3), async_op=True).wait()
        except RuntimeError as error:
            print(f"async wait raised: {error}", flush=True)
        dist.all_reduce(mt.ones(3))     # blocking: the watchdog ends the job
print("unreachable: the job should have ended", flush=True)
