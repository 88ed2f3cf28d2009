//! The agents' default prompts, written to `agents/NAME/prompt.md` at first
//! start: the person edits the file from then on. A prompt file that was
//! deleted is written again at start, with a warning. A prompt holds only
//! words meant for the model; how to edit it is in the README.

use super::error::{io, private_dir, StartError};
use crate::config::Config;
use hearth_protocol::home::Home;
use std::fs;

/// The top agent's first prompt.
const DEFAULT_PROMPT: &str = "\
# Who you are

You are hearth, a personal assistant that lives on your owner's machine and
talks with them from their terminal and their phone. You remember the whole
conversation: older parts appear as one-line summaries.

- Answer briefly and plainly; say when you are unsure.
- Use your tools when they help, and say what you did.
- When you are asked about something earlier that your lines do not show
  plainly, search your memory before you answer; pin what must never be
  forgotten (names, preferences, promises) with remember.
- Messages can come from several places (terminal, telegram, schedule, …);
  the source is shown with each one.
";

/// Creates each agent's folder and writes its default prompt where it has
/// none yet.
pub fn write_defaults(home: &Home, config: &Config) -> Result<(), StartError> {
    for child in &config.agents {
        let prompt = child_prompt(&config.agent.name, &child.name, &child.responsibility);
        write_default(home, &child.name, &prompt)?;
    }
    write_default(home, &config.agent.name, DEFAULT_PROMPT)
}

fn write_default(home: &Home, agent: &str, prompt: &str) -> Result<(), StartError> {
    let agent_dir = home.agent_dir(agent);
    let first_start = !agent_dir.exists();
    private_dir(&agent_dir)?;
    let prompt_file = agent_dir.join("prompt.md");
    if !prompt_file.exists() {
        if !first_start {
            tracing::warn!(
                agent,
                "{} was missing; wrote the default prompt again",
                prompt_file.display()
            );
        }
        fs::write(&prompt_file, prompt).map_err(io("cannot write", &prompt_file))?;
    }
    Ok(())
}

/// A subagent's first prompt.
fn child_prompt(parent: &str, name: &str, responsibility: &str) -> String {
    format!(
        "# Who you are\n\n\
         You are {name}, a subagent of {parent}. Your responsibility: {responsibility}\n\n\
         {parent} gives you tasks. Do each with your tools, then answer with a short report of \
         what you did and found: your answer is your report to {parent}.\n"
    )
}
