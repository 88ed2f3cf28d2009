//! The account: its store folder (private to the user), and its session,
//! taken up when the store holds one for the same account, else made by
//! logging in with the password or taking up the access token's device.
//!
//! The session is kept beside the store because the encryption keys in the
//! store belong to one device: logging in again would make a new device
//! that cannot read what was sent to the old one.

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::{Client, SessionMeta, SessionTokens};
use serde::Deserialize;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The session file in the store folder.
const SESSION: &str = "session.json";

/// How the account proves itself.
pub enum Secret {
    Password(String),
    AccessToken(String),
}

/// Opens the store in `folder` (made 0700 if absent) and logs the account
/// in; says in words what went wrong.
pub async fn open(
    folder: &Path,
    homeserver: &str,
    user: &str,
    secret: Secret,
    device_name: &str,
) -> Result<Client, String> {
    private_folder(folder)?;
    let client = Client::builder()
        .homeserver_url(homeserver)
        .sqlite_store(folder.join("sdk"), None)
        .build()
        .await
        .map_err(|err| {
            format!(
                "cannot open the Matrix store in {}: {err}",
                folder.display()
            )
        })?;
    let session_path = folder.join(SESSION);
    let stored: Option<MatrixSession> = fs::read(&session_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    match stored {
        Some(session) if session.meta.user_id.as_str() == user => {
            client
                .restore_session(session)
                .await
                .map_err(|err| format!("cannot take up the stored session of {user}: {err}"))?;
        }
        Some(session) => {
            return Err(format!(
                "the store in {} belongs to {}, not {user}; move it away to start afresh",
                folder.display(),
                session.meta.user_id
            ));
        }
        None => {
            let session = match secret {
                Secret::Password(password) => {
                    client
                        .matrix_auth()
                        .login_username(user, &password)
                        .initial_device_display_name(device_name)
                        .await
                        .map_err(|err| format!("cannot log in as {user}: {err}"))?;
                    client.matrix_auth().session().ok_or_else(|| {
                        format!("logged in as {user}, but the server gave no session")
                    })?
                }
                Secret::AccessToken(token) => {
                    let meta = whoami(homeserver, &token).await?;
                    if meta.user_id.as_str() != user {
                        return Err(format!(
                            "the access token belongs to {}, not {user}",
                            meta.user_id
                        ));
                    }
                    let session = MatrixSession {
                        meta,
                        tokens: SessionTokens {
                            access_token: token,
                            refresh_token: None,
                        },
                    };
                    client
                        .restore_session(session.clone())
                        .await
                        .map_err(|err| format!("cannot use the access token: {err}"))?;
                    session
                }
            };
            save_session(&session_path, &session)?;
        }
    }
    private_files(folder);
    Ok(client)
}

/// Who an access token belongs to, and its device.
async fn whoami(homeserver: &str, token: &str) -> Result<SessionMeta, String> {
    #[derive(Deserialize)]
    struct WhoAmI {
        user_id: matrix_sdk::ruma::OwnedUserId,
        device_id: Option<matrix_sdk::ruma::OwnedDeviceId>,
    }
    let url = format!(
        "{}/_matrix/client/v3/account/whoami",
        homeserver.trim_end_matches('/')
    );
    let response = matrix_sdk::reqwest::Client::new()
        .get(&url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|err| format!("cannot reach {homeserver}: {err}"))?;
    if !response.status().is_success() {
        return Err(format!(
            "{homeserver} refused the access token ({})",
            response.status()
        ));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|err| format!("cannot read {homeserver}'s answer: {err}"))?;
    let who: WhoAmI = serde_json::from_slice(&bytes)
        .map_err(|err| format!("{homeserver} answered whoami oddly: {err}"))?;
    let device_id = who.device_id.ok_or_else(|| {
        "the access token has no device; make one by logging in (a password) instead".to_string()
    })?;
    Ok(SessionMeta {
        user_id: who.user_id,
        device_id,
    })
}

/// Makes `folder` (and its parents) readable by the user alone.
fn private_folder(folder: &Path) -> Result<(), String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .and_then(|()| fs::set_permissions(folder, fs::Permissions::from_mode(0o700)))
        .map_err(|err| format!("cannot make the store folder {}: {err}", folder.display()))
}

/// Makes the files the SDK wrote readable by the user alone (the folder is
/// already; this is for a folder copied elsewhere).
fn private_files(folder: &Path) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let mode = if path.is_dir() { 0o700 } else { 0o600 };
        let _ = fs::set_permissions(&path, fs::Permissions::from_mode(mode));
        if path.is_dir() {
            private_files(&path);
        }
    }
}

/// Writes the session, 0600, replacing any.
fn save_session(path: &Path, session: &MatrixSession) -> Result<(), String> {
    let text = serde_json::to_vec(session).map_err(|err| err.to_string())?;
    let temporary = path.with_extension("json.new");
    let written = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .and_then(|mut file| file.write_all(&text).and_then(|()| file.sync_all()))
        .and_then(|()| fs::rename(&temporary, path));
    written.map_err(|err| format!("cannot keep the session in {}: {err}", path.display()))
}
