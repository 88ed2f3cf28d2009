//! `hearth setup`'s Discord flags, a part of the `hearth` binary (declared
//! in `main.rs`, flattened into its setup arguments), kept beside it so the
//! list of every setup flag stays readable.

use hearth_cli::setup::SetupOptions;

/// The Discord answers `hearth setup` would ask for.
#[derive(clap::Args)]
pub struct DiscordFlags {
    /// Leave Discord as it is
    #[arg(long, conflicts_with_all = ["discord_token_env", "discord_pair", "discord_allow", "discord_channel"])]
    no_discord: bool,
    /// Set up Discord with the bot token in this variable (or secrets.env entry) [default: DISCORD_BOT_TOKEN]
    #[arg(long, value_name = "NAME")]
    discord_token_env: Option<String>,
    /// Pair your Discord account: send the code setup shows to the bot in a direct message
    #[arg(long)]
    discord_pair: bool,
    /// Allow this Discord user id (may be repeated), without pairing
    #[arg(long, value_name = "ID")]
    discord_allow: Vec<u64>,
    /// The one server channel (its id) the bot also reads and answers in, besides direct messages
    #[arg(long, value_name = "ID")]
    discord_channel: Option<u64>,
    /// Another REST address than Discord's own
    #[arg(long, value_name = "URL")]
    discord_api_base: Option<String>,
}

impl DiscordFlags {
    /// The options with these answers, the others left to the rest of the
    /// flags.
    pub fn options(self) -> SetupOptions {
        SetupOptions {
            no_discord: self.no_discord,
            discord_token_env: self.discord_token_env,
            discord_pair: self.discord_pair,
            discord_allow: self.discord_allow,
            discord_channel: self.discord_channel,
            discord_api_base: self.discord_api_base,
            ..SetupOptions::default()
        }
    }
}
