//! End-to-end in a real browser (see `tests/browser.rs`): the agent's
//! Markdown as the page shows it. GitHub tables become tables, nested lists
//! stay nested, numbered lists count from their first number, and whatever
//! HTML a message carries stays text.
//!
//! Without Chromium installed these tests say so and pass; CI installs it.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;
use hearth_tests::web::{browser, free_port, open_live_page, send, web_home};
use serde_json::json;

/// A reply with a table (one cell carrying HTML), a numbered list starting
/// at 3 with a list nested in it, and an item carrying HTML.
const REPLY: &str = "Results:\n\n\
| name | n |\n\
|------|--:|\n\
| Ada | 36 |\n\
| <img src=x onerror=\"window.__pwned=1\"> | 7 |\n\n\
3. three\n\
4. four\n   \
- inner <script>window.__pwned=2</script>\n     \
- deeper\n\
5. five";

#[tokio::test]
async fn tables_and_nested_numbered_lists_are_shown_as_such_and_html_stays_text() {
    let Some(mut browser) = browser().await else {
        return;
    };
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    web_home(&home, &model, free_port());
    let _daemon = home.start();
    let page = open_live_page(&mut browser, &home).await;

    model.push(Reply::text(REPLY));
    send(&mut browser, &page, "show me a table").await;
    browser
        .wait_for(
            &page,
            "document.querySelector('.kind-reply .md table') !== null",
        )
        .await;
    let table = browser
        .eval(
            &page,
            "(() => { const t = document.querySelector('.kind-reply .md table');
              const texts = (cells) => [...cells].map(c => c.textContent);
              return { head: texts(t.querySelectorAll('thead th')),
                       rows: [...t.querySelectorAll('tbody tr')].map(r => texts(r.children)),
                       align: t.querySelector('tbody td:last-child').style.textAlign }; })()",
        )
        .await;
    assert_eq!(
        table,
        json!({
            "head": ["name", "n"],
            "rows": [["Ada", "36"], ["<img src=x onerror=\"window.__pwned=1\">", "7"]],
            "align": "right",
        })
    );
    let list = browser
        .eval(
            &page,
            "(() => { const ol = document.querySelector('.kind-reply .md > ol');
              return { start: ol.start,
                       items: [...ol.children].map(li => li.firstChild.textContent),
                       inner: ol.querySelector(':scope > li > ul > li').firstChild.textContent,
                       deeper: ol.querySelector(':scope > li > ul > li > ul > li').textContent }; })()",
        )
        .await;
    assert_eq!(
        list,
        json!({
            "start": 3,
            "items": ["three", "four", "five"],
            "inner": "inner <script>window.__pwned=2</script>",
            "deeper": "deeper",
        })
    );
    let injected = browser
        .eval(&page, "document.querySelectorAll('#messages script, #messages .md img, #messages [onerror]').length + (window.__pwned ?? 0)")
        .await;
    assert_eq!(injected, 0, "markup from a message became part of the page");
}

#[tokio::test]
async fn the_renderer_reads_markdown_as_commonmark_does() {
    let Some(mut browser) = browser().await else {
        return;
    };
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    web_home(&home, &model, free_port());
    let _daemon = home.start();
    let page = open_live_page(&mut browser, &home).await;

    let cases = [
        (
            "> said **so**\n> twice",
            "<blockquote><p>said <strong>so</strong><br>twice</p></blockquote>",
        ),
        (
            "1. one\n\n   more\n2. two",
            "<ol><li><p>one</p><p>more</p></li><li><p>two</p></li></ol>",
        ),
        (
            "- a\n  1. b\n  2. c\n- d",
            "<ul><li>a<ol><li>b</li><li>c</li></ol></li><li>d</li></ul>",
        ),
        (
            "```rust\nif a < b {}\n```",
            "<pre><code class=\"language-rust\">if a &lt; b {}</code></pre>",
        ),
        (
            "| a | b |\n|:-:|---|\n| 1 |",
            "<div class=\"table\"><table><thead><tr><th style=\"text-align: center;\">a</th><th>b</th></tr></thead>\
             <tbody><tr><td style=\"text-align: center;\">1</td><td></td></tr></tbody></table></div>",
        ),
        (
            "a | b\n\n---\n\n[x](javascript:alert(1))",
            "<p>a | b</p><hr><p>[x](javascript:alert(1))</p>",
        ),
        (
            "~~old~~ <https://e.org/a> <b>",
            "<p><del>old</del> <a href=\"https://e.org/a\" rel=\"noopener noreferrer\" target=\"_blank\">https://e.org/a</a> &lt;b&gt;</p>",
        ),
    ];
    for (markdown, html) in cases {
        let script = format!(
            "import('/markdown.js').then(m => m.renderMarkdown({}).innerHTML)",
            serde_json::to_string(markdown).unwrap()
        );
        assert_eq!(browser.eval(&page, &script).await, html, "{markdown}");
    }
}
