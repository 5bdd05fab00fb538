# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""What a process made by fork() owns (issue 14): handles it inherited are
released locally when it closes the inherited Device, never freed, so the
README's worker pattern works under every start method."""

import multiprocessing as mp
import os
import sys

import pytest

import rshare
import _workers


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_readme_worker_pattern(dev, method):
    """README: `with dev, dev.import_pd(blob) as pd:` in a Process, while the
    parent holds an allocated PD and a mapped VAR (which a fork child inherits)."""
    with dev.alloc_pd() as pd, dev.alloc_var() as var:
        var.map()[0:4] = b"keep"
        blob = pd.export()
        ctx = mp.get_context(method)
        queue = ctx.Queue()
        proc = ctx.Process(target=_workers.readme_worker, args=(dev, blob, queue))
        proc.start()
        result = queue.get(timeout=30)
        proc.join(timeout=30)
        assert proc.exitcode == 0, result
        assert result == {"handle": pd.handle, "closed": True}, result
        # The child released only its own view of things: the parent's
        # objects, mapping and device are untouched.
        assert pd.live and var.live and bytes(var.map()[0:4]) == b"keep"
        with dev.import_pd(blob) as again:
            assert again.handle == pd.handle
    dev.close()  # nothing left behind in the parent


def _in_fork_child(body):
    """Run body() in a child made by os.fork(); return its exit status and
    what it wrote to the pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        os.close(r)
        code = 1
        try:
            os.write(w, body().encode())
            code = 0
        except BaseException as exc:  # reported to the parent
            os.write(w, f"{type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


def test_forked_child_owns_what_it_made_not_what_it_inherited(dev):
    pd = dev.alloc_pd()
    imported = dev.import_pd(pd.export())
    var = dev.alloc_var()
    view = var.map()

    def child():
        mine = dev.import_pd(pd.export())
        with pytest.raises(rshare.Busy):  # its own object still counts
            dev.close()
        assert pd.live and imported.live and var.live  # nothing released by the refusal
        mine.unimport()
        dev.close()  # now only inherited handles were left: released locally
        assert dev.closed
        assert not pd.live and not imported.live and not var.live
        with pytest.raises(ValueError):  # the inherited view was released too
            view[0]
        with pytest.raises(rshare.StaleHandleError):
            pd.free()  # a released handle can never free the parent's PD
        return "ok"

    code, out = _in_fork_child(child)
    assert (code, out) == (0, "ok")
    # The parent's objects were neither freed nor released.
    assert pd.live and imported.live and var.live
    view[0] = 7
    assert pd.handle == imported.handle
    with dev.import_pd(pd.export()) as again:
        assert again.handle == pd.handle
    imported.unimport()
    var.free()
    pd.free()
    dev.close()


def test_forked_child_releases_inherited_mrs_before_their_pds(dev):
    """An MR lives in a PD (the PD is busy while it is live): a child closing
    an inherited device releases the inherited MR first, then the PD."""
    buffer = bytearray(4096)
    pd = dev.alloc_pd()
    mr = pd.reg_mr(buffer)
    dm = dev.alloc_dm(4096)

    def child():
        dev.close()
        assert not (pd.live or mr.live or dm.live)
        with pytest.raises(rshare.StaleHandleError):
            mr.dereg()  # never the parent's registration
        return "ok"

    assert _in_fork_child(child) == (0, "ok")
    assert pd.live and mr.live and dm.live
    with pd.import_mr(mr.export()) as again:
        assert again.attrs().rkey == mr.attrs().rkey
    mr.dereg()
    dm.free()
    pd.free()
    dev.close()


def test_forked_child_without_close_leaves_the_parent_alone(dev):
    pd = dev.alloc_pd()

    def child():
        with dev.import_pd(pd.export()) as mine:  # unimported on exit
            return str(mine.handle)

    code, out = _in_fork_child(child)
    assert (code, out) == (0, str(pd.handle))
    pd.free()
    dev.close()


def test_device_opened_in_the_child_is_the_childs(dev):
    def child():
        own = rshare.open("sim0")
        p = own.alloc_pd()
        with pytest.raises(rshare.Busy):
            own.close()  # nothing inherited here: the usual rule
        p.free()
        own.close()
        return "ok"

    assert _in_fork_child(child) == (0, "ok")
