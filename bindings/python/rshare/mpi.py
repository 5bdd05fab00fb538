# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""MPI jobs: one device context, PD and buffer per node, shared by the
node's ranks.

    from mpi4py import MPI
    import rshare.mpi

    with rshare.mpi.node_share(MPI.COMM_WORLD, buffer=64 << 20) as share:
        share.node_comm      # this node's ranks (Split_type(COMM_TYPE_SHARED))
        share.owner          # True on the node's rank 0, which opened and allocated
        share.device, share.pd, share.buffer   # the same objects on every rank of the node

node_share() is collective over ``comm``: every rank calls it. The node's
rank 0 (the owner) opens the device, allocates the PD and the buffer (one
registration); the other ranks of the node receive the context, the blobs
and the buffer's memory fd from it over a private AF_UNIX socket (rshare's
channel) and import them. Leaving the block
unimports on every rank; the owner frees only after every other rank of its
node has released (or died), so no rank is left with a dangling object.

The rendezvous is private to the job: the owner makes a socket in a new
0700 directory with a random name and broadcasts the path over the node's
communicator, and accepts only the processes of its node (their pids,
gathered through the communicator, checked against SO_PEERCRED). Two jobs
of one user on one host never meet.

A rank that fails (the owner's open or allocation, a refused import, an
exception, a crash) makes node_share() raise NodeShareError on every rank
of that node, naming each failing rank and its cause, within ``timeout``
seconds instead of hanging. (A crashed rank normally makes mpirun abort the
whole job as well; with ``--mca orte_abort_on_non_zero_status 0`` the
others live to see the error.)

This is what UCC's tl_mlx5 does by hand for its node leader
(``ucc_tl_mlx5_share_ctx_pd``: the cmd fd and the raw PD handle over its
own socket), with checked blobs and the failure handling above; see
docs/python.md, "MPI jobs".
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import shutil
import socket
import struct
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

from mpi4py import MPI

from ._channel import recv_objects as _recv_objects, send as _send
from ._device import Device, open as _open
from ._objects import PD, Access, Buffer

__all__ = ["NodeShare", "NodeShareError", "node_share"]

# Status messages on a rank's socket after the owner's channel message
# (SOCK_SEQPACKET keeps each one whole): a rank's result, then the verdict.
_OK = b"ok"
_FAIL = b"fail:"
_MSG_MAX = 64 << 10
# A rank's cause is cut to this many characters, so that a verdict naming
# every rank of a big node still fits one message.
_CAUSE_MAX = 240
# How often the owner looks for ranks that died before connecting.
_POLL_S = 0.2


class NodeShareError(RuntimeError):
    """node_share() failed on this node. ``failures`` lists (rank, cause)
    for each failing rank (ranks of the communicator given to node_share);
    the message says the same."""

    def __init__(self, failures: List[Tuple[int, str]]) -> None:
        self.failures = failures
        super().__init__("node_share failed: " +
                         "; ".join(f"rank {rank}: {cause}" for rank, cause in failures))


def _cause(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class NodeShare:
    """What node_share() gives: ``node_comm`` (freed on leaving), ``owner``,
    ``owner_rank`` (the owner's rank in the communicator given to
    node_share), ``device``, ``pd`` (None with pd=False) and ``buffer``
    (None without buffer=): the same objects on every rank of the node,
    allocated on the owner, imported elsewhere. Views of the buffer
    (memoryview, numpy) must be gone before leaving."""

    def __init__(self, node_comm: MPI.Comm, owner_rank: int, device: Device,
                 objects: List[Any], peers: List[socket.socket]) -> None:
        self.node_comm = node_comm
        self.node_rank = node_comm.Get_rank()
        self.owner: bool = self.node_rank == 0
        self.owner_rank = owner_rank
        self.device = device
        self._objects = objects  # [], [PD] or [PD, Buffer]
        self.pd: Optional[PD] = objects[0] if objects else None
        self.buffer: Optional[Buffer] = objects[1] if len(objects) > 1 else None
        # Owner: one connected socket per other rank; others: the owner's.
        self._peers = peers
        self._closed = False

    def close(self) -> None:
        """Leave: the other ranks unimport and close, and tell the owner by
        closing their socket; the owner waits until every other rank of the
        node has done so (or died), then frees. Idempotent."""
        self._leave(free=self.owner)

    def abandon(self) -> None:
        """Leave without waiting for the others (what leaving the block by
        an exception does): every rank only releases its own handles, the
        owner too, so nobody waits for a rank that may be waiting for it in
        an MPI call; the objects then go when the node's last rank closes
        the context (as the kernel destroys a context's objects with it)."""
        self._leave(free=False)

    def _leave(self, free: bool) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if free:
                _wait_closed(self._peers)
            _release(self.device, self._objects, free)
        finally:
            for sock in self._peers:
                sock.close()
            self.node_comm.Free()

    def __enter__(self) -> "NodeShare":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abandon()

    def __repr__(self) -> str:
        role = "owner" if self.owner else f"imported from rank {self.owner_rank}"
        state = "closed" if self._closed else f"{self.device!r}, pd={self.pd!r}"
        return f"<rshare.mpi.NodeShare node rank {self.node_rank}, {role}: {state}>"


def _release(dev: Optional[Device], objects: List[Any], free: bool) -> None:
    """Free (the owner) or unimport the objects node_share made, the last
    made first (a buffer before its PD), then close the device."""
    try:
        for obj in reversed(objects):
            if free:
                obj.free()
            else:
                obj.unimport()
    finally:
        if dev is not None:
            dev.close()


def _wait_closed(peers: List[socket.socket]) -> None:
    """Wait until every peer socket reads end-of-file: that rank released
    the objects and closed its end, or died. Anything else it sends is
    dropped. No time bound: a rank may stay in its block for as long as it
    works, and one that dies closes its end."""
    with selectors.DefaultSelector() as sel:
        for sock in peers:
            sock.setblocking(False)
            sel.register(sock, selectors.EVENT_READ, sock)
        while sel.get_map():
            for key, _ in sel.select():
                peer: socket.socket = key.data
                try:
                    data = peer.recv(_MSG_MAX)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""  # reset by a rank that died: as good as closed
                if not data:
                    sel.unregister(peer)


def _private_socket(size: int) -> Tuple[socket.socket, str]:
    """A listening SOCK_SEQPACKET socket at a fresh, unguessable path in a
    new 0700 directory, with room for ``size`` pending connections."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    directory = tempfile.mkdtemp(prefix="rshare-mpi-", dir=base)
    path = os.path.join(directory, "s")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.bind(path)
        sock.listen(size)
    except BaseException:
        sock.close()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return sock, path


def _remove_socket(path: str) -> None:
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def _peer_pid(sock: socket.socket) -> Tuple[int, int]:
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid, uid


def _accept_ranks(listener: socket.socket, pids: List[int], deadline: float
                  ) -> Tuple[Dict[int, socket.socket], Dict[int, str]]:
    """Accept one connection from each node rank but 0, told apart by the
    kernel's peer credentials: a process that is not one of this node's
    ranks (another job, a stranger) is dropped. Returns ({node rank:
    socket}, {node rank: why it is missing}); a rank whose process is gone
    is not waited for."""
    by_pid = {pid: rank for rank, pid in enumerate(pids) if rank != 0}
    got: Dict[int, socket.socket] = {}
    missing: Dict[int, str] = {}
    try:
        while len(got) + len(missing) < len(by_pid):
            left = deadline - time.monotonic()
            if left <= 0:
                missing.update((rank, "did not connect to the node owner in time")
                               for rank in by_pid.values() if rank not in got)
                break
            listener.settimeout(min(left, _POLL_S))
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                for pid, rank in by_pid.items():
                    if rank not in got and not _alive(pid):
                        missing[rank] = "exited before connecting to the node owner"
                continue
            pid, uid = _peer_pid(conn)
            node_rank = by_pid.get(pid)
            if node_rank is None or uid != os.getuid() or node_rank in got:
                conn.close()
                continue
            got[node_rank] = conn
    except BaseException:
        for conn in got.values():
            conn.close()
        raise
    return got, missing


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _recv_msg(sock: socket.socket, deadline: float, who: str) -> bytes:
    """One status message, or raise with why there is none."""
    sock.settimeout(max(0.001, deadline - time.monotonic()))
    try:
        data = sock.recv(_MSG_MAX)
    except socket.timeout:
        raise TimeoutError(f"no answer from {who} in time") from None
    except ConnectionResetError:
        data = b""  # it died with our message unread
    except OSError as exc:
        raise ConnectionError(f"{who}: {exc}") from None
    if not data:
        raise ConnectionError(f"{who} closed its connection (it exited or crashed)")
    return data


def _check_objects(objects: List[Any]) -> None:
    """What the owner sent is what node_share shares: nothing (pd=False), a
    PD, or a PD and a buffer on it."""
    kinds = [type(obj).__name__ for obj in objects]
    if kinds not in ([], ["PD"], ["PD", "Buffer"]):
        raise ValueError(f"the node owner sent {kinds}, not a PD and its buffer")


def node_share(comm: MPI.Intracomm, pd: bool = True, buffer: Optional[int] = None,
               device: Optional[str] = None, *, access: int = Access.LOCAL_WRITE,
               timeout: float = 60.0, _node_color: Optional[int] = None) -> NodeShare:
    """Share one device context, a PD and optionally a buffer among the
    ranks of each node of ``comm`` (collective: every rank of ``comm`` calls
    it). ``device`` names the device (None: the first, as rshare.open());
    ``buffer`` is the size in bytes of the node's shared buffer (a
    PD.alloc_buffer(buffer, access) on the owner: registered once, the same
    memory and keys on every rank; it needs pd=True); the owner's arguments
    decide what is shared. ``timeout`` bounds each wait of the rendezvous,
    in seconds.
    Returns a NodeShare (a context manager); raises NodeShareError on every
    rank of a node where any rank failed.

    ``_node_color`` is for tests: ranks with different colours are treated
    as different nodes, to show the per-node split on one host.
    """
    if buffer is not None and not pd:
        raise ValueError("node_share: buffer= needs pd=True (a buffer lives in a PD)")
    node_comm = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    if _node_color is not None:
        whole = node_comm
        node_comm = whole.Split(_node_color, whole.Get_rank())
        whole.Free()
    try:
        share = _rendezvous(comm.Get_rank(), node_comm, pd, buffer, access, device, timeout)
    except BaseException:
        node_comm.Free()
        raise
    return share


def _rendezvous(my_rank: int, node_comm: MPI.Comm, want_pd: bool, buffer: Optional[int],
                access: int, device: Optional[str], timeout: float) -> NodeShare:
    pids: List[int] = node_comm.allgather(os.getpid())
    ranks: List[int] = node_comm.allgather(my_rank)  # node rank -> comm rank
    if node_comm.Get_rank() == 0:
        return _owner(node_comm, ranks, pids, want_pd, buffer, access, device, timeout)
    return _member(node_comm, ranks, timeout)


def _owner(node_comm: MPI.Comm, ranks: List[int], pids: List[int], want_pd: bool,
           buffer: Optional[int], access: int, device: Optional[str],
           timeout: float) -> NodeShare:
    dev: Optional[Device] = None
    objects: List[Any] = []  # the PD, then the buffer
    listener: Optional[socket.socket] = None
    path = ""
    peers: Dict[int, socket.socket] = {}
    shared = False
    try:
        try:
            dev = _open(device)
            if want_pd:
                objects.append(dev.alloc_pd())
                if buffer is not None:
                    objects.append(objects[0].alloc_buffer(buffer, access))
            if node_comm.Get_size() > 1:
                listener, path = _private_socket(node_comm.Get_size())
            setup: Tuple[bool, str] = (True, path)
        except Exception as exc:  # told to every rank, raised below
            setup = (False, _cause(exc))
        node_comm.bcast(setup, root=0)
        if not setup[0]:
            raise NodeShareError([(ranks[0], setup[1])])
        assert dev is not None
        if listener is None:
            share = NodeShare(node_comm, ranks[0], dev, objects, [])
            dev = None
            return share

        deadline = time.monotonic() + timeout
        peers, missing = _accept_ranks(listener, pids, deadline)
        listener.close()
        listener = None
        _remove_socket(path)
        failures = [(ranks[r], why) for r, why in missing.items()]
        shared = True  # from here a rank may hold the objects
        failures += _hand_out(dev, objects, peers, ranks, deadline)
        failures.sort()
        verdict = _verdict(failures)
        for sock in peers.values():
            try:
                sock.send(verdict)
            except OSError:
                pass  # that rank is gone: already among the failures
        if failures:
            # The others release and close their end; free only after.
            _wait_closed(list(peers.values()))
            shared = False
            raise NodeShareError(failures)
        share = NodeShare(node_comm, ranks[0], dev, objects, [peers[r] for r in sorted(peers)])
        peers = {}
        dev = None
        return share
    finally:
        for sock in peers.values():
            sock.close()
        if listener is not None:
            listener.close()
            _remove_socket(path)
        if dev is not None:
            # Interrupted while a rank may hold the objects: do not free
            # under it (they go with the node's last context).
            _release(dev, objects, not shared)


def _hand_out(dev: Device, objects: List[Any], peers: Dict[int, socket.socket],
              ranks: List[int], deadline: float) -> List[Tuple[int, str]]:
    """Send every connected rank the device and the objects (their blobs,
    and a buffer's memory fd), then collect
    each one's answer; returns the failures. A rank that could not be sent
    to is dropped from ``peers``."""
    failures = []
    for r, sock in sorted(peers.items()):  # all sends first: the ranks import at once
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            _send(sock, dev, *objects)
        except Exception as exc:
            gone = getattr(exc, "errno", 0) in (errno.EPIPE, errno.ECONNRESET)
            failures.append((ranks[r], "the rank closed its connection before it was sent "
                                       "the objects (it exited or crashed)" if gone else
                                       f"could not be sent the objects: {_cause(exc)}"))
            peers.pop(r).close()
    for r, sock in sorted(peers.items()):
        try:
            answer = _recv_msg(sock, deadline, "the rank")
        except OSError as exc:
            failures.append((ranks[r], str(exc)))
            continue
        if answer != _OK:
            cause = answer[len(_FAIL):] if answer.startswith(_FAIL) else answer[:64]
            failures.append((ranks[r], cause.decode("utf-8", "replace")[:_CAUSE_MAX]))
    return failures


def _member(node_comm: MPI.Comm, ranks: List[int], timeout: float) -> NodeShare:
    setup: Tuple[bool, str] = node_comm.bcast(None, root=0)
    if not setup[0]:
        raise NodeShareError([(ranks[0], setup[1])])
    me = ranks[node_comm.Get_rank()]
    owner = f"the node owner (rank {ranks[0]})"
    deadline = time.monotonic() + timeout
    sock: Optional[socket.socket] = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    assert sock is not None
    dev: Optional[Device] = None
    objects: List[Any] = []
    try:
        try:
            sock.settimeout(timeout)
            sock.connect(setup[1])
        except OSError as exc:
            # Nothing to report to: the owner counts this rank as missing.
            raise NodeShareError([(me, f"could not reach {owner}: {_cause(exc)}")]) from None
        cause = ""
        try:
            dev, received = _recv_objects(sock)  # a refused import releases the rest
            objects = received.pop("pd", []) + received.pop("buf", [])
            objects += [obj for rest in received.values() for obj in rest]  # refused below
            _check_objects(objects)
        except Exception as exc:
            cause = _cause(exc)[:_CAUSE_MAX]
        try:
            sock.send(_FAIL + cause.encode("utf-8", "replace") if cause else _OK)
            msg = _recv_msg(sock, deadline, owner)
            while msg != _OK and not msg.startswith(_FAIL):
                # The owner's message this rank failed before taking (its
                # fds go with it): the verdict comes next.
                msg = _recv_msg(sock, deadline, owner)
            failures = _parse_verdict(msg, ranks[0])
        except OSError as exc:  # TimeoutError, ConnectionError included
            raise NodeShareError([(me, f"could not get the objects from {owner}: "
                                       f"{cause or exc}")]) from None
        if failures:
            raise NodeShareError(failures)
        assert dev is not None
        share = NodeShare(node_comm, ranks[0], dev, objects, [sock])
        dev = sock = None
        return share
    finally:
        try:
            if dev is not None:
                _release(dev, objects, False)
        finally:
            if sock is not None:
                sock.close()  # after the release: the owner may free now


def _verdict(failures: List[Tuple[int, str]]) -> bytes:
    """The owner's verdict for every rank: ok, or the failures (as many as
    fit one message, then how many more)."""
    if not failures:
        return _OK
    shown = [(rank, cause[:_CAUSE_MAX]) for rank, cause in failures]
    while True:
        more = len(failures) - len(shown)
        tail = [(shown[-1][0], f"and {more} more rank(s) failed")] if more else []
        msg = _FAIL + json.dumps(shown + tail).encode()
        if len(msg) <= _MSG_MAX:
            return msg
        shown.pop()


def _parse_verdict(msg: bytes, owner_rank: int) -> List[Tuple[int, str]]:
    """The failures the owner's verdict lists ([] for ok); a malformed
    verdict is a failure of the owner's."""
    if msg == _OK:
        return []
    try:
        if not msg.startswith(_FAIL):
            raise ValueError
        items = json.loads(msg[len(_FAIL):].decode())
        failures = [(int(rank), str(cause)) for rank, cause in items]
        if not failures or not all(isinstance(r, int) and isinstance(c, str)
                                   for r, c in items):
            raise ValueError
        return failures
    except (ValueError, TypeError):
        return [(owner_rank, f"sent a malformed verdict ({msg[:64]!r})")]
