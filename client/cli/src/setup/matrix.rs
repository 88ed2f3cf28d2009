//! Setup's Matrix step: the homeserver, the agent's account and its
//! password (proved by logging in once, then logging that session out, so
//! a wrong password is said now rather than by the bridge), and the people
//! allowed, by their Matrix ids. The password goes into `secrets.env`.

use super::ask::{self, AskError, Asker};
use super::edit::Edit;
use super::SetupOptions;
use hearth_bridges::bridge::config::http_base;
use hearth_bridges::matrix::config::{user_id, DEFAULT_COMMAND, DEFAULT_PASSWORD_ENV};
use hearth_protocol::home::Home;
use serde_json::{json, Value};
use std::time::Duration;

/// How long the homeserver may take to answer a login.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum MatrixStepError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error("`{0}` is not a homeserver address; write it as https://matrix.example.org")]
    BadHomeserver(String),
    #[error("`{0}` is not a Matrix user id; write it as @name:example.org")]
    BadUser(String),
    #[error("cannot reach {homeserver}: {why} (nothing about Matrix was written)")]
    Unreachable { homeserver: String, why: String },
    #[error("{homeserver} refused to log {user} in ({why}); check the account and its password, and run setup again (nothing about Matrix was written)")]
    Refused {
        homeserver: String,
        user: String,
        why: String,
    },
}

/// What the Matrix step decided.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub homeserver: String,
    pub user: String,
    pub password_env: String,
    /// The password, when it is new here and goes into `secrets.env`.
    pub new_password: Option<String>,
    pub allow: Vec<String>,
    pub command: Option<String>,
}

impl Chosen {
    pub fn edits(&self) -> Vec<Edit> {
        let allow: Vec<toml::Value> = self
            .allow
            .iter()
            .map(|who| toml::Value::from(who.as_str()))
            .collect();
        let mut edits = vec![
            Edit::set("matrix", "homeserver", self.homeserver.as_str()),
            Edit::set("matrix", "user", self.user.as_str()),
            Edit::set("matrix", "allow", allow),
            Edit::remove("matrix", "access_token_env"),
            Edit::remove("matrix", "password_env"),
        ];
        if self.password_env != DEFAULT_PASSWORD_ENV {
            edits.push(Edit::set(
                "matrix",
                "password_env",
                self.password_env.as_str(),
            ));
        }
        if let Some(command) = self.command.as_deref().filter(|c| *c != DEFAULT_COMMAND) {
            edits.push(Edit::set("matrix", "command", command));
        }
        edits
    }
}

/// Whether to set up Matrix at all: a Matrix flag says yes; else a person
/// is asked.
pub fn wanted(asker: &mut Asker<'_>, options: &SetupOptions) -> Result<bool, AskError> {
    if options.matrix.homeserver.is_some()
        || options.matrix.user.is_some()
        || options.matrix.password_env.is_some()
        || !options.matrix.allow.is_empty()
        || options.matrix.command.is_some()
    {
        return Ok(true);
    }
    asker.confirm(
        "Talk to the agent from Matrix too (end-to-end encrypted, with an account of its own)?",
        false,
    )
}

/// The homeserver, the account, its password (proved), then who is
/// allowed. `current` is the `[matrix]` table the file has now.
pub async fn run(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
    current: Option<&toml::Table>,
) -> Result<Chosen, MatrixStepError> {
    let text = |key: &str| {
        current
            .and_then(|table| table.get(key))
            .and_then(toml::Value::as_str)
            .map(str::to_string)
    };
    let homeserver = match options
        .matrix
        .homeserver
        .clone()
        .or_else(|| text("homeserver"))
    {
        Some(homeserver) => homeserver,
        None => asker.text(
            "The agent's homeserver (its address, like https://matrix.example.org)",
            None,
            "--matrix-homeserver URL",
        )?,
    };
    let homeserver = http_base(&homeserver).ok_or(MatrixStepError::BadHomeserver(homeserver))?;
    let user = match options.matrix.user.clone().or_else(|| text("user")) {
        Some(user) => user,
        None => asker.text(
            "The agent's Matrix account (a user made for it, like @hearth:example.org)",
            None,
            "--matrix-user @NAME:SERVER",
        )?,
    };
    let user = user_id(&user).ok_or(MatrixStepError::BadUser(user))?;
    let password_env = options
        .matrix
        .password_env
        .clone()
        .or_else(|| text("password_env"))
        .unwrap_or_else(|| DEFAULT_PASSWORD_ENV.to_string());
    let (password, new_password) = ask::secret_or_ask(
        asker,
        home,
        &password_env,
        "The agent's Matrix password",
        "--matrix-password-env NAME (a variable holding the password)",
        "A password is needed: the one the agent's account was made with.",
    )?;
    asker.say(&format!("Logging in to {homeserver} as {user}…"));
    prove(&homeserver, &user, &password).await?;
    asker.say(&format!("✓ {homeserver} knows {user} and the password"));

    let mut allow: Vec<String> = current
        .and_then(|table| table.get("allow"))
        .and_then(toml::Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(toml::Value::as_str)
                .filter_map(user_id)
                .collect()
        })
        .unwrap_or_default();
    let mut joined = Vec::new();
    for given in &options.matrix.allow {
        joined.push(user_id(given).ok_or_else(|| MatrixStepError::BadUser(given.clone()))?);
    }
    if joined.is_empty() && allow.is_empty() {
        let you = asker.text(
            "Your own Matrix id (who may talk to the agent, like @you:example.org)",
            None,
            "--matrix-allow @NAME:SERVER",
        )?;
        joined.push(user_id(&you).ok_or(MatrixStepError::BadUser(you))?);
    }
    for who in joined {
        if !allow.contains(&who) {
            allow.push(who);
        }
    }
    asker.say(&format!(
        "Invite {user} to a direct chat from your Matrix app (turn encryption on): the bridge accepts invites from the allowed people only."
    ));
    Ok(Chosen {
        homeserver,
        user,
        password_env,
        new_password,
        allow,
        command: options.matrix.command.clone().or_else(|| text("command")),
    })
}

/// Logs in once with the password and logs that session out again: the
/// account and password work, and no device is left behind.
async fn prove(homeserver: &str, user: &str, password: &str) -> Result<(), MatrixStepError> {
    let unreachable = |err: reqwest::Error| MatrixStepError::Unreachable {
        homeserver: homeserver.to_string(),
        why: err.to_string(),
    };
    let client = reqwest::Client::builder()
        .timeout(LOGIN_TIMEOUT)
        .build()
        .map_err(unreachable)?;
    let login = json!({
        "type": "m.login.password",
        "identifier": { "type": "m.id.user", "user": user },
        "password": password,
        "initial_device_display_name": "hearth setup (logged out at once)",
    });
    let response = client
        .post(format!("{homeserver}/_matrix/client/v3/login"))
        .json(&login)
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    let Some(token) = answer["access_token"]
        .as_str()
        .filter(|_| status.is_success())
    else {
        let why = answer["error"]
            .as_str()
            .map_or_else(|| status.to_string(), str::to_string);
        return Err(MatrixStepError::Refused {
            homeserver: homeserver.to_string(),
            user: user.to_string(),
            why,
        });
    };
    // A session left behind (should logging out fail) only clutters the
    // account's device list: the password is proved either way.
    let _ = client
        .post(format!("{homeserver}/_matrix/client/v3/logout"))
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await;
    Ok(())
}
