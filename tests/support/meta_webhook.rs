//! Plays Meta towards the WhatsApp bridge's webhook: the verification
//! challenge, and deliveries in the Cloud API's format, signed with the app
//! secret as Meta signs them (or not, or wrongly).
//!
//! The HTTP is a minimal HTTP/1.1 client over a TCP stream: one request per
//! connection, `Connection: close`.

use crate::fake_graph::PHONE_NUMBER_ID;
use crate::harness::{Daemon, DEADLINE};
use hearth_bridges::whatsapp::webhook::signature;
use serde_json::{json, Value};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The app secret the tests configure.
pub const APP_SECRET: &str = "test-app-secret";

/// The verify token the tests configure.
pub const VERIFY_TOKEN: &str = "test-verify-token";

/// What the webhook answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// The bridge's webhook at `addr`, on `path`.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub addr: SocketAddr,
    pub path: String,
}

impl Webhook {
    /// The webhook of the `nth` bridge `daemon` started (1 for the first),
    /// on the default path: each bridge logs where it listens.
    ///
    /// # Panics
    /// When the line does not come before [`DEADLINE`].
    pub async fn of(daemon: &Daemon, nth: usize) -> Webhook {
        const SAID: &str = "whatsapp webhook listening on ";
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let log = daemon.log_text();
            let addr = log.split(SAID).nth(nth).and_then(|after| {
                let addr: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                    .collect();
                addr.parse().ok()
            });
            if let Some(addr) = addr {
                let path = "/webhook".to_string();
                return Webhook { addr, path };
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "bridge {nth} never said where its webhook listens:\n{log}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// `GET path?hub.mode=…&hub.verify_token=…&hub.challenge=…`.
    pub async fn verify(&self, mode: &str, token: &str, challenge: &str) -> Answer {
        let target = format!(
            "{}?hub.mode={mode}&hub.verify_token={token}&hub.challenge={challenge}",
            self.path
        );
        self.request("GET", &target, None, &[]).await
    }

    /// Posts `body` signed with [`APP_SECRET`], as Meta does.
    pub async fn deliver(&self, body: &[u8]) -> Answer {
        let signed = signature(APP_SECRET.as_bytes(), body);
        self.post(body, Some(&signed)).await
    }

    /// Delivers `messages` (the `messages[]` objects) from `from` to the
    /// fake Graph API's business number, signed; asserts the bridge took
    /// them (200).
    pub async fn deliver_from(&self, from: &Sender, messages: Vec<Value>) {
        let answer = self
            .deliver(&delivery(PHONE_NUMBER_ID, from, messages))
            .await;
        assert_eq!(answer.status, 200, "{answer:?}");
    }

    /// Posts `body` with this `X-Hub-Signature-256` header, or none.
    pub async fn post(&self, body: &[u8], signature: Option<&str>) -> Answer {
        self.request("POST", &self.path, signature, body).await
    }

    async fn request(
        &self,
        method: &str,
        target: &str,
        signature: Option<&str>,
        body: &[u8],
    ) -> Answer {
        let exchange = async {
            let mut stream = TcpStream::connect(self.addr).await?;
            let mut head = format!(
                "{method} {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: facebookexternalua\r\nConnection: close\r\nContent-Length: {}\r\n",
                self.addr,
                body.len()
            );
            if method == "POST" {
                head.push_str("Content-Type: application/json\r\n");
            }
            if let Some(signature) = signature {
                head.push_str(&format!("X-Hub-Signature-256: {signature}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body).await?;
            let mut response = Vec::new();
            stream.read_to_end(&mut response).await?;
            Ok::<_, std::io::Error>(response)
        };
        let response = tokio::time::timeout(DEADLINE, exchange)
            .await
            .expect("the webhook answered in time")
            .expect("the webhook answered");
        parse_response(&response)
    }
}

/// Status and body of a whole HTTP/1.1 response (`Content-Length` or read
/// to the end).
fn parse_response(response: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())
            .flatten()
    });
    let body = match length {
        Some(length) => body.get(..length).unwrap_or(body),
        None => body,
    };
    Answer {
        status,
        body: body.to_string(),
    }
}

/// Someone who writes to the business number.
#[derive(Clone, Copy, Debug)]
pub struct Sender {
    /// Their WhatsApp id: the number's digits.
    pub wa_id: &'static str,
    pub name: &'static str,
}

/// The owner the tests' WhatsApp bridges allow (`+1 555 123 4567`).
pub const WA_OWNER: Sender = Sender {
    wa_id: "15551234567",
    name: "Ada",
};

/// Someone the tests' WhatsApp bridges do not allow.
pub const WA_STRANGER: Sender = Sender {
    wa_id: "4915100000000",
    name: "Mallory",
};

/// A delivery of `messages` (the `messages[]` objects) from `from` to the
/// business number `phone_number_id`, as the Cloud API sends it.
pub fn delivery(phone_number_id: &str, from: &Sender, messages: Vec<Value>) -> Vec<u8> {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_number_id},
        "contacts": [{"profile": {"name": from.name}, "wa_id": from.wa_id}],
        "messages": messages,
    }}]}]})
    .to_string()
    .into_bytes()
}

/// One text message of a delivery.
pub fn text(from: &Sender, wamid: &str, body: &str) -> Value {
    json!({"from": from.wa_id, "id": wamid, "timestamp": "1767225600", "type": "text", "text": {"body": body}})
}

/// One image message of a delivery.
pub fn image(from: &Sender, wamid: &str, media_id: &str, caption: Option<&str>) -> Value {
    let mut image = json!({"id": media_id, "mime_type": "image/jpeg", "sha256": "x"});
    if let Some(caption) = caption {
        image["caption"] = json!(caption);
    }
    json!({"from": from.wa_id, "id": wamid, "timestamp": "1767225600", "type": "image", "image": image})
}

/// A delivery of status reports only (sent, delivered, read).
pub fn statuses(phone_number_id: &str, wamid: &str, recipient: &str) -> Vec<u8> {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_number_id},
        "statuses": [{"id": wamid, "status": "delivered", "timestamp": "1767225601", "recipient_id": recipient}],
    }}]}]})
    .to_string()
    .into_bytes()
}

/// A delivery of one failed status, as the Cloud API reports a send it
/// accepted and could not deliver: `"status": "failed"` with an `errors[]`
/// entry (`code`, `title`, `message`, `error_data.details`).
pub fn failed_status(
    phone_number_id: &str,
    wamid: &str,
    recipient: &str,
    code: i64,
    title: &str,
    details: &str,
) -> Vec<u8> {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_number_id},
        "statuses": [{"id": wamid, "status": "failed", "timestamp": "1767225601", "recipient_id": recipient,
                      "errors": [{"code": code, "title": title, "message": title,
                                  "error_data": {"details": details},
                                  "href": "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"}]}],
    }}]}]})
    .to_string()
    .into_bytes()
}

/// A delivery of `messages` from someone WhatsApp names only by their
/// business-scoped user id (they chose a username, their number is
/// withheld): `contacts[]` has `user_id` and no `wa_id`.
pub fn delivery_from_user_id(
    phone_number_id: &str,
    user_id: &str,
    name: &str,
    messages: Vec<Value>,
) -> Vec<u8> {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": phone_number_id},
        "contacts": [{"profile": {"name": name, "username": "@someone"}, "user_id": user_id}],
        "messages": messages,
    }}]}]})
    .to_string()
    .into_bytes()
}

/// One text message from a business-scoped user id: `from_user_id`, no `from`.
pub fn text_from_user_id(user_id: &str, wamid: &str, body: &str) -> Value {
    json!({"from_user_id": user_id, "id": wamid, "timestamp": "1767225600", "type": "text", "text": {"body": body}})
}
