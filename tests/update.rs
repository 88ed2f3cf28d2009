//! End-to-end: `hearth update` and `install.sh` against a release served
//! over real HTTP on `127.0.0.1:0`, made and signed by the test with a key
//! of its own. The programs updated are installed copies of the built ones
//! (marked, so that a replaced one is told from an old one); the release
//! holds the built programs themselves.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_tests::bins;
use hearth_tests::harness::TestHome;
use hearth_tests::release_server::{this_target, write_release, ReleaseServer, ReleaseSigner};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Bytes added to the end of an installed program: it still runs, and a
/// program without them was put there by an update.
const OLD: &[u8] = b"\nthe old program\n";

/// A release, its server, and installed (old) programs.
struct Release {
    signer: ReleaseSigner,
    _folder: tempfile::TempDir,
    server: ReleaseServer,
    bin: PathBuf,
    _bin_dir: tempfile::TempDir,
    built: hearth_tests::harness::Bins,
}

impl Release {
    fn new(home: &TestHome) -> Release {
        let built = home.bins.clone();
        let signer = ReleaseSigner::new();
        let folder = tempfile::tempdir().unwrap();
        write_release(
            folder.path(),
            "9.9.9",
            "- everything is better",
            this_target(),
            &[("hearth", &built.hearth), ("hearthd", &built.hearthd)],
            &signer,
        );
        let server = ReleaseServer::start(folder.path());
        let bin_dir = tempfile::tempdir().unwrap();
        let bin = bin_dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for program in [&built.hearth, &built.hearthd] {
            let installed = bin.join(program.file_name().unwrap());
            std::fs::copy(program, &installed).unwrap();
            std::fs::OpenOptions::new()
                .append(true)
                .open(&installed)
                .unwrap()
                .write_all(OLD)
                .unwrap();
        }
        Release {
            signer,
            _folder: folder,
            server,
            bin,
            _bin_dir: bin_dir,
            built,
        }
    }

    /// The installed `hearth ARGS --home HOME`, pointed at the release.
    fn hearth(&self, args: &[&str], home: &TestHome, key: &str) -> Output {
        home.command(&self.bin.join("hearth"), args)
            .env("HEARTH_RELEASES_URL", &self.server.address)
            .env("HEARTH_RELEASE_KEY", key)
            .output()
            .expect("hearth runs")
    }

    /// Whether the installed `name` is still the old one.
    fn is_old(&self, name: &str) -> bool {
        std::fs::read(self.bin.join(name)).unwrap().ends_with(OLD)
    }

    /// Whether the installed `name` is the release's program.
    fn is_new(&self, name: &str) -> bool {
        let built = if name == "hearth" {
            &self.built.hearth
        } else {
            &self.built.hearthd
        };
        std::fs::read(self.bin.join(name)).unwrap() == std::fs::read(built).unwrap()
    }

    /// Files other than the two programs left in the folder.
    fn leftovers(&self) -> Vec<String> {
        std::fs::read_dir(&self.bin)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "hearth" && name != "hearthd")
            .collect()
    }
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn runs(program: &Path) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

#[test]
fn update_refuses_a_bad_signature_and_a_cut_download_and_leaves_the_old_programs() {
    let home = TestHome::new(bins!());
    let release = Release::new(&home);

    let stranger = ReleaseSigner::new().public_key();
    let refused = release.hearth(&["update"], &home, &stranger);
    assert!(!refused.status.success(), "{}", said(&refused));
    assert!(
        said(&refused).contains("signature does not verify"),
        "{}",
        said(&refused)
    );

    let key = release.signer.public_key();
    release
        .server
        .cut(Some(&format!("hearth-{}.gz", this_target())));
    let cut = release.hearth(&["update"], &home, &key);
    assert!(!cut.status.success(), "{}", said(&cut));
    assert!(
        said(&cut).contains("nothing was installed"),
        "{}",
        said(&cut)
    );

    assert!(release.is_old("hearth") && release.is_old("hearthd"));
    assert!(runs(&release.bin.join("hearth")) && runs(&release.bin.join("hearthd")));
    assert_eq!(release.leftovers(), Vec::<String>::new());

    release.server.cut(None);
    let check = release.hearth(&["update", "--check"], &home, &key);
    assert!(check.status.success(), "{}", said(&check));
    assert!(
        said(&check).contains("hearth 9.9.9 is out")
            && said(&check).contains("everything is better"),
        "{}",
        said(&check)
    );
    assert!(release.is_old("hearth"), "--check installs nothing");
}

#[test]
fn update_replaces_both_programs_and_restarts_the_running_daemon() {
    let home = TestHome::new(bins!());
    let release = Release::new(&home);
    let key = release.signer.public_key();
    // The installed (old) programs' daemon runs.
    let mut daemon = home
        .command(&release.bin.join("hearthd"), &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until_running(&release, &home, &key),
        "the old daemon answers"
    );

    let updated = release.hearth(&["update"], &home, &key);
    assert!(updated.status.success(), "{}", said(&updated));
    assert!(
        said(&updated).contains("→ 9.9.9") && said(&updated).contains("everything is better"),
        "{}",
        said(&updated)
    );
    assert!(release.is_new("hearth") && release.is_new("hearthd"));
    assert_eq!(release.leftovers(), Vec::<String>::new());
    // The old daemon was stopped, and the new one answers.
    let old = daemon.wait().unwrap();
    assert!(
        old.success() || old.code().is_some(),
        "the old hearthd ended: {old:?}"
    );
    let status = release.hearth(&["status"], &home, &key);
    assert!(status.status.success(), "{}", said(&status));
    let stopped = release.hearth(&["stop"], &home, &key);
    assert!(stopped.status.success(), "{}", said(&stopped));
}

/// Asks `hearth status` until the daemon answers (it starts in the
/// background); false if it never does within the harness's deadline.
fn wait_until_running(release: &Release, home: &TestHome, key: &str) -> bool {
    let deadline = std::time::Instant::now() + hearth_tests::harness::DEADLINE;
    while std::time::Instant::now() < deadline {
        if release.hearth(&["status"], home, key).status.success() {
            return true;
        }
    }
    false
}

#[test]
fn install_script_installs_a_signed_release_and_refuses_a_forged_one() {
    let home = TestHome::new(bins!());
    let release = Release::new(&home);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("client/cli/install.sh");
    let install = |key: &str, into: &Path| {
        Command::new("sh")
            .arg(&script)
            .env("HEARTH_RELEASES_URL", &release.server.address)
            .env("HEARTH_RELEASE_KEY", key)
            .env("HEARTH_INSTALL_DIR", into)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let into = tempfile::tempdir().unwrap();

    let forged = install(&ReleaseSigner::new().public_key(), into.path());
    assert!(!forged.status.success(), "{}", said(&forged));
    assert!(
        said(&forged).contains("signature does not verify"),
        "{}",
        said(&forged)
    );
    assert!(!into.path().join("hearth").exists());

    let installed = install(&release.signer.public_key(), into.path());
    assert!(installed.status.success(), "{}", said(&installed));
    assert!(
        said(&installed).contains("hearth 9.9.9"),
        "{}",
        said(&installed)
    );
    for name in ["hearth", "hearthd"] {
        assert!(runs(&into.path().join(name)), "{name} runs");
    }
}
