//! The seccomp filter that keeps a command that did not ask for the network
//! off it where Landlock cannot: Landlock denies TCP connect and bind, but
//! not UDP (a name lookup, `nc -u`, words sent out inside DNS queries).
//!
//! - The filter allows `socket()` only for local families: Unix sockets
//!   (which ordinary programs need) and netlink (the kernel's own, which
//!   `ip` and glibc's address lookups use). Every other family — the
//!   internet's (`AF_INET`, `AF_INET6`), raw packets (`AF_PACKET`), and
//!   whatever a later kernel adds — fails with EACCES, as Landlock's TCP
//!   denial does, so the command sees "Permission denied".
//! - `io_uring_setup` fails too: io_uring can create sockets without the
//!   `socket()` call.
//! - A filter is tied to the architecture it was compiled for; a system
//!   call made through another one (a 32-bit call on x86_64) kills the
//!   command rather than pass unchecked, and on x86_64 the x32 numbers of
//!   the denied calls are denied as well.
//! - The program is compiled once by `seccompiler` (a maintained crate, not
//!   hand-written BPF); the child installs it with one system call between
//!   fork and exec, after Landlock's `restrict` (which set "no new
//!   privileges", as seccomp needs), and it holds for everything the
//!   command starts.
//! - A kernel without seccomp filters is said in `hearth status`; there
//!   the shell cannot be kept from UDP, so every call taints its turn. A
//!   filter that cannot be compiled or installed is an error: the command
//!   does not run without it.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::io;
use std::sync::OnceLock;

/// `SECCOMP_SET_MODE_FILTER`.
const SET_MODE_FILTER: libc::c_uint = 1;
/// `SECCOMP_GET_ACTION_AVAIL`.
const GET_ACTION_AVAIL: libc::c_uint = 2;
/// `SECCOMP_RET_ERRNO`: the action the filter takes.
const RET_ERRNO: u32 = 0x0005_0000;
/// The bit that marks an x32 system call on x86_64 (`__X32_SYSCALL_BIT`).
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// The socket families a command without the network may still open.
const LOCAL_FAMILIES: [libc::c_int; 2] = [libc::AF_UNIX, libc::AF_NETLINK];

/// Whether this kernel can filter system calls, probed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    Available,
    /// No seccomp filters, and why.
    Unavailable(String),
}

/// The kernel's seccomp, probed once per process: whether a filter may
/// return an error number (filters and that action both exist).
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        let action = RET_ERRNO;
        // SAFETY: the call reads one u32 and writes nothing.
        let result = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                GET_ACTION_AVAIL,
                0 as libc::c_uint,
                &action as *const u32,
            )
        };
        if result == 0 {
            return Support::Available;
        }
        let err = io::Error::last_os_error();
        Support::Unavailable(match err.raw_os_error() {
            Some(libc::ENOSYS) => "the kernel has no seccomp".to_string(),
            Some(libc::EINVAL) => "the kernel has no seccomp filters".to_string(),
            _ => format!("seccomp cannot be used: {err}"),
        })
    })
}

/// Why the filter could not be made (the command then does not run).
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot make the shell's seccomp filter for {arch}: {message}")]
pub struct FilterError {
    arch: &'static str,
    message: String,
}

/// The compiled filter, ready for a child to install.
pub struct Filter {
    program: BpfProgram,
}

/// `struct sock_fprog`.
#[repr(C)]
struct Program {
    len: libc::c_ushort,
    filter: *const seccompiler::sock_filter,
}

/// The filter for this architecture, compiled once.
pub fn filter() -> Result<&'static Filter, FilterError> {
    static FILTER: OnceLock<Result<Filter, FilterError>> = OnceLock::new();
    FILTER
        .get_or_init(|| {
            let arch = std::env::consts::ARCH;
            let failed = |message: String| FilterError { arch, message };
            let target = TargetArch::try_from(arch).map_err(|err| failed(err.to_string()))?;
            let program = compile(target).map_err(failed)?;
            u16::try_from(program.len())
                .map_err(|_| failed(format!("{} instructions", program.len())))?;
            Ok(Filter { program })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The rules: `socket()` of a family not in [`LOCAL_FAMILIES`], and
/// `io_uring_setup`, fail with EACCES; every other call is allowed.
fn compile(target: TargetArch) -> Result<BpfProgram, String> {
    let failed = |err: seccompiler::BackendError| err.to_string();
    let not_local = LOCAL_FAMILIES
        .iter()
        .map(|family| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *family as u64)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed)?;
    let socket = vec![SeccompRule::new(not_local).map_err(failed)?];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket.clone());
    // No conditions: the call is denied whatever its arguments.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(X32_BIT | libc::SYS_socket, socket);
        rules.insert(X32_BIT | libc::SYS_io_uring_setup, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        target,
    )
    .map_err(failed)?;
    BpfProgram::try_from(filter).map_err(failed)
}

impl Filter {
    /// In the child between fork and exec, after Landlock's `restrict`:
    /// installs the filter on this process and all it starts.
    /// Async-signal-safe: one system call on memory made before the fork.
    pub fn install(&self) -> io::Result<()> {
        let program = Program {
            // Checked to fit when the filter was compiled.
            len: self.program.len() as libc::c_ushort,
            filter: self.program.as_ptr(),
        };
        // SAFETY: `program` points at the compiled instructions, which live
        // as long as the process (a static); the kernel copies them.
        let result = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                SET_MODE_FILTER,
                0 as libc::c_uint,
                &program as *const Program,
            )
        };
        if result != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_every_architecture_hearth_runs_on() {
        for arch in ["x86_64", "aarch64"] {
            let target = TargetArch::try_from(arch).unwrap();
            let program = compile(target).unwrap();
            assert!(!program.is_empty() && program.len() < 200, "{arch}");
        }
        assert!(filter().is_ok());
    }

    #[test]
    fn a_filtered_process_keeps_local_sockets_only_and_has_no_io_uring() {
        use std::os::unix::process::CommandExt;
        if let Support::Unavailable(why) = support() {
            println!("skipped: {why}");
            return;
        }
        let filter = filter().unwrap();
        let refused = |result: i64| {
            result == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EACCES)
        };
        let mut command = std::process::Command::new("true");
        // SAFETY: the hook makes system calls only; each failure is told
        // by its own error number.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                filter.install()?;
                for family in LOCAL_FAMILIES {
                    if libc::socket(family, libc::SOCK_DGRAM, 0) < 0 {
                        return Err(io::Error::from_raw_os_error(libc::ENOTSOCK));
                    }
                }
                for family in [libc::AF_INET, libc::AF_INET6, libc::AF_PACKET] {
                    if !refused(libc::socket(family, libc::SOCK_DGRAM, 0) as i64) {
                        return Err(io::Error::from_raw_os_error(libc::EPROTO));
                    }
                }
                // `struct io_uring_params` is 120 bytes, all zero here.
                let mut params = [0u64; 15];
                let ring = libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr());
                if !refused(ring) {
                    return Err(io::Error::from_raw_os_error(libc::EBADMSG));
                }
                Ok(())
            })
        };
        let status = command.status();
        assert!(status.as_ref().is_ok_and(|s| s.success()), "{status:?}");
    }
}
