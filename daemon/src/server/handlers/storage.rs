//! Frames about what the daemon stores beside the conversation: `backup`,
//! `state_get`, `state_set`, `image_put`, `image_get`.

use super::{Answer, Context, Refusal};
use hearth_protocol::ServerFrame;

/// `backup`: copies the log to a new file at an absolute path.
pub async fn backup(context: &Context<'_>, path: String) -> Answer {
    let target = std::path::Path::new(&path);
    if let Err(why) = backup_target_allowed(target, context.shared.log.path()) {
        return Err(Refusal::refused(format!("cannot back up to {path}: {why}")).into());
    }
    match context.shared.log.backup(target).await {
        Ok(bytes) => Ok(ServerFrame::BackedUp { path, bytes }),
        Err(err) => Err(Refusal::refused(format!("the backup failed: {err}")).into()),
    }
}

/// `state_get`: a client's stored value (a bridge's offset or cursor).
pub async fn state_get(context: &Context<'_>, name: String) -> Answer {
    let value = context.shared.log.get_state(&name).await?;
    Ok(ServerFrame::State { name, value })
}

/// `state_set`: stores a client's value; answers with it.
pub async fn state_set(context: &Context<'_>, name: String, value: String) -> Answer {
    context.shared.log.set_state(&name, &value).await?;
    Ok(ServerFrame::State {
        name,
        value: Some(value),
    })
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

/// Where a backup may be written: an absolute path to nothing yet (not
/// even a dangling symlink), without NUL bytes, in an existing folder, and
/// not a name the home uses (the database and its `-journal`, `-wal`,
/// `-shm`, `secrets.env`, `config.toml`, the media store, the socket…) — so
/// a backup can never take the place of one of the home's own files.
fn backup_target_allowed(
    target: &std::path::Path,
    database: &std::path::Path,
) -> Result<(), String> {
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
        Ok(_) => {
            return Err(
                "something is already there, and the path must not exist yet (a backup never replaces a file); choose a new name"
                    .into(),
            )
        }
        Err(_) => {}
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
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::backup_target_allowed;

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
