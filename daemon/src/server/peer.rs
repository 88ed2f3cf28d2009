//! Who is at the other end of the Unix socket, as defence in depth behind
//! the owner key ([`hearth_protocol::owner_key`]). The socket's file mode
//! lets in every process of the owner, and that includes what the agent's
//! own tools start. Every tool command runs under a keeper
//! ([`crate::tools::keeper`]), a child subreaper, so whatever the command
//! starts stays beneath the keeper; a peer with a keeper among its
//! ancestors is refused.
//!
//! The check fails closed: a peer is let on to its hello only when its
//! whole ancestry was read, up to init or hearthd itself, and was the same
//! when read again afterwards, and the peer still ran then. A peer that
//! exited, an ancestor that exited or could not be read (pid reuse, a
//! `/proc` mounted `hidepid` above another user's process), a chain deeper
//! than [`MOST_ANCESTORS`], or a peer in another pid namespace (no pid) is
//! refused. The peer is held by a pidfd the kernel gives for the socket
//! (`SO_PEERPIDFD`, Linux 6.5), so its pid cannot be reused while it is
//! read; on older kernels the pid is opened as a pidfd once the connection
//! is accepted.
//!
//! Limits: the walk reads command lines, so a tool whose keeper is gone
//! (killed by the command itself) is not found here; the owner key is what
//! keeps such a process out where Landlock confines the shell.

use crate::tools::keeper::KEEPER_ARG;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// How far up the parents a walk goes; a deeper chain is refused (a chain
/// of processes is never this deep in practice).
const MOST_ANCESTORS: usize = 256;

/// `SO_PEERPIDFD` (Linux 6.5) where the socket options are asm-generic's.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "x86"))]
const SO_PEERPIDFD: libc::c_int = 77;

/// Why a Unix-socket peer is not let on to its hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotOwner {
    /// A process a tool started, beneath the tool keeper with this pid.
    Tool { keeper: u32 },
    /// Its ancestry could not be read whole: it cannot be told from a tool's.
    Unknown(Unknown),
}

/// Why a peer's ancestry could not be read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// The kernel gave no pid: the peer is in another pid namespace.
    NoPid,
    /// The peer exited before it was read, or its pidfd could not be had.
    PeerGone,
    /// A process on the way could not be read (it exited, or `/proc`
    /// does not show it).
    Unreadable,
    /// A process on the way had another parent when read again.
    Changed,
    /// The chain was deeper than [`MOST_ANCESTORS`].
    TooDeep,
}

impl NotOwner {
    /// What the refused client is told.
    pub fn message(self) -> String {
        match self {
            NotOwner::Tool { .. } => "a process started by one of the agent's tools may not connect to hearthd; run hearth from your own shell".to_string(),
            NotOwner::Unknown(why) => format!(
                "hearthd could not tell that this process was not started by one of the agent's tools ({}), so it may not connect to hearthd; run hearth from your own shell, and try again",
                why.describe()
            ),
        }
    }
}

impl Unknown {
    fn describe(self) -> &'static str {
        match self {
            Unknown::NoPid => "it runs in another pid namespace",
            Unknown::PeerGone => "the process that connected has exited",
            Unknown::Unreadable => {
                "a process among its parents has exited or cannot be read in /proc"
            }
            Unknown::Changed => "its parents changed while they were read",
            Unknown::TooDeep => "its chain of parents is too deep",
        }
    }
}

/// Whether the process at the other end of `stream` may say hello: `Ok`
/// when its whole ancestry was read and holds no tool keeper.
pub fn check(stream: &tokio::net::UnixStream) -> Result<(), NotOwner> {
    let unknown = NotOwner::Unknown;
    let pid = stream
        .peer_cred()
        .ok()
        .and_then(|cred| cred.pid())
        .and_then(|pid| u32::try_from(pid).ok())
        .filter(|pid| *pid > 0)
        .ok_or(unknown(Unknown::NoPid))?;
    let pidfd = peer_pidfd(stream, pid).ok_or(unknown(Unknown::PeerGone))?;
    judge(
        pid,
        std::process::id(),
        &|pid| fs::read(format!("/proc/{pid}/cmdline")).ok(),
        &|pid| fs::read_to_string(format!("/proc/{pid}/stat")).ok(),
        &|| runs(&pidfd),
    )
}

/// The pure rule: walks from `pid` up its parents (stopping at init or at
/// `own`, hearthd), refuses a keeper among them, then reads each parent
/// again and asks `still_runs` whether the peer runs: a chain that moved
/// meanwhile, or a peer gone, cannot be vouched for.
fn judge(
    pid: u32,
    own: u32,
    cmdline: &dyn Fn(u32) -> Option<Vec<u8>>,
    stat: &dyn Fn(u32) -> Option<String>,
    still_runs: &dyn Fn() -> bool,
) -> Result<(), NotOwner> {
    let unknown = NotOwner::Unknown;
    // (process, its parent) from the peer up.
    let mut chain: Vec<(u32, u32)> = Vec::new();
    let mut at = pid;
    loop {
        if at <= 1 || at == own {
            break;
        }
        if chain.len() >= MOST_ANCESTORS {
            return Err(unknown(Unknown::TooDeep));
        }
        let line = cmdline(at).ok_or(unknown(Unknown::Unreadable))?;
        if is_keeper(&line) {
            return Err(NotOwner::Tool { keeper: at });
        }
        let parent = stat(at)
            .as_deref()
            .and_then(parent)
            .ok_or(unknown(Unknown::Unreadable))?;
        chain.push((at, parent));
        at = parent;
    }
    // A process whose parent is the same now as when it was read, while
    // the peer (the chain's first) still runs, had that parent all along:
    // a parent that exits hands its children to another.
    for (process, was) in &chain {
        if stat(*process).as_deref().and_then(parent) != Some(*was) {
            return Err(unknown(Unknown::Changed));
        }
    }
    if !still_runs() {
        return Err(unknown(Unknown::PeerGone));
    }
    Ok(())
}

/// Whether a NUL-separated command line is a keeper's.
fn is_keeper(cmdline: &[u8]) -> bool {
    cmdline.split(|byte| *byte == 0).nth(1) == Some(KEEPER_ARG.as_bytes())
}

/// The parent's pid from `/proc/PID/stat`: the field after the command's
/// name, which is in parentheses and may itself hold spaces and `)`.
fn parent(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// A pidfd of the peer: the socket's own (`SO_PEERPIDFD`), else one opened
/// on `pid` now (a kernel before 6.5); `None` when the peer is gone.
fn peer_pidfd(stream: &tokio::net::UnixStream, pid: u32) -> Option<OwnedFd> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "x86"))]
    {
        let mut fd: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `fd` and `len` are valid for the int the option returns.
        let result = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_PEERPIDFD,
                (&mut fd as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if result == 0 && fd >= 0 {
            // SAFETY: the kernel just made this descriptor for us alone.
            return Some(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ENOPROTOOPT) {
            // The option exists and found no process: the peer is gone.
            return None;
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "x86")))]
    let _ = stream;
    // SAFETY: pidfd_open has no memory effects.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the kernel just made this descriptor for us alone.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the process of `pidfd` still runs: a pidfd reads as ready once
/// its process has exited.
fn runs(pidfd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd, no wait.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        if ready < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return ready == 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::collections::HashMap;

    #[test]
    fn the_parent_is_read_past_a_name_with_spaces_and_parentheses() {
        assert_eq!(parent("1234 (a b) c) S 77 1234 1234 0"), Some(77));
        assert_eq!(parent("garbage"), None);
    }

    type Tree = (HashMap<u32, &'static [u8]>, HashMap<u32, u32>);

    /// 40 (sh) <- 30 (setsid'd child) <- 20 (keeper) <- 10 (hearthd, or
    /// a terminal) <- 1; 50 is a client whose arguments name the keeper's.
    fn tree() -> Tree {
        let lines: HashMap<u32, &[u8]> = HashMap::from([
            (40, &b"sh\0-c\0hearth send hi\0"[..]),
            (30, &b"bash\0-lc\0x\0"[..]),
            (20, &b"/usr/bin/hearthd\0--tool-keeper\0bash\0-lc\0x\0"[..]),
            (10, &b"/usr/bin/hearthd\0"[..]),
            (50, &b"hearth\0send\0--tool-keeper\0"[..]),
        ]);
        let parents = HashMap::from([(40, 30), (30, 20), (20, 10), (10, 1), (50, 10)]);
        (lines, parents)
    }

    fn judged(tree: &Tree, pid: u32, own: u32) -> Result<(), NotOwner> {
        let (lines, parents) = tree;
        let cmdline = |pid: u32| lines.get(&pid).map(|line| line.to_vec());
        let stat = |pid: u32| parents.get(&pid).map(|p| format!("{pid} (x) S {p} 0 0"));
        judge(pid, own, &cmdline, &stat, &|| true)
    }

    #[test]
    fn a_keeper_anywhere_above_is_found_and_nothing_else_counts() {
        let tree = tree();
        assert_eq!(judged(&tree, 40, 999), Err(NotOwner::Tool { keeper: 20 }));
        assert_eq!(judged(&tree, 20, 999), Err(NotOwner::Tool { keeper: 20 }));
        assert_eq!(judged(&tree, 50, 999), Ok(()));
        assert_eq!(judged(&tree, 10, 999), Ok(()));
        // Up to hearthd itself (a bridge it started): not a tool.
        assert_eq!(judged(&tree, 50, 10), Ok(()));
    }

    #[test]
    fn an_ancestry_that_cannot_be_read_whole_is_refused() {
        let unknown = |why| Err(NotOwner::Unknown(why));
        let (mut lines, mut parents) = tree();
        // A peer gone before it was read, or whose parent has gone.
        assert_eq!(
            judged(&(lines.clone(), parents.clone()), 99, 999),
            unknown(Unknown::Unreadable)
        );
        lines.insert(60, b"hearth\0send\0");
        parents.insert(60, 61);
        assert_eq!(
            judged(&(lines.clone(), parents.clone()), 60, 999),
            unknown(Unknown::Unreadable)
        );
        // A chain deeper than a walk goes.
        for pid in 1000..1300 {
            lines.insert(pid, b"sh\0");
            parents.insert(pid, pid + 1);
        }
        assert_eq!(
            judged(&(lines, parents), 1000, 999),
            unknown(Unknown::TooDeep)
        );
    }

    #[test]
    fn a_chain_that_moved_while_read_or_a_peer_gone_is_refused() {
        let (lines, parents) = tree();
        let cmdline = |pid: u32| lines.get(&pid).map(|line| line.to_vec());
        // 50's parent exits while it is read: 50 is handed to init.
        let reads = Cell::new(0);
        let stat = |pid: u32| {
            let mut parent = parents.get(&pid).copied()?;
            if pid == 50 {
                reads.set(reads.get() + 1);
                if reads.get() > 1 {
                    parent = 1;
                }
            }
            Some(format!("{pid} (x) S {parent} 0 0"))
        };
        assert_eq!(
            judge(50, 999, &cmdline, &stat, &|| true),
            Err(NotOwner::Unknown(Unknown::Changed))
        );
        let stat = |pid: u32| parents.get(&pid).map(|p| format!("{pid} (x) S {p} 0 0"));
        assert_eq!(
            judge(50, 999, &cmdline, &stat, &|| false),
            Err(NotOwner::Unknown(Unknown::PeerGone))
        );
    }

    #[tokio::test]
    async fn a_peer_that_runs_is_read_whole_and_one_that_exited_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        // This test process, beneath no keeper.
        let _client = tokio::net::UnixStream::connect(&path).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        assert_eq!(check(&server), Ok(()));
        // A process that connected and exited before it was checked.
        // SAFETY: the address is built before the fork; the child makes
        // only async-signal-safe calls (socket, connect, _exit).
        let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        address.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (at, byte) in path.as_os_str().as_encoded_bytes().iter().enumerate() {
            address.sun_path[at] = *byte as libc::c_char;
        }
        // SAFETY: see above; the test's threads take no lock the child needs.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: async-signal-safe calls only, on the address built above.
            unsafe {
                let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                let size = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                let connected =
                    libc::connect(fd, (&address as *const libc::sockaddr_un).cast(), size);
                libc::_exit(if connected == 0 { 0 } else { 1 });
            }
        }
        let mut status = 0;
        // SAFETY: `status` is ours to fill in; `child` is our child.
        let waited = unsafe { libc::waitpid(child, &mut status, 0) };
        assert_eq!(waited, child);
        assert_eq!(status, 0, "the child connected");
        let (server, _) = listener.accept().await.unwrap();
        assert!(
            matches!(check(&server), Err(NotOwner::Unknown(_))),
            "{:?}",
            check(&server)
        );
    }
}
