#!/usr/bin/env python3
"""Checks that the modules of a Python package import each other without a
cycle: the imports a module runs when it is loaded (at its top level, not
inside a function) form a graph that has none.

usage: check-python-imports.py PACKAGE_DIR

Prints `N modules, M imports between them, no cycle` and exits 0, or names
each cycle found (`cycle: a -> b -> a`) and exits 1."""

import ast
import os
import sys


def module_imports(path, package, modules):
    """The package's modules that `path` imports at load time."""
    tree = ast.parse(open(path).read(), path)
    found = set()

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.add(alias.name)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
                # `from braid import ir` imports the module braid.ir.
                for alias in node.names:
                    found.add(node.module + "." + alias.name)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))
    visit(tree.body)
    return {m for m in found if m in modules}


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: check-python-imports.py PACKAGE_DIR")
    root = os.path.abspath(sys.argv[1])
    package = os.path.basename(root)
    files = {}
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            module = package if name == "__init__.py" else package + "." + name[:-3]
            files[module] = os.path.join(root, name)
    graph = {m: module_imports(p, package, files) - {m} for m, p in files.items()}
    # The package itself is loaded before any of its modules: an edge to it
    # is no cycle of the modules'.
    for m in graph:
        graph[m].discard(package)
    cycles, state = [], {}

    def walk(m, stack):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                walk(n, stack)
        stack.pop()
        state[m] = "done"
    for m in sorted(graph):
        if m not in state:
            walk(m, [])
    for cycle in cycles:
        print("cycle: " + " -> ".join(cycle))
    if cycles:
        sys.exit(1)
    print("%d modules, %d imports between them, no cycle"
          % (len(graph), sum(len(v) for v in graph.values())))


if __name__ == "__main__":
    main()
