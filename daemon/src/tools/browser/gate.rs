//! The browser's one way out: a SOCKS5 proxy on 127.0.0.1 that Chromium
//! must use for every connection (`--proxy-server`, with loopback not
//! bypassed), which connects only where the address rules allow.
//!
//! The request rules of `chromium.rs` see what the DevTools protocol shows
//! (navigations, frames, images, fetches); a WebSocket, and any connection
//! Chromium opens on its own, never passes there. Here every connection
//! does: Chromium asks for a name or an address and a port (RFC 1928's
//! CONNECT), the gate resolves the name itself, refuses it when any of its
//! addresses is not public (unless the owner allows it), and connects to an
//! address it checked, so a name whose answers change between the check
//! and the connection (DNS rebinding) reaches nothing it did not check.
//!
//! The gate listens while its Chromium runs and serves only CONNECT without
//! authentication (Chromium offers no other): another program of the same
//! machine could use it too, and reach only what the agent's browser may.

use super::addresses::Addresses;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const VERSION: u8 = 5;
const NO_AUTHENTICATION: u8 = 0;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CONNECT: u8 = 1;
const IPV4: u8 = 1;
const DOMAIN: u8 = 3;
const IPV6: u8 = 4;
const SUCCEEDED: u8 = 0;
const NOT_ALLOWED: u8 = 2;
const HOST_UNREACHABLE: u8 = 4;
const COMMAND_NOT_SUPPORTED: u8 = 7;

/// A running gate; it stops listening when dropped.
pub struct Gate {
    pub port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Gate {
    /// Listens on a free port of 127.0.0.1; each connection refused is
    /// named in `refused`, as the request rules name theirs.
    pub async fn start(
        addresses: Arc<Addresses>,
        refused: Arc<Mutex<Vec<String>>>,
    ) -> std::io::Result<Gate> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let port = listener.local_addr()?.port();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let addresses = addresses.clone();
                let refused = refused.clone();
                tokio::spawn(async move {
                    if let Err(Some(why)) = serve(stream, &addresses).await {
                        refused
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(why);
                    }
                });
            }
        });
        Ok(Gate { port, task })
    }
}

/// One connection: the greeting, the request, the check, then the bytes
/// both ways. An error with words is a refusal by the rules; without, the
/// client went away or spoke something else.
async fn serve(mut client: TcpStream, addresses: &Addresses) -> Result<(), Option<String>> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await.map_err(|_| None)?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await.map_err(|_| None)?;
    if head[0] != VERSION || !methods.contains(&NO_AUTHENTICATION) {
        let _ = client.write_all(&[VERSION, NO_ACCEPTABLE_METHOD]).await;
        return Err(None);
    }
    client
        .write_all(&[VERSION, NO_AUTHENTICATION])
        .await
        .map_err(|_| None)?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await.map_err(|_| None)?;
    let host = match request[3] {
        IPV4 => {
            let mut octets = [0u8; 4];
            client.read_exact(&mut octets).await.map_err(|_| None)?;
            IpAddr::V4(Ipv4Addr::from(octets)).to_string()
        }
        IPV6 => {
            let mut octets = [0u8; 16];
            client.read_exact(&mut octets).await.map_err(|_| None)?;
            IpAddr::V6(Ipv6Addr::from(octets)).to_string()
        }
        DOMAIN => {
            let length = client.read_u8().await.map_err(|_| None)?;
            let mut name = vec![0u8; usize::from(length)];
            client.read_exact(&mut name).await.map_err(|_| None)?;
            String::from_utf8(name).map_err(|_| None)?
        }
        _ => return Err(None),
    };
    let port = client.read_u16().await.map_err(|_| None)?;
    if request[0] != VERSION || request[1] != CONNECT {
        let _ = reply(&mut client, COMMAND_NOT_SUPPORTED).await;
        return Err(None);
    }
    let checked = match addresses.resolve(&host, port).await {
        Ok(checked) => checked,
        Err(Some(why)) => {
            let _ = reply(&mut client, NOT_ALLOWED).await;
            return Err(Some(format!("a connection to {host}:{port}: {why}")));
        }
        Err(None) => {
            let _ = reply(&mut client, HOST_UNREACHABLE).await;
            return Err(None);
        }
    };
    let mut upstream = None;
    for address in checked {
        if let Ok(stream) = TcpStream::connect(address).await {
            upstream = Some(stream);
            break;
        }
    }
    let Some(mut upstream) = upstream else {
        let _ = reply(&mut client, HOST_UNREACHABLE).await;
        return Err(None);
    };
    reply(&mut client, SUCCEEDED).await.map_err(|_| None)?;
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    Ok(())
}

/// The answer to a request; the bound address is not told (zeros).
async fn reply(client: &mut TcpStream, status: u8) -> std::io::Result<()> {
    client
        .write_all(&[VERSION, status, 0, IPV4, 0, 0, 0, 0, 0, 0])
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks the gate at `port` for `host`:`target` as Chromium does, and
    /// returns the reply's status.
    async fn ask(port: u16, host: &str, target: u16) -> u8 {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .await
            .unwrap();
        stream
            .write_all(&[VERSION, 1, NO_AUTHENTICATION])
            .await
            .unwrap();
        let mut chosen = [0u8; 2];
        stream.read_exact(&mut chosen).await.unwrap();
        assert_eq!(chosen, [VERSION, NO_AUTHENTICATION]);
        let mut request = vec![VERSION, CONNECT, 0, DOMAIN, host.len() as u8];
        request.extend(host.as_bytes());
        request.extend(target.to_be_bytes());
        stream.write_all(&request).await.unwrap();
        let mut answer = [0u8; 10];
        stream.read_exact(&mut answer).await.unwrap();
        answer[1]
    }

    #[tokio::test]
    async fn a_connection_goes_only_where_the_rules_allow() {
        let open = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let open_port = open.local_addr().unwrap().port();
        let refused = Arc::new(Mutex::new(Vec::new()));
        let allowed = format!("127.0.0.1:{open_port}");
        let rules = Arc::new(Addresses::new(false, &[allowed]));
        let gate = Gate::start(rules, refused.clone()).await.unwrap();
        assert_eq!(ask(gate.port, "127.0.0.1", open_port).await, SUCCEEDED);
        assert_eq!(
            ask(gate.port, "127.0.0.1", open_port + 1).await,
            NOT_ALLOWED
        );
        assert_eq!(ask(gate.port, "localhost", open_port).await, NOT_ALLOWED);
        assert_eq!(ask(gate.port, "10.1.2.3", 80).await, NOT_ALLOWED);
        // A name that does not resolve is unreachable, not refused.
        assert_eq!(
            ask(gate.port, "nowhere.invalid", 80).await,
            HOST_UNREACHABLE
        );
        let said = refused.lock().unwrap().join("\n");
        assert!(said.contains("localhost"), "{said}");
        assert!(said.contains("loopback"), "{said}");
        assert!(!said.contains("nowhere"), "{said}");
    }
}
