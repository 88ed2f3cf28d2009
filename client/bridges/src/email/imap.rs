//! Mail in from the user's IMAP server: TLS from the first byte (plain
//! only to a server on 127.0.0.1), logged in with the mailbox's login, one
//! folder selected; new mail found by UID (the stored cursor, see
//! [`Cursor`]) and waited for with IDLE. A connection that fails is the
//! caller's to open again; a refused login is said as such.

use super::config::{EmailConfig, Security};
use async_imap::types::UnsolicitedResponse;
use async_imap::{Client, Session};
use futures_util::TryStreamExt;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, pki_types::ServerName};

/// How long one exchange (connecting, logging in, one fetch) may take.
const EXCHANGE: Duration = Duration::from_secs(60);

/// An IDLE is ended and begun again after this long without news: servers
/// drop one after 30 minutes (RFC 2177), and a dead connection is found.
const IDLE_FOR: Duration = Duration::from_secs(25 * 60);

/// The connection under IMAP: TCP, in TLS or not.
pub trait Duplex: AsyncRead + AsyncWrite + Unpin + Send + Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Debug> Duplex for T {}

type Stream = Box<dyn Duplex>;

#[derive(Debug, thiserror::Error)]
pub enum ImapError {
    /// The server said no to the login: only a fixed configuration helps.
    #[error("{host} refused the login of {user}: {why}; check `user` in [email] and the password in secrets.env")]
    Login {
        host: String,
        user: String,
        why: String,
    },
    /// The folder cannot be read.
    #[error("{host} has no folder {mailbox} to read: {why}")]
    Mailbox {
        host: String,
        mailbox: String,
        why: String,
    },
    /// Trouble a new connection may get through.
    #[error("IMAP at {host}: {why}")]
    Connection { host: String, why: String },
}

impl ImapError {
    /// Whether opening the mailbox again cannot help until the
    /// configuration changes.
    pub fn is_lasting(&self) -> bool {
        matches!(self, ImapError::Login { .. } | ImapError::Mailbox { .. })
    }
}

/// Where the bridge stands in the folder: the UIDVALIDITY its UIDs belong
/// to and the last UID taken. Stored in the daemon after each mail, so a
/// restart neither loses nor repeats one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub validity: u32,
    pub uid: u32,
}

impl Cursor {
    /// Reads `validity:uid`.
    pub fn parse(text: &str) -> Option<Cursor> {
        let (validity, uid) = text.split_once(':')?;
        Some(Cursor {
            validity: validity.parse().ok()?,
            uid: uid.parse().ok()?,
        })
    }

    pub fn encode(self) -> String {
        format!("{}:{}", self.validity, self.uid)
    }
}

/// The selected folder on a logged-in connection.
pub struct Mailbox {
    session: Session<Stream>,
    host: String,
    /// The folder's UIDVALIDITY.
    pub validity: u32,
    /// The UID the next mail will get, as the folder said when selected.
    pub uid_next: u32,
}

/// What a connection error is, in words.
fn connection(host: &str, why: impl ToString) -> ImapError {
    ImapError::Connection {
        host: host.to_string(),
        why: why.to_string(),
    }
}

/// `work`, or a connection error when it takes longer than [`EXCHANGE`].
async fn in_time<T>(
    host: &str,
    work: impl std::future::Future<Output = Result<T, ImapError>>,
) -> Result<T, ImapError> {
    match tokio::time::timeout(EXCHANGE, work).await {
        Ok(done) => done,
        Err(_) => Err(connection(host, "the server did not answer in time")),
    }
}

/// The TLS settings: the web's certificate authorities, ring's crypto.
fn tls() -> Result<tokio_rustls::TlsConnector, rustls::Error> {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

impl Mailbox {
    /// Connects, logs in and selects the configured folder.
    pub async fn open(config: &EmailConfig, password: &str) -> Result<Mailbox, ImapError> {
        let host = config.imap.host.clone();
        in_time(&host, Mailbox::open_now(config, password)).await
    }

    async fn open_now(config: &EmailConfig, password: &str) -> Result<Mailbox, ImapError> {
        let server = &config.imap;
        let host = server.host.as_str();
        let tcp = TcpStream::connect((host, server.port))
            .await
            .map_err(|err| {
                connection(
                    host,
                    format!("cannot connect to port {}: {err}", server.port),
                )
            })?;
        let stream: Stream = match server.security {
            Security::Plain => Box::new(tcp),
            Security::Tls | Security::Starttls => {
                let name = ServerName::try_from(host.to_string())
                    .map_err(|err| connection(host, format!("not a host name: {err}")))?;
                let tls = tls().map_err(|err| connection(host, err))?;
                let stream = tls
                    .connect(name, tcp)
                    .await
                    .map_err(|err| connection(host, format!("TLS: {err}")))?;
                Box::new(stream)
            }
        };
        let mut client = Client::new(stream);
        // The server speaks first.
        match client.read_response().await {
            Ok(Some(_)) => {}
            Ok(None) => return Err(connection(host, "closed before its greeting")),
            Err(err) => return Err(connection(host, err)),
        }
        let mut session = match client.login(&config.user, password).await {
            Ok(session) => session,
            Err((async_imap::error::Error::No(why) | async_imap::error::Error::Bad(why), _)) => {
                return Err(ImapError::Login {
                    host: host.to_string(),
                    user: config.user.clone(),
                    why,
                })
            }
            Err((err, _)) => return Err(connection(host, err)),
        };
        let selected = match session.select(&config.mailbox).await {
            Ok(selected) => selected,
            Err(async_imap::error::Error::No(why) | async_imap::error::Error::Bad(why)) => {
                return Err(ImapError::Mailbox {
                    host: host.to_string(),
                    mailbox: config.mailbox.clone(),
                    why,
                })
            }
            Err(err) => return Err(connection(host, err)),
        };
        let Some(validity) = selected.uid_validity else {
            return Err(connection(host, "the server keeps no UIDs for the folder"));
        };
        // A server that does not say UIDNEXT: one past the newest mail, so a
        // first start never takes the whole folder's past.
        let uid_next = match selected.uid_next {
            Some(uid_next) => uid_next,
            None => {
                let all = session
                    .uid_search("ALL")
                    .await
                    .map_err(|err| connection(host, err))?;
                all.into_iter().max().unwrap_or(0).saturating_add(1)
            }
        };
        Ok(Mailbox {
            session,
            host: host.to_string(),
            validity,
            uid_next,
        })
    }

    /// The UIDs of the mails after `uid`, oldest first.
    pub async fn after(&mut self, uid: u32) -> Result<Vec<u32>, ImapError> {
        let host = self.host.clone();
        let search = async {
            let found = self
                .session
                .uid_search(format!("UID {}:*", uid.saturating_add(1)))
                .await
                .map_err(|err| connection(&host, err))?;
            // `N:*` names the last mail even when it is older than N.
            let mut found: Vec<u32> = found.into_iter().filter(|found| *found > uid).collect();
            found.sort_unstable();
            Ok(found)
        };
        in_time(&self.host, search).await
    }

    /// The whole of mail `uid`, or `None` when it is gone (deleted meanwhile).
    pub async fn fetch(&mut self, uid: u32) -> Result<Option<Vec<u8>>, ImapError> {
        let host = self.host.clone();
        let fetch = async {
            let fetches = self
                .session
                .uid_fetch(uid.to_string(), "(UID RFC822)")
                .await
                .map_err(|err| connection(&host, err))?;
            let fetches: Vec<_> = fetches
                .try_collect()
                .await
                .map_err(|err| connection(&host, err))?;
            Ok(fetches
                .iter()
                .find(|fetch| fetch.uid == Some(uid))
                .and_then(|fetch| fetch.body())
                .map(<[u8]>::to_vec))
        };
        in_time(&self.host, fetch).await
    }

    /// Waits with IDLE until the folder changes or 25 minutes pass,
    /// then returns the connection to fetch with.
    pub async fn wait(self) -> Result<Mailbox, ImapError> {
        let Mailbox {
            session,
            host,
            validity,
            uid_next,
        } = self;
        // News the server told beside the answers to earlier commands, or
        // before it took the IDLE, comes on this channel, not to the IDLE.
        let news = session.unsolicited_responses.clone();
        let new_mail = || {
            let mut any = false;
            while let Ok(response) = news.try_recv() {
                any |= matches!(
                    response,
                    UnsolicitedResponse::Exists(_) | UnsolicitedResponse::Recent(_)
                );
            }
            any
        };
        if new_mail() {
            return Ok(Mailbox {
                session,
                host,
                validity,
                uid_next,
            });
        }
        let mut idle = session.idle();
        in_time(&host, async {
            idle.init().await.map_err(|err| connection(&host, err))
        })
        .await?;
        if !new_mail() {
            let (wait, _stop) = idle.wait_with_timeout(IDLE_FOR);
            wait.await.map_err(|err| connection(&host, err))?;
        }
        let session = in_time(&host, async {
            idle.done().await.map_err(|err| connection(&host, err))
        })
        .await?;
        Ok(Mailbox {
            session,
            host,
            validity,
            uid_next,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_reads_back_what_is_stored() {
        let cursor = Cursor {
            validity: 1700000000,
            uid: 42,
        };
        assert_eq!(Cursor::parse(&cursor.encode()), Some(cursor));
        assert_eq!(Cursor::parse("42"), None);
        assert_eq!(Cursor::parse("a:b"), None);
    }
}
