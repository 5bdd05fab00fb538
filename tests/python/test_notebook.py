# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The example notebooks, executed headless with Debian's nbclient in a
fresh python3 kernel. examples/broker_share.ipynb: the kernel publishes a
PD and a VAR by name, a process it starts on its own attaches and writes
into the VAR page, the kernel reads it back. examples/aio_attach.ipynb: a
top-level `await rshare.aio.attach(...)` waits on the kernel's loop for a
name another process publishes, and a timed-out wait leaves nothing at the
broker."""

import os

import nbformat
from nbclient import NotebookClient

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")


def execute(name, tmp_path, monkeypatch):
    """Run examples/name in a fresh kernel; the text of its outputs."""
    monkeypatch.setenv("RSHARE_BROKER", str(tmp_path / "broker.sock"))
    nb = nbformat.read(os.path.join(EXAMPLES, name), as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"], outputs
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for o in outputs)


def test_notebook_runs_headless(tmp_path, monkeypatch):
    texts = execute("broker_share.ipynb", tmp_path, monkeypatch)
    assert "b'hello, owner!'" in texts, texts
    assert "attached PD" in texts and "'notebook/demo'" in texts, texts
    assert not os.path.exists(tmp_path / "broker.sock")  # the broker stopped


def test_aio_notebook_awaits_at_top_level(tmp_path, monkeypatch):
    texts = execute("aio_attach.ipynb", tmp_path, monkeypatch)
    assert "attached <rshare.Attached 'notebook/aio' 1 PD(s) 1 VAR(s)" in texts, texts
    assert "b'hello, kernel'" in texts, texts
    assert "gave up after 0.3 s; waiting at the broker: []" in texts, texts
    assert "publisher exit status 0" in texts, texts
    assert not os.path.exists(tmp_path / "broker.sock")  # the broker stopped
BUFFER_NOTEBOOK = os.path.join(HERE, "..", "..", "examples", "buffer_share.ipynb")


def test_buffer_notebook_runs_headless(tmp_path):
    """examples/buffer_share.ipynb: four forked workers fill bands of one
    shared numpy array; the kernel plots it with matplotlib."""
    nb = nbformat.read(BUFFER_NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"], outputs
    texts = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                    for o in outputs)
    assert "zero-copy: True" in texts, texts
    assert texts.count("worker ") == 4 and texts.count(" True") >= 5, texts
    assert "every row written: True" in texts, texts
    assert "refused:" in texts and "freed" in texts, texts
    assert (tmp_path / "buffer_share.png").stat().st_size > 1000
