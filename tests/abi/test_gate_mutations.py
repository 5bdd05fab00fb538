# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The ABI gate catches every kind of break it promises to catch.

Each test copies the library sources, header and map to a temp dir, applies
one mutation, builds the copy with cc and runs all the gate's checks on it
(the same scripts ctest runs on the real build, against the checked-in
baseline and manifest). The current tree must pass them all; each mutation
must fail, and the check that catches it is named. Run:
    /usr/bin/python3 -m pytest -q tests/abi/test_gate_mutations.py
"""

import re
import subprocess

import pytest

from gate_tree import Tree

HDR = "capi/include/rshare/rshare.h"
NEW_FN = """
/** Test-only addition. */
RSHARE_API int rshare_probe_count(size_t *count);
"""
NEW_FN_SRC = """#include <rshare/rshare.h>
int rshare_probe_count(size_t *count)
{
	if (!count)
		return RSHARE_E_INVAL;
	*count = 1;
	return RSHARE_OK;
}
"""


@pytest.fixture(scope="session")
def objcache(tmp_path_factory):
    return tmp_path_factory.mktemp("objects")


@pytest.fixture
def tree(tmp_path, objcache):
    return Tree(tmp_path / "tree", objcache)


def gate(tree, **build):
    results = tree.gate(tree.build(**build))
    if results["abidiff"][0] == 77:
        pytest.skip(results["abidiff"][1].strip())
    return results


def failing(results):
    return sorted(name for name, (rc, _) in results.items() if rc != 0)


def explain(results):
    return "\n".join("--- %s (exit %d)\n%s" % (n, rc, out) for n, (rc, out) in results.items())


def add_declaration(tree):
    tree.edit(HDR, "\n#ifdef __cplusplus\n}", NEW_FN + "\n#ifdef __cplusplus\n}")
    tree.add_source("src/core/probe.c", NEW_FN_SRC)


def test_current_tree_passes(tree):
    results = gate(tree)
    assert failing(results) == [], explain(results)


def test_renamed_function_fails(tree):
    # Renamed consistently everywhere: the three lists still agree, so only
    # the baseline can see that rshare_pd_handle disappeared.
    tree.edit(HDR, "rshare_pd_handle(", "rshare_pd_kernel_handle(")
    assert tree.edit_sources("rshare_pd_handle(", "rshare_pd_kernel_handle(") == 1
    tree.set_map([(node, [n.replace("rshare_pd_handle", "rshare_pd_kernel_handle")
                          for n in names]) for node, names in tree.map_nodes()])
    results = gate(tree)
    assert results["exports"][0] == 0, explain(results)
    assert "rshare_pd_handle@@RSHARE_1.0: removed" in results["abidiff"][1]
    assert failing(results) == ["abidiff", "manifest"], explain(results)


def test_removed_function_fails(tree):
    tree.edit(HDR, "RSHARE_API int rshare_pd_handle(const rshare_pd *pd, uint32_t *handle);", "")
    tree.set_map([(node, [n for n in names if n != "rshare_pd_handle"])
                  for node, names in tree.map_nodes()])
    results = gate(tree)
    assert results["exports"][0] == 0, explain(results)
    assert "1 Removed" in results["abidiff"][1], explain(results)
    assert failing(results) == ["abidiff", "manifest"], explain(results)


def test_retyped_function_fails(tree):
    # Same name, same map: a parameter widened from 32 to 64 bits.
    old = "rshare_var_alloc(rshare_device *dev, uint32_t flags"
    tree.edit(HDR, old, old.replace("uint32_t", "uint64_t"))
    assert tree.edit_sources(old, old.replace("uint32_t", "uint64_t")) == 1
    results = gate(tree)
    assert results["exports"][0] == 0, explain(results)
    assert re.search(r"rshare_var_alloc.*\n(.*\n)*.*uint64_t", results["abidiff"][1])
    assert failing(results) == ["abidiff", "manifest"], explain(results)


def test_renumbered_status_fails(tree):
    # Two statuses swapped: no gap, so the library still builds, and the
    # symbol table and abidiff cannot see it (functions return int). The
    # frozen-values test is what catches it.
    tree.edit(HDR, "RSHARE_E_STALE = -5,", "RSHARE_E_STALE = -6,")
    tree.edit(HDR, "RSHARE_E_BUSY = -6,", "RSHARE_E_BUSY = -5,")
    results = gate(tree)
    assert "RSHARE_E_STALE is -6 in rshare.h, frozen at -5" in results["frozen"][1]
    assert "RSHARE_E_BUSY is -5 in rshare.h, frozen at -6" in results["frozen"][1]
    assert failing(results) == ["frozen", "manifest"], explain(results)


def internal_function(lib):
    """A global function of the library's objects that is not public API."""
    out = subprocess.run(["nm", "--defined-only", "-D", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    names = sorted(set(re.findall(r" T (\w+)", out)) - set(re.findall(r"rshare_\w+", out)))
    assert names, "no internal function found in a default-visibility build"
    return names[0]


def test_exported_internal_symbol_fails(tree):
    # Default visibility (the hidden preset dropped) and the name added to
    # the map: the internal function becomes part of the ABI.
    internal = internal_function(tree.build(visibility="default", version_script=False))
    nodes = tree.map_nodes()
    nodes[0][1].append(internal)
    tree.set_map(nodes)
    results = gate(tree, visibility="default")
    assert "%s: in the map, not declared in the header" % internal in results["exports"][1]
    assert "%s: added to released node RSHARE_1.0" % internal in results["abidiff"][1]
    assert failing(results) == ["abidiff", "exports"], explain(results)


def test_unversioned_exports_fail(tree):
    # The version script dropped from the link, default visibility: every
    # internal function leaks and the public ones lose their version.
    results = gate(tree, visibility="default", version_script=False)
    out = results["exports"][1]
    assert "internal symbol leak" in out and "want FUNC GLOBAL rshare_pd_alloc@@RSHARE_1.0" in out
    assert {"exports", "abidiff"} <= set(failing(results)), explain(results)


def test_function_added_to_released_node_fails(tree):
    add_declaration(tree)
    nodes = tree.map_nodes()
    nodes[0][1].append("rshare_probe_count")
    tree.set_map(nodes)
    tree.regenerate_manifest()  # even with an up-to-date manifest
    results = gate(tree)
    assert results["exports"][0] == 0, explain(results)
    assert "rshare_probe_count: added to released node RSHARE_1.0" in results["abidiff"][1]
    assert failing(results) == ["abidiff"], explain(results)


def next_node(nodes):
    """The node after the map's last one: RSHARE_1.<n+1>."""
    major, minor = nodes[-1][0][len("RSHARE_"):].split(".")
    return "RSHARE_%s.%d" % (major, int(minor) + 1)


def test_function_added_in_new_node_passes(tree):
    # The allowed way (abi/README.md): a new node that inherits the last one,
    # and a baseline for it. Without that baseline the older ones accept the
    # addition but the latest (no change at all) does not.
    add_declaration(tree)
    node = next_node(tree.map_nodes())
    tree.set_map(tree.map_nodes() + [(node, ["rshare_probe_count"])])
    results = gate(tree)
    assert failing(results) == ["abidiff", "manifest"], explain(results)
    tree.regenerate_manifest()
    results = gate(tree)
    assert failing(results) == ["abidiff"], explain(results)
    out = results["abidiff"][1]
    assert "rshare_probe_count@@%s: not in the latest baseline" % node in out, out
    assert "against RSHARE_1.0.abi: additions only" in out, out
    lib = tree.build()
    tree.write_baseline(lib)
    assert (tree.dir / "abi" / "baselines" / ("%s.abi" % node)).exists()
    results = gate(tree)
    assert failing(results) == [], explain(results)
    assert "against %s.abi: no change (latest release)" % node in results["abidiff"][1]


def test_function_added_to_latest_node_fails(tree):
    # The latest released node is frozen too: a function added to it is
    # refused by its own baseline, even though the 1.0 one allows it.
    add_declaration(tree)
    nodes = tree.map_nodes()
    nodes[-1][1].append("rshare_probe_count")
    tree.set_map(nodes)
    tree.regenerate_manifest()
    results = gate(tree)
    out = results["abidiff"][1]
    assert failing(results) == ["abidiff"], explain(results)
    assert "rshare_probe_count: added to released node %s" % nodes[-1][0] in out, out
