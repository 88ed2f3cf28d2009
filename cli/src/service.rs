//! Living as a service: `hearth backup FILE` and `hearth service install`.

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
    let (path, bytes) = ask(&mut connection, &frame, |answer| match answer {
        ServerFrame::BackedUp { path, bytes } => Ok((path, bytes)),
        other => Err(other),
    })
    .await?;
    connection.close().await;
    writeln!(out, "wrote {path} ({bytes} bytes)")?;
    Ok(ExitCode::SUCCESS)
}

/// The systemd user unit that runs `hearthd` for `home`.
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
         Restart=on-failure\n\
         RestartSec=2\n\
         # Keys come from secrets.env in the home (mode 0600), not from a shell.\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        hearthd.display()
    )
}

/// Writes `~/.config/systemd/user/hearthd.service` and says how to enable it.
pub fn install(home: Option<&Path>, out: &mut dyn Write) -> Result<ExitCode, CommandError> {
    let hearthd = std::env::current_exe()?
        .parent()
        .map(|dir| dir.join("hearthd"))
        .filter(|path| path.exists())
        .unwrap_or_else(|| PathBuf::from("hearthd"));
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from(".config"));
    let dir = config.join("systemd").join("user");
    std::fs::create_dir_all(&dir)?;
    let home = home.map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
    let file = dir.join("hearthd.service");
    std::fs::write(&file, unit(&hearthd, home.as_deref()))?;
    writeln!(out, "wrote {}", file.display())?;
    writeln!(out, "enable and start it with:\n  systemctl --user daemon-reload\n  systemctl --user enable --now hearthd")?;
    writeln!(
        out,
        "to keep it running after you log out: loginctl enable-linger $USER"
    )?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
