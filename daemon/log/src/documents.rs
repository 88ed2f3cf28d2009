//! A document's text, page by page: a PDF's pages as `lopdf` extracts
//! them, a text file cut into pages of about [`TEXT_PAGE_CHARS`]
//! characters at line ends.
//!
//! Reading is bounded. A PDF is read in a separate process, hearthd's own
//! binary in its reader mode ([`reader`]): a small file can inflate into
//! gigabytes of parsed objects, so the parsing runs under its own memory
//! ([`reader::MEMORY_MB`]), processor-time ([`reader::CPU_SECS`]) and
//! wall-clock ([`READ_TIMEOUT`]) limits, cannot open a file or a socket,
//! and dies with hearthd. A reading that passes a limit fails that document
//! alone, with the reason; hearthd's own memory never holds more than the
//! file and its text. A text file is cut into pages in hearthd (linear
//! work over at most [`MAX_TEXT_BYTES`]).
//!
//! Besides: the file is at most `MAX_MEDIA_BYTES`, each PDF page's
//! decompressed content at most [`MAX_PAGE_CONTENT_BYTES`], the document
//! at most [`MAX_PAGES`] pages and [`MAX_TEXT_BYTES`] of text. What is
//! plainly too large is refused before anything parses it. An encrypted or
//! malformed PDF is refused with the reason, before anything is stored.

pub mod reader;

use hearth_protocol::media::MAX_MEDIA_BYTES;
use std::time::Duration;

/// About how many characters a text file's page has.
pub const TEXT_PAGE_CHARS: usize = 3000;

/// The most pages a document may have.
pub const MAX_PAGES: usize = 2000;

/// The most text a document may hold, in all.
pub const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// The most a PDF page's content streams may decompress to.
pub const MAX_PAGE_CONTENT_BYTES: usize = 16 * 1024 * 1024;

/// How long reading one document may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    #[error("the PDF is encrypted; send it without a password")]
    Encrypted,
    #[error("the PDF cannot be read: {0}")]
    Malformed(String),
    #[error("the document has {0} pages, over the limit of {MAX_PAGES}")]
    TooManyPages(usize),
    #[error("the document holds more than {MAX_TEXT_BYTES} bytes of text")]
    TooMuchText,
    #[error("the document is {0} bytes, over the limit of {limit} for reading", limit = MAX_MEDIA_BYTES)]
    TooLarge(usize),
    #[error("reading the document took longer than {} seconds; it was not read", READ_TIMEOUT.as_secs())]
    TimedOut,
    #[error(
        "the PDF needed more than {} MB to read; it was not read",
        reader::MEMORY_MB
    )]
    TooMuchMemory,
    #[error(
        "the PDF needed more than {} seconds of processor time to read; it was not read",
        reader::CPU_SECS
    )]
    TooMuchProcessorTime,
    #[error("the PDF reader failed: {0}; it was not read")]
    ReaderFailed(String),
}

impl DocumentError {
    /// Whether the reading passed one of its limits or its reader failed
    /// (then hearthd's log says so: it may be an attack rather than a
    /// broken file).
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            DocumentError::TimedOut
                | DocumentError::TooMuchMemory
                | DocumentError::TooMuchProcessorTime
                | DocumentError::ReaderFailed(_)
        )
    }
}

/// The text of a document of `media_type`, page by page. A PDF is read in
/// a separate reader process ([`reader::read_pdf`]); a reading that passes
/// a limit is logged and refused.
pub async fn pages(media_type: &str, bytes: Vec<u8>) -> Result<Vec<String>, DocumentError> {
    let read = match media_type {
        "application/pdf" => reader::read_pdf(bytes).await,
        _ => {
            // Refused before it is decoded: no page of it is needed.
            if bytes.len() > MAX_TEXT_BYTES {
                return Err(DocumentError::TooMuchText);
            }
            let reading =
                tokio::task::spawn_blocking(move || text_pages(&String::from_utf8_lossy(&bytes)));
            match reading.await {
                Ok(read) => read,
                Err(failed) => Err(DocumentError::Malformed(failed.to_string())),
            }
        }
    };
    if let Err(err) = &read {
        if err.is_limit() {
            tracing::warn!("a document was refused: {err}");
        }
    }
    read
}

/// A PDF's pages, in order.
pub fn pdf_pages(bytes: &[u8]) -> Result<Vec<String>, DocumentError> {
    // The trailer's `/Encrypt` is refused before anything is decrypted.
    let document = lopdf::Document::load_mem(bytes)
        .map_err(|err| DocumentError::Malformed(err.to_string()))?;
    if document.was_encrypted() || document.is_encrypted() {
        return Err(DocumentError::Encrypted);
    }
    let numbers: Vec<u32> = document.get_pages().keys().copied().collect();
    if numbers.len() > MAX_PAGES {
        return Err(DocumentError::TooManyPages(numbers.len()));
    }
    if numbers.is_empty() {
        return Err(DocumentError::Malformed("it has no pages".to_string()));
    }
    let mut pages = Vec::with_capacity(numbers.len());
    let mut total = 0;
    for number in numbers {
        let text = document
            .extract_text_with_limit(&[number], MAX_PAGE_CONTENT_BYTES)
            .map_err(|err| DocumentError::Malformed(format!("page {number}: {err}")))?;
        total += text.len();
        if total > MAX_TEXT_BYTES {
            return Err(DocumentError::TooMuchText);
        }
        pages.push(text.trim_end().to_string());
    }
    Ok(pages)
}

/// A text file's pages: about [`TEXT_PAGE_CHARS`] characters each, cut at
/// a line's end where there is one. Linear in the text: each character is
/// counted once, and a long line is cut without counting its rest again.
pub fn text_pages(text: &str) -> Result<Vec<String>, DocumentError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(DocumentError::TooMuchText);
    }
    let mut pages = Vec::new();
    let mut page = String::new();
    let mut chars = 0;
    for line in text.split_inclusive('\n') {
        let length = chars_in(line);
        if chars + length > TEXT_PAGE_CHARS && !page.is_empty() {
            pages.push(std::mem::take(&mut page));
            chars = 0;
        }
        // A line longer than a page is cut where the page is full.
        let mut rest = line;
        let mut left = length;
        while left > TEXT_PAGE_CHARS {
            let cut = rest
                .char_indices()
                .nth(TEXT_PAGE_CHARS)
                .map_or(rest.len(), |(at, _)| at);
            pages.push(rest[..cut].to_string());
            rest = &rest[cut..];
            left -= TEXT_PAGE_CHARS;
        }
        chars += left;
        page.push_str(rest);
    }
    if !page.is_empty() || pages.is_empty() {
        pages.push(page);
    }
    if pages.len() > MAX_PAGES {
        return Err(DocumentError::TooManyPages(pages.len()));
    }
    Ok(pages)
}

/// How many characters `text` has.
fn chars_in(text: &str) -> usize {
    #[cfg(test)]
    COUNTED.with(|counted| counted.set(counted.get() + text.len()));
    text.chars().count()
}

#[cfg(test)]
thread_local! {
    /// Bytes counted by `chars_in` on this thread, for the linearity test.
    static COUNTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A small valid PDF with one page per text, written by hand: its objects,
/// cross-reference table and trailer. For tests, here and end to end.
pub fn tiny_pdf(texts: &[&str]) -> Vec<u8> {
    let contents = texts
        .iter()
        .map(|text| {
            let escaped = text
                .replace('\\', "\\\\")
                .replace('(', "\\(")
                .replace(')', "\\)");
            (
                String::new(),
                format!("BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET").into_bytes(),
            )
        })
        .collect();
    pdf_of(contents)
}

/// A PDF bomb for tests: `pages` pages whose content streams are a few
/// kilobytes compressed and inflate to just under
/// [`MAX_PAGE_CONTENT_BYTES`] each, of the smallest operators there are
/// (each becomes an object of tens of bytes when parsed).
pub fn bomb_pdf(pages: usize) -> Vec<u8> {
    let content = b"Q\n".repeat((MAX_PAGE_CONTENT_BYTES - 1024) / 2);
    let mut stream = lopdf::Stream::new(lopdf::Dictionary::new(), content);
    // `compress` keeps the content as it is only when compressing does not
    // make it smaller, which a run of one operator always does.
    let _ = stream.compress();
    let contents = (0..pages)
        .map(|_| (" /Filter /FlateDecode".to_string(), stream.content.clone()))
        .collect();
    pdf_of(contents)
}

/// A PDF with one page per content stream (the text after `/Length` in
/// its dictionary, and its bytes).
fn pdf_of(contents: Vec<(String, Vec<u8>)>) -> Vec<u8> {
    let count = contents.len();
    // Objects: 1 catalog, 2 pages, 3 font, then a page and its content
    // stream for each text.
    let kids: Vec<String> = (0..count).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {count} >>",
            kids.join(" ")
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    for (i, (dictionary, stream)) in contents.into_iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ).into_bytes());
        let mut object =
            format!("<< /Length {}{dictionary} >>\nstream\n", stream.len()).into_bytes();
        object.extend(stream);
        object.extend(b"\nendstream");
        objects.push(object);
    }
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend(format!("{} 0 obj\n", i + 1).bytes());
        pdf.extend(object);
        pdf.extend(b"\nendobj\n");
    }
    let xref = pdf.len();
    pdf.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for offset in offsets {
        pdf.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    pdf.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .bytes(),
    );
    pdf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_made_pdf_is_read_page_by_page() {
        let pdf = tiny_pdf(&["The rent is 900 a month.", "Notice: three months."]);
        let pages = pdf_pages(&pdf).unwrap();
        assert_eq!(pages.len(), 2);
        assert!(pages[0].contains("The rent is 900 a month."), "{pages:?}");
        assert!(pages[1].contains("three months"), "{pages:?}");
    }

    #[test]
    fn broken_and_encrypted_pdfs_are_refused_with_the_reason() {
        let broken = pdf_pages(b"%PDF-1.4\nthis is no pdf");
        assert!(
            matches!(broken, Err(DocumentError::Malformed(_))),
            "{broken:?}"
        );
        let pdf = String::from_utf8(tiny_pdf(&["secret"])).unwrap();
        // An `/Encrypt` entry in the trailer (pointing at the font, which is
        // no encryption dictionary: refused either way).
        let encrypted = pdf.replace("/Root 1 0 R", "/Root 1 0 R /Encrypt 3 0 R /ID [<00> <00>]");
        let refused = pdf_pages(encrypted.as_bytes());
        assert!(
            matches!(
                refused,
                Err(DocumentError::Encrypted | DocumentError::Malformed(_))
            ),
            "{refused:?}"
        );
    }

    #[test]
    fn text_is_cut_into_pages_at_line_ends() {
        let line = format!("{}\n", "x".repeat(999));
        let text = line.repeat(7);
        let pages = text_pages(&text).unwrap();
        assert_eq!(pages.len(), 3);
        assert_eq!(pages.concat(), text);
        assert!(pages
            .iter()
            .all(|page| page.chars().count() <= TEXT_PAGE_CHARS));
        let long = "y".repeat(TEXT_PAGE_CHARS * 2 + 5);
        let pages = text_pages(&long).unwrap();
        assert_eq!(pages.len(), 3);
        assert_eq!(pages.concat(), long);
        assert_eq!(text_pages("").unwrap(), vec![String::new()]);
    }

    /// A text of one long line (no line ends to cut at) is cut into pages
    /// counting each character once: the work grows with the text, not
    /// with its square.
    #[test]
    fn one_long_line_is_cut_in_linear_time() {
        let counted = |text: &str| {
            COUNTED.with(|counted| counted.set(0));
            let pages = text_pages(text).unwrap();
            (pages, COUNTED.with(std::cell::Cell::get))
        };
        let long = "é".repeat(TEXT_PAGE_CHARS * 1000);
        let (pages, work) = counted(&long);
        assert_eq!(pages.len(), 1000);
        assert_eq!(pages.concat(), long);
        assert!(
            work <= 2 * long.len(),
            "{work} bytes counted for {}",
            long.len()
        );
    }
}
