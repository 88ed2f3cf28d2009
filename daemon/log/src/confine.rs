//! The shell's confinement on Linux: Landlock rules that let a command write
//! only its working folder, `/tmp` and a few devices, and read only the
//! system's folders and the user's `PATH` — never the hearth home
//! (`secrets.env`, `hearth.db`, `config.toml`).
//!
//! - Landlock is an allow-list: what no rule names is out of reach. A folder
//!   the rules would open that holds the home (a home under `/tmp`, as in
//!   tests) is opened entry by entry around it: each entry beside the way to
//!   the home gets the rule, the folders on the way do not, and symlinks
//!   there are skipped (one could lead anywhere). Entries made in such a
//!   folder later are out of reach, as the folder itself has no rule.
//! - The working folder may lie inside the home (`agents/NAME/work`); it is
//!   allowed itself, and start-up refused one that holds the home's files.
//! - Only the command is confined, never hearthd: the daemon makes the rule
//!   set (a descriptor) before the fork, and the child applies it with two
//!   async-signal-safe system calls before exec. The keeper, which runs
//!   between them, is confined with the command.
//! - With Landlock ABI 6 the command also cannot signal processes outside
//!   its confinement (hearthd among them) nor reach abstract Unix sockets.
//! - With Landlock ABI 4 a command that did not ask for the network
//!   (`shell`'s `network: true`) can neither connect nor bind a TCP port,
//!   and a seccomp filter (`confine/sockets.rs`) keeps it from every
//!   socket but local ones (UDP, a name lookup, raw packets): it cannot
//!   fetch the web nor send words out, so its output is not outside text.
//! - On a kernel without Landlock commands run unconfined; start-up warns,
//!   and `hearth status` says which confinement is active.
//!
//! Raw system calls rather than a crate for Landlock: the part that runs in
//! the child must not allocate, and it is two calls.

mod sockets;

pub use sockets::{filter as socket_filter, Filter as SocketFilter};

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `LANDLOCK_CREATE_RULESET_VERSION`: asks the kernel for its ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1;
/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

// `LANDLOCK_ACCESS_FS_*`.
const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const REMOVE_DIR: u64 = 1 << 4;
const REMOVE_FILE: u64 = 1 << 5;
const MAKE_DIR: u64 = 1 << 7;
const MAKE_REG: u64 = 1 << 8;
const MAKE_SOCK: u64 = 1 << 9;
const MAKE_FIFO: u64 = 1 << 10;
const MAKE_SYM: u64 = 1 << 12;
/// ABI 2.
const REFER: u64 = 1 << 13;
/// ABI 3.
const TRUNCATE: u64 = 1 << 14;

// `LANDLOCK_ACCESS_NET_*`, ABI 4.
const BIND_TCP: u64 = 1 << 0;
const CONNECT_TCP: u64 = 1 << 1;
/// The rights of ABI 1: bits 0 to 12.
const ABI1_ALL: u64 = (1 << 13) - 1;
/// The rights that apply to a file (not a folder).
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE;

// `LANDLOCK_SCOPE_*`, ABI 6.
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// Entries of one folder opened around the home, at most: past this the
/// rest stay out of reach (a crowded `/tmp`).
const MAX_ENTRIES_AROUND: usize = 4096;
/// How deep the way to the home is followed.
const MAX_DEPTH: usize = 16;

/// `struct landlock_ruleset_attr` (the kernel reads what it knows of it and
/// needs the rest zero).
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr`, packed as in the kernel's header.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// What a rule lets a command do beneath its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Read files, list folders, run programs.
    Read,
    /// Read, and create, change, rename and remove.
    Write,
    /// A device file such as `/dev/null`: read and write it.
    Device,
}

impl Reach {
    fn rights(self) -> u64 {
        let read = EXECUTE | READ_FILE | READ_DIR;
        match self {
            Reach::Read => read,
            Reach::Write => {
                read | WRITE_FILE
                    | REMOVE_DIR
                    | REMOVE_FILE
                    | MAKE_DIR
                    | MAKE_REG
                    | MAKE_SOCK
                    | MAKE_FIFO
                    | MAKE_SYM
                    | REFER
                    | TRUNCATE
            }
            Reach::Device => READ_FILE | WRITE_FILE | TRUNCATE,
        }
    }
}

/// One path and what a command may do beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub path: PathBuf,
    pub reach: Reach,
}

/// Why a command could not be confined (it then does not run).
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("cannot make the shell's Landlock rules: {0}")]
    Ruleset(io::Error),
    #[error("cannot add a Landlock rule for {path}: {source}")]
    Rule { path: PathBuf, source: io::Error },
}

/// What the kernel offers, probed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Landlock with this ABI version.
    Landlock(u32),
    /// No Landlock, and why.
    Unavailable(String),
}

/// The kernel's Landlock, probed once per process.
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        // SAFETY: with a null attribute and the version flag the call only
        // returns a number.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<RulesetAttr>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        match u32::try_from(abi) {
            Ok(abi) if abi > 0 => Support::Landlock(abi),
            _ => {
                let err = io::Error::last_os_error();
                Support::Unavailable(match err.raw_os_error() {
                    Some(libc::ENOSYS) => "the kernel has no Landlock".to_string(),
                    Some(libc::EOPNOTSUPP) => {
                        "Landlock is disabled in this kernel (boot option lsm=)".to_string()
                    }
                    _ => format!("Landlock cannot be used: {err}"),
                })
            }
        }
    })
}

/// Whether this kernel can keep a command off the network: Landlock
/// denies TCP (ABI 4 and on) and a seccomp filter the other sockets.
pub fn can_deny_network() -> bool {
    matches!(support(), Support::Landlock(abi) if *abi >= 4)
        && *sockets::support() == sockets::Support::Available
}

/// Whether a command that did not ask for the network gets the seccomp
/// filter: where the kernel has seccomp filters.
pub fn can_filter_sockets() -> bool {
    *sockets::support() == sockets::Support::Available
}

/// Which confinement the shell runs under, in words, for `hearth status`.
pub fn describe() -> String {
    match (support(), sockets::support()) {
        (Support::Landlock(abi), sockets::Support::Available) if *abi >= 4 => format!(
            "Landlock (ABI {abi}) and seccomp: the shell writes only its working folder and /tmp, cannot read the hearth home, and has no network (no TCP, UDP or raw sockets) unless a call asks for it"
        ),
        (Support::Landlock(abi), sockets::Support::Unavailable(why)) if *abi >= 4 => format!(
            "Landlock (ABI {abi}), no seccomp ({why}): the shell writes only its working folder and /tmp, and cannot read the hearth home; it has no TCP unless a call asks, but UDP cannot be denied, so every call taints its turn"
        ),
        (Support::Landlock(abi), _) => format!(
            "Landlock (ABI {abi}): the shell writes only its working folder and /tmp, and cannot read the hearth home; it cannot be kept from the network, so every call taints its turn"
        ),
        (Support::Unavailable(why), _) => format!(
            "none ({why}): the shell can read and write what the daemon's user can, the home included"
        ),
    }
}

/// What one agent's shell may reach.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// The working folder, resolved.
    workdir: PathBuf,
    /// The home's folders (config, data, runtime), resolved: never reached.
    home: Vec<PathBuf>,
    /// Folders the command may read though they lie in the home (the
    /// agent's skills, whose scripts it runs), resolved at each command:
    /// one made later counts.
    readable: Vec<PathBuf>,
    /// The command may connect and bind TCP ports: it asked for the
    /// network. Otherwise, with Landlock ABI 4, it cannot.
    pub network: bool,
}

impl Confinement {
    /// The confinement of a shell working in `workdir` for the home whose
    /// folders are `home`.
    pub fn new(workdir: &Path, home: &[&Path]) -> Confinement {
        let resolve = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        Confinement {
            workdir: resolve(workdir),
            home: home.iter().map(|path| resolve(path)).collect(),
            readable: Vec::new(),
            network: false,
        }
    }

    /// The same confinement, also letting commands read (and run what is
    /// in) `folders`, even inside the home; never a home folder itself.
    pub fn reading(mut self, folders: impl IntoIterator<Item = PathBuf>) -> Confinement {
        self.readable.extend(folders);
        self
    }

    /// The same confinement, with the network allowed.
    pub fn with_network(&self) -> Confinement {
        Confinement {
            network: true,
            ..self.clone()
        }
    }

    /// The rules for a command started now (folders around the home are
    /// read now). `program` is a program outside the usual folders that
    /// must run (the keeper, hearthd's own binary).
    pub fn rules(&self, program: Option<&Path>) -> Vec<Rule> {
        let mut wanted: Vec<(PathBuf, Reach)> = [
            "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
            "/proc", "/sys", "/dev", "/run",
        ]
        .iter()
        .map(|path| (PathBuf::from(path), Reach::Read))
        .collect();
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path).filter(|dir| dir.is_absolute()) {
                wanted.push((dir, Reach::Read));
            }
        }
        if let Some(program) = program {
            wanted.push((program.to_path_buf(), Reach::Read));
        }
        wanted.push((PathBuf::from("/tmp"), Reach::Write));
        wanted.push((PathBuf::from("/dev/shm"), Reach::Write));
        for device in ["null", "zero", "full", "random", "urandom", "tty"] {
            wanted.push((Path::new("/dev").join(device), Reach::Device));
        }
        let mut rules = Vec::new();
        for (path, reach) in wanted {
            let Ok(path) = path.canonicalize() else {
                continue;
            };
            self.around_home(path, reach, 0, &mut rules);
        }
        for folder in &self.readable {
            if let Ok(folder) = folder.canonicalize() {
                self.around_home_but(folder, Reach::Read, &mut rules);
            }
        }
        // Last, so nothing above narrows it: the folder itself, even when
        // it lies inside the home's data folder.
        self.around_home_but(self.workdir.clone(), Reach::Write, &mut rules);
        rules
    }

    /// Adds `path`'s rule, unless it is in the home; when it holds the
    /// home, adds the rule for each entry beside the way to it instead.
    fn around_home(&self, path: PathBuf, reach: Reach, depth: usize, rules: &mut Vec<Rule>) {
        if self.home.iter().any(|home| path.starts_with(home)) {
            return;
        }
        self.around_home_at(path, reach, depth, rules);
    }

    /// The working folder: allowed inside the home, but never opening it.
    fn around_home_but(&self, path: PathBuf, reach: Reach, rules: &mut Vec<Rule>) {
        if self.home.contains(&path) {
            return;
        }
        self.around_home_at(path, reach, 0, rules);
    }

    fn around_home_at(&self, path: PathBuf, reach: Reach, depth: usize, rules: &mut Vec<Rule>) {
        let holds_home = self
            .home
            .iter()
            .any(|home| home.starts_with(&path) && *home != path);
        if !holds_home {
            rules.push(Rule { path, reach });
            return;
        }
        if depth >= MAX_DEPTH {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&path) else {
            return;
        };
        for entry in entries.flatten().take(MAX_ENTRIES_AROUND) {
            // A symlink beside the home could lead anywhere, the home too.
            if entry.file_type().map_or(true, |kind| kind.is_symlink()) {
                continue;
            }
            self.around_home(entry.path(), reach, depth + 1, rules);
        }
    }
}

/// A rule set ready for a child to apply: its descriptor stays open in the
/// daemon until the child has started.
pub struct Ruleset(OwnedFd);

impl Ruleset {
    /// Makes the kernel's rule set for `rules`; `None` when the kernel has
    /// no Landlock (the command then runs unconfined). Without `network`,
    /// TCP connect and bind are denied where the kernel can (ABI 4): the
    /// set handles them and no rule allows a port.
    pub fn make(rules: &[Rule], network: bool) -> Result<Option<Ruleset>, ConfineError> {
        let Support::Landlock(abi) = *support() else {
            return Ok(None);
        };
        let mut handled = ABI1_ALL;
        if abi >= 2 {
            handled |= REFER;
        }
        if abi >= 3 {
            handled |= TRUNCATE;
        }
        let scoped = if abi >= 6 {
            SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        } else {
            0
        };
        let attr = RulesetAttr {
            handled_access_fs: handled,
            handled_access_net: if abi >= 4 && !network {
                BIND_TCP | CONNECT_TCP
            } else {
                0
            },
            scoped,
        };
        // SAFETY: `attr` is a valid ruleset attribute of the size given.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                std::mem::size_of::<RulesetAttr>(),
                0 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(ConfineError::Ruleset(io::Error::last_os_error()));
        }
        // SAFETY: the kernel just returned this descriptor, owned by no one else.
        let ruleset = Ruleset(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        for rule in rules {
            ruleset.add(rule, handled)?;
        }
        Ok(Some(ruleset))
    }

    fn add(&self, rule: &Rule, handled: u64) -> Result<(), ConfineError> {
        let failed = |source| ConfineError::Rule {
            path: rule.path.clone(),
            source,
        };
        let Ok(name) = CString::new(rule.path.as_os_str().as_bytes()) else {
            return Ok(());
        };
        // O_NOFOLLOW: a path swapped for a symlink since it was read is
        // refused rather than followed.
        // SAFETY: `name` is a valid C string; the descriptor is owned below.
        let fd = unsafe {
            libc::open(
                name.as_ptr(),
                libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            )
        };
        if fd < 0 {
            // Gone since it was listed: nothing to allow.
            return Ok(());
        }
        // SAFETY: the descriptor was just opened and is owned here alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: `stat` is a plain C struct that fstat fills in.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: the descriptor is open and `stat` is ours to fill in.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(failed(io::Error::last_os_error()));
        }
        let kind = stat.st_mode & libc::S_IFMT;
        let mut allowed = rule.reach.rights() & handled;
        if kind == libc::S_IFLNK {
            return Ok(());
        }
        if kind != libc::S_IFDIR {
            allowed &= FILE_RIGHTS;
        }
        let attr = PathBeneathAttr {
            allowed_access: allowed,
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: `attr` is a valid path-beneath attribute; both descriptors
        // are open.
        let result = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.0.as_raw_fd(),
                RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0 as libc::c_uint,
            )
        };
        if result != 0 {
            return Err(failed(io::Error::last_os_error()));
        }
        Ok(())
    }

    /// The descriptor a child applies with [`restrict`].
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// In the child between fork and exec: confines this process (and all it
/// starts) to the rule set `fd`. Async-signal-safe: two system calls.
pub fn restrict(fd: RawFd) -> io::Result<()> {
    // SAFETY: prctl and the Landlock call have no memory effects; without
    // "no new privileges" an unprivileged process may not restrict itself.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0 as libc::c_uint) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(rules: &[Rule], reach: Reach) -> Vec<PathBuf> {
        rules
            .iter()
            .filter(|rule| rule.reach == reach)
            .map(|rule| rule.path.clone())
            .collect()
    }

    #[test]
    fn a_home_under_an_allowed_folder_is_opened_around() {
        let top = tempfile::tempdir().unwrap();
        let top = top.path().canonicalize().unwrap();
        let home = top.join("home");
        let work = home.join("agents/a/work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(top.join("beside")).unwrap();
        std::fs::write(top.join("file"), "x").unwrap();
        std::os::unix::fs::symlink(&home, top.join("link")).unwrap();
        let confinement = Confinement::new(&work, &[&home]);
        let mut rules = Vec::new();
        confinement.around_home(top.clone(), Reach::Write, 0, &mut rules);
        let mut written = paths(&rules, Reach::Write);
        written.sort();
        assert_eq!(written, vec![top.join("beside"), top.join("file")]);
        let all = confinement.rules(None);
        assert!(all.contains(&Rule {
            path: work.clone(),
            reach: Reach::Write
        }));
        assert!(
            all.iter().all(|rule| !home.starts_with(&rule.path)),
            "no rule may hold the home: {all:?}"
        );
    }

    #[test]
    fn a_skills_folder_in_the_home_is_read_only_and_made_later_it_counts() {
        let top = tempfile::tempdir().unwrap();
        let home = top.path().canonicalize().unwrap();
        let work = home.join("agents/a/work");
        std::fs::create_dir_all(&work).unwrap();
        let skills = home.join("skills");
        let confinement = Confinement::new(&work, &[&home]).reading([skills.clone(), home.clone()]);
        assert!(!confinement.rules(None).iter().any(|r| r.path == skills));
        std::fs::create_dir_all(&skills).unwrap();
        let rules = confinement.rules(None);
        assert!(rules.contains(&Rule {
            path: skills,
            reach: Reach::Read
        }));
        assert!(rules.iter().all(|rule| !home.starts_with(&rule.path)));
    }

    #[test]
    fn the_home_itself_is_never_a_rule_even_as_the_folder() {
        let top = tempfile::tempdir().unwrap();
        let home = top.path().canonicalize().unwrap();
        let confinement = Confinement::new(&home, &[&home]);
        let rules = confinement.rules(None);
        assert!(rules.iter().all(|rule| !home.starts_with(&rule.path)));
    }
}
