#!/usr/bin/env python3
# The start's reads of the log, before and after they went through the key:
# each agent's length (the guard, the chain's check and its record run it
# at every start), the chain's heads (the anchor, at start and every
# anchor) and the agents with no chain yet (every start). A synthetic log
# of COUNT messages of one agent, in the daemon's schema for messages and
# chain, in a temporary folder; the best of three runs of each query.
# Usage: python3 tests/bench/log-start.py [COUNT...]
import os, sqlite3, sys, tempfile, time

AGENTS = """WITH RECURSIVE agents(agent) AS (
        SELECT MIN(agent) FROM messages
        UNION ALL
        SELECT (SELECT MIN(m.agent) FROM messages m WHERE m.agent > agents.agent)
        FROM agents WHERE agents.agent IS NOT NULL
    )"""
QUERIES = {
    "each agent's length (3 at every start)": (
        "SELECT agent, COALESCE(MAX(id), -1) + 1 FROM messages GROUP BY agent",
        AGENTS + " SELECT agent, (SELECT MAX(m.id) FROM messages m"
        " WHERE m.agent = agents.agent) + 1 FROM agents WHERE agent IS NOT NULL",
    ),
    "the chain's heads (start, each anchor)": (
        """SELECT c.agent, c.id + 1, c.hash FROM chain c
           JOIN (SELECT agent, MAX(id) AS id FROM messages GROUP BY agent) m
             ON c.agent = m.agent AND c.id = m.id""",
        AGENTS + """ SELECT c.agent, c.id + 1, c.hash FROM agents a
           JOIN chain c ON c.agent = a.agent
             AND c.id = (SELECT MAX(m.id) FROM messages m WHERE m.agent = a.agent)
           WHERE a.agent IS NOT NULL""",
    ),
    "agents with no chain (every start)": (
        """SELECT DISTINCT agent FROM messages m
           WHERE NOT EXISTS (SELECT 1 FROM chain c WHERE c.agent = m.agent)""",
        AGENTS + """ SELECT agent FROM agents WHERE agent IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM chain c WHERE c.agent = agents.agent)""",
    ),
}


def log(path, count):
    connection = sqlite3.connect(path)
    connection.executescript(
        """PRAGMA journal_mode=WAL;
        CREATE TABLE messages (agent TEXT NOT NULL, id INTEGER NOT NULL,
          kind TEXT NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL, status TEXT,
          at TEXT NOT NULL, data TEXT, key TEXT, PRIMARY KEY (agent, id));
        CREATE TABLE chain (agent TEXT NOT NULL, id INTEGER NOT NULL,
          hash TEXT NOT NULL, PRIMARY KEY (agent, id));"""
    )
    connection.execute("BEGIN")
    connection.executemany(
        "INSERT INTO messages VALUES (?,?,?,?,?,?,?,?,?)",
        (("hearth", i, "user", "terminal", "the kettle and the garden " * 16, None,
          "2026-12-01T10:00:00.000+00:00", None, None) for i in range(count)),
    )
    connection.executemany(
        "INSERT INTO chain VALUES (?,?,?)", (("hearth", i, "ab" * 32) for i in range(count))
    )
    connection.commit()
    return connection


def best(connection, query):
    times = []
    for _ in range(3):
        started = time.perf_counter()
        connection.execute(query).fetchall()
        times.append(time.perf_counter() - started)
    return min(times) * 1e3


counts = [int(arg.replace("_", "")) for arg in sys.argv[1:]] or [10_000, 100_000, 1_000_000]
print("| read | messages | before | after |")
print("|---|---|---|---|")
with tempfile.TemporaryDirectory() as folder:
    for count in counts:
        connection = log(os.path.join(folder, f"log-{count}.db"), count)
        for name, (before, after) in QUERIES.items():
            b, a = best(connection, before), best(connection, after)
            print(f"| {name} | {count:,} | {b:.2f} ms | {a:.3f} ms |", flush=True)
        connection.close()
