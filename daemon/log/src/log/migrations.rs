//! Migrations by name: each runs once, in the start's schema transaction,
//! and is recorded in `migrations` with when it ran, so a later start
//! skips it (and `hearth status` or a person can see what ran).

use rusqlite::{params, Connection, OptionalExtension};

/// Creates the record of migrations.
pub(super) fn create(connection: &Connection) -> Result<(), rusqlite::Error> {
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS migrations (
            name TEXT PRIMARY KEY,
            at   TEXT NOT NULL
        );",
    )
}

/// Runs `migration` unless a migration of this name ran before, and
/// records it; true when it ran now. In the caller's transaction, so a
/// migration that fails leaves no record and runs again at the next start.
pub(super) fn once(
    connection: &Connection,
    name: &str,
    migration: impl FnOnce(&Connection) -> Result<(), rusqlite::Error>,
) -> Result<bool, rusqlite::Error> {
    let ran: Option<String> = connection
        .query_row(
            "SELECT at FROM migrations WHERE name = ?1",
            params![name],
            |row| row.get(0),
        )
        .optional()?;
    if ran.is_some() {
        return Ok(false);
    }
    migration(connection)?;
    let at = chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
    connection.execute(
        "INSERT INTO migrations (name, at) VALUES (?1, ?2)",
        params![name, at],
    )?;
    Ok(true)
}
