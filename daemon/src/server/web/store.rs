//! One-time login codes and browser sessions, in the log's database.
//!
//! Only digests are stored (`auth::digest`): a copy of the database logs no
//! one in. A session has a token (the cookie, which a browser also sends
//! to any other port of the same host) and a key (held by the page's own
//! origin alone); the WebSocket needs both. A code works once and for [`CODE_LIFETIME`]; using it and
//! creating the session are one transaction, so two browsers racing with
//! the same code get one session. A session ends when revoked, or after
//! [`SESSION_IDLE_LIFETIME`] without use.

use super::auth;
use crate::log::{Log, LogError};
use chrono::{DateTime, Local};
use hearth_protocol::WebSession;
use rusqlite::{params, OptionalExtension};
use std::time::Duration;

/// How long a code from `hearth web` works.
pub const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// How long a session lasts without being used.
pub const SESSION_IDLE_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// A session's use is written at most this often (each write is a sync).
const TOUCH_EVERY_SECS: i64 = 300;

/// The longest User-Agent kept.
const BROWSER_CHARS: usize = 120;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS web_codes (
    code_sha256 TEXT PRIMARY KEY,
    expires_unix INTEGER NOT NULL,
    used INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS web_sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    token_sha256 TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    last_seen_unix INTEGER NOT NULL,
    browser TEXT NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0,
    key_sha256 TEXT
);";

/// Sessions made before keys existed have none, and never open the WebSocket.
const ADD_KEYS: &str = "ALTER TABLE web_sessions ADD COLUMN key_sha256 TEXT";

/// A session just made by a login: what the browser is given, once.
#[derive(Debug, PartialEq, Eq)]
pub struct NewSession {
    pub id: i64,
    /// The cookie's value.
    pub token: String,
    /// The page's own secret, handed over in the address's fragment.
    pub key: String,
}

/// The codes and sessions of the web client. Cheap to clone.
#[derive(Clone)]
pub struct Codes {
    log: Log,
}

impl Codes {
    /// Creates the tables when they are missing.
    pub async fn open(log: Log) -> Result<Codes, LogError> {
        log.run(|tx, _| {
            tx.execute_batch(SCHEMA)?;
            let has_keys: bool = tx.query_row(
                "SELECT count(*) FROM pragma_table_info('web_sessions') WHERE name = 'key_sha256'",
                [],
                |row| row.get::<_, i64>(0).map(|n| n > 0),
            )?;
            if !has_keys {
                tx.execute_batch(ADD_KEYS)?;
            }
            Ok(())
        })
        .await?;
        Ok(Codes { log })
    }

    /// A new one-time code, and when it expires. Expired and used codes are
    /// forgotten here.
    pub async fn new_code(
        &self,
        now: DateTime<Local>,
    ) -> Result<(String, DateTime<Local>), LogError> {
        let code = auth::random_hex(16).map_err(|err| LogError::Commit(err.to_string()))?;
        let expires = now + CODE_LIFETIME;
        let (digest, expires_unix, now_unix) =
            (auth::digest(&code), expires.timestamp(), now.timestamp());
        self.log
            .run(move |tx, _| {
                tx.execute(
                    "DELETE FROM web_codes WHERE used = 1 OR expires_unix <= ?1",
                    params![now_unix],
                )?;
                tx.execute(
                    "INSERT INTO web_codes (code_sha256, expires_unix) VALUES (?1, ?2)",
                    params![digest, expires_unix],
                )
                .map(|_| ())
            })
            .await?;
        Ok((code, expires))
    }

    /// Uses `code`: when it is known, unused and unexpired, it is spent and
    /// a session is created for `browser`; returns it with its token and key.
    pub async fn use_code(
        &self,
        code: &str,
        browser: &str,
        now: DateTime<Local>,
    ) -> Result<Option<NewSession>, LogError> {
        let random =
            |bytes| auth::random_hex(bytes).map_err(|err| LogError::Commit(err.to_string()));
        let (token, key) = (random(32)?, random(32)?);
        let code = auth::digest(code);
        let browser: String = browser.chars().take(BROWSER_CHARS).collect();
        self.log
            .run(move |tx, _| {
                let spent = tx.execute(
                    "UPDATE web_codes SET used = 1
                     WHERE code_sha256 = ?1 AND used = 0 AND expires_unix > ?2",
                    params![code, now.timestamp()],
                )?;
                if spent == 0 {
                    return Ok(None);
                }
                let at = now.to_rfc3339();
                tx.execute(
                    "INSERT INTO web_sessions (token_sha256, created, last_seen, last_seen_unix, browser, key_sha256)
                     VALUES (?1, ?2, ?2, ?3, ?4, ?5)",
                    params![auth::digest(&token), at, now.timestamp(), browser, auth::digest(&key)],
                )?;
                let id = tx.last_insert_rowid();
                Ok(Some(NewSession { id, token, key }))
            })
            .await
    }

    /// The live session whose token is `token` and, when `key` is given,
    /// whose key is `key`, by id; its use is noted. The page's files ask
    /// for the token alone; everything of the conversation for both.
    pub async fn session(
        &self,
        token: &str,
        key: Option<&str>,
        now: DateTime<Local>,
    ) -> Result<Option<i64>, LogError> {
        let digest = auth::digest(token);
        let key = key.map(auth::digest);
        let oldest = now.timestamp() - SESSION_IDLE_LIFETIME.as_secs() as i64;
        self.log
            .run(move |tx, _| {
                let found: Option<(i64, i64)> = tx
                    .query_row(
                        "SELECT id, last_seen_unix FROM web_sessions
                         WHERE token_sha256 = ?1 AND revoked = 0 AND last_seen_unix > ?2
                           AND (?3 IS NULL OR key_sha256 = ?3)",
                        params![digest, oldest, key],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()?;
                let Some((id, seen)) = found else {
                    return Ok(None);
                };
                if now.timestamp() - seen >= TOUCH_EVERY_SECS {
                    tx.execute(
                        "UPDATE web_sessions SET last_seen = ?1, last_seen_unix = ?2 WHERE id = ?3",
                        params![now.to_rfc3339(), now.timestamp(), id],
                    )?;
                }
                Ok(Some(id))
            })
            .await
    }

    /// Every session, newest first.
    pub async fn sessions(&self) -> Result<Vec<WebSession>, LogError> {
        self.log.run(|tx, _| list(tx, None)).await
    }

    /// Revokes session `id`; returns it, or none when there is no such session.
    pub async fn revoke(&self, id: i64) -> Result<Option<WebSession>, LogError> {
        self.log
            .run(move |tx, _| {
                tx.execute(
                    "UPDATE web_sessions SET revoked = 1 WHERE id = ?1",
                    params![id],
                )?;
                Ok(list(tx, Some(id))?.pop())
            })
            .await
    }
}

fn list(tx: &rusqlite::Connection, id: Option<i64>) -> Result<Vec<WebSession>, rusqlite::Error> {
    let mut statement = tx.prepare(
        "SELECT id, created, last_seen, browser, revoked FROM web_sessions
         WHERE ?1 IS NULL OR id = ?1 ORDER BY id DESC",
    )?;
    let rows = statement.query_map(params![id], |row| {
        Ok(WebSession {
            id: row.get(0)?,
            created: row.get(1)?,
            last_seen: row.get(2)?,
            browser: row.get(3)?,
            revoked: row.get(4)?,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn codes() -> (Codes, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = tokio::sync::broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        (Codes::open(log).await.unwrap(), dir)
    }

    #[tokio::test]
    async fn a_code_works_once() {
        let (codes, _dir) = codes().await;
        let now = Local::now();
        let (code, _) = codes.new_code(now).await.unwrap();
        let new = codes.use_code(&code, "test", now).await.unwrap().unwrap();
        let key = Some(new.key.as_str());
        assert_eq!(
            codes.session(&new.token, key, now).await.unwrap(),
            Some(new.id)
        );
        assert_eq!(codes.use_code(&code, "test", now).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_code_expires() {
        let (codes, _dir) = codes().await;
        let now = Local::now();
        let (code, expires) = codes.new_code(now).await.unwrap();
        assert_eq!(codes.use_code(&code, "test", expires).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_wrong_code_or_token_opens_nothing() {
        let (codes, _dir) = codes().await;
        let now = Local::now();
        let (code, _) = codes.new_code(now).await.unwrap();
        assert_eq!(
            codes
                .use_code(&format!("{code}0"), "test", now)
                .await
                .unwrap(),
            None
        );
        assert_eq!(codes.session(&code, None, now).await.unwrap(), None);
    }

    #[tokio::test]
    async fn the_cookie_without_the_key_opens_only_the_pages_files() {
        let (codes, _dir) = codes().await;
        let now = Local::now();
        let (code, _) = codes.new_code(now).await.unwrap();
        let new = codes.use_code(&code, "test", now).await.unwrap().unwrap();
        assert_eq!(
            codes.session(&new.token, None, now).await.unwrap(),
            Some(new.id)
        );
        let wrong = format!("{}0", new.key);
        assert_eq!(
            codes.session(&new.token, Some(&wrong), now).await.unwrap(),
            None
        );
        assert_eq!(
            codes.session(&new.token, Some(""), now).await.unwrap(),
            None
        );
        // Another session's key does not fit this one's cookie.
        let (code, _) = codes.new_code(now).await.unwrap();
        let other = codes.use_code(&code, "test", now).await.unwrap().unwrap();
        assert_eq!(
            codes
                .session(&new.token, Some(&other.key), now)
                .await
                .unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn only_digests_are_stored() {
        let (codes, dir) = codes().await;
        let now = Local::now();
        let (code, _) = codes.new_code(now).await.unwrap();
        let new = codes.use_code(&code, "test", now).await.unwrap().unwrap();
        let database = rusqlite::Connection::open(dir.path().join("hearth.db")).unwrap();
        let dump: String = database
            .query_row(
                "SELECT group_concat(code_sha256) || (SELECT group_concat(token_sha256 || key_sha256) FROM web_sessions) FROM web_codes",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert!(!dump.contains(&code) && !dump.contains(&new.token) && !dump.contains(&new.key));
        assert!(dump.contains(&auth::digest(&new.token)) && dump.contains(&auth::digest(&new.key)));
    }

    #[tokio::test]
    async fn a_revoked_or_idle_session_ends() {
        let (codes, _dir) = codes().await;
        let now = Local::now();
        let (code, _) = codes.new_code(now).await.unwrap();
        let NewSession { id, token, key } = codes
            .use_code(&code, "Firefox", now)
            .await
            .unwrap()
            .unwrap();
        let later = now + SESSION_IDLE_LIFETIME;
        assert_eq!(
            codes.session(&token, Some(&key), later).await.unwrap(),
            None
        );
        let revoked = codes.revoke(id).await.unwrap().unwrap();
        assert!(revoked.revoked && revoked.browser == "Firefox");
        assert_eq!(codes.session(&token, Some(&key), now).await.unwrap(), None);
        assert_eq!(codes.session(&token, None, now).await.unwrap(), None);
        assert_eq!(codes.revoke(id + 1).await.unwrap(), None);
    }
}
