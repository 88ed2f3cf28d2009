"""The daemon's module graph, read from `crate::` paths in non-test code:
which top-level modules daemon/src has, and which each one uses. Shared by
.ci/module-order.py (prints knots and an order) and .ci/module-graph
(the gate that keeps ARCHITECTURE.md's order)."""
import os, re
from collections import defaultdict


def modules(src):
    """The top-level modules of one source folder, or of several (a list:
    the daemon's crates, whose modules share one namespace)."""
    if isinstance(src, (list, tuple)):
        return set().union(*(modules(one) for one in src))
    mods = set()
    for name in os.listdir(src):
        if name.endswith('.rs') and name not in ('lib.rs', 'main.rs'):
            mods.add(name[:-3])
        elif os.path.isdir(os.path.join(src, name)):
            mods.add(name)
    return mods


def edges(src):
    """Which modules each module uses; `src` as for `modules`."""
    srcs = list(src) if isinstance(src, (list, tuple)) else [src]
    mods = modules(srcs)
    deps = defaultdict(set)
    for src, root, files in ((one, root, files) for one in srcs for root, _, files in os.walk(one)):
        for f in files:
            if not f.endswith('.rs'):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            top = rel.split(os.sep)[0]
            top = top[:-3] if top.endswith('.rs') else top
            if top in ('lib', 'main') or rel.endswith('tests.rs'):
                continue
            text = open(path).read()
            # Test modules are dropped roughly: everything after #[cfg(test)].
            cut = text.find('#[cfg(test)]')
            if cut >= 0:
                text = text[:cut]
            for m in re.finditer(r'crate::(\w+)', text):
                if m.group(1) in mods and m.group(1) != top:
                    deps[top].add(m.group(1))
            for m in re.finditer(r'use crate::\{([^}]*)\}', text):
                for part in re.findall(r'(\w+)', m.group(1)):
                    if part in mods and part != top:
                        deps[top].add(part)
    return deps
