#!/usr/bin/python3
"""Share a PD and a VAR with worker processes and watch their VAR writes.

Runs anywhere: without an RDMA device it uses the simulated device sim0.
From a build tree:

    PYTHONPATH=build/python /usr/bin/python3 examples/python_share.py

Step by step:
  1. the owner opens a device context and allocates a PD and a VAR;
  2. it exports both as blobs: plain bytes, safe to send anywhere;
  3. worker processes get the context (multiprocessing passes its fd) and
     the blobs, import the PD and VAR, and write into the shared VAR page;
  4. the owner watches the writes appear in its own mapping of the page;
  5. the owner frees the PD: a late importer is told it is gone (NotFound).
"""

import multiprocessing as mp
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

        ctx = mp.get_context("spawn")               # 3. fresh worker processes
        procs = [ctx.Process(target=worker, args=(dev, pd_blob, var_blob, slot))
                 for slot in range(WORKERS)]
        for p in procs:
            p.start()

        seen = set()                                # 4. watch the page
        deadline = time.monotonic() + 30
        while len(seen) < WORKERS and time.monotonic() < deadline:
            for slot in range(WORKERS):
                text = bytes(page[slot * 64:slot * 64 + 64]).rstrip(b"\0").decode()
                if text and slot not in seen:
                    seen.add(slot)
                    print(f"owner: slot {slot} now reads {text!r}")
            time.sleep(0.01)
        for p in procs:
            p.join()
        print(f"owner: saw {len(seen)} of {WORKERS} workers write")

        pd.free()                                   # 5. destroyed for everyone
        try:
            dev.import_pd(pd_blob)
        except rshare.NotFound as exc:
            print("owner: after free, import says", exc.name)
        var.free()
    if len(seen) != WORKERS:
        raise SystemExit("not every worker's write was seen")


if __name__ == "__main__":
    main()
