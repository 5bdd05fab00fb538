#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Share a PD and a VAR with worker processes and watch their VAR writes.

Runs anywhere: without an RDMA device it uses the simulated device sim0.
From a build tree:

    PYTHONPATH=build/python /usr/bin/python3 examples/python_share.py [--start-method M]

M is fork (Python 3.11's default on Linux), spawn or forkserver: the same
worker code works under each. The script exits non-zero if any worker fails.

Step by step:
  1. the owner opens a device context and allocates a PD and a VAR;
  2. it exports both as blobs: plain bytes, safe to send anywhere;
  3. worker processes get the context (multiprocessing passes its fd, or
     fork inherits it) and the blobs, import the PD and VAR, and write into
     the shared VAR page; a forked worker closing the context releases only
     its own handles, never the owner's objects;
  4. the owner watches the writes appear in its own mapping of the page;
  5. the owner frees the PD: a late importer is told it is gone (NotFound).
"""

import argparse
import multiprocessing as mp
import sys
import time

import rshare

WORKERS = 3


def worker(dev: rshare.Device, pd_blob: bytes, var_blob: bytes, slot: int) -> None:
    """Import the shared objects and leave a message in the VAR page."""
    with dev, dev.import_pd(pd_blob) as pd, dev.import_var(var_blob) as var:
        page = var.map()
        message = f"worker {slot} sees PD {pd.handle}".encode()
        time.sleep(0.05 * slot)  # stagger the writes so the owner sees them land
        page[slot * 64:slot * 64 + len(message)] = message
        print(f"  [worker {slot}] imported PD handle {pd.handle}, "
              f"VAR page {var.page_id}, wrote {len(message)} bytes", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="Share a PD and a VAR with workers.")
    parser.add_argument("--start-method", choices=mp.get_all_start_methods(),
                        default=mp.get_start_method(),
                        help="how workers are started (default: %(default)s)")
    method = parser.parse_args().start_method
    print("rshare", rshare.__version__, "devices:",
          ", ".join(f"{d.name} ({d.provider})" for d in rshare.devices()))

    with rshare.open() as dev:                      # 1. the owner's context
        pd = dev.alloc_pd()
        var = dev.alloc_var()
        page = var.map()                            # a writable memoryview
        page[:] = bytes(len(page))
        print(f"owner: {dev!r}\n       {pd!r}\n       {var!r}")

        pd_blob, var_blob = pd.export(), var.export()  # 2. blobs are bytes
        print(f"owner: PD blob is {len(pd_blob)} bytes:", rshare.inspect(pd_blob))
        print("owner: as text (for env vars or command lines):", rshare.to_text(pd_blob))

        ctx = mp.get_context(method)                # 3. worker processes
        print(f"owner: starting {WORKERS} workers with {method}")
        procs = [ctx.Process(target=worker, args=(dev, pd_blob, var_blob, slot))
                 for slot in range(WORKERS)]
        for p in procs:
            p.start()

        seen: set = set()                           # 4. watch the page
        deadline = time.monotonic() + 30
        while len(seen) < WORKERS and time.monotonic() < deadline:
            running = any(p.is_alive() for p in procs)
            for slot in range(WORKERS):
                text = bytes(page[slot * 64:slot * 64 + 64]).rstrip(b"\0").decode()
                if text and slot not in seen:
                    seen.add(slot)
                    print(f"owner: slot {slot} now reads {text!r}")
            if not running:  # every worker is done: nothing more will come
                break
            time.sleep(0.01)
        for p in procs:
            p.join()
        failed = [slot for slot, p in enumerate(procs) if p.exitcode != 0]
        print(f"owner: saw {len(seen)} of {WORKERS} workers write")

        pd.free()                                   # 5. destroyed for everyone
        try:
            dev.import_pd(pd_blob)
        except rshare.NotFound as exc:
            print("owner: after free, import says", exc.name)
        var.free()
    if failed:
        sys.exit(f"worker(s) {failed} failed (exit codes "
                 f"{[procs[slot].exitcode for slot in failed]})")
    if len(seen) != WORKERS:
        sys.exit("not every worker's write was seen")


if __name__ == "__main__":
    main()
