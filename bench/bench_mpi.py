#!/usr/bin/env python3
"""MPI speed-up of the verified sizing search (issue 18; docs/sizing.md, "At cluster scale: MPI").

Runs one `kvcap size --verify` search three ways in the same session, each rank with one thread: in one process, and
under `mpirun -np 2 ... --mpi`; checks that both print the same report, byte for byte; measures the serial parts
(the analytic search and ranking alone; mpirun's start and the gather on a search of one tiny simulation) and each
candidate's own simulation time (the JSON's verified[].wall_s); and projects the time at N ranks as
serial + the busiest rank's share under the round-robin split kvcap uses (candidate i to rank i mod N).

Usage: bench/bench_mpi.py [path/to/kvcap]   (default build/cli/kvcap; cmake --build build --target run_bench_mpi)
"""
import json
import os
import shutil
import subprocess
import sys
import time

KVCAP = sys.argv[1] if len(sys.argv) > 1 else "build/cli/kvcap"
SEARCH = ["size", "--model", "llama-3.1-8b", "--prompt-tokens", "2K", "--output-tokens", "256", "--rate", "40",
          "--ttft-p", "500ms", "--tpot", "30ms", "--max-tp", "4", "--max-pp", "1", "--top", "3"]
VERIFY = ["--verify", "40", "--num-requests", "20000", "--threads", "1", "--no-progress"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def timed(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=ENV, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t0, out


def mpirun(n, args):
    return ["mpirun", "--oversubscribe", "-np", str(n), KVCAP] + args + ["--mpi"]


def main():
    if not shutil.which("mpirun"):
        sys.exit("bench_mpi: mpirun not found (apt-get install openmpi-bin libopenmpi-dev, then rebuild kvcap)")
    t_search, _ = timed([KVCAP] + SEARCH)
    t_tiny1, _ = timed([KVCAP] + SEARCH + ["--verify", "1", "--num-requests", "20", "--threads", "1"])
    t_tiny2, _ = timed(mpirun(2, SEARCH + ["--verify", "1", "--num-requests", "20", "--threads", "1"]))
    t1, one = timed([KVCAP] + SEARCH + VERIFY)
    t2, two = timed(mpirun(2, SEARCH + VERIFY))
    _, js = timed([KVCAP] + SEARCH + VERIFY + ["--format", "json"])
    walls = [v["wall_s"] for v in json.loads(js)["verified"]]
    identical = one == two
    print(f"verified search: {len(walls)} candidates x {VERIFY[3]} requests per simulation, 1 thread per rank")
    print(f"  1 process:       {t1:7.2f} s wall")
    print(f"  mpirun -np 2:    {t2:7.2f} s wall   speed-up {t1 / t2:.2f}x (efficiency {t1 / t2 / 2:.0%})")
    print(f"  reports identical: {'yes' if identical else 'NO'}")
    # Serial parts: the search and ranking every rank does; mpirun's start, MPI_Init/Finalize and the gather, as the
    # extra time of a 2-rank run of a search with one 20-request simulation over the same run in one process.
    serial = t_search + max(0.0, t_tiny2 - t_tiny1)
    print(f"  serial: search + ranking {t_search:.3f} s; mpirun start, MPI_Init/Finalize, gather "
          f"{max(0.0, t_tiny2 - t_tiny1):.3f} s")
    total = sum(walls)
    print(f"  simulation: {total:.2f} s over the candidates (largest {max(walls):.2f} s)")
    print("  projected (serial + the busiest rank's round-robin share of the measured candidate times):")
    for n in (1, 2, 4, 8, 16, 32, 64):
        busiest = max(sum(walls[r::n]) for r in range(n))
        t = serial + busiest
        print(f"    {n:3d} ranks: {t:7.2f} s, speed-up {(serial + total) / t:5.1f}x, "
              f"efficiency {(serial + total) / t / n:4.0%}")
    # A search 25 times as large (about a thousand candidates of these measured times): what 64 ranks need to be busy.
    big = walls * 25
    busiest = max(sum(big[r::64]) for r in range(64))
    print(f"  a search of {len(big)} such candidates (the measured times repeated): 1 rank {serial + sum(big):.1f} s, "
          f"64 ranks {serial + busiest:.2f} s, efficiency {(serial + sum(big)) / (serial + busiest) / 64:.0%}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
