//! The keeper: a small process between hearthd and each tool command, so
//! that nothing a tool started outlives its call.
//!
//! A process group is not enough: a command can leave it (`setsid`, `set -m`
//! in a subshell, a double fork) and then no signal to the group reaches it.
//! The keeper is hearthd's own binary started in a hidden mode
//! (`hearthd --tool-keeper PROGRAM ARGS…`). It makes itself a *child
//! subreaper* (`PR_SET_CHILD_SUBREAPER`): every process the command starts,
//! in whatever session or group, stays its descendant, and one whose parent
//! dies is handed to the keeper rather than to init. So "the keeper has no
//! children left" means "nothing the command started still runs", and the
//! keeper exits only then.
//!
//! Signals, from hearthd to the keeper alone:
//! - `SIGTERM`: pass SIGTERM to every descendant (the polite stop).
//! - [`KILL_NOW`] (`SIGUSR1`): SIGKILL every descendant, reap them all, exit
//!   as killed. hearthd's "SIGKILL the command" means this.
//! - hearthd dying, even by SIGKILL, delivers [`KILL_NOW`] too
//!   (`PR_SET_PDEATHSIG`).
//!
//! When the command itself ends, whatever it left is killed and reaped, and
//! the keeper ends the way the command did (its exit code, or killed by the
//! same signal), so hearthd reports the command's own outcome.
//!
//! Chosen over the alternatives because it needs no privilege and works on
//! every Linux: a PID namespace needs user namespaces (often disabled or
//! restricted), a cgroup needs a delegated hierarchy, and a walk of hearthd's
//! own children cannot tell which call an orphan came from.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// The argument that starts hearthd as a keeper.
pub const KEEPER_ARG: &str = "--tool-keeper";

/// The signal that tells a keeper to kill everything at once.
pub const KILL_NOW: libc::c_int = libc::SIGUSR1;

/// How long the keeper keeps killing processes that do not go away (one
/// stuck in the kernel) before it gives up and exits.
const GIVE_UP_AFTER: Duration = Duration::from_secs(10);

/// Runs the keeper: `args` are the program and its arguments. Never returns.
pub fn run(args: Vec<OsString>) -> ! {
    let code = match keep(args) {
        Ok(ending) => ending,
        Err(message) => {
            eprintln!("hearthd tool keeper: {message}");
            Ending::Code(127)
        }
    };
    finish(code)
}

/// How the command ended, which the keeper repeats.
#[derive(Debug, Clone, Copy)]
enum Ending {
    Code(i32),
    Signal(i32),
}

fn keep(args: Vec<OsString>) -> Result<Ending, String> {
    let mut args = args.into_iter();
    let program = args.next().ok_or("no command to run")?;
    // SAFETY: prctl and getppid have no memory effects.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong) == -1 {
            return Err(format!(
                "cannot become a subreaper: {}",
                std::io::Error::last_os_error()
            ));
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, KILL_NOW as libc::c_ulong);
        if libc::getppid() == 1 {
            // hearthd died before the death signal was set up.
            return Ok(Ending::Signal(libc::SIGKILL));
        }
    }
    let signals = blocked_signals();
    // SAFETY: the set is initialised by `blocked_signals`; blocking signals
    // so that they are taken by sigtimedwait below, not by a handler.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut()) };
    let mut command = Command::new(program);
    command.args(args);
    // The mask survives exec (std does not reset it): the command starts
    // with none blocked and every action at its default, or SIGTERM and
    // SIGINT would never reach it (`timeout 2 sleep 5` would sleep 5 s).
    // SAFETY: the hook makes raw system calls only and does not allocate.
    unsafe { command.pre_exec(super::process::reset_signals) };
    let child = command
        .spawn()
        .map_err(|err| format!("cannot start the command: {err}"))?;
    let command = child.id() as libc::pid_t;
    // The child is reaped by waitpid below, never through `child`.
    drop(child);
    let mut ending = None;
    loop {
        reap_all(command, &mut ending);
        if let Some(ending) = ending {
            kill_descendants(libc::SIGKILL);
            wait_for_no_children();
            return Ok(ending);
        }
        match wait_signal(&signals) {
            Some(libc::SIGTERM) => kill_descendants(libc::SIGTERM),
            Some(KILL_NOW) => {
                kill_descendants(libc::SIGKILL);
                wait_for_no_children();
                return Ok(Ending::Signal(libc::SIGKILL));
            }
            _ => {}
        }
    }
}

fn blocked_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset and sigaddset fill in a plain C struct.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGTERM, KILL_NOW, libc::SIGCHLD, libc::SIGINT] {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// The next of the blocked signals, or `None` after a short wait (so a
/// child's end that raced the wait is still seen).
fn wait_signal(signals: &libc::sigset_t) -> Option<libc::c_int> {
    let timeout = libc::timespec {
        tv_sec: 0,
        tv_nsec: 200_000_000,
    };
    // SAFETY: `info` is a plain C struct that sigtimedwait fills in.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: the set, `info` and `timeout` outlive the call.
    let signal = unsafe { libc::sigtimedwait(signals, &mut info, &timeout) };
    (signal > 0).then_some(signal)
}

/// Reaps every child that has ended; notes the command's own ending.
fn reap_all(command: libc::pid_t, ending: &mut Option<Ending>) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if pid == command {
            *ending = Some(if libc::WIFSIGNALED(status) {
                Ending::Signal(libc::WTERMSIG(status))
            } else {
                Ending::Code(libc::WEXITSTATUS(status))
            });
        }
    }
}

/// Signals every live descendant, found through the parent links in /proc.
fn kill_descendants(signal: libc::c_int) {
    for pid in descendants(std::process::id() as libc::pid_t) {
        // SAFETY: kill has no memory effects; a process that is gone is harmless.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Kills and reaps until the keeper has no children left, which, as a
/// subreaper, means no descendants; gives up after [`GIVE_UP_AFTER`].
fn wait_for_no_children() {
    let started = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            continue;
        }
        if pid == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            return;
        }
        if started.elapsed() > GIVE_UP_AFTER {
            return;
        }
        // Something still runs: a process forked just before the kill, now
        // handed to the keeper. Kill again and wait a moment.
        kill_descendants(libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every live process below `root`, from one pass over /proc.
fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut children: HashMap<libc::pid_t, Vec<libc::pid_t>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if let Some(parent) = parent_of(pid) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            if seen.insert(child) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// A process's parent, from `/proc/PID/stat` (the field after the state,
/// which follows the command name's closing parenthesis).
fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Ends the keeper the way the command ended.
fn finish(ending: Ending) -> ! {
    match ending {
        Ending::Code(code) => std::process::exit(code),
        Ending::Signal(signal) => {
            // SAFETY: restoring the default action and raising the signal
            // ends this process with it, as the command ended.
            unsafe {
                let set = blocked_signals();
                libc::signal(signal, libc::SIG_DFL);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                libc::raise(signal);
            }
            // A signal that does not end a process by default.
            std::process::exit(128 + signal)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parent_of;

    #[test]
    fn the_parent_is_read_from_proc() {
        let me = std::process::id() as libc::pid_t;
        // SAFETY: getppid has no memory effects.
        let parent = unsafe { libc::getppid() };
        assert_eq!(parent_of(me), Some(parent));
    }
}
