//! `hearth login chatgpt` and `hearth logout chatgpt`: signing in with a
//! ChatGPT plan, in a browser or with a device code, and forgetting it.
//!
//! The sign-in itself is the daemon's (`model/chatgpt/login.rs`), so the
//! CLI and hearthd agree on the tokens' file; a running daemon reads it at
//! its next request.

use hearth_models::model::chatgpt::{self, login, tokens, ChatGptError};
use hearth_protocol::home::Home;
use std::io::Write;

/// How to sign in.
#[derive(Debug, Clone, Default)]
pub struct LoginOptions {
    /// With a device code instead of a browser's callback (a server
    /// without a browser).
    pub device: bool,
    /// Open the browser; otherwise only print the address.
    pub open_browser: bool,
    /// The callback's port; the registered ones (1455, then 1457) when
    /// none.
    pub port: Option<u16>,
}

/// Why signing in failed.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error(transparent)]
    ChatGpt(#[from] ChatGptError),
    #[error("cannot write to the terminal: {0}")]
    Output(#[from] std::io::Error),
}

/// Signs in and stores the tokens in the home; says who signed in.
pub async fn login(
    home: &Home,
    options: &LoginOptions,
    out: &mut dyn Write,
) -> Result<(), LoginError> {
    let issuer = chatgpt::issuer();
    let signed_in = match options.device {
        true => {
            let mut shown = Ok(());
            let tokens = login::with_device_code(&issuer, |code| {
                shown = writeln!(
                    out,
                    "To sign in with ChatGPT, open this page in a browser on any device:\n  {}\nand enter the code (it expires in 15 minutes; never share it):\n  {}\nWaiting…",
                    code.verification_url, code.user_code
                )
                .and_then(|()| out.flush());
            })
            .await;
            shown?;
            tokens?
        }
        false => {
            let sign_in = login::start_browser(&issuer, options.port).await?;
            writeln!(
                out,
                "Sign in with ChatGPT in your browser:\n  {}\n(on a machine without a browser, stop this and run `hearth login chatgpt --device`)\nWaiting…",
                sign_in.url
            )?;
            out.flush()?;
            if options.open_browser {
                open_browser(&sign_in.url);
            }
            sign_in.finish().await?
        }
    };
    std::fs::create_dir_all(&home.config_dir).map_err(|err| {
        ChatGptError::Store(format!(
            "cannot create {}: {err}",
            home.config_dir.display()
        ))
    })?;
    let file = chatgpt::tokens_file(home);
    tokens::save(&file, &signed_in)?;
    let who = signed_in.identity();
    let name = who
        .email
        .map(|email| format!(" as {email}"))
        .unwrap_or_default();
    let plan = who
        .plan
        .map(|plan| format!(" ({plan} plan)"))
        .unwrap_or_default();
    writeln!(
        out,
        "Signed in to ChatGPT{name}{plan}; the tokens are in {} (private to you).\nUse the plan with `provider = \"chatgpt\"` in [model], or `hearth setup --provider chatgpt`.",
        file.display()
    )?;
    Ok(())
}

/// Forgets the stored sign-in.
pub fn logout(home: &Home, out: &mut dyn Write) -> Result<(), LoginError> {
    let file = chatgpt::tokens_file(home);
    if tokens::forget(&file)? {
        writeln!(out, "Signed out of ChatGPT: hearth forgot its tokens.")?;
    } else {
        writeln!(out, "No one was signed in to ChatGPT here.")?;
    }
    Ok(())
}

/// Opens `url` in the desktop's browser, when there is one; the address
/// was printed either way.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let started = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = started {
        // Reaped in the background; its exit says nothing useful.
        std::thread::spawn(move || child.wait());
    }
}
