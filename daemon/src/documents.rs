//! A document's text, page by page: a PDF's pages as `lopdf` extracts
//! them, a text file cut into pages of about [`TEXT_PAGE_CHARS`]
//! characters at line ends.
//!
//! Reading is bounded: the file is at most `MAX_MEDIA_BYTES`, each PDF
//! page's decompressed content at most [`MAX_PAGE_CONTENT_BYTES`], the
//! document at most [`MAX_PAGES`] pages and [`MAX_TEXT_BYTES`] of text, and
//! the whole read at most [`READ_TIMEOUT`] (the reading thread is then
//! abandoned and the file refused). An encrypted or malformed PDF is
//! refused with the reason, before anything is stored.

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
    #[error("reading the document took longer than {} seconds", READ_TIMEOUT.as_secs())]
    TimedOut,
}

/// The text of a document of `media_type`, page by page.
pub async fn pages(media_type: &str, bytes: Vec<u8>) -> Result<Vec<String>, DocumentError> {
    let media_type = media_type.to_string();
    let reading = tokio::task::spawn_blocking(move || match media_type.as_str() {
        "application/pdf" => pdf_pages(&bytes),
        _ => text_pages(&String::from_utf8_lossy(&bytes)),
    });
    match tokio::time::timeout(READ_TIMEOUT, reading).await {
        Ok(Ok(read)) => read,
        Ok(Err(panicked)) => Err(DocumentError::Malformed(panicked.to_string())),
        Err(_) => Err(DocumentError::TimedOut),
    }
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
/// a line's end where there is one.
pub fn text_pages(text: &str) -> Result<Vec<String>, DocumentError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(DocumentError::TooMuchText);
    }
    let mut pages = Vec::new();
    let mut page = String::new();
    let mut chars = 0;
    for line in text.split_inclusive('\n') {
        let length = line.chars().count();
        if chars + length > TEXT_PAGE_CHARS && !page.is_empty() {
            pages.push(std::mem::take(&mut page));
            chars = 0;
        }
        // A line longer than a page is cut where the page is full.
        let mut rest = line;
        while rest.chars().count() > TEXT_PAGE_CHARS {
            let cut = rest
                .char_indices()
                .nth(TEXT_PAGE_CHARS)
                .map_or(rest.len(), |(at, _)| at);
            pages.push(rest[..cut].to_string());
            rest = &rest[cut..];
        }
        chars += rest.chars().count();
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

/// A small valid PDF with one page per text, written by hand: its objects,
/// cross-reference table and trailer. For tests, here and end to end.
pub fn tiny_pdf(texts: &[&str]) -> Vec<u8> {
    let count = texts.len();
    // Objects: 1 catalog, 2 pages, 3 font, then a page and its content
    // stream for each text.
    let kids: Vec<String> = (0..count).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {count} >>",
            kids.join(" ")
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    for (i, text) in texts.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        let escaped = text
            .replace('\\', "\\\\")
            .replace('(', "\\(")
            .replace(')', "\\)");
        let stream = format!("BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET");
        objects.push(format!(
            "<< /Length {} >>\nstream\n{stream}\nendstream",
            stream.len()
        ));
    }
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend(format!("{} 0 obj\n{object}\nendobj\n", i + 1).bytes());
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
}
