#!/usr/bin/env python3
# Bytes on disk per byte of text of the log's own tables (messages, chain,
# full-text index; the memory's nodes are not counted), for the schema before
# the index kept no copy (memory_index held every text again, and a tool
# message's data held its arguments and output again) and after
# (message_words over messages, lean tool data). The same synthetic messages
# (55% short user messages, 30% replies up to 1 KB, 15% tool calls with
# outputs under 1 KB) in both, written 64 to a transaction, measured after a
# checkpoint with SQLite's dbstat. Usage: python3 tests/bench/log-disk.py [COUNT]
#
# python3 tests/bench/log-disk.py HOME/hearth.db: what each table and index of
# a real database costs (the endless bench keeps its homes with
# HEARTH_BENCH_HOMES=DIR), per byte of its messages' text; a copy is
# measured, so a running hearthd is not disturbed.
import hashlib, json, os, random, sqlite3, sys, tempfile
base = "the a to and of in is it you that for on with this be are was have not but what all can so your we if do about just from like when there how more one time know get will would could think good make want need day work home call today tomorrow meeting plan list note file read write open run check build test fix change start stop email phone address number name week month year morning evening night dinner lunch trip flight hotel ticket price order pay bill rent lease car train bus doctor appointment school kids garden house kitchen door window light music book movie game photo picture".split()
WORDS = base
def sentence(n):
    out = []
    while len(' '.join(out)) < n:
        out.append(random.choice(WORDS))
    return ' '.join(out)[:n]
def messages(count):
    for i in range(count):
        r = random.random()
        if r < 0.55:
            yield ('user', sentence(random.randint(20, 300)), None)
        elif r < 0.85:
            yield ('reply', sentence(random.randint(100, 1000)), None)
        else:
            args = json.dumps({"command": sentence(random.randint(10, 60))})
            out = sentence(random.randint(100, 900))
            data = {"step": 1, "call_id": "call_%d" % i, "name": "shell", "arguments": args, "output": out}
            yield ('tool', "shell(%s) → %s" % (args, out), data)
SCHEMA = """
CREATE TABLE messages (agent TEXT NOT NULL, id INTEGER NOT NULL, kind TEXT NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL, status TEXT, at TEXT NOT NULL, data TEXT, key TEXT, PRIMARY KEY (agent, id));
CREATE TABLE chain (agent TEXT NOT NULL, id INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (agent, id));
"""
OLD = "CREATE VIRTUAL TABLE memory_index USING fts5(text, agent UNINDEXED, kind UNINDEXED, source UNINDEXED, first UNINDEXED, span UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2');"
NEW = "CREATE VIRTUAL TABLE message_words USING fts5(text, agent UNINDEXED, id UNINDEXED, kind UNINDEXED, source UNINDEXED, at UNINDEXED, content='messages', tokenize = 'porter unicode61 remove_diacritics 2');"
def run(name, after, count):
    random.seed(2026)
    path = os.path.join(DIR, '%s.db' % name)
    for s in ('', '-wal', '-shm'):
        if os.path.exists(path + s): os.remove(path + s)
    c = sqlite3.connect(path)
    c.execute('PRAGMA journal_mode=WAL')
    c.executescript(SCHEMA + (NEW if after else OLD))
    prev = '0' * 64; text_bytes = 0
    c.execute('BEGIN')
    for i, (kind, text, data) in enumerate(messages(count)):
        text_bytes += len(text.encode())
        stored = None
        if data is not None:
            if after:
                lean = dict(data); a = lean.pop('arguments'); lean.pop('output'); lean['arguments_in_text'] = len(a.encode())
                stored = json.dumps(lean, separators=(',', ':'))
            else:
                stored = json.dumps(data, separators=(',', ':'))
        at = '2026-12-02T04:30:00.000+00:00'
        cur = c.execute('INSERT INTO messages (agent,id,kind,source,text,at,data) VALUES (?,?,?,?,?,?,?)', ('hearth', i, kind, 'terminal', text, at, stored))
        rowid = cur.lastrowid
        h = hashlib.sha256((prev + text + (stored or '')).encode()).hexdigest(); prev = h
        c.execute('INSERT INTO chain VALUES (?,?,?)', ('hearth', i, h))
        if after:
            c.execute('INSERT INTO message_words (rowid,text,agent,id,kind,source,at) VALUES (?,?,?,?,?,?,?)', (rowid, text, 'hearth', i, kind, 'terminal', at))
        else:
            c.execute('INSERT INTO memory_index (text,agent,kind,source,first,span) VALUES (?,?,?,?,?,1)', (text, 'hearth', kind, 'terminal', i))
        if i % 64 == 63:
            c.execute('COMMIT'); c.execute('BEGIN')
    c.execute('COMMIT')
    c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    size = os.path.getsize(path)
    parts = {}
    for tname, pgsize in c.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
        key = 'index' if tname.startswith(('memory_index', 'message_words')) else tname
        parts[key] = parts.get(key, 0) + pgsize
    print("%-7s %d messages, %.0f bytes of text each on average: %.2f bytes on disk per byte of text (%s)" % (
        name, count, text_bytes / count, size / text_bytes,
        ', '.join('%s %.2f' % (k, v / text_bytes) for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))))
    return size / text_bytes
def measure(database):
    DIR = tempfile.mkdtemp(prefix='hearth-log-disk-')
    copy = os.path.join(DIR, 'copy.db')
    sqlite3.connect(database).execute('VACUUM INTO ?', (copy,))
    c = sqlite3.connect(copy)
    text_bytes, count = c.execute('SELECT SUM(length(CAST(text AS BLOB))), COUNT(*) FROM messages').fetchone()
    size = os.path.getsize(copy)
    print("%s: %d messages, %.0f bytes of text each on average; %.2f bytes on disk per byte of text (after VACUUM)" % (
        database, count, text_bytes / count, size / text_bytes))
    groups = {}
    for name, pgsize in c.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
        group = name
        for prefix in ('message_words', 'line_words', 'sqlite_autoindex_'):
            if name.startswith(prefix):
                group = prefix.rstrip('_') if prefix != 'sqlite_autoindex_' else name.split('_')[2] + ' (key)'
        groups[group] = groups.get(group, 0) + pgsize
    small = [v for v in groups.values() if v / text_bytes < 0.005]
    groups = {k: v for k, v in groups.items() if v / text_bytes >= 0.005}
    groups["the %d others together" % len(small)] = sum(small)
    for name, total in sorted(groups.items(), key=lambda kv: -kv[1]):
        print("  %-24s %6.3f  (%.1f bytes per message)" % (name, total / text_bytes, total / count))
    levels = c.execute("SELECT level = 0, COUNT(*), SUM(length(CAST(text AS BLOB))), SUM(prefix IS NOT NULL) FROM nodes GROUP BY level = 0" if 'prefix' in [r[1] for r in c.execute('PRAGMA table_info(nodes)')] else
                       "SELECT level = 0, COUNT(*), SUM(length(CAST(text AS BLOB))), 0 FROM nodes GROUP BY level = 0").fetchall()
    for leaf, rows, text, referenced in levels:
        print("  nodes %-8s %d rows, %.3f bytes of text per byte of the messages', %d stored as a length" % (
            'level 0' if leaf else 'above', rows, (text or 0) / text_bytes, referenced or 0))
    c.close()
    os.remove(copy)
    os.rmdir(DIR)

if len(sys.argv) > 1 and not sys.argv[1].isdigit():
    measure(sys.argv[1])
    sys.exit(0)
DIR = tempfile.mkdtemp(prefix='hearth-log-disk-')
count = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
b = run('before', False, count)
a = run('after', True, count)
print("after / before: %.2f" % (a / b))
for f in os.listdir(DIR):
    os.remove(os.path.join(DIR, f))
os.rmdir(DIR)
