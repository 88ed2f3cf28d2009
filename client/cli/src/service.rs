//! Living as a service: `hearth backup FILE` and `hearth service install`,
//! `uninstall` and `status`.

use hearth_client::running::{ask, connect_running, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ServerFrame};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Asks the running daemon for a consistent copy of its database at `file`.
pub async fn backup(
    home: &Home,
    agent: Option<&str>,
    file: &Path,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let path = if file.is_absolute() {
        file.to_path_buf()
    } else {
        std::env::current_dir()?.join(file)
    };
    let (mut connection, _) = connect_running(home, agent, "hearth-backup", None).await?;
    let frame = ClientFrame::Backup {
        path: path.to_string_lossy().to_string(),
    };
    let (path, bytes, added) = ask(&mut connection, &frame, |answer| match answer {
        ServerFrame::BackedUp { path, bytes, added } => Some((path, bytes, added)),
        _ => None,
    })
    .await?;
    connection.close().await;
    match added {
        None => writeln!(out, "wrote {path} ({bytes} bytes)")?,
        Some(added) => writeln!(
            out,
            "brought {path} up to date: {added} new message{} ({bytes} bytes)",
            if added == 1 { "" } else { "s" }
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The systemd user unit that runs `hearthd` for `home`. A configuration
/// error makes hearthd exit 78, which the unit does not restart: a broken
/// file waits for its fix instead of failing every two seconds.
pub fn unit(hearthd: &Path, home: Option<&Path>) -> String {
    let home_arg = home
        .map(|dir| format!(" --home {}", dir.display()))
        .unwrap_or_default();
    format!(
        "[Unit]\n\
         Description=hearth, a personal AI agent\n\
         After=network-online.target\n\
         \n\
         [Service]\n\
         ExecStart={}{home_arg}\n\
         ExecReload=/bin/kill -HUP $MAINPID\n\
         Restart=on-failure\n\
         RestartSec=2\n\
         # 78: the configuration cannot work; fix it, then start the service again.\n\
         RestartPreventExitStatus=78\n\
         # Keys come from secrets.env in the home (mode 0600), not from a shell.\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        hearthd.display()
    )
}

/// Why `hearth service` cannot do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("hearthd (pid {pid}) is running, started by hand; stop it with `hearth stop`, then install the service (`systemctl --user enable --now hearthd` starts it)")]
    RunningByHand { pid: u32 },
    #[error("this hearth runs from a build folder ({0}), which goes away with the clone; install the binaries first with `cargo install --locked --path .` and run `hearth service install` again")]
    BuildFolder(PathBuf),
    #[error("{path} already runs hearthd for another home ({runs}); `hearth service install --force` replaces it, or `hearth service uninstall` removes it first")]
    OtherHome { path: PathBuf, runs: String },
    #[error("cannot write the unit {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Output(#[from] std::io::Error),
}

/// `~/.config/systemd/user/hearthd.service` (following `XDG_CONFIG_HOME`).
pub fn unit_file() -> PathBuf {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from(".config"));
    config
        .join("systemd")
        .join("user")
        .join(crate::life::UNIT_NAME)
}

/// The installed `hearthd` beside this `hearth`; one in a cargo build
/// folder (`target/debug`, `target/release`) is refused, as the service
/// would break with the next `cargo clean`.
fn installed_hearthd() -> Result<PathBuf, ServiceError> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let in_build = dir.ends_with("target/debug") || dir.ends_with("target/release");
    if in_build {
        return Err(ServiceError::BuildFolder(dir));
    }
    let beside = dir.join("hearthd");
    Ok(if beside.is_file() {
        beside
    } else {
        PathBuf::from("hearthd")
    })
}

/// Writes the unit, then has systemd load, enable and start it where a
/// user manager answers (else says how). Refused while a daemon that was
/// started by hand holds the home's lock (the service's would only fail to
/// start beside it), and, without `force`, over a unit that runs hearthd
/// for another home (one unit serves one home).
pub async fn install(
    home: &Home,
    explicit_home: Option<&Path>,
    force: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, ServiceError> {
    if let Some(pid) = crate::life::lock_holder(home) {
        if !crate::life::in_service(pid) {
            return Err(ServiceError::RunningByHand { pid });
        }
    }
    let hearthd = installed_hearthd()?;
    let file = unit_file();
    let write_error = |source| ServiceError::Write {
        path: file.clone(),
        source,
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    let explicit_home =
        explicit_home.map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
    let text = unit(&hearthd, explicit_home.as_deref());
    if let Some(runs) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|old| other_home(&old, &text))
    {
        if !force {
            return Err(ServiceError::OtherHome { path: file, runs });
        }
        writeln!(out, "replacing the unit that ran {runs}")?;
    }
    std::fs::write(&file, text).map_err(write_error)?;
    writeln!(out, "wrote {} (runs {})", file.display(), hearthd.display())?;
    let unit_name = crate::life::UNIT_NAME;
    if systemctl_succeeds(&["daemon-reload"]).await
        && systemctl_succeeds(&["enable", "--now", unit_name]).await
    {
        writeln!(
            out,
            "enabled and started {unit_name} (`hearth service status` shows it)"
        )?;
    } else {
        writeln!(out, "systemd did not answer; enable and start it with:\n  systemctl --user daemon-reload\n  systemctl --user enable --now hearthd")?;
    }
    writeln!(
        out,
        "to keep it running after you log out: loginctl enable-linger $USER"
    )?;
    Ok(ExitCode::SUCCESS)
}

/// What an installed unit runs, when it runs hearthd for another home than
/// the unit about to be written (the same home with another binary is an
/// update, not another home).
fn other_home(old: &str, new: &str) -> Option<String> {
    let runs = |text: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix("ExecStart="))
            .map(str::to_string)
    };
    let (old_runs, new_runs) = (runs(old)?, runs(new)?);
    let home = |exec: &str| {
        exec.split_once(" --home ")
            .map(|(_, home)| home.to_string())
    };
    (home(&old_runs) != home(&new_runs)).then_some(old_runs)
}

/// Stops and disables the service (where systemd runs) and removes its unit.
pub async fn uninstall(out: &mut dyn Write) -> Result<ExitCode, ServiceError> {
    let file = unit_file();
    if !file.exists() {
        writeln!(
            out,
            "no hearthd service is installed ({} does not exist)",
            file.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    // `disable` says what it did on stderr, if anything: its status tells.
    if systemctl_succeeds(&["disable", "--now", crate::life::UNIT_NAME]).await {
        writeln!(out, "stopped and disabled {}", crate::life::UNIT_NAME)?;
    }
    std::fs::remove_file(&file).map_err(|source| ServiceError::Write {
        path: file.clone(),
        source,
    })?;
    let _ = systemctl(&["daemon-reload"]).await;
    writeln!(out, "removed {}", file.display())?;
    Ok(ExitCode::SUCCESS)
}

/// Whether the unit is installed, what systemd says of it, and which daemon
/// runs for the home.
pub async fn status(home: &Home, out: &mut dyn Write) -> Result<ExitCode, ServiceError> {
    let file = unit_file();
    if file.exists() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let runs = text
            .lines()
            .find_map(|line| line.strip_prefix("ExecStart="))
            .unwrap_or("?");
        writeln!(out, "unit     {} (runs {runs})", file.display())?;
    } else {
        writeln!(
            out,
            "unit     not installed (`hearth service install` writes it)"
        )?;
    }
    match systemctl(&["is-active", crate::life::UNIT_NAME]).await {
        Some(active) => {
            let enabled = systemctl(&["is-enabled", crate::life::UNIT_NAME])
                .await
                .unwrap_or_else(|| "unknown".to_string());
            writeln!(out, "systemd  {active}, {enabled}")?;
        }
        None => writeln!(out, "systemd  not reachable (no `systemctl --user` here)")?,
    }
    match crate::life::lock_holder(home) {
        Some(pid) if crate::life::in_service(pid) => {
            writeln!(out, "daemon   pid {pid}, run by the service")?
        }
        Some(pid) => writeln!(out, "daemon   pid {pid}, started by hand")?,
        None => writeln!(out, "daemon   not running")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `systemctl --user ARGS` ran and succeeded.
async fn systemctl_succeeds(args: &[&str]) -> bool {
    tokio::process::Command::new("systemctl")
        .arg("--user")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .is_ok_and(|status| status.success())
}

/// Runs `systemctl --user ARGS`; its first line of output, or none when
/// systemctl is missing or cannot reach a user manager.
async fn systemctl(args: &[&str]) -> Option<String> {
    let output = tokio::process::Command::new("systemctl")
        .arg("--user")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next().unwrap_or_default().trim().to_string();
    // `is-active` answers `inactive` with a failure status: still an answer.
    (!first.is_empty()).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_for_another_home_is_told_from_one_for_this_home() {
        let here = unit(Path::new("/bin/hearthd"), Some(Path::new("/home/a/h")));
        let moved = unit(Path::new("/usr/bin/hearthd"), Some(Path::new("/home/a/h")));
        let there = unit(Path::new("/bin/hearthd"), Some(Path::new("/home/a/other")));
        let default = unit(Path::new("/bin/hearthd"), None);
        assert_eq!(
            other_home(&moved, &here),
            None,
            "another binary, the same home"
        );
        assert_eq!(
            other_home(&there, &here).as_deref(),
            Some("/bin/hearthd --home /home/a/other")
        );
        assert!(other_home(&default, &here).is_some());
        assert_eq!(other_home(&default, &default), None);
    }

    #[test]
    fn the_unit_runs_hearthd_for_the_home() {
        let text = unit(
            Path::new("/usr/local/bin/hearthd"),
            Some(Path::new("/srv/hearth")),
        );
        assert!(text.contains("ExecStart=/usr/local/bin/hearthd --home /srv/hearth\n"));
        assert!(text.contains("WantedBy=default.target"));
        let text = unit(Path::new("/bin/hearthd"), None);
        assert!(text.contains("ExecStart=/bin/hearthd\n"));
        assert!(text.contains("RestartPreventExitStatus=78\n"));
    }
}
