//! Frames about what the daemon stores beside the conversation: `backup`,
//! `state_get`, `state_set`, `image_put`, `image_get`.

use super::super::listener::Door;
use super::{Answer, Context, Refusal};
use crate::log::backup::{Backup, Refused};
use crate::tools::reach::{Reached, ToolReach};
use hearth_protocol::ServerFrame;

/// `backup`: copies the log to a new file at an absolute path, or brings
/// an earlier backup of it there up to date.
pub async fn backup(context: &Context<'_>, path: String) -> Answer {
    let target = std::path::Path::new(&path);
    let allowed = backup_target_allowed(target, context.shared.log.path())
        .and_then(|resolved| out_of_tools_reach(&resolved, &context.shared.tool_reach));
    if let Err(why) = allowed {
        return Err(Refusal::refused(format!("cannot back up to {path}: {why}")).into());
    }
    match context.shared.log.backup(target).await {
        Ok((bytes, done)) => Ok(ServerFrame::BackedUp {
            path,
            bytes,
            added: match done {
                Backup::Whole => None,
                Backup::Updated { messages } => Some(messages),
            },
        }),
        Err(why @ (Refused::NotHearth | Refused::OtherLog { .. })) => {
            Err(Refusal::refused(format!("cannot back up to {path}: {why}")).into())
        }
        Err(err) => Err(Refusal::refused(format!("the backup failed: {err}")).into()),
    }
}

/// `state_get`: a client's stored value (a bridge's offset or cursor).
pub async fn state_get(context: &Context<'_>, name: String) -> Answer {
    let value = context.shared.log.get_state(&name).await?;
    Ok(ServerFrame::State { name, value })
}

/// `state_set`: stores a client's value once durable; answers with it. A
/// disk that cannot take it is a `storage` error, not a dropped connection.
pub async fn state_set(context: &Context<'_>, name: String, value: String) -> Answer {
    may_write_state(context.client, &name, context.door)?;
    if let Err(err) = context.shared.log.set_state(&name, &value).await {
        tracing::error!("cannot store the state `{name}`: {err}");
        return Err(Refusal::storage(format!("the state `{name}` was not stored: {err}")).into());
    }
    Ok(ServerFrame::State {
        name,
        value: Some(value),
    })
}

/// The clients that the bridges connect as: their states (cursors, offsets,
/// the chats seen) are written only over the Unix socket, which is the
/// owner's alone, never by a TCP client or a browser.
const BRIDGE_STATES: [&str; 6] = [
    "telegram", "whatsapp", "signal", "email", "discord", "matrix",
];

/// A state belongs to the client it is named after: `telegram.cursor` is
/// written only by a client named `telegram` or `telegram-<part>` (the
/// outbound half is `telegram-out`), so one client cannot move another's
/// cursor. Reading stays open: a cursor is no secret.
fn may_write_state(client: &str, name: &str, door: Door<'_>) -> Result<(), Refusal> {
    let owner = name.split('.').next().unwrap_or(name);
    let owns = client == owner
        || client
            .strip_prefix(owner)
            .is_some_and(|rest| rest.starts_with('-'));
    if owner.is_empty() || !owns {
        return Err(Refusal::refused(format!(
            "the state `{name}` belongs to the client `{owner}`; a client writes only states \
             named after itself (`{client}.<name>`)"
        )));
    }
    if BRIDGE_STATES.contains(&owner) && !matches!(door, Door::Unix) {
        return Err(Refusal::refused(format!(
            "the state `{name}` is a bridge's; it is written only over the Unix socket"
        )));
    }
    Ok(())
}

/// `image_put`: checks and stores an image; a refusal is an `error` frame.
pub async fn image_put(
    context: &Context<'_>,
    media_type: String,
    data_base64: String,
) -> ServerFrame {
    context
        .shared
        .images
        .answer_put(&media_type, &data_base64)
        .await
}

/// `image_get`: a stored image's bytes; a refusal is an `error` frame.
pub async fn image_get(context: &Context<'_>, sha256: String) -> ServerFrame {
    context.shared.images.answer_get(&sha256).await
}

/// A backup holds the whole log, and the agents' tools run as the same
/// user as hearthd (a file's mode does not keep them out): it never goes
/// where they can read it, in any agent's working folder or a folder the
/// shell may read (`/tmp` among them).
fn out_of_tools_reach(resolved: &std::path::Path, reach: &ToolReach) -> Result<(), String> {
    match reach.reaches(resolved) {
        None => Ok(()),
        Some(Reached::Workdir(dir)) => Err(format!(
            "it is inside {}, an agent's working folder, where its tools could read the whole \
             log; choose a folder outside it, like one in your home directory",
            dir.display()
        )),
        Some(Reached::Readable(dir)) => Err(format!(
            "the agents' shell may read {}, so it could read the whole log there; choose a \
             folder the tools cannot reach, like one in your home directory (not /tmp)",
            dir.display()
        )),
    }
}

/// Where a backup may be written: an absolute path to nothing yet (not
/// even a dangling symlink) or to a file (an earlier backup, which the log
/// checks), without NUL bytes, in an existing folder, and
/// not a name the home uses (the database and its `-journal`, `-wal`,
/// `-shm`, `secrets.env`, `config.toml`, the media store, the socket…) — so
/// a backup can never take the place of one of the home's own files.
/// Returns the path with its folder resolved.
fn backup_target_allowed(
    target: &std::path::Path,
    database: &std::path::Path,
) -> Result<std::path::PathBuf, String> {
    use std::os::unix::ffi::OsStrExt;
    if target.as_os_str().as_bytes().contains(&0) {
        return Err("the path holds a NUL byte".into());
    }
    if !target.is_absolute() {
        return Err("give an absolute path".into());
    }
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => {
            return Err(format!(
                "it is a folder; give a file name in it, like {}",
                target.join("hearth-backup.db").display()
            ))
        }
        // An earlier backup is brought up to date (the log checks that it
        // is one of this log); anything but a file is never written through.
        Ok(meta) if !meta.is_file() => {
            return Err(
                "something other than a file is there (a link, a device…); give the path of a new file or of an earlier backup"
                    .into(),
            )
        }
        Ok(meta) if same_file(&meta, database) => {
            return Err("it is the home's database itself; choose a new name".into())
        }
        Ok(_) | Err(_) => {}
    }
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
        return Err("give a file name".into());
    };
    let Ok(parent) = parent.canonicalize() else {
        return Err(format!(
            "its folder {} does not exist (create it first)",
            parent.display()
        ));
    };
    if !parent.is_dir() {
        return Err(format!("{} is not a folder", parent.display()));
    }
    if !writable(&parent) {
        return Err(format!(
            "hearthd cannot write in {} (it runs as its own user; choose a folder it may write to)",
            parent.display()
        ));
    }
    let home = database
        .parent()
        .and_then(|dir| dir.canonicalize().ok())
        .unwrap_or_default();
    let resolved = parent.join(name);
    let name = name.to_string_lossy();
    if name == "secrets.env" || name == "config.toml" {
        return Err("the name is one of the home's own files; choose another".into());
    }
    if parent == home {
        let database_name = database
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let taken = name.starts_with(&database_name)
            || name.starts_with("whatsapp-web.db")
            || [
                "images",
                "audio",
                "media",
                "documents",
                "agents",
                "hearth.sock",
                "hearth.lock",
                "hearthd.log",
            ]
            .contains(&name.as_ref());
        if taken {
            return Err(format!(
                "`{name}` is a name the home uses for its own files; choose another"
            ));
        }
    } else if parent.starts_with(&home)
        && parent
            .strip_prefix(&home)
            .ok()
            .and_then(|rest| rest.components().next())
            .is_some_and(|first| {
                ["images", "audio", "media", "documents"]
                    .contains(&first.as_os_str().to_string_lossy().as_ref())
            })
    {
        return Err("it is inside the home's media store; choose another folder".into());
    }
    Ok(resolved)
}

/// Whether this process may create files in `folder`.
fn writable(folder: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(folder.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `access` reads the NUL-terminated path and nothing else.
    unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Whether `meta` is the file at `path` (the same inode, by any name).
fn same_file(meta: &std::fs::Metadata, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .is_ok_and(|other| other.dev() == meta.dev() && other.ino() == meta.ino())
}

#[cfg(test)]
mod tests {
    use super::{backup_target_allowed, may_write_state, Door};

    #[test]
    fn a_state_is_written_only_by_the_client_it_is_named_after() {
        assert!(may_write_state("telegram", "telegram.cursor", Door::Unix).is_ok());
        assert!(may_write_state("telegram-out", "telegram.cursor", Door::Unix).is_ok());
        assert!(may_write_state("mine", "mine", Door::Tcp("t")).is_ok());
        assert!(may_write_state("mine", "mine.x", Door::Tcp("t")).is_ok());
        for (client, name) in [
            ("terminal", "telegram.cursor"),
            ("telegramx", "telegram.cursor"),
            ("tele", "telegram.cursor"),
            ("mine", ".hidden"),
            ("whatsapp", "telegram.offset"),
        ] {
            let refused = may_write_state(client, name, Door::Unix).unwrap_err();
            assert!(refused.message.contains("belongs to"), "{client} {name}");
        }
        // A bridge's states only over the owner's own socket.
        assert!(may_write_state("telegram", "telegram.cursor", Door::Tcp("t")).is_err());
        assert!(may_write_state("whatsapp", "whatsapp.chats", Door::Browser).is_err());
    }

    #[test]
    fn backups_never_land_on_the_homes_files() {
        let home = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let database = home.path().join("hearth.db");
        std::fs::write(&database, "").unwrap();
        let refused = [
            home.path().join("hearth.db-journal"),
            home.path().join("secrets.env"),
            home.path().join("images"),
            home.path().join("hearth.db.seen"),
            elsewhere.path().join("secrets.env"),
            std::path::PathBuf::from("relative.db"),
            std::path::PathBuf::from("/no/such/folder/x.db"),
        ];
        for path in refused {
            assert!(
                backup_target_allowed(&path, &database).is_err(),
                "{}",
                path.display()
            );
        }
        let dangling = elsewhere.path().join("dangling");
        std::os::unix::fs::symlink(elsewhere.path().join("nothing"), &dangling).unwrap();
        assert!(backup_target_allowed(&dangling, &database).is_err());
        // A link to a file is never written through; the database by
        // another name (a hard link) is refused as itself.
        let file = elsewhere.path().join("file.db");
        std::fs::write(&file, "").unwrap();
        let link = elsewhere.path().join("link.db");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let through = backup_target_allowed(&link, &database).unwrap_err();
        assert!(through.contains("other than a file"), "{through}");
        let alias = elsewhere.path().join("alias.db");
        std::fs::hard_link(&database, &alias).unwrap();
        let itself = backup_target_allowed(&alias, &database).unwrap_err();
        assert!(itself.contains("the home's database itself"), "{itself}");
        // An existing file may be an earlier backup: the log checks it.
        assert!(backup_target_allowed(&file, &database).is_ok());
        let nul = std::path::PathBuf::from("/tmp/a\0b");
        assert!(backup_target_allowed(&nul, &database).is_err());
        assert!(backup_target_allowed(&elsewhere.path().join("ok.db"), &database).is_ok());
        let folder = backup_target_allowed(elsewhere.path(), &database).unwrap_err();
        assert!(folder.contains("it is a folder"), "{folder}");
        let missing =
            backup_target_allowed(std::path::Path::new("/no/such/folder/x.db"), &database)
                .unwrap_err();
        assert!(
            missing.contains("/no/such/folder does not exist"),
            "{missing}"
        );
        assert!(backup_target_allowed(&home.path().join("backup.db"), &database).is_ok());
    }
}
