# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""examples/broker_share.ipynb, executed headless with Debian's nbclient in
a fresh python3 kernel: the kernel publishes a PD and a VAR by name, a
process it starts on its own attaches and writes into the VAR page, the
kernel reads it back."""

import os

import nbformat
from nbclient import NotebookClient

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOK = os.path.join(HERE, "..", "..", "examples", "broker_share.ipynb")


def test_notebook_runs_headless(tmp_path, monkeypatch):
    monkeypatch.setenv("RSHARE_BROKER", str(tmp_path / "broker.sock"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"], outputs
    texts = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                    for o in outputs)
    assert "b'hello, owner!'" in texts, texts
    assert "attached PD" in texts and "'notebook/demo'" in texts, texts
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
