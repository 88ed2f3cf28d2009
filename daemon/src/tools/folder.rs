//! The agent's working folder, and where a path given by the model leads.
//!
//! A path is taken relative to the folder (an absolute one must name a place
//! inside it). `..` is resolved by name and may not climb out; then the
//! deepest part of the path that exists is resolved by the system, symlinks
//! and all, and must still be inside the folder — so a symlink cannot lead
//! out, whether it points at a file, a folder or nothing yet. The agent's
//! prompt folder may be inside (a workdir set to the home); it is read-only
//! unless `[tools] prompt_writable = true`.
//!
//! This confines the file tools, not the shell, which can go anywhere its
//! user can.

use std::io;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("the path is empty; give a path inside the working folder")]
    Empty,
    #[error(
        "`{0}` is outside the working folder; give a path inside it (relative paths start there)"
    )]
    Outside(String),
    #[error("`{0}` leads outside the working folder through a symlink")]
    SymlinkOut(String),
    #[error("`{0}` goes through a symlink whose target does not exist")]
    Broken(String),
    #[error("`{0}` is in the agent's prompt folder, which the file tools may not change ([tools] prompt_writable = true allows it)")]
    Protected(String),
    #[error("cannot look up `{path}`: {source}")]
    Io { path: String, source: io::Error },
}

/// The folder the file tools are confined to.
#[derive(Debug, Clone)]
pub struct Folder {
    /// The folder with every symlink resolved; all checks compare with it.
    root: PathBuf,
    /// The folder as configured, so an absolute path written that way is
    /// accepted too.
    given: PathBuf,
    /// The prompt folder when it is inside `root` and read-only.
    protected: Option<PathBuf>,
}

impl Folder {
    /// `root` must exist. `prompt_dir` is protected when it lies inside it
    /// and `prompt_writable` is false.
    pub fn new(root: &Path, prompt_dir: &Path, prompt_writable: bool) -> io::Result<Folder> {
        let canonical = root.canonicalize()?;
        let prompt = prompt_dir
            .canonicalize()
            .unwrap_or_else(|_| normalize(prompt_dir));
        let protected = (!prompt_writable && prompt.starts_with(&canonical)).then_some(prompt);
        Ok(Folder {
            root: canonical,
            given: normalize(root),
            protected,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `path` leads, inside the folder, for reading.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        if path.trim().is_empty() {
            return Err(PathError::Empty);
        }
        let given = Path::new(path);
        let joined = normalize(&if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        });
        let inside = if joined.starts_with(&self.root) {
            joined
        } else if let Ok(rest) = joined.strip_prefix(&self.given) {
            self.root.join(rest)
        } else {
            return Err(PathError::Outside(path.to_string()));
        };
        // The deepest part that exists, resolved by the system.
        let mut existing = inside.as_path();
        let mut missing = Vec::new();
        loop {
            match std::fs::symlink_metadata(existing) {
                Ok(_) => break,
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    let (Some(parent), Some(name)) = (existing.parent(), existing.file_name())
                    else {
                        break;
                    };
                    missing.push(name.to_owned());
                    existing = parent;
                }
                Err(source) => {
                    return Err(PathError::Io {
                        path: path.to_string(),
                        source,
                    })
                }
            }
        }
        let mut real = existing.canonicalize().map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                PathError::Broken(path.to_string())
            } else {
                PathError::Io {
                    path: path.to_string(),
                    source,
                }
            }
        })?;
        real.extend(missing.iter().rev());
        if !real.starts_with(&self.root) {
            return Err(PathError::SymlinkOut(path.to_string()));
        }
        Ok(real)
    }

    /// Where `path` leads, for changing it: as [`Folder::resolve`], and not
    /// in a read-only prompt folder.
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, PathError> {
        let real = self.resolve(path)?;
        match &self.protected {
            Some(protected) if real.starts_with(protected) => {
                Err(PathError::Protected(path.to_string()))
            }
            _ => Ok(real),
        }
    }

    /// A resolved path as the model should see it: relative to the folder.
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
            Ok(rest) => rest.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// `path` with `.` dropped and `..` taken by name; `..` at the top stays at
/// the top. A relative path stays relative.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Setup {
        _dir: tempfile::TempDir,
        outside: PathBuf,
        folder: Folder,
    }

    /// A working folder `work` beside a folder `outside` holding `secret`.
    fn setup() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(work.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::fs::write(work.join("sub/file.txt"), "f").unwrap();
        let folder = Folder::new(&work, &dir.path().join("agents/a"), false).unwrap();
        Setup {
            _dir: dir,
            outside,
            folder,
        }
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let s = setup();
        let root = s.folder.root().to_path_buf();
        assert_eq!(
            s.folder.resolve("sub/file.txt").unwrap(),
            root.join("sub/file.txt")
        );
        assert_eq!(
            s.folder.resolve("./sub/../sub/new.txt").unwrap(),
            root.join("sub/new.txt")
        );
        let absolute = root.join("sub/file.txt");
        assert_eq!(
            s.folder.resolve(absolute.to_str().unwrap()).unwrap(),
            absolute
        );
        assert_eq!(s.folder.resolve("a/b/c").unwrap(), root.join("a/b/c"));
        assert_eq!(s.folder.show(&root.join("a/b")), "a/b");
        assert_eq!(s.folder.show(&root), ".");
    }

    #[test]
    fn dot_dot_cannot_climb_out() {
        let s = setup();
        for path in [
            "../outside/secret",
            "sub/../../outside/secret",
            "..",
            "new/../../x",
        ] {
            assert!(
                matches!(s.folder.resolve(path), Err(PathError::Outside(_))),
                "{path}"
            );
        }
        assert!(matches!(s.folder.resolve(""), Err(PathError::Empty)));
    }

    #[test]
    fn absolute_paths_outside_are_refused() {
        let s = setup();
        let secret = s.outside.join("secret");
        assert!(matches!(
            s.folder.resolve(secret.to_str().unwrap()),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(
            s.folder.resolve("/etc/passwd"),
            Err(PathError::Outside(_))
        ));
    }

    #[test]
    fn symlinks_that_lead_out_are_refused() {
        let s = setup();
        let root = s.folder.root().to_path_buf();
        symlink(&s.outside, root.join("door")).unwrap();
        symlink(s.outside.join("secret"), root.join("secret-link")).unwrap();
        symlink(s.outside.join("not-yet"), root.join("dangling")).unwrap();
        symlink(root.join("sub"), root.join("inner")).unwrap();
        for path in ["door/secret", "door/new-file", "door", "secret-link"] {
            assert!(
                matches!(s.folder.resolve(path), Err(PathError::SymlinkOut(_))),
                "{path}"
            );
        }
        // A link to nothing would let a write create a file outside.
        assert!(matches!(
            s.folder.resolve("dangling"),
            Err(PathError::Broken(_))
        ));
        // A symlink that stays inside is fine.
        assert_eq!(
            s.folder.resolve("inner/file.txt").unwrap(),
            root.join("sub/file.txt")
        );
    }

    #[test]
    fn the_prompt_folder_is_read_only_when_inside_the_working_folder() {
        let dir = tempfile::tempdir().unwrap();
        let prompt_dir = dir.path().join("agents/a");
        std::fs::create_dir_all(&prompt_dir).unwrap();
        let folder = Folder::new(dir.path(), &prompt_dir, false).unwrap();
        assert!(folder.resolve("agents/a/prompt.md").is_ok());
        assert!(matches!(
            folder.resolve_for_write("agents/a/prompt.md"),
            Err(PathError::Protected(_))
        ));
        assert!(folder.resolve_for_write("notes.md").is_ok());
        let writable = Folder::new(dir.path(), &prompt_dir, true).unwrap();
        assert!(writable.resolve_for_write("agents/a/prompt.md").is_ok());
        // The default working folder lies inside the prompt folder: nothing is protected.
        let work = prompt_dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let inside = Folder::new(&work, &prompt_dir, false).unwrap();
        assert!(inside.resolve_for_write("x.txt").is_ok());
    }
}
