#!/usr/bin/env python3
"""The daemon's module graph from `crate::` paths in non-test code: prints
each cycle (a knot of modules) and, with --order, the modules in dependency
order. Usage: .ci/module-order.py daemon/log/src daemon/models/src daemon/config/src daemon/src [--order]"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from module_graph import edges, modules
src = [arg for arg in sys.argv[1:] if not arg.startswith('--')]
mods = modules(src)
deps = edges(src)
# strongly connected components (Tarjan)
index = {}; low = {}; stack = []; on = set(); sccs = []; i = [0]
def strong(v):
    index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
    for w in sorted(deps[v]):
        if w not in index: strong(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v: break
        sccs.append(c)
sys.setrecursionlimit(10000)
for v in sorted(mods):
    if v not in index: strong(v)
bad = [c for c in sccs if len(c) > 1]
for c in bad:
    print('cycle:', ' '.join(sorted(c)))
    for a in sorted(c):
        print('  ', a, '->', ' '.join(sorted(d for d in deps[a] if d in c)))
if '--order' in sys.argv:
    # sccs come out in reverse topological order: dependencies first
    for c in sccs:
        print(' '.join(sorted(c)), '<-', ' '.join(sorted(deps[c[0]])) if len(c)==1 else '')
sys.exit(1 if bad else 0)
