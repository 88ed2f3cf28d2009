//! End-to-end: `hearth service install`, `status` and `uninstall`, run as
//! a user runs them — from installed binaries (hard links outside the build
//! folder, as `cargo install` leaves them), in a temporary `HOME` and
//! `XDG_CONFIG_HOME`, with a fake `systemctl` first on `PATH` that records
//! its arguments and answers as systemd does.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{setup_args, TestHome, OLLAMA_URL_ENV};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A fake `systemctl`: each call's arguments go to `systemctl.calls`, one
/// line each; `is-active` and `is-enabled` answer as for a running,
/// enabled unit, on stdout; `disable` says what it removed on stderr (and
/// nothing on stdout), as systemd's does.
const FAKE_SYSTEMCTL: &str = r#"#!/bin/sh
echo "$*" >> "$(dirname "$0")/systemctl.calls"
case "$2" in
  is-active) echo active ;;
  is-enabled) echo enabled ;;
  disable) echo "Removed \"$HOME/.config/systemd/user/default.target.wants/$4\"." >&2 ;;
esac
exit 0
"#;

/// Installed binaries, a user's config folder and a fake systemd.
struct Installed {
    /// Where `hearth` and `hearthd` are installed (`~/.cargo/bin`, say).
    bin: PathBuf,
    /// `$HOME`, with `XDG_CONFIG_HOME` inside it.
    user: tempfile::TempDir,
    /// Holds `bin`; inside the build's own folder, so the binaries can be
    /// hard links rather than copies.
    _dir: tempfile::TempDir,
}

impl Installed {
    fn new(home: &TestHome) -> Installed {
        let target = home.bins.hearth.parent().unwrap().parent().unwrap();
        let dir = tempfile::tempdir_in(target).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for built in [&home.bins.hearth, &home.bins.hearthd] {
            let installed = bin.join(built.file_name().unwrap());
            if std::fs::hard_link(built, &installed).is_err() {
                std::fs::copy(built, &installed).unwrap();
            }
        }
        let systemctl = bin.join("systemctl");
        std::fs::write(&systemctl, FAKE_SYSTEMCTL).unwrap();
        std::fs::set_permissions(&systemctl, std::fs::Permissions::from_mode(0o755)).unwrap();
        Installed {
            bin,
            user: tempfile::tempdir().unwrap(),
            _dir: dir,
        }
    }

    fn unit_file(&self) -> PathBuf {
        self.user.path().join("config/systemd/user/hearthd.service")
    }

    /// What the fake systemctl was asked, one call a line.
    fn systemctl_calls(&self) -> String {
        std::fs::read_to_string(self.bin.join("systemctl.calls")).unwrap_or_default()
    }

    /// `hearth service ACTION --home HOME`, run by `hearth` (the installed
    /// one, unless another is given).
    fn service(&self, hearth: &Path, action: &str, home: &TestHome) -> Output {
        self.run(hearth, &["service", action], home)
    }

    /// `hearth ARGS --home HOME` as the user, with the fake systemctl.
    fn run(&self, hearth: &Path, args: &[&str], home: &TestHome) -> Output {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new(hearth)
            .args(args)
            .arg("--home")
            .arg(home.path())
            .env_remove("HEARTH_HOME")
            .env(OLLAMA_URL_ENV, "off")
            .env("HEARTH_TEST_KEY", "sk-in-env")
            .env("HOME", self.user.path())
            .env("XDG_CONFIG_HOME", self.user.path().join("config"))
            .env("PATH", path)
            .stdin(Stdio::null())
            .output()
            .expect("hearth runs")
    }

    fn hearth(&self) -> PathBuf {
        self.bin.join("hearth")
    }
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn install_refuses_beside_a_daemon_started_by_hand_then_writes_a_unit_for_the_installed_binaries() {
    let home = TestHome::new(bins!());
    let installed = Installed::new(&home);

    // A daemon started by hand holds the home's lock: refused, saying so.
    let mut daemon = home.start();
    let output = installed.service(&installed.hearth(), "install", &home);
    let text = said(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("hearthd (pid {}) is running", daemon.pid())),
        "{text}"
    );
    assert!(text.contains("started by hand"), "{text}");
    assert!(text.contains("hearth stop"), "{text}");
    assert!(!installed.unit_file().exists());
    assert!(daemon.stop());

    // From the build folder: refused, naming the way to install.
    let output = installed.service(&home.bins.hearth, "install", &home);
    let text = said(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("cargo install --locked --path ."), "{text}");
    assert!(!installed.unit_file().exists());

    // Installed binaries, no daemon: the unit runs the installed hearthd.
    let output = installed.service(&installed.hearth(), "install", &home);
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("enabled and started hearthd.service"),
        "{text}"
    );
    let unit = std::fs::read_to_string(installed.unit_file()).unwrap();
    let hearthd = installed.bin.join("hearthd");
    let home_dir = std::path::absolute(home.path()).unwrap();
    for line in [
        format!(
            "ExecStart={} --home {}\n",
            hearthd.display(),
            home_dir.display()
        ),
        "ExecReload=/bin/kill -HUP $MAINPID\n".to_string(),
        "Restart=on-failure\n".to_string(),
        "RestartPreventExitStatus=78\n".to_string(),
        "WantedBy=default.target\n".to_string(),
    ] {
        assert!(unit.contains(&line), "{line:?} in:\n{unit}");
    }
    assert_eq!(
        installed.systemctl_calls(),
        "--user daemon-reload\n--user enable --now hearthd.service\n",
        "install has systemd load, enable and start the unit"
    );

    // One unit serves one home: another home's install is refused, the
    // unit left as it was, until it is forced.
    let other = TestHome::new(bins!());
    let output = installed.service(&installed.hearth(), "install", &other);
    let text = said(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("already runs hearthd for another home"),
        "{text}"
    );
    assert!(text.contains("--force"), "{text}");
    assert_eq!(
        std::fs::read_to_string(installed.unit_file()).unwrap(),
        unit
    );
    let output = installed.run(
        &installed.hearth(),
        &["service", "install", "--force"],
        &other,
    );
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("replacing the unit that ran"), "{text}");
    let replaced = std::fs::read_to_string(installed.unit_file()).unwrap();
    let other_dir = std::path::absolute(other.path()).unwrap();
    assert!(
        replaced.contains(&format!("--home {}\n", other_dir.display())),
        "{replaced}"
    );
    // The same home again (an update of the binaries, say) needs no force.
    let output = installed.service(&installed.hearth(), "install", &other);
    assert!(output.status.success(), "{}", said(&output));
}

#[test]
fn status_says_what_systemd_and_the_home_say_and_uninstall_removes_the_unit() {
    let home = TestHome::new(bins!());
    let installed = Installed::new(&home);
    let hearth = installed.hearth();

    let output = installed.service(&hearth, "status", &home);
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("unit     not installed"), "{text}");
    assert!(text.contains("daemon   not running"), "{text}");

    assert!(installed
        .service(&hearth, "install", &home)
        .status
        .success());
    let mut daemon = home.start();
    let output = installed.service(&hearth, "status", &home);
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    let runs = installed.bin.join("hearthd");
    assert!(
        text.contains(&format!(
            "unit     {} (runs {}",
            installed.unit_file().display(),
            runs.display()
        )),
        "{text}"
    );
    assert!(text.contains("systemd  active, enabled"), "{text}");
    assert!(
        text.contains(&format!("daemon   pid {}, started by hand", daemon.pid())),
        "{text}"
    );
    assert!(daemon.stop());

    let output = installed.service(&hearth, "uninstall", &home);
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("stopped and disabled hearthd.service"),
        "{text}"
    );
    assert!(
        text.contains(&format!("removed {}", installed.unit_file().display())),
        "{text}"
    );
    assert!(!installed.unit_file().exists());
    let calls = installed.systemctl_calls();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(
        calls,
        [
            "--user is-active hearthd.service",
            "--user is-enabled hearthd.service",
            "--user daemon-reload",
            "--user enable --now hearthd.service",
            "--user is-active hearthd.service",
            "--user is-enabled hearthd.service",
            "--user disable --now hearthd.service",
            "--user daemon-reload",
        ]
    );

    // Nothing left to remove: said, and not an error.
    let output = installed.service(&hearth, "uninstall", &home);
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("no hearthd service is installed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_installs_the_service_before_it_says_how_to_start_talking() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let home = TestHome::new(bins!());
    let installed = Installed::new(&home);
    let args: Vec<String> = setup_args(&model.base_url(), &["--service", "--yes"])
        .into_iter()
        .map(str::to_string)
        .collect();
    // Off the async runtime, so the fake model keeps answering.
    let output = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = installed.run(
            &installed.hearth(),
            &[&["setup"], &args[..]].concat(),
            &home,
        );
        (output, installed, home)
    })
    .await
    .unwrap();
    let (output, installed, _home) = output;
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    let wrote = format!("wrote {}", installed.unit_file().display());
    let attach = "Once the service runs, `hearth` attaches to it.";
    let (Some(wrote_at), Some(attach_at)) = (text.find(&wrote), text.find(attach)) else {
        panic!("{wrote:?} then {attach:?} in:\n{text}");
    };
    assert!(wrote_at < attach_at, "{text}");
    assert!(
        !text.contains("Start talking"),
        "`hearth` would start a daemon by hand beside the service:\n{text}"
    );
}
