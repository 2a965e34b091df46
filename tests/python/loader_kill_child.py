"""The child process of test_torch_faults.py: runs one DataLoader over a lazycube torch dataset,
SIGKILLs one of its workers mid-epoch, and prints what happened as one JSON line.

    /usr/bin/python3 loader_kill_child.py '{"url": ..., "form": "batch"|"window", ...}'

Run in a process of its own (in a new session) so that a loader that hangs is killed by the
test's timeout instead of hanging the test run. Every item delivered, before and after the
kill, is compared with the reference (a .npy of (variable, time, y, x)); the output says how
many were delivered, which were wrong, the error the loop raised and how long after the kill,
and whether every worker process was gone once the loader was dropped.
"""

import json
import os
import signal
import sys
import time

import numpy as np
import torch  # before lazycube
import lazycube.torch as lctorch
from torch.utils.data import DataLoader


def window_of(reference, dims, wid):
    """Window `wid` of the row-major grid of `dims` windows (no overlap) over `reference`."""
    shape = reference.shape[1:]
    counts = [n // w for n, w in zip(shape, dims)]
    index = []
    for count in reversed(counts):
        wid, i = divmod(wid, count)
        index.append(i)
    index.reverse()
    sel = tuple(slice(i * w, (i + 1) * w) for i, w in zip(index, dims))
    return reference[(slice(None),) + sel]


def main(args):
    reference = np.load(args["reference"])
    dims = dict(args["dims"])
    options = {"storage_options": args["storage_options"]} if args.get("storage_options") else {}
    if args["form"] == "batch":
        data = lctorch.BatchDataset(args["url"], input_dims=dims, batch_size=4, variables=args["variables"],
                                    shuffle="random", seed=3, return_window_ids=True, **options)
        loader_kwargs = {"batch_size": None}
    else:
        data = lctorch.WindowDataset(args["url"], dims, variables=args["variables"],
                                     return_window_ids=True, **options)
        loader_kwargs = {"batch_size": 4, "shuffle": True}
    loader = DataLoader(data, num_workers=2, multiprocessing_context=args["method"],
                        persistent_workers=args.get("persistent", False),
                        pin_memory=args.get("pin_memory", False), **loader_kwargs)
    out = {"delivered": 0, "after_kill": 0, "wrong": [], "errors": [], "error_after_s": None,
           "epochs_done": 0}
    workers, killed_at = [], None
    try:
        try:
            for epoch in range(args.get("epochs", 1)):
                it = iter(loader)
                workers = list(it._workers)  # torch's worker processes (multiprocessing.Process)
                for x, ids in it:
                    out["delivered"] += 1
                    if killed_at is not None:
                        out["after_kill"] += 1
                    for k, wid in enumerate(ids.tolist()):
                        if not np.array_equal(x[k].numpy(), window_of(reference, list(dims.values()), wid)):
                            out["wrong"].append(wid)
                    if (killed_at is None and epoch == args.get("kill_epoch", 0)
                            and out["delivered"] >= args["kill_after"]):
                        out["killed_pid"] = workers[0].pid
                        # The time first: torch's SIGCHLD handler may raise its RuntimeError at
                        # the first bytecode after the kill, before a statement after it ran
                        # (an error_after_s of None, seen on a loaded machine).
                        killed_at = time.monotonic()
                        out["killed_at_batch"] = out["delivered"]
                        os.kill(workers[0].pid, signal.SIGKILL)
                out["epochs_done"] += 1
        except Exception as exc:  # the loader's report of the dead worker
            if killed_at is not None:  # the time first: the handler itself can be interrupted
                out["error_after_s"] = time.monotonic() - killed_at
            out["errors"].append([type(exc).__name__, str(exc)])
            # torch's SIGCHLD handler raises "DataLoader worker (pid N) is killed by signal" in
            # this thread when the worker's death is noticed: after the first error when that was
            # the ConnectionError of fetching the dead worker's batch in flight (pytorch#28950)
            if not (isinstance(exc, RuntimeError) and "DataLoader worker" in str(exc)):
                time.sleep(1)
    except RuntimeError as late:
        # raised inside the handler above (torch's SIGCHLD handler interrupts it, possibly before
        # it recorded the time: seen once in CI), so the time may still be missing
        if killed_at is not None and out["error_after_s"] is None:
            out["error_after_s"] = time.monotonic() - killed_at
        out["errors"].append([type(late).__name__, str(late)])
    # Dropping the loader shuts the other worker down: none may be left running.
    t0 = time.monotonic()
    it = None
    loader = None
    for w in workers:
        w.join(timeout=max(0.1, 15 - (time.monotonic() - t0)))
    out["workers_alive"] = [w.pid for w in workers if w.is_alive()]
    out["shutdown_s"] = time.monotonic() - t0
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
