//! `read_file`, `write_file`, `edit_file`, `list_dir`: files inside the
//! agent's working folder (see `folder.rs` for what "inside" means).
//!
//! Each call runs on a blocking thread. Results stay small enough for the
//! log's clip: a long read stops at a line and says how to read on.

use super::beneath::{self, Access, OpenError};
use super::folder::{Folder, PathError};
use super::tool::{text_of, Acts, Call, Tool};
use super::Outcome;
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

/// Lines a read shows when it names no limit.
const DEFAULT_LINES: u64 = 2000;
/// Bytes of numbered lines one read returns at most; under the log's clip
/// (30,000 characters), so the model sees where to go on rather than a cut.
const READ_BUDGET: usize = 24_000;
/// Characters of one line shown; the rest is counted.
const LINE_CHARS: usize = 2000;
/// Bytes of one line kept to show it: [`LINE_CHARS`] characters of UTF-8.
const LINE_KEPT: usize = LINE_CHARS * 4;
/// Bytes one read goes through at most, lines skipped to `offset` and lines
/// counted after the last shown included: a file of one 2 GB line costs a
/// bounded read and bounded memory, and the result says where it stopped.
pub const SCAN_BYTES: u64 = 32 * 1024 * 1024;
/// Entries one listing shows.
const LIST_ENTRIES: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("`{0}` does not exist")]
    NotFound(String),
    #[error("`{0}` is a folder; use list_dir")]
    IsFolder(String),
    #[error("`{0}` is not a folder")]
    NotFolder(String),
    #[error(
        "`{path}` is a binary file ({bytes} bytes); inspect it with the shell (e.g. xxd, file)"
    )]
    Binary { path: String, bytes: u64 },
    #[error("`{0}` is not UTF-8 text; edit it with the shell")]
    NotText(String),
    #[error("`{path}` has {lines} lines; offset {offset} is past its end")]
    PastEnd {
        path: String,
        lines: u64,
        offset: u64,
    },
    #[error("line {offset} of `{path}` is past the first {mib} MiB, as far as one read goes ({lines} lines there); read it with the shell (e.g. `sed -n '{offset},+50p'`)")]
    PastScan {
        path: String,
        lines: u64,
        offset: u64,
        mib: u64,
    },
    #[error(
        "`old_string` is empty; give the exact text to replace, or use write_file for a whole file"
    )]
    EmptyOld,
    #[error("`old_string` was not found in `{0}`; read the file and copy the text exactly, whitespace included")]
    NoMatch(String),
    #[error("`old_string` occurs {count} times in `{path}`; include more of the surrounding text so it matches once")]
    NotUnique { path: String, count: usize },
    #[error("`{0}` is not a regular file (a named pipe, device or socket); only plain files can be read or written")]
    NotRegular(String),
    #[error("`{0}` has other hard links; a hard link can be another name of a file outside the working folder, so it is refused")]
    HardLinked(String),
    #[error("cannot {what} `{path}`: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: io::Error,
    },
}

fn io_error<'a>(what: &'static str, path: &'a str) -> impl FnOnce(io::Error) -> FileError + 'a {
    move |source| match source.kind() {
        io::ErrorKind::NotFound => FileError::NotFound(path.to_string()),
        _ => FileError::Io {
            what,
            path: path.to_string(),
            source,
        },
    }
}

/// Opens a resolved path beneath the folder in one step: a plain file
/// with one link, never through a symlink swapped in since the check.
fn open_beneath(
    folder: &Folder,
    target: &Path,
    shown: &str,
    what: &'static str,
    access: Access,
) -> Result<fs::File, FileError> {
    let relative = target
        .strip_prefix(folder.root())
        .map_err(|_| FileError::Path(PathError::Outside(shown.to_string())))?;
    beneath::open(folder.root(), relative, access).map_err(|err| match err {
        OpenError::Outside => FileError::Path(PathError::SymlinkOut(shown.to_string())),
        OpenError::Folder => FileError::IsFolder(shown.to_string()),
        OpenError::NotRegular => FileError::NotRegular(shown.to_string()),
        OpenError::HardLinked => FileError::HardLinked(shown.to_string()),
        OpenError::Io(source) => io_error(what, shown)(source),
    })
}

pub fn specs() -> Vec<ToolSpec> {
    let spec = |name: &str, description: &str, parameters: Value| ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    };
    vec![
        spec(
            "read_file",
            "Reads a text file in your working folder, with line numbers. Paths are relative to \
the folder. Long files: read on with `offset` (the first line, from 1) and `limit` (lines).",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 1},
                    "limit": {"type": "integer", "minimum": 1}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        ),
        spec(
            "write_file",
            "Writes a whole file in your working folder, creating it and its parent folders, \
or replacing what it held.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        ),
        spec(
            "edit_file",
            "Replaces one exact occurrence of `old_string` with `new_string` in a file in your \
working folder. `old_string` must match exactly once, whitespace included.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"}
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        ),
        spec(
            "list_dir",
            "Lists a folder inside your working folder (the folder itself by default): \
sub-folders end with `/`, files show their size.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"}
                },
                "required": [],
                "additionalProperties": false
            }),
        ),
    ]
}

/// Runs one of the file tools; arguments were checked against [`specs`].
pub async fn call(folder: Arc<Folder>, name: &str, arguments: Value) -> Outcome {
    let name = name.to_string();
    let work = move || {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("");
        let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
        match name.as_str() {
            "read_file" => read(&folder, text("path"), number("offset"), number("limit")),
            "write_file" => write(&folder, text("path"), text("content")),
            "edit_file" => edit(
                &folder,
                text("path"),
                text("old_string"),
                text("new_string"),
            ),
            "list_dir" => list(
                &folder,
                arguments.get("path").and_then(Value::as_str).unwrap_or("."),
            ),
            other => Ok(format!("`{other}` is not a file tool")),
        }
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(output)) => Outcome::ok(output),
        Ok(Err(err)) => Outcome::error(err.to_string()),
        Err(err) => Outcome::error(format!("the file tool failed: {err}")),
    }
}

/// Numbered lines from `offset` (from 1), at most `limit` of them.
pub fn read(
    folder: &Folder,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<String, FileError> {
    read_within(folder, path, offset, limit, SCAN_BYTES)
}

/// What `read_file` showed of a file, and when the file last changed.
#[derive(Debug)]
pub struct Shown {
    /// The numbered lines, or what is wrong with the offset.
    pub text: String,
    /// The file as the folder shows it (relative to it).
    pub path: String,
    /// The file's ctime, read after the read, in nanoseconds since the Unix
    /// epoch: the last change of its content or of its name, links or
    /// mode, which the kernel stamps and no command can set.
    pub changed: i64,
}

/// [`read`], and when the file last changed (`exposure.rs` asks whether
/// outside words may have been written to it then).
pub fn read_changed(
    folder: &Folder,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<Shown, FileError> {
    read_changed_within(folder, path, offset, limit, SCAN_BYTES)
}

/// [`read`], going through at most `scan` bytes of the file.
fn read_within(
    folder: &Folder,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
    scan: u64,
) -> Result<String, FileError> {
    read_changed_within(folder, path, offset, limit, scan).map(|shown| shown.text)
}

fn read_changed_within(
    folder: &Folder,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
    scan: u64,
) -> Result<Shown, FileError> {
    let target = folder.resolve(path)?;
    let shown_path = folder.show(&target);
    let file = open_beneath(folder, &target, &shown_path, "open", Access::Read)?;
    let meta = file.metadata().map_err(io_error("read", &shown_path))?;
    if meta.is_dir() {
        return Err(FileError::IsFolder(shown_path));
    }
    let mut reader = BufReader::new(file);
    let start = reader.fill_buf().map_err(io_error("read", &shown_path))?;
    if start[..start.len().min(8192)].contains(&0) {
        return Err(FileError::Binary {
            path: shown_path,
            bytes: meta.len(),
        });
    }
    let first = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(DEFAULT_LINES).max(1);
    let mut lines = Lines {
        reader,
        left: scan,
        kept: Vec::new(),
    };
    let mut out = String::new();
    let (mut number, mut last_shown, mut stopped_early) = (0u64, None, false);
    loop {
        let showing = number + 1 >= first
            && last_shown.is_none_or(|last| last + 1 - first < limit)
            && !stopped_early;
        let keep = if showing { LINE_KEPT } else { 0 };
        let Some(line) = lines.next(keep).map_err(io_error("read", &shown_path))? else {
            break;
        };
        number += 1;
        if !showing {
            continue;
        }
        let text = String::from_utf8_lossy(&lines.kept);
        let text = text.trim_end_matches(['\n', '\r']);
        let chars = text.chars().count() as u64 + line.chars_dropped;
        let entry = if !line.whole {
            let cut: String = text.chars().take(LINE_CHARS).collect();
            format!("{number:>6}\t{cut}… [the line goes on past what one read goes through]\n")
        } else if chars > LINE_CHARS as u64 {
            let cut: String = text.chars().take(LINE_CHARS).collect();
            format!(
                "{number:>6}\t{cut}… [{} more characters]\n",
                chars - LINE_CHARS as u64
            )
        } else {
            format!("{number:>6}\t{text}\n")
        };
        if !out.is_empty() && out.len() + entry.len() > READ_BUDGET {
            stopped_early = true;
            continue;
        }
        out.push_str(&entry);
        last_shown = Some(number);
    }
    let total = number;
    let mib = scan / (1024 * 1024);
    // After the read: a change made while it read is the last one seen.
    let changed = lines
        .reader
        .get_ref()
        .metadata()
        .map_err(io_error("read", &shown_path))?;
    let changed = changed
        .ctime()
        .saturating_mul(1_000_000_000)
        .saturating_add(changed.ctime_nsec());
    let text = match last_shown {
        None if total == 0 => Ok(format!("`{shown_path}` is empty")),
        None if lines.left == 0 => Err(FileError::PastScan {
            path: shown_path.clone(),
            lines: total,
            offset: first,
            mib,
        }),
        None => Err(FileError::PastEnd {
            path: shown_path.clone(),
            lines: total,
            offset: first,
        }),
        Some(last) if lines.left == 0 => {
            out.push_str(&format!(
                "(lines {first}–{last} of at least {total}: one read goes through {mib} MiB \
                 of a file at most, and this one is longer; read on with offset={}, or use \
                 the shell)",
                last + 1
            ));
            Ok(out)
        }
        Some(last) if last < total => {
            out.push_str(&format!(
                "(lines {first}–{last} of {total}; read on with offset={})",
                last + 1
            ));
            Ok(out)
        }
        Some(last) => {
            out.push_str(&format!("(lines {first}–{last} of {total})"));
            Ok(out)
        }
    }?;
    Ok(Shown {
        text,
        path: shown_path,
        changed,
    })
}

/// A file's lines, read through a bounded buffer: of each line only the
/// bytes asked for are kept, and at most `left` bytes are read in all.
struct Lines<R> {
    reader: R,
    /// Bytes still to be read before the read stops.
    left: u64,
    /// The kept start of the last line read.
    kept: Vec<u8>,
}

/// What [`Lines::next`] read of one line, beside the bytes it kept.
struct Line {
    /// Characters of the line (its end not counted) that were not kept.
    chars_dropped: u64,
    /// Whether the line's end (or the file's) was reached before `left` ran out.
    whole: bool,
}

impl<R: BufRead> Lines<R> {
    /// Reads one line, keeping its first `keep` bytes in `self.kept`; none
    /// at the end of the file or once `left` has run out.
    fn next(&mut self, keep: usize) -> io::Result<Option<Line>> {
        self.kept.clear();
        let mut line = Line {
            chars_dropped: 0,
            whole: true,
        };
        let mut any = false;
        loop {
            if self.left == 0 {
                line.whole = false;
                return Ok(any.then_some(line));
            }
            let buffer = self.reader.fill_buf()?;
            if buffer.is_empty() {
                return Ok(any.then_some(line));
            }
            any = true;
            let room = usize::try_from(self.left).unwrap_or(usize::MAX);
            let buffer = &buffer[..buffer.len().min(room)];
            let (part, ended) = match buffer.iter().position(|&b| b == b'\n') {
                Some(end) => (&buffer[..=end], true),
                None => (buffer, false),
            };
            let take = part.len().min(keep.saturating_sub(self.kept.len()));
            self.kept.extend_from_slice(&part[..take]);
            let mut dropped = &part[take..];
            if ended {
                // The line's end is no character of it.
                dropped = dropped.strip_suffix(b"\n").unwrap_or(dropped);
                dropped = dropped.strip_suffix(b"\r").unwrap_or(dropped);
            }
            // Every byte but a UTF-8 continuation byte starts a character.
            line.chars_dropped += dropped.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
            let used = part.len();
            self.reader.consume(used);
            self.left -= used as u64;
            if ended {
                return Ok(Some(line));
            }
        }
    }
}

/// Writes the whole file, creating its parent folders inside the folder.
pub fn write(folder: &Folder, path: &str, content: &str) -> Result<String, FileError> {
    let target = folder.resolve_for_write(path)?;
    let shown_path = folder.show(&target);
    if target.is_dir() {
        return Err(FileError::IsFolder(shown_path));
    }
    let existed = target.exists();
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(io_error("create the folders of", &shown_path))?;
    }
    open_beneath(folder, &target, &shown_path, "write", Access::Write)?
        .write_all(content.as_bytes())
        .map_err(io_error("write", &shown_path))?;
    Ok(format!(
        "{} `{shown_path}`: {} bytes, {} lines",
        if existed { "replaced" } else { "created" },
        content.len(),
        content.lines().count()
    ))
}

/// Replaces the one occurrence of `old` with `new`.
pub fn edit(folder: &Folder, path: &str, old: &str, new: &str) -> Result<String, FileError> {
    if old.is_empty() {
        return Err(FileError::EmptyOld);
    }
    let target = folder.resolve_for_write(path)?;
    let shown_path = folder.show(&target);
    if target.is_dir() {
        return Err(FileError::IsFolder(shown_path));
    }
    let mut bytes = Vec::new();
    open_beneath(folder, &target, &shown_path, "read", Access::Read)?
        .read_to_end(&mut bytes)
        .map_err(io_error("read", &shown_path))?;
    let text = String::from_utf8(bytes).map_err(|_| FileError::NotText(shown_path.clone()))?;
    let at = match occurrences(&text, old) {
        (0, _) => return Err(FileError::NoMatch(shown_path)),
        (1, Some(at)) => at,
        (count, _) => {
            return Err(FileError::NotUnique {
                path: shown_path,
                count,
            })
        }
    };
    let edited = format!("{}{new}{}", &text[..at], &text[at + old.len()..]);
    open_beneath(folder, &target, &shown_path, "write", Access::Write)?
        .write_all(edited.as_bytes())
        .map_err(io_error("write", &shown_path))?;
    let line = text[..at].matches('\n').count() + 1;
    Ok(format!("edited `{shown_path}` at line {line}"))
}

/// How often `needle` occurs in `text`, overlaps counted (an overlap is as
/// ambiguous as two separate matches), and where the first one starts.
fn occurrences(text: &str, needle: &str) -> (usize, Option<usize>) {
    let (mut count, mut first, mut from) = (0, None, 0);
    while let Some(found) = text[from..].find(needle) {
        let at = from + found;
        count += 1;
        first.get_or_insert(at);
        // Step one character, so overlapping matches are found too.
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    (count, first)
}

/// The entries of a folder, sorted by name.
pub fn list(folder: &Folder, path: &str) -> Result<String, FileError> {
    let target = folder.resolve(path)?;
    let shown_path = folder.show(&target);
    if !target.is_dir() {
        return Err(if target.exists() {
            FileError::NotFolder(shown_path)
        } else {
            FileError::NotFound(shown_path)
        });
    }
    let mut entries = Vec::new();
    for entry in fs::read_dir(&target).map_err(io_error("list", &shown_path))? {
        let entry = entry.map_err(io_error("list", &shown_path))?;
        entries.push(describe(
            &entry.path(),
            &entry.file_name().to_string_lossy(),
        ));
    }
    entries.sort();
    let count = entries.len();
    let mut out = format!("{shown_path}/ ({count} entries)\n");
    for entry in entries.iter().take(LIST_ENTRIES) {
        out.push_str(entry);
        out.push('\n');
    }
    if count > LIST_ENTRIES {
        out.push_str(&format!("… and {} more\n", count - LIST_ENTRIES));
    }
    Ok(out.trim_end().to_string())
}

/// One listing line: `name/`, `name (N bytes)` or `name -> target`.
fn describe(path: &Path, name: &str) -> String {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match fs::read_link(path) {
            Ok(target) => format!("{name} -> {}", target.display()),
            Err(_) => format!("{name} -> ?"),
        },
        Ok(meta) if meta.is_dir() => format!("{name}/"),
        Ok(meta) => format!("{name} ({} bytes)", meta.len()),
        Err(_) => name.to_string(),
    }
}

/// One of the file tools of [`specs`] in a folder, run by [`call`].
pub struct FileTool {
    spec: ToolSpec,
    folder: Arc<Folder>,
}

/// The file tools in `folder`, in [`specs`]' order.
pub fn tools(folder: &Arc<Folder>) -> Vec<FileTool> {
    specs()
        .into_iter()
        .map(|spec| FileTool {
            spec,
            folder: folder.clone(),
        })
        .collect()
}

impl Tool for FileTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn acts(&self) -> Acts {
        match self.spec.name.as_str() {
            "read_file" | "list_dir" => Acts::Never,
            // `write_file`, `edit_file`, and a file tool added later.
            _ => Acts::Always,
        }
    }

    fn detail(&self, arguments: &Value) -> Option<String> {
        text_of(arguments, "path")
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        if self.spec.name == "read_file" {
            // A file changed while outside words could reach it reads as
            // outside text (`exposure.rs`).
            let folder = self.folder.clone();
            return Box::pin(super::exposure::read_file(
                folder,
                call.log,
                call.agent,
                call.arguments,
            ));
        }
        Box::pin(self::call(
            self.folder.clone(),
            &self.spec.name,
            call.arguments,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> (tempfile::TempDir, Folder) {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        fs::create_dir_all(&work).unwrap();
        let folder = Folder::new(&work, &dir.path().join("agents/a"), false).unwrap();
        (dir, folder)
    }

    #[test]
    fn write_then_read_with_line_numbers_and_ranges() {
        let (_dir, folder) = folder();
        let said = write(&folder, "notes/today.md", "one\ntwo\nthree\n").unwrap();
        assert_eq!(said, "created `notes/today.md`: 14 bytes, 3 lines");
        assert_eq!(
            read(&folder, "notes/today.md", None, None).unwrap(),
            "     1\tone\n     2\ttwo\n     3\tthree\n(lines 1–3 of 3)"
        );
        assert_eq!(
            read(&folder, "notes/today.md", Some(2), Some(1)).unwrap(),
            "     2\ttwo\n(lines 2–2 of 3; read on with offset=3)"
        );
        assert!(matches!(
            read(&folder, "notes/today.md", Some(9), None),
            Err(FileError::PastEnd {
                lines: 3,
                offset: 9,
                ..
            })
        ));
        assert!(matches!(
            read(&folder, "nope.txt", None, None),
            Err(FileError::NotFound(_))
        ));
        assert!(matches!(
            read(&folder, "notes", None, None),
            Err(FileError::IsFolder(_))
        ));
    }

    #[test]
    fn a_long_read_stops_at_a_line_and_says_how_to_go_on() {
        let (_dir, folder) = folder();
        let text: String = (0..5000).map(|i| format!("line number {i}\n")).collect();
        write(&folder, "long.txt", &text).unwrap();
        let out = read(&folder, "long.txt", None, None).unwrap();
        assert!(out.len() <= READ_BUDGET + 100);
        assert!(
            out.contains("of 5000; read on with offset="),
            "{}",
            &out[out.len() - 80..]
        );
    }

    /// Issue 18: a file of one huge line, read with `limit: 1`, costs a
    /// bounded read: at most the scan's bytes, and the result says so.
    #[test]
    fn one_huge_line_is_read_by_bounded_pages() {
        let (_dir, folder) = folder();
        let line = "é".repeat(3000) + &"x".repeat(100_000) + "\nsecond\n";
        write(&folder, "huge.txt", &line).unwrap();
        let whole = read(&folder, "huge.txt", None, Some(1)).unwrap();
        assert!(
            whole.contains("… [101000 more characters]"),
            "{}",
            &whole[whole.len() - 200..]
        );
        assert!(
            whole.ends_with("(lines 1–1 of 2; read on with offset=2)"),
            "{whole:.100}"
        );
        assert!(whole.len() < LINE_KEPT + 200);

        let cut = read_within(&folder, "huge.txt", None, Some(1), 50_000).unwrap();
        assert!(cut.contains("[the line goes on past what one read goes through]"));
        assert!(
            cut.contains("of at least 1: one read goes through"),
            "{}",
            &cut[cut.len() - 200..]
        );
        assert!(matches!(
            read_within(&folder, "huge.txt", Some(2), None, 50_000),
            Err(FileError::PastScan { offset: 2, .. })
        ));
        assert_eq!(
            read_within(&folder, "huge.txt", Some(2), None, 1 << 20).unwrap(),
            "     2\tsecond\n(lines 2–2 of 2)"
        );
    }

    #[test]
    fn binary_files_are_not_dumped() {
        let (_dir, folder) = folder();
        fs::write(folder.root().join("blob"), [0u8, 1, 2, 3]).unwrap();
        assert!(matches!(
            read(&folder, "blob", None, None),
            Err(FileError::Binary { bytes: 4, .. })
        ));
    }

    #[test]
    fn edit_replaces_exactly_one_match_and_counts_the_others() {
        let (_dir, folder) = folder();
        write(&folder, "a.txt", "alpha\nbeta\nbeta\n").unwrap();
        let err = edit(&folder, "a.txt", "beta", "gamma").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`old_string` occurs 2 times in `a.txt`; include more of the surrounding text so it matches once"
        );
        let err = edit(&folder, "a.txt", "delta", "x").unwrap_err();
        assert!(matches!(err, FileError::NoMatch(_)));
        assert!(matches!(
            edit(&folder, "a.txt", "", "x"),
            Err(FileError::EmptyOld)
        ));
        assert_eq!(
            edit(&folder, "a.txt", "beta\nbeta", "beta\ngamma").unwrap(),
            "edited `a.txt` at line 2"
        );
        assert_eq!(
            fs::read_to_string(folder.root().join("a.txt")).unwrap(),
            "alpha\nbeta\ngamma\n"
        );
        // Overlapping matches are ambiguous too.
        write(&folder, "b.txt", "aaa").unwrap();
        assert!(matches!(
            edit(&folder, "b.txt", "aa", "b"),
            Err(FileError::NotUnique { count: 2, .. })
        ));
    }

    #[test]
    fn listing_shows_folders_sizes_and_links() {
        let (_dir, folder) = folder();
        write(&folder, "b.txt", "12345").unwrap();
        write(&folder, "sub/c.txt", "").unwrap();
        std::os::unix::fs::symlink("b.txt", folder.root().join("link")).unwrap();
        assert_eq!(
            list(&folder, ".").unwrap(),
            "./ (3 entries)\nb.txt (5 bytes)\nlink -> b.txt\nsub/"
        );
        assert!(matches!(
            list(&folder, "b.txt"),
            Err(FileError::NotFolder(_))
        ));
    }

    #[test]
    fn escapes_are_refused_for_every_tool() {
        let (dir, folder) = folder();
        fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path(), folder.root().join("up")).unwrap();
        assert!(matches!(
            read(&folder, "../secret", None, None),
            Err(FileError::Path(PathError::Outside(_)))
        ));
        assert!(matches!(
            read(&folder, "up/secret", None, None),
            Err(FileError::Path(PathError::SymlinkOut(_)))
        ));
        assert!(matches!(
            write(&folder, "up/new.txt", "x"),
            Err(FileError::Path(PathError::SymlinkOut(_)))
        ));
        assert!(matches!(
            edit(&folder, "../secret", "s", "t"),
            Err(FileError::Path(_))
        ));
        assert!(matches!(list(&folder, ".."), Err(FileError::Path(_))));
        assert!(!dir.path().join("new.txt").exists());
    }
}
