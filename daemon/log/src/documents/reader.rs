//! The PDF reader: hearthd's own binary in a hidden mode
//! (`hearthd --document-reader PARENT_PID`), one process per document, so
//! that a PDF that needs gigabytes or minutes to parse costs a process that
//! can be limited and killed, never the daemon.
//!
//! - hearthd writes the file's bytes to the reader's stdin and reads its
//!   pages back from its stdout in small frames (`Frame`); at most what a
//!   document may hold is read back ([`MAX_ANSWER_BYTES`]), and a reading
//!   that takes longer than `READ_TIMEOUT` is killed.
//! - The reader limits itself before it reads the file: its data at
//!   [`MEMORY_MB`] (`RLIMIT_DATA`, its address space a little more), its
//!   processor time at [`CPU_SECS`] (`RLIMIT_CPU`), no core dump, no file
//!   written, no child process. Once it holds the bytes it can open nothing
//!   (`RLIMIT_NOFILE`: no file, no socket), and where the kernel has
//!   Landlock it reaches no path and no TCP port either. It runs with an
//!   empty environment.
//! - It dies with hearthd (`PR_SET_PDEATHSIG`), and hearthd kills it when
//!   the reading is abandoned (a stop, a closed connection).
//! - A reader that passes its memory limit aborts (an allocation fails),
//!   one that passes its processor time gets `SIGXCPU`: the document is
//!   refused with the limit it passed, and the daemon goes on.
//!
//! At most [`MAX_READERS`] readers run at once; more documents wait.

use super::{pdf_pages, DocumentError, MAX_PAGES, MAX_TEXT_BYTES, READ_TIMEOUT};
use hearth_protocol::media::MAX_MEDIA_BYTES;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// The argument that starts hearthd as a document reader.
pub const READER_ARG: &str = "--document-reader";

/// The most memory a reading may use, in MB (`RLIMIT_DATA`).
pub const MEMORY_MB: u64 = 512;

/// The most processor time a reading may use, in seconds (`RLIMIT_CPU`).
pub const CPU_SECS: u64 = 20;

/// The most readers at once: each may take [`MEMORY_MB`].
pub const MAX_READERS: usize = 2;

/// The most a reader's answer may be: the text a document may hold, the
/// frames around its pages, and room for an error.
pub const MAX_ANSWER_BYTES: usize = MAX_TEXT_BYTES + MAX_PAGES * 5 + 64 * 1024;

/// What of the reader's stderr is kept, for the log.
const MAX_STDERR_BYTES: usize = 4096;

/// The address space allowed besides the data: the binary, its libraries
/// and stacks are mapped there too.
const ADDRESS_SPACE_SLACK_MB: u64 = 1024;

/// hearthd's own binary, which takes [`READER_ARG`]; set once at start.
static READER: OnceLock<PathBuf> = OnceLock::new();

/// The readers that may run now.
static READERS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_READERS);

/// Reads PDFs with `program` (hearthd's own binary). Without it a PDF is
/// refused: it is never parsed inside the daemon.
pub fn use_reader(program: PathBuf) {
    let _ = READER.set(program);
}

/// One frame of the reader's answer: a tag byte, then for a page a
/// little-endian `u32` length and the page's UTF-8 text, for an error a
/// code byte, the length and the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Page = b'P' as isize,
    Error = b'E' as isize,
}

// The error codes of an error frame.
const ENCRYPTED: u8 = 1;
const MALFORMED: u8 = 2;
const TOO_MANY_PAGES: u8 = 3;
const TOO_MUCH_TEXT: u8 = 4;
const TOO_LARGE: u8 = 5;

/// The pages of the PDF `bytes`, read by a reader process. Waits for a
/// free reader first; killing is the answer to every limit.
pub async fn read_pdf(bytes: Vec<u8>) -> Result<Vec<String>, DocumentError> {
    if bytes.len() > MAX_MEDIA_BYTES {
        return Err(DocumentError::TooLarge(bytes.len()));
    }
    let program = READER.get().ok_or_else(|| {
        DocumentError::ReaderFailed("hearthd could not find its own binary to start it".into())
    })?;
    // The semaphore is never closed, so a permit always comes.
    let _permit = READERS
        .acquire()
        .await
        .map_err(|_| DocumentError::ReaderFailed("the daemon is stopping".to_string()))?;
    let mut child = tokio::process::Command::new(program)
        .arg(READER_ARG)
        .arg(std::process::id().to_string())
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Dropped, as when the daemon stops mid-reading: killed.
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| DocumentError::ReaderFailed(format!("cannot start it: {err}")))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(DocumentError::ReaderFailed("its pipes are missing".into()));
    };
    // Feeding, reading back and the reader's end, all within the time.
    let reading = async {
        let feed = async {
            // A reader that dies early closes its stdin: its ending says why.
            let _ = stdin.write_all(&bytes).await;
            drop(stdin);
        };
        let (_, answer, said) = tokio::join!(
            feed,
            read_bounded(stdout, MAX_ANSWER_BYTES),
            read_bounded(stderr, MAX_STDERR_BYTES)
        );
        (answer, said, child.wait().await)
    };
    let Ok(((answer, too_long), said, status)) = tokio::time::timeout(READ_TIMEOUT, reading).await
    else {
        let _ = child.kill().await;
        return Err(DocumentError::TimedOut);
    };
    let status =
        status.map_err(|err| DocumentError::ReaderFailed(format!("cannot wait for it: {err}")))?;
    let said = String::from_utf8_lossy(&said.0).trim().to_string();
    if !said.is_empty() {
        tracing::debug!("the PDF reader said: {said}");
    }
    match ending(&status, &said) {
        Some(err) => Err(err),
        None if too_long => Err(DocumentError::TooMuchText),
        None => decode(&answer),
    }
}

/// Reads `from` to its end, keeping at most `limit` bytes; whether there
/// was more. The rest is read and dropped, so the writer never blocks on
/// a full pipe.
async fn read_bounded(mut from: impl AsyncRead + Unpin, limit: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut more = false;
    let mut buffer = vec![0; 64 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return (kept, more),
            Ok(read) => {
                let room = limit - kept.len();
                kept.extend_from_slice(&buffer[..read.min(room)]);
                more |= read > room;
            }
        }
    }
}

/// The error a reader's ending means, if it did not end well.
fn ending(status: &std::process::ExitStatus, said: &str) -> Option<DocumentError> {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        // An allocation past the data limit aborts the process.
        Some(libc::SIGABRT) => return Some(DocumentError::TooMuchMemory),
        // The processor-time limit sends SIGXCPU, which ends the reader.
        Some(libc::SIGXCPU) => return Some(DocumentError::TooMuchProcessorTime),
        // Killed by no one in hearthd (a reader past its time is answered
        // before its ending is read): the kernel's out-of-memory killer.
        Some(libc::SIGKILL) => return Some(DocumentError::TooMuchMemory),
        // The stack grown past the address space left.
        Some(libc::SIGSEGV) if said.is_empty() => return Some(DocumentError::TooMuchMemory),
        Some(signal) => {
            return Some(DocumentError::ReaderFailed(format!(
                "it was stopped by signal {signal}"
            )))
        }
        None => {}
    }
    if said.contains("memory allocation") {
        return Some(DocumentError::TooMuchMemory);
    }
    (!status.success()).then(|| {
        let why = said.lines().last().unwrap_or("no reason given");
        DocumentError::ReaderFailed(format!("{status} ({why})"))
    })
}

/// The pages (or the error) a reader's answer holds.
fn decode(mut answer: &[u8]) -> Result<Vec<String>, DocumentError> {
    let cut = || DocumentError::ReaderFailed("its answer was cut short".to_string());
    let mut pages = Vec::new();
    while let Some((&tag, rest)) = answer.split_first() {
        let (code, rest) = if tag == Frame::Error as u8 {
            rest.split_first()
                .map(|(code, rest)| (Some(*code), rest))
                .ok_or_else(cut)?
        } else if tag == Frame::Page as u8 {
            (None, rest)
        } else {
            return Err(DocumentError::ReaderFailed(format!(
                "its answer has an unknown frame {tag}"
            )));
        };
        let (length, rest) = rest.split_first_chunk::<4>().ok_or_else(cut)?;
        let length = u32::from_le_bytes(*length) as usize;
        if rest.len() < length {
            return Err(cut());
        }
        let text = String::from_utf8_lossy(&rest[..length]).into_owned();
        answer = &rest[length..];
        match code {
            None => pages.push(text),
            Some(code) => return Err(error_of(code, text)),
        }
    }
    if pages.is_empty() {
        return Err(DocumentError::ReaderFailed(
            "it answered nothing".to_string(),
        ));
    }
    Ok(pages)
}

fn error_of(code: u8, message: String) -> DocumentError {
    match code {
        ENCRYPTED => DocumentError::Encrypted,
        TOO_MANY_PAGES => DocumentError::TooManyPages(message.parse().unwrap_or(MAX_PAGES + 1)),
        TOO_MUCH_TEXT => DocumentError::TooMuchText,
        TOO_LARGE => DocumentError::TooLarge(message.parse().unwrap_or(MAX_MEDIA_BYTES + 1)),
        MALFORMED => DocumentError::Malformed(message),
        _ => DocumentError::ReaderFailed(message),
    }
}

/// The frames that say `read`.
fn encode(read: &Result<Vec<String>, DocumentError>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut frame = |tag: Frame, code: Option<u8>, text: &str| {
        out.push(tag as u8);
        out.extend(code);
        // A page is at most MAX_TEXT_BYTES, far below u32::MAX.
        out.extend(u32::try_from(text.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend(text.as_bytes());
    };
    match read {
        Ok(pages) => pages.iter().for_each(|page| frame(Frame::Page, None, page)),
        Err(err) => {
            let (code, message) = match err {
                DocumentError::Encrypted => (ENCRYPTED, String::new()),
                DocumentError::Malformed(why) => (MALFORMED, why.clone()),
                DocumentError::TooManyPages(pages) => (TOO_MANY_PAGES, pages.to_string()),
                DocumentError::TooMuchText => (TOO_MUCH_TEXT, String::new()),
                DocumentError::TooLarge(bytes) => (TOO_LARGE, bytes.to_string()),
                other => (0, other.to_string()),
            };
            frame(Frame::Error, Some(code), &message);
        }
    }
    out
}

/// Runs the reader: `args` hold hearthd's process id. Never returns.
pub fn run(args: Vec<OsString>) -> ! {
    match serve(args) {
        Ok(()) => std::process::exit(0),
        Err(message) => {
            eprintln!("hearthd document reader: {message}");
            std::process::exit(2)
        }
    }
}

fn serve(args: Vec<OsString>) -> Result<(), String> {
    let parent: libc::pid_t = args
        .first()
        .and_then(|pid| pid.to_str()?.parse().ok())
        .ok_or("no parent process id given")?;
    // SAFETY: prctl and getppid have no memory effects.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            return Err("hearthd is gone".to_string());
        }
        // No core dump of a reading that passed its limits, and no other
        // process of the user may look into it.
        libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong);
    }
    let memory = MEMORY_MB * 1024 * 1024;
    limit(libc::RLIMIT_DATA, memory, memory)?;
    let space = memory + ADDRESS_SPACE_SLACK_MB * 1024 * 1024;
    limit(libc::RLIMIT_AS, space, space)?;
    limit(libc::RLIMIT_CPU, CPU_SECS, CPU_SECS + 1)?;
    limit(libc::RLIMIT_CORE, 0, 0)?;
    limit(libc::RLIMIT_FSIZE, 0, 0)?;
    limit(libc::RLIMIT_NPROC, 0, 0)?;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_MEDIA_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read the document: {err}"))?;
    confine()?;
    // A panic in the parser is a document it cannot read, said in the
    // answer; its message is not printed.
    std::panic::set_hook(Box::new(|_| {}));
    let read = if bytes.len() > MAX_MEDIA_BYTES {
        Err(DocumentError::TooLarge(bytes.len()))
    } else {
        std::panic::catch_unwind(|| pdf_pages(&bytes)).unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|why| why.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the parser failed".to_string());
            Err(DocumentError::Malformed(why))
        })
    };
    drop(bytes);
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&encode(&read))
        .and_then(|()| stdout.flush())
        .map_err(|err| format!("cannot answer: {err}"))
}

#[cfg(target_env = "gnu")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type Resource = libc::c_int;

/// Sets the soft and hard limit of `resource`, never above the hard limit
/// the reader was started with (a limit may only be lowered).
fn limit(resource: Resource, soft: u64, hard: u64) -> Result<(), String> {
    // SAFETY: getrlimit and setrlimit fill in and read a plain C struct.
    let mut current: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `current` is ours to fill in.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        current.rlim_max = libc::RLIM_INFINITY;
    }
    let value = libc::rlimit {
        rlim_cur: soft.min(current.rlim_max),
        rlim_max: hard.min(current.rlim_max),
    };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(resource, &value) } != 0 {
        return Err(format!(
            "cannot set limit {resource}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Once the bytes are in: no file and no socket can be opened (no new
/// descriptor at all), and where the kernel has Landlock no path is
/// reached (no file read, written, made or removed, no program run), no
/// TCP port bound or connected to (ABI 4), no process signalled or
/// abstract socket reached outside the reader (ABI 6).
fn confine() -> Result<(), String> {
    use crate::confine::{restrict, Ruleset};
    // No rules and no network: every file access, TCP port, outside signal
    // and abstract socket Landlock handles is refused (the rule set the
    // shell's commands get, with nothing allowed).
    match Ruleset::make(&[], false) {
        Ok(Some(ruleset)) => {
            restrict(ruleset.fd()).map_err(|err| format!("cannot confine itself: {err}"))?
        }
        Ok(None) => {}
        Err(err) => return Err(err.to_string()),
    }
    // Descriptors 0, 1 and 2 stay open; a fourth cannot be made.
    limit(libc::RLIMIT_NOFILE, 3, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_errors_travel_in_frames() {
        let pages = vec!["one".to_string(), String::new(), "drei é".to_string()];
        assert_eq!(decode(&encode(&Ok(pages.clone()))), Ok(pages));
        for err in [
            DocumentError::Encrypted,
            DocumentError::Malformed("page 2: bad".into()),
            DocumentError::TooManyPages(2001),
            DocumentError::TooMuchText,
            DocumentError::TooLarge(30_000_000),
        ] {
            assert_eq!(decode(&encode(&Err(err.clone()))), Err(err));
        }
    }

    #[test]
    fn a_cut_or_empty_answer_is_a_failed_reading() {
        let whole = encode(&Ok(vec!["a page of text".to_string()]));
        for cut in [&whole[..3], &whole[..whole.len() - 1], &b""[..], &b"X"[..]] {
            assert!(
                matches!(decode(cut), Err(DocumentError::ReaderFailed(_))),
                "{cut:?}"
            );
        }
    }

    #[test]
    fn an_aborted_reader_passed_its_memory() {
        use std::os::unix::process::ExitStatusExt;
        let aborted = std::process::ExitStatus::from_raw(libc::SIGABRT);
        assert_eq!(ending(&aborted, ""), Some(DocumentError::TooMuchMemory));
        let cpu = std::process::ExitStatus::from_raw(libc::SIGXCPU);
        assert_eq!(ending(&cpu, ""), Some(DocumentError::TooMuchProcessorTime));
        let fine = std::process::ExitStatus::from_raw(0);
        assert_eq!(ending(&fine, ""), None);
    }
}
