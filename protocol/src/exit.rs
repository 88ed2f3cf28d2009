//! The exit status that `hearthd` and the bridges agree on.

/// The exit status of a program whose configuration cannot work (sysexits'
/// `EX_CONFIG`). `hearthd` exits with it when its own configuration is
/// wrong, and a systemd unit does not restart it then; a bridge exits with
/// it when its table (or a secret) is, and `hearthd` does not start it
/// again until the configuration changes. Both have said why before.
pub const EXIT_CONFIG: u8 = 78;

/// [`EXIT_CONFIG`] as `std::process::exit` and `ExitStatus::code` spell it.
pub const EXIT_CONFIG_CODE: i32 = EXIT_CONFIG as i32;
