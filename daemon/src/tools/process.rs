//! The tools' child processes: each the leader of its own process group,
//! killed as a group, and never outliving the daemon.
//!
//! - Every child is spawned from one thread that lives as long as the daemon.
//!   A child asks for SIGKILL when its parent dies (`PR_SET_PDEATHSIG`), and
//!   Linux means the parent *thread* by that: a child spawned from a tokio
//!   worker that the runtime later retires would be killed with that thread.
//! - A reaper thread per child waits for the leader to end *without reaping
//!   it*, kills whatever the command left in its group, then reaps. Until the
//!   leader is reaped its pid stays reserved, so a signal to the group can
//!   never reach an unrelated process that was given a recycled id.
//! - [`Running`] kills the group (SIGKILL) when dropped: dropping the future
//!   that runs a tool, as an interrupt does, ends its processes at once.
//! - [`Processes`] lists the live groups, so shutdown kills them all.
//!
//! - In hearthd every command runs under a [keeper](super::keeper), which is
//!   the group's leader: a process that leaves the group (`setsid`, a double
//!   fork) is still the keeper's descendant, and the keeper kills all of
//!   them when the command ends, when told to, and when hearthd dies (even
//!   by SIGKILL). Without a keeper (the library's own unit tests), a process
//!   that leaves the group is out of reach.
//! - The environment a command gets is computed here once, as a whole, for
//!   both ways of starting it: the daemon's own (or none, for a speaker)
//!   with the command's changes. A wrapped command would otherwise lose an
//!   `env_clear`, so callers never call it; they choose [`Processes::spawn`]
//!   or [`Processes::spawn_speaker`].
//! - A command given a [`Confinement`] applies its Landlock rules in the
//!   child before exec, and, when it did not ask for the network, the
//!   seccomp filter that denies it every socket but local ones (see
//!   [`super::confine`]); hearthd is never confined.

use super::confine::{self, Confinement, Ruleset};
use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// How a command's leader ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// The keeper program every command runs under, once hearthd set it.
static KEEPER: OnceLock<PathBuf> = OnceLock::new();

/// Runs every command started from now on under the keeper `program`
/// (hearthd's own binary, which takes [`super::keeper::KEEPER_ARG`]).
pub fn use_keeper(program: PathBuf) {
    let _ = KEEPER.set(program);
}

/// Whether commands run under a keeper, for `hearth status` and tests.
pub fn keeper_in_use() -> bool {
    KEEPER.get().is_some()
}

/// One process group; its id is its leader's pid.
pub struct Group {
    pgid: libc::pid_t,
    /// The leader is a keeper: signals go to it alone, and it passes them
    /// on to every descendant (SIGKILL becomes its "kill everything now").
    keeper: bool,
    /// True once the leader is reaped: from then on its id may be given to
    /// another process, so no signal may use it.
    reaped: Mutex<bool>,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, bool> {
        // A panic while holding the lock cannot leave the flag half-written.
        self.reaped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `signal` to every process of the group, unless its leader was
    /// reaped already (then the group is gone and its id is not ours).
    pub fn signal(&self, signal: libc::c_int) {
        let reaped = self.lock();
        if *reaped {
            return;
        }
        if self.keeper {
            let signal = if signal == libc::SIGKILL {
                super::keeper::KILL_NOW
            } else {
                signal
            };
            // SAFETY: kill has no memory effects; the keeper's id is ours
            // until it is reaped.
            unsafe { libc::kill(self.pgid, signal) };
        } else {
            // SAFETY: killpg has no memory effects; a failure (the group is
            // empty) is harmless.
            unsafe { libc::killpg(self.pgid, signal) };
        }
    }

    /// The leader's pid.
    pub fn id(&self) -> u32 {
        self.pgid as u32
    }
}

/// A started command. Dropping its `kill_on_drop` kills its whole group, so
/// a caller keeps that bound for as long as the command may run.
pub struct Running {
    /// Only for [`Processes::spawn_speaker`]; otherwise stdin is closed.
    pub stdin: Option<ChildStdin>,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    pub group: Arc<Group>,
    /// How the leader ended, once it has; `None` if that could not be known.
    pub exit: oneshot::Receiver<Option<Exit>>,
    pub kill_on_drop: KillOnDrop,
}

/// Sends SIGKILL to a group when dropped; a no-op once its leader is reaped.
pub struct KillOnDrop(Arc<Group>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.signal(libc::SIGKILL);
    }
}

/// The live process groups of the tools, shared by every clone.
#[derive(Clone)]
pub struct Processes {
    live: Arc<Mutex<HashMap<libc::pid_t, Arc<Group>>>>,
    /// How many groups are live, so shutdown can wait for the reapers.
    count: Arc<watch::Sender<usize>>,
}

impl Default for Processes {
    fn default() -> Self {
        Processes::new()
    }
}

impl Processes {
    pub fn new() -> Processes {
        Processes {
            live: Arc::default(),
            count: Arc::new(watch::channel(0).0),
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<libc::pid_t, Arc<Group>>> {
        // The map stays consistent: each operation is one insert or remove.
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn insert(&self, group: Arc<Group>) {
        let mut table = self.table();
        table.insert(group.pgid, group);
        self.count.send_replace(table.len());
    }

    fn remove(&self, pgid: libc::pid_t) {
        let mut table = self.table();
        table.remove(&pgid);
        self.count.send_replace(table.len());
    }

    /// How many groups are live.
    pub fn live(&self) -> usize {
        self.table().len()
    }

    /// Starts `command` as the leader of a new process group (under the
    /// keeper, when hearthd set one), with stdin closed and stdout and
    /// stderr piped.
    pub async fn spawn(&self, command: Command) -> io::Result<Running> {
        self.spawn_with(command, Stdio::null(), false, None).await
    }

    /// As [`Processes::spawn`], confined by `confinement` where the kernel
    /// has Landlock (the shell). A rule set the kernel refuses is an error:
    /// the command does not run unconfined on a kernel that could confine it.
    pub async fn spawn_confined(
        &self,
        command: Command,
        confinement: Arc<Confinement>,
    ) -> io::Result<Running> {
        self.spawn_with(command, Stdio::null(), false, Some(confinement))
            .await
    }

    /// As [`Processes::spawn`], for a program that speaks over its pipes
    /// (an MCP server): stdin is piped too, and the program starts with an
    /// empty environment but for what `command` sets (`env_clear` alone
    /// would not survive the keeper's wrapping).
    pub async fn spawn_speaker(&self, command: Command) -> io::Result<Running> {
        self.spawn_with(command, Stdio::piped(), true, None).await
    }

    async fn spawn_with(
        &self,
        command: Command,
        stdin: Stdio,
        clear_env: bool,
        confinement: Option<Arc<Confinement>>,
    ) -> io::Result<Running> {
        let keeper = KEEPER.get();
        let mut command = prepared(keeper, &command, clear_env);
        command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the hook calls only async-signal-safe functions and does
        // not allocate.
        unsafe {
            command.pre_exec(move || {
                reset_signals()?;
                die_with(parent)
            })
        };
        let (reply, answer) = oneshot::channel();
        let gone = || io::Error::other("the process spawner thread is gone");
        spawner()
            .ok_or_else(gone)?
            .send(Job {
                command,
                keeper: keeper.is_some(),
                confinement,
                processes: self.clone(),
                reply,
            })
            .map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// Kills every live group with SIGKILL and waits, at most `wait`, for
    /// their leaders to be reaped. For shutdown: no child outlives the daemon.
    pub async fn kill_all(&self, wait: Duration) {
        let groups: Vec<Arc<Group>> = self.table().values().cloned().collect();
        if !groups.is_empty() {
            tracing::info!("killing {} running tool process group(s)", groups.len());
        }
        for group in groups {
            group.signal(libc::SIGKILL);
        }
        let mut count = self.count.subscribe();
        let _ = tokio::time::timeout(wait, count.wait_for(|live| *live == 0)).await;
    }
}

/// In the child before exec: die with the daemon, and do not start at all if
/// it died already.
fn die_with(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getppid has no preconditions and is async-signal-safe.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// In the child before exec: every signal's action back to its default and
/// none blocked. Both survive exec: the keeper blocks SIGTERM and SIGINT to
/// take them with `sigtimedwait`, and whatever started hearthd may have
/// ignored some; a command that inherited them could not be stopped by
/// `timeout`, `kill` or its own children. Raw system calls: they do not
/// allocate, and glibc's wrapper refuses the two signals it reserves (32
/// and 33), which the kernel lets us reset.
pub(super) fn reset_signals() -> io::Result<()> {
    // The kernel's `struct sigaction`, all zero: SIG_DFL, no flags, no mask.
    let default = [0u64; 4];
    let none: u64 = 0;
    // The size of the kernel's signal set: 64 signals.
    let set_size: libc::size_t = 8;
    for signal in 1..=64 {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: rt_sigaction reads the zeroed struct and writes nothing
        // (no old action is asked for); a signal it refuses stays as it was.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                signal,
                default.as_ptr(),
                std::ptr::null_mut::<u64>(),
                set_size,
            )
        };
    }
    // SAFETY: rt_sigprocmask reads the empty set and writes nothing.
    let masked = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &none as *const u64,
            std::ptr::null_mut::<u64>(),
            set_size,
        )
    };
    if masked == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The command that is started for `command`: under the keeper when there
/// is one, with the same folder, and the whole environment set explicitly
/// (see [`environment`]).
fn prepared(keeper: Option<&PathBuf>, command: &Command, clear_env: bool) -> Command {
    let mut started = match keeper {
        Some(keeper) => {
            let mut wrapped = Command::new(keeper);
            wrapped
                .arg(super::keeper::KEEPER_ARG)
                .arg(command.get_program())
                .args(command.get_args());
            wrapped
        }
        None => {
            let mut plain = Command::new(command.get_program());
            plain.args(command.get_args());
            plain
        }
    };
    if let Some(dir) = command.get_current_dir() {
        started.current_dir(dir);
    }
    started
        .env_clear()
        .envs(environment(command, std::env::vars_os(), clear_env));
    started
}

/// The environment `command` gives its program: `inherited` (none when
/// `clear_env`) with the command's own settings and removals applied.
fn environment(
    command: &Command,
    inherited: impl Iterator<Item = (OsString, OsString)>,
    clear_env: bool,
) -> Vec<(OsString, OsString)> {
    let mut env: std::collections::BTreeMap<OsString, OsString> = if clear_env {
        Default::default()
    } else {
        inherited.collect()
    };
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => env.insert(name.to_owned(), value.to_owned()),
            None => env.remove(name),
        };
    }
    env.into_iter().collect()
}

/// A spawn request for the spawner thread.
struct Job {
    command: Command,
    /// The command runs under a keeper.
    keeper: bool,
    /// The Landlock rules it runs under, if any.
    confinement: Option<Arc<Confinement>>,
    processes: Processes,
    reply: oneshot::Sender<io::Result<Running>>,
}

/// The spawner thread's queue; the thread is started once and never ends,
/// as its children's death signal is tied to it.
fn spawner() -> Option<&'static mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (jobs, queue) = mpsc::channel::<Job>();
            let started = std::thread::Builder::new()
                .name("hearth-spawner".into())
                .spawn(move || {
                    for job in queue {
                        let started = start_confined(
                            job.command,
                            job.keeper,
                            job.confinement.as_deref(),
                            &job.processes,
                        );
                        // A caller that is gone gets its process back in
                        // the error, whose drop kills the group.
                        let _ = job.reply.send(started);
                    }
                });
            match started {
                Ok(_) => Some(jobs),
                Err(err) => {
                    tracing::error!("cannot start the process spawner thread: {err}");
                    None
                }
            }
        })
        .as_ref()
}

/// Makes the job's Landlock rule set, if it has a confinement, and starts
/// it; the rule set's descriptor is closed once the child has exec'd.
fn start_confined(
    mut command: Command,
    keeper: bool,
    confinement: Option<&Confinement>,
    processes: &Processes,
) -> io::Result<Running> {
    let ruleset = match confinement {
        Some(confinement) => {
            let rules = confinement.rules(KEEPER.get().map(PathBuf::as_path));
            Ruleset::make(&rules, confinement.network).map_err(io::Error::other)?
        }
        None => None,
    };
    if let Some(ruleset) = &ruleset {
        let fd = ruleset.fd();
        // SAFETY: `restrict` makes two system calls and does not allocate;
        // the descriptor stays open until `start` has returned.
        unsafe { command.pre_exec(move || confine::restrict(fd)) };
        // After `restrict`, which set "no new privileges": a command that
        // did not ask for the network gets no socket but local ones.
        if confinement.is_some_and(|confinement| !confinement.network)
            && confine::can_filter_sockets()
        {
            let filter = confine::socket_filter().map_err(io::Error::other)?;
            // SAFETY: `install` makes one system call on the compiled
            // program, a static made before the fork; it does not allocate.
            unsafe { command.pre_exec(move || filter.install()) };
        }
    }
    let started = start(command, keeper, processes);
    drop(ruleset);
    started
}

/// Spawns, registers the group and starts its reaper. Runs on the spawner
/// thread, so a caller that stops waiting cannot leave a process unlisted.
fn start(mut command: Command, keeper: bool, processes: &Processes) -> io::Result<Running> {
    let mut child = command.spawn()?;
    let pgid = child.id() as libc::pid_t;
    let group = Arc::new(Group {
        pgid,
        keeper,
        reaped: Mutex::new(false),
    });
    processes.insert(group.clone());
    let (exit_tx, exit) = oneshot::channel();
    let reaper_group = group.clone();
    let reaper_processes = processes.clone();
    let reaper = std::thread::Builder::new()
        .name("hearth-reaper".into())
        .spawn(move || {
            let exit = reap(&reaper_group);
            reaper_processes.remove(reaper_group.pgid);
            let _ = exit_tx.send(exit);
        });
    if let Err(err) = reaper {
        group.signal(libc::SIGKILL);
        processes.remove(pgid);
        return Err(err);
    }
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        // Both were set to piped above, so std always creates them.
        return Err(io::Error::other("the child's pipes are missing"));
    };
    Ok(Running {
        stdin: child.stdin.take(),
        stdout,
        stderr,
        kill_on_drop: KillOnDrop(group.clone()),
        group,
        exit,
    })
}

/// Waits for the leader to end, kills what it left in its group, reaps it.
fn reap(group: &Group) -> Option<Exit> {
    let ended = loop {
        // SAFETY: `info` is a plain C struct that waitid fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOWAIT;
        // SAFETY: `info` is ours to fill in; the id is our child's group.
        let result =
            unsafe { libc::waitid(libc::P_PID, group.pgid as libc::id_t, &mut info, flags) };
        if result == 0 {
            break true;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break false;
        }
    };
    let mut reaped = group.lock();
    if !ended {
        // Someone else reaped it: the id is no longer ours to signal.
        *reaped = true;
        return None;
    }
    // The leader is a zombie now, keeping the id reserved: whatever the
    // command left running in its group ends with it.
    // SAFETY: the group's leader is our unreaped child, so the id is ours.
    unsafe { libc::killpg(group.pgid, libc::SIGKILL) };
    let mut status = 0;
    let result = loop {
        // SAFETY: `status` is ours to fill in; the id is our child's.
        let result = unsafe { libc::waitpid(group.pgid, &mut status, 0) };
        if result != -1 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break result;
        }
    };
    *reaped = true;
    if result != group.pgid {
        None
    } else if libc::WIFEXITED(status) {
        Some(Exit::Code(libc::WEXITSTATUS(status)))
    } else if libc::WIFSIGNALED(status) {
        Some(Exit::Signal(libc::WTERMSIG(status)))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(script: &str) -> Command {
        let mut command = Command::new("bash");
        command.arg("-c").arg(script);
        command
    }

    /// A process is gone once it has no /proc entry or is a zombie that
    /// only waits for a parent (here possibly a non-reaping init) to reap it.
    fn gone(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    }

    async fn wait_gone(pid: u32) {
        for _ in 0..500 {
            if gone(pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("process {pid} still runs");
    }

    #[test]
    fn a_speaker_gets_only_what_its_command_sets_and_a_command_the_rest() {
        let mut command = Command::new("x");
        command.env("SET", "1").env_remove("GONE");
        let inherited = || {
            [("GONE", "k"), ("KEPT", "v"), ("SET", "0")]
                .into_iter()
                .map(|(name, value)| (OsString::from(name), OsString::from(value)))
        };
        let pairs = |env: Vec<(OsString, OsString)>| -> Vec<(String, String)> {
            env.into_iter()
                .map(|(n, v)| (n.into_string().unwrap(), v.into_string().unwrap()))
                .collect()
        };
        assert_eq!(
            pairs(environment(&command, inherited(), true)),
            [("SET".to_string(), "1".to_string())]
        );
        assert_eq!(
            pairs(environment(&command, inherited(), false)),
            [
                ("KEPT".to_string(), "v".to_string()),
                ("SET".to_string(), "1".to_string())
            ]
        );
        let started = prepared(Some(&PathBuf::from("/keeper")), &command, true);
        assert_eq!(started.get_program(), "/keeper");
        let envs: Vec<_> = started.get_envs().collect();
        assert_eq!(envs.len(), 1, "{envs:?}");
    }

    #[tokio::test]
    async fn the_exit_code_is_reported_and_the_group_unlisted() {
        let processes = Processes::new();
        let mut running = processes.spawn(bash("exit 3")).await.unwrap();
        let exit = (&mut running.exit).await;
        assert_eq!(exit.unwrap(), Some(Exit::Code(3)));
        assert_eq!(processes.live(), 0);
    }

    #[tokio::test]
    async fn dropping_the_running_command_kills_its_whole_group() {
        use std::io::BufRead;
        let processes = Processes::new();
        let mut running = processes
            .spawn(bash("sleep 1000 & echo $!; wait"))
            .await
            .unwrap();
        let leader = running.group.id();
        let mut line = String::new();
        std::io::BufReader::new(&mut running.stdout)
            .read_line(&mut line)
            .unwrap();
        let child: u32 = line.trim().parse().unwrap();
        drop(running);
        wait_gone(leader).await;
        wait_gone(child).await;
    }

    #[tokio::test]
    async fn kill_all_ends_every_live_group() {
        let processes = Processes::new();
        let mut first = processes.spawn(bash("sleep 1000")).await.unwrap();
        let second = processes.spawn(bash("sleep 1000")).await.unwrap();
        let ids = [first.group.id(), second.group.id()];
        assert_eq!(processes.live(), 2);
        processes.kill_all(Duration::from_secs(30)).await;
        assert_eq!(processes.live(), 0);
        for id in ids {
            wait_gone(id).await;
        }
        let exit = (&mut first.exit).await.unwrap();
        assert_eq!(exit, Some(Exit::Signal(libc::SIGKILL)));
        drop(second);
    }
}
