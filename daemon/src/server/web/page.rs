//! The web client's files, embedded in the binary: plain HTML, CSS and
//! JavaScript (no build step, nothing fetched from elsewhere), and the short
//! pages that refusals answer with.

/// One file of the page.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
    /// Served without a session: it holds nothing of the owner's.
    pub public: bool,
}

const fn asset(path: &'static str, content_type: &'static str, body: &'static str) -> Asset {
    Asset {
        path,
        content_type,
        body,
        public: false,
    }
}

const JS: &str = "text/javascript; charset=utf-8";

const ASSETS: [Asset; 12] = [
    asset(
        "/",
        "text/html; charset=utf-8",
        include_str!("page/index.html"),
    ),
    asset(
        "/app.css",
        "text/css; charset=utf-8",
        include_str!("page/app.css"),
    ),
    asset("/app.js", JS, include_str!("page/app.js")),
    asset("/connection.js", JS, include_str!("page/connection.js")),
    asset("/markdown.js", JS, include_str!("page/markdown.js")),
    asset("/chat.js", JS, include_str!("page/chat.js")),
    asset("/pages.js", JS, include_str!("page/pages.js")),
    asset("/chart.js", JS, include_str!("page/chart.js")),
    asset("/sw.js", JS, include_str!("page/sw.js")),
    asset(
        "/manifest.webmanifest",
        "application/manifest+json",
        include_str!("page/manifest.webmanifest"),
    ),
    Asset {
        public: true,
        ..asset("/icon.svg", "image/svg+xml", include_str!("page/icon.svg"))
    },
    asset(
        "/index.html",
        "text/html; charset=utf-8",
        include_str!("page/index.html"),
    ),
];

/// The file at `path`, if the page has one.
pub fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.path == path)
}

/// The answer to a request without a session.
pub const LOGIN_NEEDED: &str = "<!doctype html><title>hearth: log in</title>\
<h1>Log in first</h1><p>On the machine hearthd runs on, run <code>hearth web</code> \
and open the link it prints. Each link works once, for ten minutes.</p>\n";

/// The answer to a wrong, used or expired code.
pub const BAD_CODE: &str = "<!doctype html><title>hearth: login refused</title>\
<h1>This login link does not work</h1><p>It is wrong, used already or expired. \
Run <code>hearth web</code> for a new one.</p>\n";

/// The answer to too many failed logins.
pub const TOO_MANY: &str = "<!doctype html><title>hearth: wait</title>\
<h1>Too many failed logins</h1><p>Wait a minute, then open a new link from \
<code>hearth web</code>.</p>\n";

/// The answer to a good code: moves on to the page, with the session's
/// key (hex) in the fragment, which the browser keeps to itself.
pub fn logged_in(key: &str) -> String {
    format!(
        "<!doctype html><title>hearth</title>\
<meta http-equiv=\"refresh\" content=\"0;url=/#key={key}\">\
<p>Logged in. <a href=\"/#key={key}\">Open hearth</a>.</p>\n"
    )
}

/// The answer to a WebSocket without the session's cookie and key: a page
/// that lost its key (another browser profile, cleared storage) logs in again.
pub const LOGIN_AGAIN: &str = "<!doctype html><title>hearth: log in again</title>\
<h1>Log in again</h1><p>This connection does not carry the session's key. \
Run <code>hearth web</code> and open the link it prints.</p>\n";

/// The answer to a WebSocket upgrade from another site's page.
pub const CROSS_ORIGIN: &str = "<!doctype html><title>hearth: refused</title>\
<p>Refused: the connection does not come from this page's own origin.</p>\n";

pub const NOT_WEBSOCKET: &str = "<!doctype html><title>hearth: refused</title>\
<p>/ws takes a WebSocket upgrade.</p>\n";

pub const NOT_FOUND: &str = "<!doctype html><title>hearth: not found</title><p>Not found.</p>\n";

#[cfg(test)]
mod tests {
    use hearth_protocol::ending::{self, reply_note};

    #[test]
    fn the_page_says_a_cut_or_refused_reply_in_the_words_every_client_uses() {
        let chat = include_str!("page/chat.js");
        for status in [
            ending::CUT_MAX_TOKENS,
            ending::CUT_CONTENT_FILTER,
            ending::CUT_CONTEXT_WINDOW,
            ending::REFUSED,
        ] {
            let note = reply_note(Some(status)).unwrap();
            assert!(
                chat.contains(&format!("  {status}: `{note}`,")),
                "chat.js's REPLY_NOTES says {status} as {note}"
            );
        }
    }
}
