//! Mail out through the user's SMTP server: implicit TLS (465) or STARTTLS
//! (587) with the mailbox's login, checked against the web's certificate
//! authorities; plain text only to a server on 127.0.0.1, which is not
//! logged in to (a local relay, or a test's server). What a refusal means
//! for delivery is said in [`Refusal`].

use super::config::{EmailConfig, Security};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::time::Duration;

/// How long one exchange with the server may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The SMTP connection settings, made once.
pub struct Smtp {
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

/// What the server's refusal of one mail means.
#[derive(Debug)]
pub enum Refusal {
    /// The server said never (5xx): this mail will not go to this recipient.
    Permanent(String),
    /// Trouble a later try may get through (4xx, a dropped connection).
    Transient(String),
}

impl Smtp {
    /// The transport for `config` with `password`; builds without connecting.
    pub fn new(config: &EmailConfig, password: &str) -> Result<Smtp, String> {
        let server = &config.smtp;
        let builder = match server.security {
            Security::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&server.host)
                .map_err(|err| format!("cannot set up TLS to {}: {err}", server.host))?,
            Security::Starttls => {
                AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&server.host)
                    .map_err(|err| format!("cannot set up TLS to {}: {err}", server.host))?
            }
            Security::Plain => {
                AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&server.host)
            }
        };
        let builder = builder.port(server.port).timeout(Some(TIMEOUT));
        let builder = match server.security {
            // Only a server on this machine gets plain text, and no password.
            Security::Plain => builder,
            Security::Tls | Security::Starttls => {
                builder.credentials(Credentials::new(config.user.clone(), password.to_string()))
            }
        };
        Ok(Smtp {
            transport: builder.build(),
        })
    }

    /// Sends one mail.
    pub async fn send(&self, mail: Message) -> Result<(), Refusal> {
        match self.transport.send(mail).await {
            Ok(_) => Ok(()),
            Err(err) if err.is_permanent() => Err(Refusal::Permanent(err.to_string())),
            Err(err) => Err(Refusal::Transient(err.to_string())),
        }
    }
}
