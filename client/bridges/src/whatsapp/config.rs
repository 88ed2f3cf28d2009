//! The bridge's configuration: the `[whatsapp]` table of the home's
//! `config.toml`, and, for the Cloud API backend, its three secrets (the
//! webhook's verify token, the app secret that signs deliveries, the access
//! token that sends) from the environment or `secrets.env`.
//!
//! `backend` picks how the bridge reaches WhatsApp: `"cloud"` (the default,
//! the Business Cloud API) or `"web"` (a personal account linked as a
//! device; see `web/`). `allow` and `send` mean the same for both; the
//! webhook's settings, `phone_number_id` and the secrets are the Cloud
//! API's and are not read with `"web"`.

use crate::bridge::config::{self as shared, ConfigError, Outgoing};
use hearth_protocol::bridge_tables::WhatsAppTable;
use hearth_protocol::home::Home;
use serde::Deserialize;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

pub use hearth_protocol::bridge_tables::{
    Backend, DEFAULT_ACCESS_TOKEN_ENV, DEFAULT_APP_SECRET_ENV, DEFAULT_GRAPH_BASE, DEFAULT_LISTEN,
    DEFAULT_PATH, DEFAULT_VERIFY_TOKEN_ENV,
};

const TABLE: &str = "whatsapp";
const EXAMPLE: &str = "phone_number_id = \"…\" and allow = [\"+your number\"]";

/// The whole file as the bridge sees it: every other table is the daemon's.
#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    whatsapp: Option<WhatsAppTable>,
}

/// The `[whatsapp]` table, checked and normalized.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatsAppConfig {
    pub backend: Backend,
    pub listen: SocketAddr,
    pub path: String,
    pub verify_token_env: String,
    pub app_secret_env: String,
    pub access_token_env: String,
    /// Empty with the linked device, which has no business number.
    pub phone_number_id: String,
    /// Without a trailing `/`.
    pub graph_base: String,
    /// WhatsApp ids: the numbers' digits, country code first, and
    /// business-scoped user ids.
    pub allow: Vec<String>,
    /// The owner's WhatsApp id, when set.
    pub owner: Option<String>,
    pub send: Vec<Outgoing>,
}

pub use hearth_protocol::whatsapp::whatsapp_id;
pub use hearth_protocol::whatsapp_number as normalize_number;

impl WhatsAppConfig {
    /// Reads the `[whatsapp]` table of the home's `config.toml`.
    pub fn load(home: &Home) -> Result<WhatsAppConfig, ConfigError> {
        let (path, text) = shared::read_config(home, TABLE, EXAMPLE)?;
        WhatsAppConfig::parse(&path, &text)
    }

    /// Reads and checks the `[whatsapp]` table of a config file's text.
    pub fn parse(path: &Path, text: &str) -> Result<WhatsAppConfig, ConfigError> {
        let table =
            shared::parse_table(path, text, TABLE, EXAMPLE, |file: ConfigFile| file.whatsapp)?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            table: TABLE,
            message,
        };
        let listen = table.listen.trim().parse::<SocketAddr>().map_err(|_| {
            invalid(format!(
                "listen `{}` is not an address and port like {DEFAULT_LISTEN}",
                table.listen
            ))
        })?;
        if !table.path.starts_with('/') || table.path.contains(['?', '#', ' ']) {
            return Err(invalid(format!(
                "path `{}` must be a URL path starting with `/`, like {DEFAULT_PATH}",
                table.path
            )));
        }
        let graph_base = shared::http_base(&table.graph_base).ok_or_else(|| {
            invalid(format!(
                "graph_base `{}` is not an http(s) address; the default is {DEFAULT_GRAPH_BASE}",
                table.graph_base
            ))
        })?;
        let phone_number_id = match (table.backend, &table.phone_number_id) {
            (Backend::Web, _) => String::new(),
            (Backend::Cloud, None) => {
                return Err(invalid(
                    "phone_number_id is missing; WhatsApp Manager (API Setup) shows the phone number's id (or set backend = \"web\" to link a personal account)".to_string(),
                ))
            }
            (Backend::Cloud, Some(id)) => {
                let id = id.as_text().trim().to_string();
                if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid(format!(
                        "phone_number_id `{id}` is not an id; WhatsApp Manager (API Setup) shows the phone number's id"
                    )));
                }
                id
            }
        };
        if table.allow.is_none() {
            return Err(invalid(
                "allow is missing: list the numbers that may talk to the agent, like allow = [\"+15551234567\"] (empty lets nobody in)".to_string(),
            ));
        }
        let allow = table.allowed().map_err(|bad| invalid(bad.to_string()))?;
        let owner = match table.owner_id().map_err(|bad| invalid(bad.to_string()))? {
            Some(id) if !allow.contains(&id) => {
                let written = table
                    .owner
                    .as_ref()
                    .map(|o| o.as_text())
                    .unwrap_or_default();
                return Err(invalid(format!("owner `{written}` is not one of allow")));
            }
            owner => owner,
        };
        let names = ["verify_token_env", "app_secret_env", "access_token_env"];
        for (name, env) in names.into_iter().zip(table.secret_names()) {
            if env.trim().is_empty() {
                return Err(invalid(format!("{name} must name a variable")));
            }
        }
        Ok(WhatsAppConfig {
            backend: table.backend,
            listen,
            path: table.path,
            verify_token_env: table.verify_token_env,
            app_secret_env: table.app_secret_env,
            access_token_env: table.access_token_env,
            phone_number_id,
            graph_base,
            allow,
            owner,
            send: table.send,
        })
    }

    /// Whether `wa_id` (a number's digits or a business-scoped user id)
    /// may talk to the agent.
    pub fn allows(&self, wa_id: &str) -> bool {
        self.allow.iter().any(|allowed| allowed == wa_id)
    }

    /// Whether `wa_id` is the owner: `owner`, or the one entry of `allow`.
    /// With several entries and no `owner`, nobody is.
    pub fn is_owner(&self, wa_id: &str) -> bool {
        match &self.owner {
            Some(owner) => owner == wa_id,
            None => self.allow.len() == 1 && self.allow[0] == wa_id,
        }
    }

    /// Who wrote a message from `wa_id`, when that is not the owner.
    pub fn person(&self, wa_id: &str) -> Option<String> {
        (!self.is_owner(wa_id)).then(|| hearth_protocol::whatsapp::whatsapp_shown(wa_id))
    }

    /// The three secrets, from their variables or `secrets.env`.
    pub fn secrets(&self, home: &Home) -> Result<Secrets, ConfigError> {
        Ok(Secrets {
            verify_token: shared::secret(
                home,
                &self.verify_token_env,
                "WhatsApp webhook verify token",
                "it is any random string you choose and also type into the app's webhook settings",
            )?,
            app_secret: shared::secret(
                home,
                &self.app_secret_env,
                "WhatsApp app secret",
                "the Meta app's dashboard shows it under App settings → Basic",
            )?,
            access_token: shared::secret(
                home,
                &self.access_token_env,
                "WhatsApp access token",
                "create a system user's permanent token in Meta Business settings",
            )?,
        })
    }
}

/// The bridge's secrets. Never logged: `Debug` shows none of them.
#[derive(Clone, PartialEq, Eq)]
pub struct Secrets {
    /// Meta echoes it when it verifies the webhook (GET).
    pub verify_token: String,
    /// The key of the signature on every delivery (POST).
    pub app_secret: String,
    /// The Bearer token of every Graph API call.
    pub access_token: String,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secrets { .. }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::config::default_send;
    use std::os::unix::fs::PermissionsExt;

    fn parse(text: &str) -> Result<WhatsAppConfig, ConfigError> {
        WhatsAppConfig::parse(Path::new("config.toml"), text)
    }

    #[test]
    fn the_owner_is_named_or_the_only_allowed_number() {
        let base = "[whatsapp]\nbackend = \"web\"\n";
        let alone = parse(&format!("{base}allow = [\"+15551234567\"]\n")).unwrap();
        assert_eq!(alone.person("15551234567"), None);
        let several = parse(&format!(
            "{base}allow = [\"+15551234567\", \"+447700900123\"]\n"
        ))
        .unwrap();
        assert_eq!(
            several.person("15551234567").as_deref(),
            Some("+15551234567")
        );
        let named = parse(&format!(
            "{base}allow = [\"+15551234567\", \"+447700900123\"]\nowner = \"+1 555 123 4567\"\n"
        ))
        .unwrap();
        assert_eq!(named.person("15551234567"), None);
        assert!(named.person("447700900123").is_some());
        let said = parse(&format!("{base}allow = []\nowner = \"+15551234567\"\n"))
            .unwrap_err()
            .to_string();
        assert!(said.contains("is not one of allow"), "{said}");
    }

    #[test]
    fn a_minimal_table_takes_the_defaults() {
        let config = parse(
            "[model]\nprovider = \"x\"\n\n[whatsapp]\nphone_number_id = \"1098765\"\nallow = [\"+1 555 123-4567\"]\n",
        )
        .unwrap();
        assert_eq!(config.listen, "127.0.0.1:8443".parse().unwrap());
        assert_eq!(config.path, "/webhook");
        assert_eq!(config.verify_token_env, "WHATSAPP_VERIFY_TOKEN");
        assert_eq!(config.app_secret_env, "WHATSAPP_APP_SECRET");
        assert_eq!(config.access_token_env, "WHATSAPP_ACCESS_TOKEN");
        assert_eq!(config.phone_number_id, "1098765");
        assert_eq!(config.graph_base, "https://graph.facebook.com/v23.0");
        assert_eq!(config.allow, vec!["15551234567"]);
        assert_eq!(config.send, default_send());
        assert_eq!(config.backend, Backend::Cloud);
        assert!(config.allows("15551234567") && !config.allows("+15551234567"));
    }

    #[test]
    fn the_linked_device_needs_no_business_number_and_accepts_contacts() {
        let text = "[whatsapp]\nbackend = \"web\"\nallow = [\"+1 555 123 4567\"]\nsend = [\"note\"]\n\n[whatsapp.contacts]\nmum = \"+44 20 7946 0958\"\n";
        let config = parse(text).unwrap();
        assert_eq!(config.backend, Backend::Web);
        assert_eq!(config.phone_number_id, "");
        assert_eq!(config.allow, vec!["15551234567"]);
        assert_eq!(config.send, vec![Outgoing::Note]);

        let said = parse("[whatsapp]\nbackend = \"webb\"\nallow = []\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("webb"), "{said}");
    }

    #[test]
    fn every_setting_reads() {
        let text = "[whatsapp]\nlisten = \"0.0.0.0:9000\"\npath = \"/hooks/wa\"\nverify_token_env = \"V\"\napp_secret_env = \"S\"\naccess_token_env = \"A\"\nphone_number_id = 1098765\ngraph_base = \"http://127.0.0.1:1/v1/\"\nallow = [15551234567, \"+44 (20) 7946.0958\"]\nsend = [\"echo\", \"note\"]\n";
        let config = parse(text).unwrap();
        assert_eq!(config.listen, "0.0.0.0:9000".parse().unwrap());
        assert_eq!(config.path, "/hooks/wa");
        assert_eq!(
            (
                config.verify_token_env.as_str(),
                config.app_secret_env.as_str(),
                config.access_token_env.as_str()
            ),
            ("V", "S", "A")
        );
        assert_eq!(config.phone_number_id, "1098765");
        assert_eq!(config.graph_base, "http://127.0.0.1:1/v1");
        assert_eq!(config.allow, vec!["15551234567", "442079460958"]);
        let with_user_id = parse(
            "[whatsapp]\nphone_number_id = \"1\"\nallow = [\"us.13491208655302741918\", \"+1 555 123 4567\"]\n",
        )
        .unwrap();
        assert_eq!(
            with_user_id.allow,
            vec!["US.13491208655302741918", "15551234567"]
        );
        assert!(with_user_id.allows("US.13491208655302741918"));
        assert_eq!(config.send, vec![Outgoing::Echo, Outgoing::Note]);
    }

    #[test]
    fn numbers_normalize_to_whatsapp_ids() {
        assert_eq!(
            normalize_number("+1 555 123 4567").as_deref(),
            Some("15551234567")
        );
        assert_eq!(
            normalize_number("15551234567").as_deref(),
            Some("15551234567")
        );
        assert_eq!(
            normalize_number("+44 (20) 7946-0958").as_deref(),
            Some("442079460958")
        );
        assert_eq!(normalize_number("+1 555 CALL NOW"), None);
        assert_eq!(normalize_number("123"), None);
        assert_eq!(normalize_number("1234567890123456"), None);
        assert_eq!(normalize_number(""), None);
    }

    #[test]
    fn mistakes_name_the_line_and_what_is_wrong() {
        let base = "[whatsapp]\nphone_number_id = \"1\"\nallow = [\"+15551234567\"]\n";
        let said = parse(&format!("{base}verify_tokn_env = \"X\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            said.starts_with("config.toml line 4:") && said.contains("verify_tokn_env"),
            "{said}"
        );

        let said = parse("[whatsapp]\nphone_number_id = \"1\"\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("allow"), "allow is required: {said}");
        let said = parse("[whatsapp]\nallow = []\n").unwrap_err().to_string();
        assert!(
            said.contains("phone_number_id is missing") && said.contains("backend = \"web\""),
            "{said}"
        );

        let said = parse("[whatsapp]\nphone_number_id = \"1\"\nallow = [\"call me\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("`call me` is neither a phone number nor a WhatsApp user id"),
            "{said}"
        );
        let said = parse(&format!("{base}listen = \"8443\"\n"))
            .unwrap_err()
            .to_string();
        assert!(said.contains("listen `8443` is not an address"), "{said}");
        let said = parse(&format!("{base}path = \"webhook\"\n"))
            .unwrap_err()
            .to_string();
        assert!(said.contains("must be a URL path"), "{said}");
        let said = parse(&format!("{base}graph_base = \"graph.facebook.com\"\n"))
            .unwrap_err()
            .to_string();
        assert!(said.contains("not an http(s) address"), "{said}");
        let said = parse("[whatsapp]\nphone_number_id = \"+1 555\"\nallow = []\n")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("phone_number_id `+1 555` is not an id"),
            "{said}"
        );
    }

    #[test]
    fn a_file_without_the_table_says_how_to_add_it() {
        let err = parse("[telegram]\nallow = [1]\n").unwrap_err();
        assert!(matches!(err, ConfigError::Missing { .. }));
        assert!(err.to_string().contains("has no [whatsapp] table"), "{err}");
    }

    #[test]
    fn secrets_come_from_secrets_env_and_never_show_in_debug() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let config = parse(
            "[whatsapp]\nverify_token_env = \"HEARTH_UNIT_WA_V\"\napp_secret_env = \"HEARTH_UNIT_WA_S\"\naccess_token_env = \"HEARTH_UNIT_WA_A\"\nphone_number_id = \"1\"\nallow = []\n",
        )
        .unwrap();
        let said = config.secrets(&home).unwrap_err().to_string();
        assert!(
            said.starts_with("no WhatsApp webhook verify token: set $HEARTH_UNIT_WA_V"),
            "{said}"
        );

        let secrets = home.secrets_file();
        std::fs::write(
            &secrets,
            "HEARTH_UNIT_WA_V=verify-me\nHEARTH_UNIT_WA_S=app-secret\n",
        )
        .unwrap();
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
        let said = config.secrets(&home).unwrap_err().to_string();
        assert!(
            said.starts_with("no WhatsApp access token: set $HEARTH_UNIT_WA_A"),
            "{said}"
        );

        std::fs::write(
            &secrets,
            "HEARTH_UNIT_WA_V=verify-me\nHEARTH_UNIT_WA_S=app-secret\nHEARTH_UNIT_WA_A=EAAtoken\n",
        )
        .unwrap();
        let read = config.secrets(&home).unwrap();
        assert_eq!(read.verify_token, "verify-me");
        assert_eq!(read.app_secret, "app-secret");
        assert_eq!(read.access_token, "EAAtoken");
        let shown = format!("{read:?}");
        assert!(
            !shown.contains("verify-me")
                && !shown.contains("app-secret")
                && !shown.contains("EAAtoken")
        );
    }
}
