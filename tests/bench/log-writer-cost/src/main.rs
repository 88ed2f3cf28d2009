//! The log writer's SQLite work per append, part by part: the schema's
//! messages, chain and full-text index as hearth writes them, WAL and
//! `synchronous = FULL`, one thread, groups of appends per transaction
//! against one transaction per append. Prints appends per second and the
//! process's CPU per append (user and system time, /proc/self/stat).
#![allow(clippy::unwrap_used)]

use rusqlite::{params, Connection};
use sha2::{Digest, Sha256};
use std::time::Instant;

const SCHEMA: &str = "
CREATE TABLE messages (agent TEXT NOT NULL, id INTEGER NOT NULL, kind TEXT NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL, status TEXT, at TEXT NOT NULL, data TEXT, key TEXT, PRIMARY KEY (agent, id));
CREATE UNIQUE INDEX messages_key ON messages (agent, key) WHERE key IS NOT NULL;
CREATE TRIGGER messages_are_never_replaced BEFORE INSERT ON messages
    WHEN EXISTS (SELECT 1 FROM messages WHERE agent = NEW.agent AND (id = NEW.id OR (NEW.key IS NOT NULL AND key = NEW.key)))
    BEGIN SELECT RAISE(ABORT, 'no'); END;
CREATE TABLE chain (agent TEXT NOT NULL, id INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (agent, id));
CREATE TRIGGER chain_is_never_replaced BEFORE INSERT ON chain
    WHEN EXISTS (SELECT 1 FROM chain WHERE agent = NEW.agent AND id = NEW.id)
    BEGIN SELECT RAISE(ABORT, 'no'); END;
";
const OLD_FTS: &str = "CREATE VIRTUAL TABLE memory_index USING fts5(text, agent UNINDEXED, kind UNINDEXED, source UNINDEXED, first UNINDEXED, span UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TRIGGER messages_are_indexed AFTER INSERT ON messages WHEN NOT (new.kind = 'tool' AND (substr(new.text, 1, 7) = 'search(' OR substr(new.text, 1, 5) = 'zoom('))
BEGIN INSERT INTO memory_index (text, agent, kind, source, first, span) VALUES (new.text, new.agent, new.kind, new.source, new.id, 1); END;";
const NEW_FTS: &str = "CREATE VIRTUAL TABLE message_words USING fts5(text, agent UNINDEXED, id UNINDEXED, kind UNINDEXED, source UNINDEXED, at UNINDEXED, content='messages', tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TRIGGER messages_are_indexed AFTER INSERT ON messages WHEN NOT (new.kind = 'tool' AND (substr(new.text, 1, 7) = 'search(' OR substr(new.text, 1, 5) = 'zoom('))
BEGIN INSERT INTO message_words (rowid, text, agent, id, kind, source, at) VALUES (new.rowid, new.text, new.agent, new.id, new.kind, new.source, new.at); END;";

const PLAIN_FTS: &str = "CREATE VIRTUAL TABLE message_words USING fts5(text, agent UNINDEXED, id UNINDEXED, kind UNINDEXED, source UNINDEXED, at UNINDEXED, content='messages', tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER messages_are_indexed AFTER INSERT ON messages WHEN NOT (new.kind = 'tool' AND (substr(new.text, 1, 7) = 'search(' OR substr(new.text, 1, 5) = 'zoom('))
BEGIN INSERT INTO message_words (rowid, text, agent, id, kind, source, at) VALUES (new.rowid, new.text, new.agent, new.id, new.kind, new.source, new.at); END;";
const BATCHED_FTS: &str = "CREATE VIRTUAL TABLE message_words USING fts5(text, agent UNINDEXED, id UNINDEXED, kind UNINDEXED, source UNINDEXED, at UNINDEXED, content='messages', tokenize = 'porter unicode61 remove_diacritics 2');";
thread_local! { static AUTOMERGE: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) }; }
thread_local! { static CACHED: std::cell::Cell<bool> = std::cell::Cell::new(false); }
fn cached(on: bool) { CACHED.with(|c| c.set(on)); }

fn cpu() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn hex(bytes: &[u8]) -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() }

fn run(name: &str, fts: Option<&str>, chain: u8, savepoints: bool, group: usize, count: usize) {
    let dir = std::env::temp_dir().join("hearth-log-writer-cost");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.db"));
    for s in ["", "-wal", "-shm"] { let _ = std::fs::remove_file(format!("{}{s}", path.display())); }
    let mut c = Connection::open(&path).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.pragma_update(None, "synchronous", "FULL").unwrap();
    c.pragma_update(None, "cache_size", -1024).unwrap();
    if CACHED.with(|c| c.get()) { c.set_prepared_statement_cache_capacity(64); }
    c.execute_batch(SCHEMA).unwrap();
    if let Some(f) = fts { c.execute_batch(f).unwrap(); }
    c.execute_batch("CREATE TABLE links (agent TEXT NOT NULL, id INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (agent, id)) WITHOUT ROWID;").unwrap();
    // The chain as hearth now creates it: WITHOUT ROWID, its trigger kept.
    c.execute_batch("CREATE TABLE chain_wr (agent TEXT NOT NULL, id INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (agent, id)) WITHOUT ROWID;
        CREATE TRIGGER chain_wr_is_never_replaced BEFORE INSERT ON chain_wr
            WHEN EXISTS (SELECT 1 FROM chain_wr WHERE agent = NEW.agent AND id = NEW.id)
            BEGIN SELECT RAISE(ABORT, 'no'); END;").unwrap();
    let indexed = fts.is_some_and(|f| f.contains("message_words"));
    if let (true, Some(m)) = (indexed, AUTOMERGE.with(|a| a.get())) { c.execute_batch(&format!("INSERT INTO message_words(message_words, rank) VALUES('automerge', {m})")).unwrap(); }
    let batched = indexed && !fts.is_some_and(|f| f.contains("TRIGGER"));
    let mut indexed_to: i64 = 0;
    let cpu0 = cpu();
    let started = Instant::now();
    let mut n = 0;
    let mut prev = String::from("genesis");
    while n < count {
        let tx = c.transaction().unwrap();
        for _ in 0..group {
            if savepoints && !CACHED.with(|c| c.get()) { tx.execute_batch("SAVEPOINT job").unwrap(); }
            if savepoints && CACHED.with(|c| c.get()) { tx.prepare_cached("SAVEPOINT job").unwrap().execute([]).unwrap(); }
            // chain 3: the writer keeps the next id and the last link
            // (log/append.rs), so nothing is read back.
            let id: i64 = if chain == 3 { n as i64 } else { tx.prepare_cached("SELECT COALESCE(MAX(id), -1) + 1 FROM messages WHERE agent = ?1").unwrap().query_row(params!["bench"], |r| r.get(0)).unwrap() };
            let text = format!("benchmark message {n}: a line about as long as a short chat message");
            let at = "2026-12-02T03:00:00.000+00:00";
            tx.prepare_cached("INSERT INTO messages (agent, id, kind, source, text, status, at, data, key) VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, NULL, NULL)").unwrap()
                .execute(params!["bench", id, "user", "bench", text, at]).unwrap();
            if chain == 1 {
                let p: Option<String> = tx.prepare_cached("SELECT hash FROM chain WHERE agent = ?1 AND id = ?2").unwrap().query_row(params!["bench", id - 1], |r| r.get(0)).ok();
                let p = p.unwrap_or_else(|| prev.clone());
                let mut h = Sha256::new(); h.update(p.as_bytes()); h.update(text.as_bytes()); h.update(at.as_bytes());
                let link = hex(&h.finalize());
                tx.prepare_cached("INSERT INTO chain (agent, id, hash) VALUES (?1, ?2, ?3)").unwrap().execute(params!["bench", id, link]).unwrap();
                prev = link;
            } else if chain == 3 {
                let mut h = Sha256::new(); h.update(prev.as_bytes()); h.update(text.as_bytes()); h.update(at.as_bytes());
                let link = hex(&h.finalize());
                tx.prepare_cached("INSERT INTO chain_wr (agent, id, hash) VALUES (?1, ?2, ?3)").unwrap().execute(params!["bench", id, link]).unwrap();
                prev = link;
            } else if chain == 2 {
                let p: Option<Vec<u8>> = tx.prepare_cached("SELECT hash FROM links WHERE agent = ?1 AND id = ?2").unwrap().query_row(params!["bench", id - 1], |r| r.get(0)).ok();
                let p = p.unwrap_or_else(|| prev.clone().into_bytes());
                let mut h = Sha256::new(); h.update(&p); h.update(text.as_bytes()); h.update(at.as_bytes());
                let link = h.finalize().to_vec();
                tx.prepare_cached("INSERT INTO links (agent, id, hash) VALUES (?1, ?2, ?3)").unwrap().execute(params!["bench", id, link]).unwrap();
            }
            if savepoints && !CACHED.with(|c| c.get()) { tx.execute_batch("RELEASE job").unwrap(); }
            if savepoints && CACHED.with(|c| c.get()) { tx.prepare_cached("RELEASE job").unwrap().execute([]).unwrap(); }
            n += 1;
        }
        if batched {
            indexed_to = tx.prepare_cached("INSERT INTO message_words (rowid, text, agent, id, kind, source, at) SELECT rowid, text, agent, id, kind, source, at FROM messages WHERE rowid > ?1 AND NOT (kind = 'tool' AND (substr(text, 1, 7) = 'search(' OR substr(text, 1, 5) = 'zoom(')) ORDER BY rowid").unwrap()
                .execute(params![indexed_to]).map(|_| 0).unwrap();
            indexed_to = tx.query_row("SELECT MAX(rowid) FROM messages", [], |r| r.get(0)).unwrap();
        }
        tx.commit().unwrap();
    }
    let el = started.elapsed();
    let size = std::fs::metadata(&path).unwrap().len() + std::fs::metadata(format!("{}-wal", path.display())).map(|m| m.len()).unwrap_or(0);
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    let dbsize = std::fs::metadata(&path).unwrap().len();
    let cpu_us = (cpu() - cpu0) as f64 * 10_000.0 / count as f64;
    println!("{name:40} group {group:3}: {:8.0} /s  cpu {cpu_us:6.1} us/append  db after checkpoint {:.0} B/msg", count as f64 / el.as_secs_f64(), dbsize as f64 / count as f64);
    let _ = size;
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count: usize = args.get(1).map(|a| a.parse().unwrap()).unwrap_or(20000);
    if args.get(2).is_some_and(|a| a == "index") {
        cached(true);
        for _round in 0..3 {
            run("kept tail, chain WITHOUT ROWID", Some(NEW_FTS), 3, true, 100, count);
            AUTOMERGE.with(|a| a.set(Some(0)));
            run("the same, automerge 0", Some(NEW_FTS), 3, true, 100, count);
            AUTOMERGE.with(|a| a.set(None));
            run("the same, no porter", Some(PLAIN_FTS), 3, true, 100, count);
            run("the same, index once a group", Some(BATCHED_FTS), 3, true, 100, count);
            run("the same, no savepoints", Some(NEW_FTS), 3, false, 100, count);
            run("the same, no index", None, 3, true, 100, count);
        }
        return;
    }
    for _round in 0..3 {
    cached(false);
    run("baseline: one transaction per append", Some(OLD_FTS), 0, false, 1, count / 10);
    run("before: old index, chain, savepoints", Some(OLD_FTS), 1, true, 64, count);
    cached(true);
    run("after: index without copies, cached", Some(NEW_FTS), 1, true, 100, count);
    run("kept tail, chain WITHOUT ROWID", Some(NEW_FTS), 3, true, 100, count);
    run("kept tail, chain WITHOUT ROWID, no index", None, 3, true, 100, count);
    run("after, no index (for scale)", None, 1, true, 100, count);
    run("after, no chain (for scale)", Some(NEW_FTS), 0, true, 100, count);
    }
}
