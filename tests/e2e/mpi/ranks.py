"""Finding the ranks of one mpirun job from outside it (tests/e2e/mpi/e2e.py, tests/e2e/mpi/faults.py,
benchmarks/soak.py): each job is started with a marker variable (-x NAME=value), and its ranks are
the fabricbench processes whose environment holds that marker."""
import os


def rank_pids(var, mark):
    """{rank: pid} of the fabricbench processes whose environment has var=mark (Open MPI's
    OMPI_COMM_WORLD_RANK gives the rank; under MPICH's hydra, PMI_RANK)."""
    want = f"{var}={mark}".encode()
    pids = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            envb = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if want not in envb or not exe.endswith("fabricbench"):
            continue
        for kv in envb:
            if kv.startswith(b"OMPI_COMM_WORLD_RANK=") or kv.startswith(b"PMI_RANK="):
                pids[int(kv.split(b"=")[1])] = int(pid)
    return pids
