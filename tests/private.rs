//! End-to-end: a home is private from its first byte, whoever creates it
//! and whatever the umask. Every process here is started under umask 022
//! (`sh -c 'umask 022; exec …'`), the permissive default that would leave
//! files readable by every local user.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::home::Home;
use hearth_protocol::image::encode;
use hearth_protocol::{ClientFrame, ServerFrame};
use hearth_tests::bins;
use hearth_tests::harness::{eventually, png_head, Client, TestHome, OLLAMA_URL_ENV};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

fn home() -> TestHome {
    TestHome::new(bins!())
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn assert_private(path: &Path, expected: u32) {
    assert_eq!(
        mode(path),
        expected,
        "{} is {:o}",
        path.display(),
        mode(path)
    );
}

/// `program args…` under umask 022, with the harness's environment.
fn under_umask_022(program: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("umask 022; exec \"$@\"")
        .arg("sh")
        .arg(program)
        .args(args)
        .env_remove("HEARTH_HOME")
        .env(OLLAMA_URL_ENV, "off")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// A daemon started here, stopped (SIGTERM, then waited for) when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

async fn connected(home: Home) -> Client {
    let path = home.socket();
    eventually("the daemon listening", || {
        let path = path.clone();
        async move { tokio::net::UnixStream::connect(&path).await.ok() }
    })
    .await;
    Client::connect(&home, "terminal", None).await
}

#[tokio::test]
async fn hearthd_under_umask_022_creates_every_file_private() {
    let home = home();
    let dir = home.path().join("home");
    let dir_arg = dir.to_string_lossy().to_string();
    let _daemon = Running(
        under_umask_022(&home.bins.hearthd, &["--home", &dir_arg])
            .spawn()
            .unwrap(),
    );
    let mut client = connected(Home::at(&dir)).await;
    client.submit("make the log grow", "terminal", None).await;
    // An image and a backup are written by the daemon too.
    let put = ClientFrame::ImagePut {
        media_type: "image/png".into(),
        data_base64: encode(&png_head(4, 3)),
    };
    let ServerFrame::ImageStored(image) = client.request(put).await else {
        panic!("stored")
    };
    // In the home's folder: a folder the agents' shell may read (/tmp,
    // where the test's folder is) takes no backup.
    let backup = dir.join("backup.db");
    let frame = ClientFrame::Backup {
        path: backup.to_string_lossy().to_string(),
    };
    assert!(matches!(
        client.request(frame).await,
        ServerFrame::BackedUp { .. }
    ));

    assert_private(&dir, 0o700);
    assert_private(&dir.join("agents"), 0o700);
    assert_private(&dir.join("agents/hearth"), 0o700);
    assert_private(&dir.join("agents/hearth/prompt.md"), 0o600);
    assert_private(&dir.join("images"), 0o700);
    let stored = std::fs::read_dir(dir.join("images"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(&image.sha256))
        .expect("the stored image");
    assert_private(&stored, 0o600);
    for file in ["hearth.db", "hearth.db-wal", "hearth.db-shm", "hearth.lock"] {
        assert_private(&dir.join(file), 0o600);
    }
    assert_private(&backup, 0o600);
    assert_eq!(mode(&dir.join("hearth.sock")) & 0o077, 0);
}

#[tokio::test]
async fn hearth_starting_the_daemon_under_umask_022_keeps_the_xdg_folders_private() {
    let home = home();
    let root = home.path();
    let (config, data, runtime) = (root.join("config"), root.join("data"), root.join("run"));
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let xdg = |command: &mut Command| {
        command
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_DATA_HOME", &data)
            .env("XDG_RUNTIME_DIR", &runtime);
    };
    // `hearth restart` starts a daemon in the background when none runs,
    // as `hearth` does, and waits until it answers.
    let mut restart = under_umask_022(&home.bins.hearth, &["restart"]);
    xdg(&mut restart);
    let status = restart.status().unwrap();
    assert!(status.success());
    let xdg_home = Home {
        config_dir: config.join("hearth"),
        data_dir: data.join("hearth"),
        runtime_dir: runtime.join("hearth"),
    };
    for folder in [
        &xdg_home.config_dir,
        &xdg_home.data_dir,
        &xdg_home.runtime_dir,
    ] {
        assert_private(folder, 0o700);
    }
    assert_private(&xdg_home.daemon_log(), 0o600);
    assert_private(&xdg_home.database(), 0o600);
    let mut stop = under_umask_022(&home.bins.hearth, &["stop"]);
    xdg(&mut stop);
    assert!(stop.status().unwrap().success());
}

#[tokio::test]
async fn a_home_others_could_read_is_tightened_at_start_with_a_note() {
    let home = home();
    let dir = home.path();
    home.write_config("");
    std::fs::write(dir.join("hearthd.log"), "").unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for file in ["config.toml", "hearthd.log"] {
        std::fs::set_permissions(dir.join(file), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let daemon = home.start();
    assert_private(dir, 0o700);
    assert_private(&dir.join("config.toml"), 0o600);
    assert_private(&dir.join("hearthd.log"), 0o600);
    let log = daemon.log_text();
    assert!(
        log.contains("hearthd.log was 644, now 600; made it private"),
        "{log}"
    );
}

#[tokio::test]
async fn a_bridge_run_by_hand_under_umask_022_creates_its_lock_private() {
    let home = home();
    let dir = home.path();
    let _daemon = home.start();
    std::fs::write(
        dir.join("secrets.env"),
        "HEARTH_TEST_NO_SUCH_TOKEN=123:abc\n",
    )
    .unwrap();
    std::fs::set_permissions(
        dir.join("secrets.env"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let dir_arg = dir.to_string_lossy().to_string();
    // The bridge takes its lock first, then fails against a Telegram it
    // cannot reach (nothing listens at the address): the lock is what it made.
    home.write_config(
        "[telegram]\ntoken_env = \"HEARTH_TEST_NO_SUCH_TOKEN\"\nallow = [1]\napi_base = \"http://127.0.0.1:9\"\n",
    );
    let mut bridge = under_umask_022(&home.bins.hearth, &["telegram", "--home", &dir_arg]);
    let mut child = bridge.spawn().unwrap();
    let lock = dir.join("telegram.lock");
    let lock_ref = &lock;
    eventually("the bridge's lock", || async move {
        lock_ref.exists().then_some(())
    })
    .await;
    let _ = child.kill();
    let _ = child.wait();
    assert_private(&lock, 0o600);
}
