//! The terminal's side of approvals: the requests that wait, shown as they
//! arrive, and the typed lines that answer them.
//!
//! While a request waits, a line `y` or `n` (`yes`, `no`) answers the oldest
//! one instead of going to the agent as a message; `/approve ID` and
//! `/deny ID` answer any request by its id. Who decided shows when the
//! daemon's note of the decision arrives.

use hearth_protocol::{Approval, ClientFrame, Event, EventKind};

/// The requests that wait, oldest first.
#[derive(Debug, Default)]
pub struct Approvals {
    /// The agent this terminal follows: its requests need no name; a
    /// subagent's say whose they are.
    agent: String,
    waiting: Vec<Approval>,
}

/// What a typed line means for approvals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typed {
    /// It answers request `id`: send an `approve` frame.
    Answer { id: String, allow: bool },
    /// `/approve` or `/deny` without an id: say how.
    Usage(&'static str),
    /// Not an answer: a message for the agent.
    Message,
}

impl Typed {
    /// The frame that sends this answer, if it is one.
    pub fn frame(&self) -> Option<ClientFrame> {
        match self {
            Typed::Answer { id, allow } => Some(ClientFrame::Approve {
                id: id.clone(),
                allow: *allow,
                by: None,
            }),
            _ => None,
        }
    }
}

impl Approvals {
    pub fn following(agent: &str) -> Approvals {
        Approvals {
            agent: agent.to_string(),
            waiting: Vec::new(),
        }
    }

    /// Takes an `approval` event: a new request is shown as a question; one
    /// that was decided (anywhere) stops waiting and shows nothing, since
    /// the daemon's note says who decided.
    pub fn on_event(&mut self, event: &Event) -> Option<String> {
        let approval = event.approval.as_deref()?;
        if event.kind != EventKind::Approval {
            return None;
        }
        if approval.allowed.is_some() {
            self.waiting.retain(|waiting| waiting.id != approval.id);
            return None;
        }
        if self.waiting.iter().any(|waiting| waiting.id == approval.id) {
            return None;
        }
        self.waiting.push(approval.clone());
        let call = event.text.as_deref().unwrap_or(&approval.tool);
        let agent = if event.agent == self.agent {
            String::new()
        } else {
            format!("[{}] ", event.agent)
        };
        let mut line = format!(
            "{agent}approve {call}? [y/n] (id {}, denied in {} s)",
            approval.id, approval.timeout_secs
        );
        if self.waiting.len() > 1 {
            line.push_str(" — y/n answers the oldest; /approve ID or /deny ID answers this one");
        }
        Some(line)
    }

    /// What `line` means. An answer stops its request waiting here at once,
    /// so a second `y` goes to the next request, or to the agent.
    pub fn typed(&mut self, line: &str) -> Typed {
        let line = line.trim();
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        let allow = match command {
            "/approve" => Some(true),
            "/deny" => Some(false),
            _ => None,
        };
        if let Some(allow) = allow {
            return match (words.next(), words.next()) {
                (Some(id), None) => self.answer(id.to_string(), allow),
                _ => Typed::Usage("answer with /approve ID or /deny ID"),
            };
        }
        let allow = match line.to_ascii_lowercase().as_str() {
            "y" | "yes" => true,
            "n" | "no" => false,
            _ => return Typed::Message,
        };
        match self.waiting.first() {
            Some(oldest) => self.answer(oldest.id.clone(), allow),
            None => Typed::Message,
        }
    }

    fn answer(&mut self, id: String, allow: bool) -> Typed {
        self.waiting.retain(|waiting| waiting.id != id);
        Typed::Answer { id, allow }
    }

    /// The agent this terminal follows.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Whether any request waits.
    pub fn any(&self) -> bool {
        !self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, text: &str) -> Event {
        let mut event = Event::signal(EventKind::Approval, "hearth", Some(text.into()));
        event.approval = Some(Box::new(Approval {
            id: id.into(),
            tool: "shell".into(),
            arguments: "{}".into(),
            deadline: "2026-11-30T10:05:00+00:00".into(),
            timeout_secs: 300,
            allowed: None,
        }));
        event
    }

    fn decided(id: &str, allowed: bool) -> Event {
        let mut event = request(id, "allowed by telegram");
        if let Some(approval) = event.approval.as_mut() {
            approval.allowed = Some(allowed);
        }
        event
    }

    #[test]
    fn a_request_is_asked_and_y_answers_it_instead_of_being_sent() {
        let mut approvals = Approvals::following("hearth");
        assert_eq!(approvals.typed("y"), Typed::Message);
        let shown = approvals.on_event(&request("abc123", "shell `git push origin main`"));
        assert_eq!(
            shown.as_deref(),
            Some("approve shell `git push origin main`? [y/n] (id abc123, denied in 300 s)")
        );
        assert_eq!(
            approvals.on_event(&request("abc123", "again")),
            None,
            "shown once"
        );
        let answer = approvals.typed(" Y ");
        assert_eq!(
            answer,
            Typed::Answer {
                id: "abc123".into(),
                allow: true
            }
        );
        assert_eq!(
            answer.frame(),
            Some(ClientFrame::Approve {
                id: "abc123".into(),
                allow: true,
                by: None
            })
        );
        assert_eq!(approvals.typed("y"), Typed::Message, "nothing waits now");
        assert!(!approvals.any());
    }

    #[test]
    fn no_answers_the_oldest_and_commands_answer_by_id() {
        let mut approvals = Approvals::following("other");
        approvals.on_event(&request("aaaaaa", "shell `rm a`"));
        let second = approvals
            .on_event(&request("bbbbbb", "shell `rm b`"))
            .unwrap();
        assert!(
            second.starts_with("[hearth] approve shell `rm b`?"),
            "{second}"
        );
        assert!(second.contains("/approve ID"), "{second}");
        assert_eq!(
            approvals.typed("/approve bbbbbb"),
            Typed::Answer {
                id: "bbbbbb".into(),
                allow: true
            }
        );
        assert_eq!(
            approvals.typed("no"),
            Typed::Answer {
                id: "aaaaaa".into(),
                allow: false
            }
        );
        assert_eq!(
            approvals.typed("/deny zzzzzz"),
            Typed::Answer {
                id: "zzzzzz".into(),
                allow: false
            },
            "the daemon says whether it knows the id"
        );
        assert!(matches!(approvals.typed("/deny"), Typed::Usage(_)));
        assert_eq!(approvals.typed("yes please"), Typed::Message);
    }

    #[test]
    fn a_request_decided_elsewhere_stops_waiting() {
        let mut approvals = Approvals::default();
        approvals.on_event(&request("abc123", "shell `ls`"));
        assert_eq!(approvals.on_event(&decided("abc123", true)), None);
        assert!(!approvals.any());
        assert_eq!(approvals.typed("n"), Typed::Message);
    }
}
