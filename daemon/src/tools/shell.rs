//! `shell`: runs `bash -c COMMAND` in the agent's working folder.
//!
//! The command leads its own process group (see `process.rs`). It gets its
//! timeout, then SIGTERM to the group, then SIGKILL after the grace period.
//! When the command's leader ends, whatever it left running in its group is
//! killed: a call's processes end with the call. Dropping the call (an
//! interrupt) kills the group at once. Output is read as it comes, keeping
//! the head and tail of each stream, so any amount of it costs bounded memory.
//!
//! A command reaches the network only when its call says `network: true`:
//! otherwise Landlock (ABI 4) denies it TCP connect and bind, and a seccomp
//! filter every socket but local ones (UDP, DNS, raw packets), so it can
//! neither fetch outside text nor send words out. A call with `network:
//! true`, or any call on a kernel that cannot deny the network, may have
//! read outside text: its outcome's provenance says so, and it taints its
//! turn (`taint.rs`), as `web_fetch` does; the files it changes are outside
//! text too (`exposure.rs`).

use super::confine::Confinement;
use super::process::{Exit, Group, Processes, Running};
use super::tool::{text_of, Call, Tool};
use super::Outcome;
use crate::activity::ActivityBoard;
use crate::config::tools::ToolsConfig;
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::{oneshot, watch};

/// The least time output is still read after the command ended: the group
/// is dead by then, so this only matters when something that left the group
/// holds the pipes open.
const MIN_DRAIN: Duration = Duration::from_secs(1);

pub fn spec(config: &ToolsConfig) -> ToolSpec {
    ToolSpec {
        name: "shell".to_string(),
        description: format!(
            "Runs a bash command in your working folder and returns its exit status, stdout \
and stderr (long output keeps its head and tail). stdin is closed; background processes end \
with the command. Default timeout {} s, at most {} s. The command has no network (no TCP, \
UDP or DNS) unless `network` is true; its output, and the files it writes, are then treated as \
outside text.",
            config.shell_timeout_secs, config.shell_max_timeout_secs
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command line."},
                "timeout_secs": {"type": "integer", "minimum": 1, "description": "Seconds before the command is stopped."},
                "network": {"type": "boolean", "description": "Let the command reach the network (default false)."}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

/// The shell of one agent.
#[derive(Clone)]
pub struct Shell {
    /// Where commands start.
    pub workdir: PathBuf,
    pub config: ToolsConfig,
    pub processes: Processes,
    /// Environment variables commands do not inherit: the daemon's own
    /// secrets (API keys), which a command could otherwise print into the log.
    pub hidden_env: Vec<String>,
    /// The Landlock rules commands run under (none in some unit tests).
    pub confinement: Option<Arc<Confinement>>,
}

impl Shell {
    /// Whether a command that did not ask for the network is kept from it:
    /// confined, on a kernel whose Landlock denies TCP and whose seccomp
    /// denies the other sockets.
    pub fn denies_network(&self) -> bool {
        self.confinement.is_some() && super::confine::can_deny_network()
    }

    /// Whether the call with these (checked) arguments could reach the
    /// network: it asks for it, or this kernel cannot deny it.
    pub fn could_reach_network(&self, arguments: &Value) -> bool {
        arguments.get("network").and_then(Value::as_bool) == Some(true) || !self.denies_network()
    }

    /// Runs one call; arguments were checked against [`spec`]. The output's
    /// last line is shown on `progress` as it comes.
    pub async fn call(&self, arguments: &Value, progress: Option<&ActivityBoard>) -> Outcome {
        let Some(script) = arguments.get("command").and_then(Value::as_str) else {
            return Outcome::error("arguments: missing required property `command`");
        };
        let asked = arguments.get("timeout_secs").and_then(Value::as_u64);
        let timeout = self.config.shell_timeout(asked);
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(script)
            .current_dir(&self.workdir)
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat");
        for name in &self.hidden_env {
            command.env_remove(name);
        }
        let network = arguments.get("network").and_then(Value::as_bool) == Some(true);
        let started = match &self.confinement {
            Some(confinement) if network => {
                let open = Arc::new(confinement.with_network());
                self.processes.spawn_confined(command, open).await
            }
            Some(confinement) => {
                self.processes
                    .spawn_confined(command, confinement.clone())
                    .await
            }
            None => self.processes.spawn(command).await,
        };
        let outcome = match started {
            Ok(running) => self.watch(running, timeout, progress).await,
            Err(err) => return Outcome::error(format!("cannot start bash: {err}")),
        };
        // It could have fetched: what it printed may be anyone's words.
        if self.could_reach_network(arguments) {
            return Outcome {
                provenance: super::Provenance::Shell {
                    command: script.to_string(),
                },
                ..outcome
            };
        }
        outcome
    }

    /// Reads the output and waits for the end, within the timeout.
    async fn watch(
        &self,
        running: Running,
        timeout: Duration,
        progress: Option<&ActivityBoard>,
    ) -> Outcome {
        // Bound for the whole call: dropping this future kills the group.
        let Running {
            stdin: _,
            stdout,
            stderr,
            group,
            exit,
            kill_on_drop: _kill_on_drop,
        } = running;
        let grace = self.config.kill_grace();
        let keep = self.config.shell_output_keep_bytes;
        let (mut out, mut err) = (Kept::new(keep), Kept::new(keep));
        let (ended_tx, mut ended) = watch::channel(false);
        let reading = async {
            let (stdout, stderr) = match (receiver(stdout.into()), receiver(stderr.into())) {
                (Ok(stdout), Ok(stderr)) => (stdout, stderr),
                (Err(error), _) | (_, Err(error)) => return Some(error.to_string()),
            };
            let drained = async {
                let _ = tokio::join!(
                    drain(stdout, &mut out, progress),
                    drain(stderr, &mut err, progress)
                );
            };
            let cut = async {
                let _ = ended.wait_for(|ended| *ended).await;
                tokio::time::sleep(grace.max(MIN_DRAIN)).await;
            };
            tokio::select! {
                _ = drained => None,
                _ = cut => Some("the output was still open after the command ended; stopped reading".to_string()),
            }
        };
        let ending = async {
            let end = wait(exit, &group, timeout, grace).await;
            let _ = ended_tx.send(true);
            end
        };
        let (unread, (exit, timed_out)) = tokio::join!(reading, ending);
        let mut report = String::new();
        if timed_out {
            report.push_str(&format!(
                "timed out after {} s; the command's process group was stopped\n",
                timeout.as_secs()
            ));
        }
        report.push_str(&match exit {
            Some(Exit::Code(code)) => format!("exit code {code}"),
            Some(Exit::Signal(signal)) => {
                format!("killed by signal {signal} ({})", signal_name(signal))
            }
            None => "exit status unknown".to_string(),
        });
        if let Some(unread) = unread {
            report.push_str(&format!("\n({unread})"));
        }
        for (name, kept) in [("stdout", &out), ("stderr", &err)] {
            if kept.total > 0 {
                report.push_str(&format!("\n--- {name} ---\n{}", kept.render()));
            }
        }
        if out.total == 0 && err.total == 0 {
            report.push_str("\n(no output)");
        }
        if exit == Some(Exit::Code(0)) && !timed_out {
            Outcome::ok(report)
        } else {
            Outcome::error(report)
        }
    }
}

/// Waits for the leader's end; on timeout, SIGTERM to the group, and after
/// `grace` SIGKILL. Returns how it ended and whether it timed out.
async fn wait(
    mut exit: oneshot::Receiver<Option<Exit>>,
    group: &Group,
    timeout: Duration,
    grace: Duration,
) -> (Option<Exit>, bool) {
    tokio::select! {
        ended = &mut exit => return (ended.ok().flatten(), false),
        _ = tokio::time::sleep(timeout) => {}
    }
    group.signal(libc::SIGTERM);
    tokio::select! {
        ended = &mut exit => return (ended.ok().flatten(), true),
        _ = tokio::time::sleep(grace) => {}
    }
    group.signal(libc::SIGKILL);
    (exit.await.ok().flatten(), true)
}

fn receiver(fd: OwnedFd) -> std::io::Result<pipe::Receiver> {
    pipe::Receiver::from_owned_fd(fd)
}

/// Reads a pipe to its end into `kept`, showing its last line on `progress`.
async fn drain(
    mut pipe: pipe::Receiver,
    kept: &mut Kept,
    progress: Option<&ActivityBoard>,
) -> std::io::Result<()> {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = pipe.read(&mut buffer).await?;
        if read == 0 {
            return Ok(());
        }
        kept.push(&buffer[..read]);
        if let Some(progress) = progress {
            progress.tool_output(&String::from_utf8_lossy(&buffer[..read]));
        }
    }
}

/// The head and tail of a stream, and how many bytes it had in all.
#[derive(Debug)]
struct Kept {
    /// Bytes kept at each end.
    keep: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Kept {
    fn new(keep: usize) -> Kept {
        Kept {
            keep,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.keep.saturating_sub(self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..room]);
        let rest = &chunk[room..];
        let rest = &rest[rest.len().saturating_sub(self.keep)..];
        let overflow = (self.tail.len() + rest.len()).saturating_sub(self.keep);
        self.tail.drain(..overflow);
        self.tail.extend(rest);
    }

    fn dropped(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The kept text; a clipped middle is marked with its size. Characters
    /// cut at the edges of the kept parts are left out.
    fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if self.dropped() == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = &self.head[..whole_prefix(&self.head)];
        let skip = tail
            .iter()
            .take(3)
            .take_while(|byte| (0x80..0xC0).contains(*byte))
            .count();
        format!(
            "{}\n… [{} bytes clipped] …\n{}",
            String::from_utf8_lossy(head),
            self.dropped(),
            String::from_utf8_lossy(&tail[skip..])
        )
    }
}

/// The length of `bytes` without a character cut off at its end.
fn whole_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Err(err) if err.error_len().is_none() => err.valid_up_to(),
        _ => bytes.len(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "another signal",
    }
}

impl Tool for Shell {
    fn spec(&self) -> ToolSpec {
        spec(&self.config)
    }

    fn detail(&self, arguments: &Value) -> Option<String> {
        text_of(arguments, "command")
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { Shell::call(self, &call.arguments, call.activity).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(config: ToolsConfig) -> (tempfile::TempDir, Shell) {
        let dir = tempfile::tempdir().unwrap();
        let shell = Shell {
            workdir: dir.path().to_path_buf(),
            config,
            processes: Processes::new(),
            hidden_env: vec!["CARGO_MANIFEST_DIR".into()],
            confinement: None,
        };
        (dir, shell)
    }

    #[test]
    fn kept_output_keeps_head_and_tail_and_counts_the_middle() {
        let mut kept = Kept::new(4);
        for chunk in [&b"ab"[..], b"cdef", b"ghijklmnop", b"q"] {
            kept.push(chunk);
        }
        assert_eq!(kept.total, 17);
        assert_eq!(kept.head, b"abcd");
        assert_eq!(kept.tail.iter().copied().collect::<Vec<_>>(), b"nopq");
        assert_eq!(kept.render(), "abcd\n… [9 bytes clipped] …\nnopq");
        let mut small = Kept::new(4);
        small.push(b"abcdef");
        assert_eq!(small.render(), "abcdef");
    }

    #[test]
    fn kept_output_does_not_show_cut_characters() {
        let mut kept = Kept::new(4);
        kept.push("aaé".as_bytes()); // 4 bytes: a a 0xC3 0xA9
        kept.push("xxxxxxxx".as_bytes());
        kept.push("é€".as_bytes()); // tail: 0xA9 then € (3 bytes)
        assert_eq!(kept.render(), "aaé\n… [9 bytes clipped] …\n€");
        let mut cut = Kept::new(3);
        cut.push("aé".as_bytes());
        cut.push(b"0123456789");
        assert!(cut.render().starts_with("aé\n"));
    }

    #[tokio::test]
    async fn a_command_runs_in_the_working_folder_with_its_status_and_streams() {
        let (dir, shell) = shell(ToolsConfig::default());
        let outcome = shell
            .call(&json!({"command": "pwd; echo oops >&2; exit 2"}), None)
            .await;
        assert_eq!(outcome.status, hearth_protocol::MessageStatus::Error);
        let canonical = dir.path().canonicalize().unwrap();
        assert!(
            outcome.output.starts_with("exit code 2\n--- stdout ---\n"),
            "{}",
            outcome.output
        );
        assert!(outcome.output.contains(&canonical.display().to_string()));
        assert!(outcome.output.ends_with("--- stderr ---\noops\n"));
        let ok = shell.call(&json!({"command": "true"}), None).await;
        assert_eq!(
            (ok.status, ok.output.as_str()),
            (
                hearth_protocol::MessageStatus::Ok,
                "exit code 0\n(no output)"
            )
        );
        // Unconfined, it could have reached the network: outside text.
        assert!(ok.provenance.untrusted());
    }

    #[tokio::test]
    async fn a_confined_command_works_in_its_folder_but_cannot_read_the_home() {
        if let super::super::confine::Support::Unavailable(why) = super::super::confine::support() {
            println!("skipped: {why}");
            return;
        }
        let home = tempfile::tempdir().unwrap();
        let work = home.path().join("agents/a/work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(home.path().join("secrets.env"), "KEY=sk-secret\n").unwrap();
        let (_dir, mut shell) = shell(ToolsConfig::default());
        shell.workdir = work.clone();
        shell.confinement = Some(Arc::new(Confinement::new(&work, &[home.path()])));
        let script = "echo hello > made && cat made && ls && mkdir sub && echo x > /dev/null && t=$(mktemp -p \"$PWD\") && rm \"$t\" && echo done";
        let outcome = shell.call(&json!({ "command": script }), None).await;
        assert_eq!(
            outcome.status,
            hearth_protocol::MessageStatus::Ok,
            "{}",
            outcome.output
        );
        assert!(
            outcome.output.contains("hello\nmade\ndone"),
            "{}",
            outcome.output
        );
        let secrets = home.path().join("secrets.env");
        let command = format!("cat {}", secrets.display());
        let outcome = shell.call(&json!({ "command": command }), None).await;
        assert_eq!(
            outcome.status,
            hearth_protocol::MessageStatus::Error,
            "{}",
            outcome.output
        );
        assert!(
            outcome.output.contains("Permission denied"),
            "{}",
            outcome.output
        );
        assert!(!outcome.output.contains("sk-secret"));
        let command = format!("echo x > {}/planted", home.path().display());
        let outcome = shell.call(&json!({ "command": command }), None).await;
        assert_eq!(
            outcome.status,
            hearth_protocol::MessageStatus::Error,
            "{}",
            outcome.output
        );
        assert!(!home.path().join("planted").exists());
    }

    #[tokio::test]
    async fn hidden_variables_are_not_inherited() {
        // Set by cargo for the test run; hidden from commands by `shell`.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let (_dir, shell) = shell(ToolsConfig::default());
        let outcome = shell
            .call(&json!({"command": "echo \"[$CARGO_MANIFEST_DIR]\""}), None)
            .await;
        assert!(outcome.output.ends_with("[]\n"), "{}", outcome.output);
    }

    #[tokio::test]
    async fn a_timeout_stops_a_group_that_ignores_sigterm() {
        let config = ToolsConfig {
            shell_kill_grace_secs: 1,
            ..ToolsConfig::default()
        };
        let (_dir, shell) = shell(config);
        let outcome = shell
            .call(
                &json!({"command": "trap '' TERM; sleep 1000 & wait; wait", "timeout_secs": 1}),
                None,
            )
            .await;
        assert_eq!(outcome.status, hearth_protocol::MessageStatus::Error);
        assert!(
            outcome.output.starts_with("timed out after 1 s"),
            "{}",
            outcome.output
        );
        assert!(
            outcome.output.contains("killed by signal 9 (SIGKILL)"),
            "{}",
            outcome.output
        );
        assert_eq!(shell.processes.live(), 0);
    }

    #[tokio::test]
    async fn huge_output_is_clipped_while_read() {
        let config = ToolsConfig {
            shell_output_keep_bytes: 100,
            ..ToolsConfig::default()
        };
        let (_dir, shell) = shell(config);
        let outcome = shell
            .call(
                &json!({"command": "head -c 5000000 /dev/zero | tr '\\0' a"}),
                None,
            )
            .await;
        assert_eq!(outcome.status, hearth_protocol::MessageStatus::Ok);
        assert!(
            outcome.output.contains("[4999800 bytes clipped]"),
            "{}",
            outcome.output
        );
        assert!(outcome.output.len() < 400);
    }
}
