"""Runs a chunk list as Ray tasks, one CPU each, keeping each chunk's result in a results directory.

The directory holds plan.json (what runs: the tier, its arguments, the commit, the chunk list) and one
chunk-NNNN.json per completed chunk, written as it completes (write then rename: a killed driver leaves no half
file). Run again with the same directory, only chunks without a file run: a sweep of many hours runs in parts.
A directory never mixes commits: every task says the commit its machine's checkout is at, and a chunk from
another commit (or from uncommitted changes) is refused, as is resuming a run started with uncommitted changes
(they cannot be shown to be the same).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Callable, List, Optional

from tools.heavy.commit import ROOT, describe


def chunk_path(results: str, i: int) -> str:
    return os.path.join(results, f"chunk-{i:04d}.json")


def write_json(path: str, obj) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


def open_plan(results: str, plan: dict) -> dict:
    """The plan of `results`: the one already there when it is the same run at the same clean commit, else
    `plan`, written there when the directory holds none."""
    path = os.path.join(results, "plan.json")
    if not os.path.exists(path):
        os.makedirs(results, exist_ok=True)
        write_json(path, plan)
        return plan
    with open(path) as f:
        old = json.load(f)
    if (old["tier"], old["args"]) != (plan["tier"], plan["args"]):
        raise SystemExit(
            f"{results} holds a {old['tier']} run with {old['args']}; this one is {plan['tier']} with "
            f"{plan['args']}: give another --results directory"
        )
    if old["identity"] != plan["identity"] or plan["identity"]["dirty"]:
        raise SystemExit(
            f"{results} holds a run at {describe(old['identity'])}; this checkout is at "
            f"{describe(plan['identity'])}: resume from a clean checkout at that commit, or give another directory"
        )
    if old["chunks"] != plan["chunks"]:
        raise SystemExit(f"{results}: the chunk list made now differs from the one the run started with")
    return old


def done(results: str, plan: dict) -> List[int]:
    return [i for i in range(len(plan["chunks"])) if os.path.exists(chunk_path(results, i))]


def init_ray(address: Optional[str], cpus: Optional[int]) -> None:
    """Ray at `address` (a cluster `ray start` made; "auto" finds the one on this machine), or a local cluster of
    `cpus` CPUs. Tasks import the repo's modules from ROOT: on a cluster every machine has its checkout there."""
    import ray

    kw = dict(
        include_dashboard=False,
        log_to_driver=False,
        # The checkout's own packages first, as pytest.ini's pythonpath has them: .venv's ember.pth names the
        # main checkout's, which would load another checkout's extensions.
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "runtime", "python")])}},
    )
    if address:
        ray.init(address=address, **kw)
    else:
        # "local" starts a cluster of its own: without an address, Ray would join the last one `ray start` made
        # on this machine (another test's, say). The object store holds only the chunks' results (a few MB
        # each): its default, a third of the RAM, would take memory the sweep's workers need.
        ray.init(address="local", num_cpus=cpus, object_store_memory=256 * 1024 * 1024, **kw)


def run(results: str, plan: dict, task: Callable, address: Optional[str], cpus: Optional[int], log=sys.stderr) -> int:
    """Runs the plan's chunks not done yet as `task(chunk, args)` on Ray; returns how many failed (their error is
    in chunk-NNNN.error.txt, and the next resume runs them again)."""
    import ray

    todo = [i for i in range(len(plan["chunks"])) if not os.path.exists(chunk_path(results, i))]
    print(f"{len(plan['chunks']) - len(todo)} of {len(plan['chunks'])} chunks done; running {len(todo)}", file=log)
    if not todo:
        return 0
    init_ray(address, cpus)
    remote = ray.remote(num_cpus=1, max_retries=0)(task)
    refs = {remote.remote(plan["chunks"][i], plan["args"]): i for i in todo}
    t0, count, failed = time.time(), 0, 0
    try:
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            i = refs.pop(ready[0])
            try:
                res = ray.get(ready[0])
            except Exception as e:  # the task raised: its chunk stays to do
                failed += 1
                with open(chunk_path(results, i).replace(".json", ".error.txt"), "w") as f:
                    f.write(str(e))
                print(f"chunk {i} failed: {str(e)[-500:]}", file=log, flush=True)
                continue
            check_identity(plan, res, i)
            write_json(chunk_path(results, i), res)
            count += res["count"]
            n = len(done(results, plan))
            print(
                f"chunk {i} ({res['count']} in {res['seconds']:.0f} s on {res['host']}): {n} of "
                f"{len(plan['chunks'])} chunks done; this session {count} in {time.time() - t0:.0f} s "
                f"({count / max(time.time() - t0, 1e-9):.2f}/s)",
                file=log,
                flush=True,
            )
    finally:
        ray.shutdown()
    return failed


def check_identity(plan: dict, res: dict, i: int) -> None:
    if res["identity"] != plan["identity"]:
        raise SystemExit(
            f"chunk {i} ran on {res['host']} at {describe(res['identity'])}, the run is at "
            f"{describe(plan['identity'])}: every machine's checkout must be at the run's commit"
        )
