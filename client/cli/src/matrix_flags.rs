//! `hearth setup`'s Matrix flags, one for each question of its Matrix step.

/// The Matrix step's answers on the command line.
#[derive(clap::Args)]
pub struct MatrixFlags {
    /// Leave Matrix as it is
    #[arg(long, conflicts_with_all = ["matrix_homeserver", "matrix_user", "matrix_password_env", "matrix_allow", "matrix_command"])]
    no_matrix: bool,
    /// Set up Matrix with the agent's account on this homeserver (its https:// address)
    #[arg(long, value_name = "URL")]
    matrix_homeserver: Option<String>,
    /// The agent's Matrix account (@name:server), made for it on the homeserver
    #[arg(long, value_name = "@NAME:SERVER")]
    matrix_user: Option<String>,
    /// The variable (or secrets.env entry) holding the account's password [default: MATRIX_PASSWORD]
    #[arg(long, value_name = "NAME")]
    matrix_password_env: Option<String>,
    /// Allow this Matrix user (may be repeated): their messages and invites reach the agent
    #[arg(long, value_name = "@NAME:SERVER")]
    matrix_allow: Vec<String>,
    /// The hearth-matrix program the bridge starts [default: hearth-matrix, beside hearth or on PATH]
    #[arg(long, value_name = "PROGRAM")]
    matrix_command: Option<String>,
}

impl From<MatrixFlags> for hearth_cli::setup::MatrixOptions {
    fn from(flags: MatrixFlags) -> Self {
        hearth_cli::setup::MatrixOptions {
            skip: flags.no_matrix,
            homeserver: flags.matrix_homeserver,
            user: flags.matrix_user,
            password_env: flags.matrix_password_env,
            allow: flags.matrix_allow,
            command: flags.matrix_command,
        }
    }
}
