#!/usr/bin/env python3
"""The daemon's module graph from `crate::` paths in non-test code: prints
each cycle (a knot of modules) and, with --order, the modules in dependency
order. Usage: scripts/module-order.py daemon/src [--order]"""
import os, re, sys
from collections import defaultdict
src = sys.argv[1]
mods = set()
for name in os.listdir(src):
    if name.endswith('.rs') and name not in ('lib.rs', 'main.rs'):
        mods.add(name[:-3])
    elif os.path.isdir(os.path.join(src, name)):
        mods.add(name)
deps = defaultdict(set)
for root, _, files in os.walk(src):
    for f in files:
        if not f.endswith('.rs'): continue
        path = os.path.join(root, f)
        rel = os.path.relpath(path, src)
        top = rel.split(os.sep)[0]
        top = top[:-3] if top.endswith('.rs') else top
        if top in ('lib', 'main'): continue
        text = open(path).read()
        # drop test modules roughly: everything after #[cfg(test)]
        cut = text.find('#[cfg(test)]')
        if cut >= 0: text = text[:cut]
        if rel.endswith('tests.rs'): continue
        for m in re.finditer(r'crate::(\w+)', text):
            if m.group(1) in mods and m.group(1) != top:
                deps[top].add(m.group(1))
        for m in re.finditer(r'use crate::\{([^}]*)\}', text):
            for part in re.findall(r'(\w+)', m.group(1)):
                if part in mods and part != top: deps[top].add(part)
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
