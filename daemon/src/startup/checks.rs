//! What start-up checks in the configuration beyond its syntax: agent names
//! usable as folder names, and who the top agent may write to on WhatsApp.

use super::error::StartError;
use crate::config::Config;
use crate::tools::{WhatsAppContacts, WhatsAppContactsError};
use hearth_protocol::home::Home;

/// Agent names must be usable as folder names and distinct.
pub fn agent_names(config: &Config) -> Result<(), StartError> {
    let mut seen = vec![config.agent.name.as_str()];
    for name in std::iter::once(&config.agent.name).chain(config.agents.iter().map(|a| &a.name)) {
        let fine = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !fine {
            return Err(StartError::AgentName(name.clone()));
        }
    }
    for child in &config.agents {
        if seen.contains(&child.name.as_str()) {
            return Err(StartError::AgentName(format!(
                "{} (used twice)",
                child.name
            )));
        }
        seen.push(&child.name);
    }
    Ok(())
}

/// Who the top agent may write to on WhatsApp (`whatsapp_send`), from the
/// `[whatsapp]` table; none when there is no table or nobody in it. A
/// number that is not one refuses the start; a table that does not read
/// at all is the bridge's to say (it names the line, in `hearth status`),
/// and the agent starts without the tool.
pub fn whatsapp_contacts(
    config: &Config,
    home: &Home,
) -> Result<Option<WhatsAppContacts>, StartError> {
    let Some(table) = &config.whatsapp else {
        return Ok(None);
    };
    let contacts = match WhatsAppContacts::from_table(table) {
        Ok(contacts) => contacts,
        Err(WhatsAppContactsError::Table(message)) => {
            tracing::warn!("no whatsapp_send: [whatsapp] {message}");
            return Ok(None);
        }
        Err(source) => {
            return Err(StartError::WhatsAppContacts {
                path: home.config_file(),
                source,
            })
        }
    };
    Ok(Some(contacts).filter(|contacts| !contacts.is_empty()))
}
