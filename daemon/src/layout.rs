//! Layouts: TOML files in `layouts/`, built into the daemon, that size an
//! agent's view and split it into request messages. An agent names its
//! layout in `[agent] layout`; an unknown name stops the start.

use serde::Deserialize;

/// The layouts built into the daemon, by name.
const BUILT_IN: &[(&str, &str)] = &[("default", include_str!("../../layouts/default.toml"))];

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// Lines of the view per request message.
    pub block_lines: usize,
    /// Bytes a one-line summary may take.
    pub line_budget: usize,
    /// The rendered view's size that starts a batch of merges …
    pub high_budget: usize,
    /// … and the size that batch brings it down to.
    pub low_budget: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("unknown layout `{name}`; the layouts are: {known}")]
    Unknown { name: String, known: String },
    #[error("layout `{name}` is broken: {message}")]
    Broken { name: String, message: String },
}

impl Layout {
    pub fn named(name: &str) -> Result<Layout, LayoutError> {
        let Some((_, text)) = BUILT_IN.iter().find(|(known, _)| *known == name) else {
            return Err(LayoutError::Unknown {
                name: name.to_string(),
                known: BUILT_IN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let layout: Layout = toml::from_str(text).map_err(|err| LayoutError::Broken {
            name: name.to_string(),
            message: err.message().to_string(),
        })?;
        if layout.block_lines == 0 || layout.low_budget > layout.high_budget {
            return Err(LayoutError::Broken {
                name: name.to_string(),
                message: "block_lines must be positive and low_budget at most high_budget".into(),
            });
        }
        Ok(layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_layout_reads() {
        for (name, _) in BUILT_IN {
            Layout::named(name).unwrap();
        }
        assert_eq!(Layout::named("default").unwrap().block_lines, 4);
    }

    #[test]
    fn an_unknown_layout_names_the_known_ones() {
        let err = Layout::named("huge").unwrap_err().to_string();
        assert!(err.contains("default"), "{err}");
    }
}
