"""No import cycles between the modules of our packages, including imports inside functions.

A cycle hides a knot in the layering (each side needs the other's insides); break it by moving the shared piece
down into a module both import, as swarm.specs and callcenter.event_json were.
"""

from __future__ import annotations

import grimp

PACKAGES = ("telephony", "speech", "swarm", "callcenter")


def import_cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Each cycle once, as the chain of modules from its first (sorted) module back to it."""
    cycles: dict[frozenset[str], tuple[str, ...]] = {}
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                cycles.setdefault(frozenset(back), (module, *back))
    return list(cycles.values())


def test_our_packages_have_no_import_cycles() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert len(graph.modules) > 50  # the packages were found, not an empty graph
    assert import_cycles(graph) == [], "import cycles: " + "; ".join(" -> ".join(c) for c in import_cycles(graph))


def test_a_cycle_is_found_and_named() -> None:
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    assert import_cycles(graph) == [("pkg.a", "pkg.b", "pkg.c", "pkg.a")]
