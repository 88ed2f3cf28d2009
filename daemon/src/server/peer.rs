//! Who is at the other end of the Unix socket. The socket's file mode lets
//! in every process of the owner, and that includes what the agent's own
//! tools start: a command that connected could submit words as the owner or
//! answer its own approval. Every tool command runs under a keeper
//! ([`crate::tools::keeper`]), a child subreaper, so whatever the command
//! starts stays beneath the keeper; a peer with a keeper among its
//! ancestors is refused.
//!
//! Limits: the peer's pid comes from the kernel (`SO_PEERCRED`) as of the
//! connect; a process in another pid namespace has no pid here and is let
//! in, as is one whose ancestry cannot be read.

use crate::tools::keeper::KEEPER_ARG;
use std::fs;

/// How far up the parents a walk goes before it stops (a chain of
/// processes is never this deep in practice).
const MOST_ANCESTORS: usize = 256;

/// The pid of the tool keeper above the process at the other end of
/// `stream`, if a tool started it.
pub fn tool_keeper_above(stream: &tokio::net::UnixStream) -> Option<u32> {
    let pid = stream.peer_cred().ok()?.pid()?;
    let pid = u32::try_from(pid).ok().filter(|pid| *pid > 0)?;
    keeper_among_ancestors(
        pid,
        &|pid| fs::read(format!("/proc/{pid}/cmdline")).ok(),
        &|pid| fs::read_to_string(format!("/proc/{pid}/stat")).ok(),
    )
}

/// Walks from `pid` up its parents (`stat`'s fourth field) and returns the
/// first whose command line is a keeper's (`PROGRAM --tool-keeper …`).
fn keeper_among_ancestors(
    pid: u32,
    cmdline: &dyn Fn(u32) -> Option<Vec<u8>>,
    stat: &dyn Fn(u32) -> Option<String>,
) -> Option<u32> {
    let own = std::process::id();
    let mut pid = pid;
    for _ in 0..MOST_ANCESTORS {
        if pid <= 1 || pid == own {
            return None;
        }
        if cmdline(pid).is_some_and(|line| is_keeper(&line)) {
            return Some(pid);
        }
        pid = parent(&stat(pid)?)?;
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn the_parent_is_read_past_a_name_with_spaces_and_parentheses() {
        assert_eq!(parent("1234 (a b) c) S 77 1234 1234 0"), Some(77));
        assert_eq!(parent("garbage"), None);
    }

    #[test]
    fn a_keeper_anywhere_above_is_found_and_nothing_else_counts() {
        // 40 (sh) <- 30 (setsid'd child) <- 20 (keeper) <- 10 (hearthd)
        let lines: HashMap<u32, &[u8]> = HashMap::from([
            (40, &b"sh\0-c\0hearth send hi\0"[..]),
            (30, &b"bash\0-lc\0x\0"[..]),
            (20, &b"/usr/bin/hearthd\0--tool-keeper\0bash\0-lc\0x\0"[..]),
            (10, &b"/usr/bin/hearthd\0"[..]),
            (50, &b"hearth\0send\0--tool-keeper\0"[..]),
        ]);
        let parents = HashMap::from([(40, 30), (30, 20), (20, 10), (10, 1), (50, 10)]);
        let cmdline = |pid: u32| lines.get(&pid).map(|line| line.to_vec());
        let stat = |pid: u32| parents.get(&pid).map(|p| format!("{pid} (x) S {p} 0 0"));
        assert_eq!(keeper_among_ancestors(40, &cmdline, &stat), Some(20));
        assert_eq!(keeper_among_ancestors(20, &cmdline, &stat), Some(20));
        assert_eq!(keeper_among_ancestors(50, &cmdline, &stat), None);
        assert_eq!(keeper_among_ancestors(10, &cmdline, &stat), None);
        // A process gone meanwhile ends the walk: let in.
        assert_eq!(keeper_among_ancestors(99, &cmdline, &stat), None);
    }
}
