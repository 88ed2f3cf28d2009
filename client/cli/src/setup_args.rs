//! `hearth setup`'s flags, one for every question the wizard asks, and
//! the options they make for `hearth_cli::setup`. A module of the `hearth`
//! binary (`main.rs`), which alone parses arguments.

/// The answers `hearth setup` would ask for.
#[derive(clap::Args)]
pub struct SetupArgs {
    /// The model provider: ollama, openai, anthropic, chatgpt (sign in with your ChatGPT plan), or openai-chat (another OpenAI-compatible server)
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// With --provider chatgpt: sign in with a code entered in a browser on any device (a server without a browser)
    #[arg(long)]
    device: bool,
    /// The model's name (`gpt-5-mini`, `qwen3:8b`, …)
    #[arg(long)]
    model: Option<String>,
    /// The provider's address up to /v1 (for ollama: the server's, e.g. http://127.0.0.1:11434)
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The variable holding the API key, named in config.toml as the model's api_key_env (its value is read from the environment or secrets.env)
    #[arg(long, value_name = "NAME")]
    key_env: Option<String>,
    /// Read the API key from stdin and store it in secrets.env
    #[arg(long)]
    key_stdin: bool,
    /// Leave Telegram as it is
    #[arg(long, conflicts_with_all = ["telegram_token_env", "telegram_pair", "telegram_allow"])]
    no_telegram: bool,
    /// Set up Telegram with the bot token in this variable (or secrets.env entry)
    #[arg(long, value_name = "NAME")]
    telegram_token_env: Option<String>,
    /// Pair your Telegram account: send the code setup shows to the bot
    #[arg(long)]
    telegram_pair: bool,
    /// Allow this Telegram user id (may be repeated), without pairing
    #[arg(long, value_name = "ID")]
    telegram_allow: Vec<i64>,
    /// Another Bot API address than Telegram's own
    #[arg(long, value_name = "URL")]
    telegram_api_base: Option<String>,
    /// Leave Signal as it is
    #[arg(long, conflicts_with_all = ["signal_account", "signal_pair", "signal_allow", "signal_socket", "signal_tcp", "signal_command"])]
    no_signal: bool,
    /// Set up Signal for the agent's number, the account signal-cli is registered or linked as
    #[arg(long, value_name = "NUMBER")]
    signal_account: Option<String>,
    /// Pair your Signal number: send the code setup shows to the agent's number
    #[arg(long)]
    signal_pair: bool,
    /// Allow this Signal number (may be repeated), without pairing
    #[arg(long, value_name = "NUMBER")]
    signal_allow: Vec<String>,
    /// Reach a running `signal-cli daemon --socket` at this path
    #[arg(long, value_name = "PATH", conflicts_with_all = ["signal_tcp", "signal_command"])]
    signal_socket: Option<std::path::PathBuf>,
    /// Reach a running `signal-cli daemon --tcp` at HOST:PORT
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "signal_command")]
    signal_tcp: Option<String>,
    /// The signal-cli program hearth starts itself [default: signal-cli]
    #[arg(long, value_name = "PROGRAM")]
    signal_command: Option<String>,
    /// Leave email as it is
    #[arg(long, conflicts_with_all = ["email_address", "email_imap_host", "email_smtp_host", "email_allow"])]
    no_email: bool,
    /// Set up email for the agent's own address (its mailbox, not yours)
    #[arg(long, value_name = "ADDRESS")]
    email_address: Option<String>,
    /// The mailbox's IMAP server [default: imap. and the address's domain]
    #[arg(long, value_name = "HOST")]
    email_imap_host: Option<String>,
    /// The IMAP server's port, TLS from the first byte [default: 993]
    #[arg(long, value_name = "PORT")]
    email_imap_port: Option<u16>,
    /// The mailbox's SMTP server [default: smtp. and the address's domain]
    #[arg(long, value_name = "HOST")]
    email_smtp_host: Option<String>,
    /// The SMTP server's port: 587 for STARTTLS, 465 for TLS [default: 587]
    #[arg(long, value_name = "PORT")]
    email_smtp_port: Option<u16>,
    /// The mailbox's login [default: the address]
    #[arg(long, value_name = "NAME")]
    email_user: Option<String>,
    /// The variable (or secrets.env line) holding the mailbox's password [default: HEARTH_EMAIL_PASSWORD]
    #[arg(long, value_name = "NAME")]
    email_password_env: Option<String>,
    /// Allow mail from this address (may be repeated)
    #[arg(long, value_name = "ADDRESS")]
    email_allow: Vec<String>,
    /// Your provider's authserv-id, whose Authentication-Results header is believed (like mx.google.com)
    #[arg(long, value_name = "ID")]
    email_authserv_id: Option<String>,
    /// How long pairing waits for the code, in seconds [default: 300]
    #[arg(long, value_name = "SECS")]
    pair_timeout: Option<u64>,
    #[command(flatten)]
    discord: Box<crate::discord_flags::DiscordFlags>,
    #[command(flatten)]
    matrix: crate::matrix_flags::MatrixFlags,
    /// Install the systemd user service at the end
    #[arg(long, conflicts_with = "no_service")]
    service: bool,
    /// Do not install the service (nor ask)
    #[arg(long)]
    no_service: bool,
    /// Ask nothing: every answer from its flag or its default
    #[arg(long, short = 'y')]
    yes: bool,
}

impl SetupArgs {
    pub fn options(self) -> hearth_cli::setup::SetupOptions {
        hearth_cli::setup::SetupOptions {
            provider: self.provider,
            device: self.device,
            model: self.model,
            base_url: self.base_url,
            key_env: self.key_env,
            key_stdin: self.key_stdin,
            no_telegram: self.no_telegram,
            telegram_token_env: self.telegram_token_env,
            telegram_pair: self.telegram_pair,
            telegram_allow: self.telegram_allow,
            telegram_api_base: self.telegram_api_base,
            no_signal: self.no_signal,
            signal_account: self.signal_account,
            signal_pair: self.signal_pair,
            signal_allow: self.signal_allow,
            signal_socket: self.signal_socket,
            signal_tcp: self.signal_tcp,
            signal_command: self.signal_command,
            email: hearth_cli::setup::EmailOptions {
                skip: self.no_email,
                address: self.email_address,
                imap_host: self.email_imap_host,
                imap_port: self.email_imap_port,
                smtp_host: self.email_smtp_host,
                smtp_port: self.email_smtp_port,
                user: self.email_user,
                password_env: self.email_password_env,
                allow: self.email_allow,
                authserv_id: self.email_authserv_id,
            },
            matrix: self.matrix.into(),
            pair_timeout: self.pair_timeout.map(std::time::Duration::from_secs),
            service: match (self.service, self.no_service) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            yes: self.yes,
            ..self.discord.options()
        }
    }
}
