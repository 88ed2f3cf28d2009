//! Opening a file beneath the working folder in one step, and only a plain
//! file.
//!
//! `folder.rs` decides by name and by the system's resolution whether a path
//! is inside the folder, but a process can swap a folder for a symlink
//! between that check and the open. Here the open itself is confined:
//! `openat2` with `RESOLVE_BENEATH` resolves the path from the folder and
//! refuses any step out of it, symlinks included, at the moment of the
//! open. (On kernels before 5.6, without `openat2`, the last component at
//! least is opened without following a symlink.)
//!
//! What is opened must be a regular file with one link: a named pipe or a
//! device would block or read forever, and a hard link in the folder can
//! be another name of a file outside it, which no path check can see.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What a file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Writing, created when missing; an existing file is emptied only
    /// after it was found to be a plain file.
    Write,
}

/// Why a file could not be opened beneath the folder.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("leads outside the working folder")]
    Outside,
    #[error("is not a regular file (a named pipe, device or socket); only plain files can be read or written")]
    NotRegular,
    #[error("has other hard links; a hard link can be another name of a file outside the working folder, so it is refused")]
    HardLinked,
    #[error("is a folder")]
    Folder,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Opens `relative` (a path inside `root`, without `..`) for `access`.
pub fn open(root: &Path, relative: &Path, access: Access) -> Result<File, OpenError> {
    let fd = open_fd(root, relative, access)?;
    let file = File::from(fd);
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(OpenError::Folder);
    }
    if !meta.file_type().is_file() {
        return Err(OpenError::NotRegular);
    }
    if meta.nlink() > 1 {
        return Err(OpenError::HardLinked);
    }
    if access == Access::Write {
        file.set_len(0)?;
    }
    Ok(file)
}

fn open_fd(root: &Path, relative: &Path, access: Access) -> Result<OwnedFd, OpenError> {
    let flags = libc::O_CLOEXEC
        | libc::O_NOCTTY
        // A named pipe must not block the open; cleared below for files.
        | libc::O_NONBLOCK
        | match access {
            Access::Read => libc::O_RDONLY,
            Access::Write => libc::O_WRONLY | libc::O_CREAT,
        };
    let relative = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    let path = CString::new(relative.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"))?;
    let root_path = CString::new(root.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"))?;
    // SAFETY: a plain open of a path we own as a C string.
    let root_fd = unsafe {
        libc::open(
            root_path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if root_fd < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: `root_fd` was just opened and is owned here alone.
    let root_fd = unsafe { OwnedFd::from_raw_fd(root_fd) };
    // SAFETY: open_how is a plain C struct; all-zero is its empty value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = if access == Access::Write { 0o666 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    use std::os::fd::AsRawFd;
    // SAFETY: openat2 reads `how` (of the size given) and the path.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root_fd.as_raw_fd(),
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    } as libc::c_int;
    let fd = if fd >= 0 {
        fd
    } else {
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EXDEV) => return Err(OpenError::Outside),
            Some(libc::ENXIO) => return Err(OpenError::NotRegular),
            Some(libc::ENOSYS) => {
                // No openat2: the path was checked by name; at least the
                // last step follows no symlink.
                let full = CString::new(root.join(relative).as_os_str().as_bytes())
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
                // SAFETY: a plain open of a path we own as a C string.
                let fd = unsafe { libc::open(full.as_ptr(), flags | libc::O_NOFOLLOW, 0o666) };
                if fd < 0 {
                    let err = io::Error::last_os_error();
                    return Err(match err.raw_os_error() {
                        Some(libc::ELOOP) => OpenError::Outside,
                        Some(libc::ENXIO) => OpenError::NotRegular,
                        _ => err.into(),
                    });
                }
                fd
            }
            _ => return Err(err.into()),
        }
    };
    // SAFETY: `fd` was just opened and is owned here alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // Back to blocking reads and writes (plain files never block anyway).
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let current = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if current >= 0 {
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, current & !libc::O_NONBLOCK);
        }
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_plain_file_is_read_and_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = open(dir.path(), Path::new("a.txt"), Access::Write).unwrap();
        file.write_all(b"hello").unwrap();
        let mut text = String::new();
        open(dir.path(), Path::new("a.txt"), Access::Read)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "hello");
    }

    #[test]
    fn a_named_pipe_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = CString::new(dir.path().join("pipe").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo of a path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        for access in [Access::Read, Access::Write] {
            let refused = open(dir.path(), Path::new("pipe"), access);
            assert!(matches!(refused, Err(OpenError::NotRegular)), "{refused:?}");
        }
    }

    #[test]
    fn a_hard_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::fs::hard_link(outside.path().join("secret"), dir.path().join("link")).unwrap();
        for access in [Access::Read, Access::Write] {
            let refused = open(dir.path(), Path::new("link"), access);
            assert!(matches!(refused, Err(OpenError::HardLinked)), "{refused:?}");
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
    }

    #[test]
    fn a_symlink_out_is_refused_at_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("sub")).unwrap();
        let refused = open(dir.path(), Path::new("sub/secret"), Access::Read);
        assert!(matches!(refused, Err(OpenError::Outside)), "{refused:?}");
        let inside = dir.path().join("real");
        std::fs::create_dir(&inside).unwrap();
        std::fs::write(inside.join("f"), "ok").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
        assert!(open(dir.path(), Path::new("alias/f"), Access::Read).is_ok());
    }
}
