//! Why the daemon did not start, and the folder helpers start-up shares.

use crate::config::ConfigError;
use crate::layout::LayoutError;
use crate::log::LogError;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("another hearthd{} is already running for this home ({lock} is locked); stop it with `hearth stop`, or use another --home", pid.map_or_else(String::new, |pid| format!(" (pid {pid})")))]
    AlreadyRunning { lock: PathBuf, pid: Option<u32> },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("{0} can be read by other users; run `chmod 600 {0}`")]
    OpenSecrets(PathBuf),
    #[error(
        "agent name `{0}` is not allowed: use 1 to 64 letters, digits, `-` or `_`, each name once"
    )]
    AgentName(String),
    #[error("[listen] tcp needs a token of at least 16 characters in ${0} or secrets.env")]
    NoToken(String),
    #[error(transparent)]
    Web(#[from] crate::server::web::WebError),
    #[error("cannot load the memory: {0}")]
    Memory(String),
    #[error("{path}: {source}")]
    Layout { path: PathBuf, source: LayoutError },
    /// Boxed: the report is large, and every start-up step returns this type.
    #[error(transparent)]
    Window(Box<crate::model::window::TooSmall>),
    #[error("the working folder {workdir} holds the home's private files ({private} among them): the agent's shell and file tools could read your keys and conversation or rewrite config.toml. Choose a working folder outside the home's folders ([agent] workdir or the subagent's workdir in config.toml), or leave it unset for agents/NAME/work")]
    WorkdirHoldsHome { workdir: PathBuf, private: PathBuf },
    #[error("{path}: {source}")]
    Mcp {
        path: PathBuf,
        source: crate::tools::mcp::McpConfigError,
    },
    #[error("{path}: {source}")]
    WhatsAppContacts {
        path: PathBuf,
        source: crate::tools::WhatsAppContactsError,
    },
    #[error(transparent)]
    Socket(#[from] crate::socket::SocketError),
}

impl StartError {
    /// Whether the start failed on what the user configured (a file to
    /// fix), so that starting again unchanged would fail again: hearthd
    /// then exits with [`hearth_protocol::exit::EXIT_CONFIG`], which a service
    /// manager is told not to restart.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            StartError::Config(_)
                | StartError::OpenSecrets(_)
                | StartError::AgentName(_)
                | StartError::NoToken(_)
                | StartError::Layout { .. }
                | StartError::Window(_)
                | StartError::WorkdirHoldsHome { .. }
                | StartError::Mcp { .. }
                | StartError::WhatsAppContacts { .. }
        )
    }
}

impl From<crate::model::window::TooSmall> for StartError {
    fn from(too_small: crate::model::window::TooSmall) -> Self {
        StartError::Window(Box::new(too_small))
    }
}

/// Turns an I/O error about `path` into a [`StartError`] that says what
/// start-up was doing.
pub fn io<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> StartError + 'a {
    move |source| StartError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Creates a folder (and its parents) private to this user.
pub fn private_dir(path: &Path) -> Result<(), StartError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(io("cannot create", path))
}
