//! What kind of file an upload is, from its bytes alone (CONTRACT.md §4, "Résumés"): PDF, DOCX,
//! ODT, RTF or plain UTF-8 text. Neither the file's name nor the client's content type is ever
//! asked. [`Recognizer`] reads the bytes as they arrive and refuses another kind at its first
//! bytes, a text that stops being text at that chunk; a ZIP is judged at the end, from its
//! central directory (DOCX) or its first entry (ODT), since a ZIP of anything else starts alike.

use std::io::{Read, Seek};

/// A kind of résumé the board takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pdf,
    Docx,
    Odt,
    Rtf,
    Text,
}

impl Kind {
    /// The media type a download is served with.
    pub fn content_type(self) -> &'static str {
        match self {
            Kind::Pdf => "application/pdf",
            Kind::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Kind::Odt => "application/vnd.oasis.opendocument.text",
            Kind::Rtf => "application/rtf",
            Kind::Text => "text/plain; charset=utf-8",
        }
    }
}

/// Why an upload is not a résumé the board takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Another kind of file (415), and what it looks like.
    Kind(&'static str),
    /// No bytes at all (422).
    Empty,
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::Kind(what) => format!(
                "{what}: a résumé must be a PDF, DOCX, ODT, RTF or plain UTF-8 text file (its \
                 kind is read from its content, not its name)"
            ),
            Refusal::Empty => "is empty".to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Pdf,
    Rtf,
    Zip,
    Text,
}

/// Bytes gathered before the family is decided (fewer at the end of a short file).
const HEAD: usize = 512;
const ODT_MIMETYPE: &[u8] = b"application/vnd.oasis.opendocument.text";

/// Reads an upload's bytes in order and says what it is.
#[derive(Debug, Default)]
pub struct Recognizer {
    head: Vec<u8>,
    family: Option<Family>,
    /// The bytes of a UTF-8 sequence cut by the end of the last chunk (text only).
    carry: Vec<u8>,
    len: u64,
}

impl Recognizer {
    pub fn new() -> Recognizer {
        Recognizer::default()
    }

    /// Takes the next chunk; refuses as soon as the bytes so far cannot be a résumé.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Refusal> {
        self.len += chunk.len() as u64;
        match self.family {
            Some(Family::Text) => self.text(chunk),
            Some(_) => Ok(()),
            None => {
                let room = HEAD - self.head.len();
                let (into_head, rest) = chunk.split_at(room.min(chunk.len()));
                self.head.extend_from_slice(into_head);
                if self.head.len() < HEAD {
                    return Ok(());
                }
                self.decide()?;
                if self.family == Some(Family::Text) {
                    self.text(rest)?;
                }
                Ok(())
            }
        }
    }

    /// The kind, if the bytes read decide it once all are in; `None` for a ZIP ([`Self::finish`]).
    pub fn finish_read(&mut self) -> Result<Option<Kind>, Refusal> {
        if self.len == 0 {
            return Err(Refusal::Empty);
        }
        if self.family.is_none() {
            self.decide()?;
        }
        match self.family {
            Some(Family::Pdf) => Ok(Some(Kind::Pdf)),
            Some(Family::Rtf) => Ok(Some(Kind::Rtf)),
            Some(Family::Text) if self.carry.is_empty() => Ok(Some(Kind::Text)),
            Some(Family::Text) => Err(Refusal::Kind("not UTF-8 text")),
            Some(Family::Zip) | None => Ok(None),
        }
    }

    /// The kind, once every byte is in: `file` holds them all, for a ZIP's directory.
    pub fn finish<F: Read + Seek>(mut self, file: F) -> Result<Kind, Refusal> {
        self.finish_read()?
            .map_or_else(|| zip_kind(&self.head, file), Ok)
    }

    fn decide(&mut self) -> Result<(), Refusal> {
        let head = self.head.as_slice();
        let family = if head.starts_with(b"%PDF-") {
            Family::Pdf
        } else if head.starts_with(b"{\\rtf") {
            Family::Rtf
        } else if head.starts_with(b"PK\x03\x04") {
            Family::Zip
        } else {
            if looks_like_markup(head) {
                return Err(Refusal::Kind("an HTML or XML document"));
            }
            Family::Text
        };
        self.family = Some(family);
        if family == Family::Text {
            let head = std::mem::take(&mut self.head);
            self.text(&head)?;
            self.head = head;
        }
        Ok(())
    }

    /// Checks the next bytes of a text file: UTF-8, with no control character but tab, line
    /// feed, form feed and carriage return.
    fn text(&mut self, chunk: &[u8]) -> Result<(), Refusal> {
        let mut bytes = std::mem::take(&mut self.carry);
        bytes.extend_from_slice(chunk);
        let valid = match std::str::from_utf8(&bytes) {
            Ok(s) => s,
            Err(e) if e.error_len().is_none() => {
                // Cut inside a sequence: the rest comes with the next chunk.
                let (good, cut) = bytes.split_at(e.valid_up_to());
                self.carry = cut.to_vec();
                std::str::from_utf8(good).map_err(|_| Refusal::Kind("not UTF-8 text"))?
            }
            Err(_) => return Err(Refusal::Kind("binary data, not UTF-8 text")),
        };
        if valid
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{c}'))
        {
            return Err(Refusal::Kind("binary data, not UTF-8 text"));
        }
        Ok(())
    }
}

/// Whether text starts as HTML (or XML, SVG) does, as browsers sniff it (the WHATWG MIME
/// Sniffing Standard's "HTML" patterns): a browser shown it would run it.
fn looks_like_markup(head: &[u8]) -> bool {
    let start = head
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(head);
    let start: &[u8] = {
        let skip = start
            .iter()
            .take_while(|b| matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' '))
            .count();
        &start[skip..]
    };
    const TAGS: &[&[u8]] = &[
        b"<!DOCTYPE HTML",
        b"<HTML",
        b"<HEAD",
        b"<SCRIPT",
        b"<IFRAME",
        b"<H1",
        b"<DIV",
        b"<FONT",
        b"<TABLE",
        b"<A",
        b"<STYLE",
        b"<TITLE",
        b"<B",
        b"<BODY",
        b"<BR",
        b"<P",
        b"<!--",
        b"<?XML",
        b"<SVG",
    ];
    TAGS.iter().any(|tag| {
        start.len() > tag.len()
            && start[..tag.len()].eq_ignore_ascii_case(tag)
            && (tag == b"<!--"
                || tag == b"<?XML"
                || matches!(
                    start[tag.len()],
                    b' ' | b'>' | b'\t' | b'\n' | b'\r' | b'\x0c'
                ))
    })
}

/// A ZIP is an ODT when its first entry is the stored `mimetype` naming an ODF text document
/// (as the OpenDocument standard requires), a DOCX when its directory holds the Open Packaging
/// parts of a WordprocessingML document; any other ZIP (or a broken one) is refused.
fn zip_kind<F: Read + Seek>(head: &[u8], file: F) -> Result<Kind, Refusal> {
    let archive =
        zip::ZipArchive::new(file).map_err(|_| Refusal::Kind("a damaged or unknown archive"))?;
    let odt = head.len() >= 38 + ODT_MIMETYPE.len()
        && &head[30..38] == b"mimetype"
        && &head[38..38 + ODT_MIMETYPE.len()] == ODT_MIMETYPE;
    if odt && archive.index_for_name("content.xml").is_some() {
        return Ok(Kind::Odt);
    }
    let docx = archive.index_for_name("[Content_Types].xml").is_some()
        && archive.index_for_name("word/document.xml").is_some();
    // The directory is read; nothing of the entries' contents needs to be.
    if docx {
        Ok(Kind::Docx)
    } else {
        Err(Refusal::Kind(
            "an archive that is not a DOCX or ODT document",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn kind(bytes: &[u8], chunk: usize) -> Result<Kind, Refusal> {
        let mut r = Recognizer::new();
        for c in bytes.chunks(chunk.max(1)) {
            r.feed(c)?;
        }
        r.finish(Cursor::new(bytes.to_vec()))
    }

    /// A ZIP holding `names` (empty entries, stored), built by hand.
    fn zip_of(names: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut dir = Vec::new();
        for (name, data) in names {
            let offset = out.len() as u32;
            let crc = crc32(data);
            out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
            out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(data);
            dir.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
            dir.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            dir.extend_from_slice(&crc.to_le_bytes());
            dir.extend_from_slice(&(data.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(data.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(name.len() as u16).to_le_bytes());
            dir.extend_from_slice(&[0; 12]);
            dir.extend_from_slice(&offset.to_le_bytes());
            dir.extend_from_slice(name.as_bytes());
        }
        let dir_offset = out.len() as u32;
        out.extend_from_slice(&dir);
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&(names.len() as u16).to_le_bytes());
        out.extend_from_slice(&(names.len() as u16).to_le_bytes());
        out.extend_from_slice(&(dir.len() as u32).to_le_bytes());
        out.extend_from_slice(&dir_offset.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out
    }

    fn crc32(data: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn kinds_are_read_from_the_bytes_in_any_chunking() {
        let docx = zip_of(&[
            ("[Content_Types].xml", b"<Types/>"),
            ("word/document.xml", b"<w:document/>"),
        ]);
        let odt = zip_of(&[("mimetype", ODT_MIMETYPE), ("content.xml", b"<office/>")]);
        let cases: Vec<(Vec<u8>, Kind)> = vec![
            (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj".to_vec(), Kind::Pdf),
            (b"{\\rtf1\\ansi Jane Doe}".to_vec(), Kind::Rtf),
            (
                "Jane Doe — ingénieure\nSkills: Rust\r\n\tand SQL\n"
                    .repeat(40)
                    .into_bytes(),
                Kind::Text,
            ),
            (docx, Kind::Docx),
            (odt, Kind::Odt),
        ];
        for (bytes, want) in cases {
            for chunk in [1, 3, 7, 512, 100_000] {
                assert_eq!(
                    kind(&bytes, chunk),
                    Ok(want),
                    "{want:?} in chunks of {chunk}"
                );
            }
        }
    }

    #[test]
    fn other_kinds_are_refused() {
        let zip = zip_of(&[("photo.jpg", b"\xff\xd8\xff")]);
        let fake_odt = zip_of(&[(
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        )]);
        let cases: Vec<Vec<u8>> = vec![
            b"<!DOCTYPE html><html><script>alert(1)</script></html>".to_vec(),
            b"\xEF\xBB\xBF  <html>\n<body>CV</body>".to_vec(),
            b"<svg xmlns='http://www.w3.org/2000/svg'/>".to_vec(),
            b"<?xml version='1.0'?><x/>".to_vec(),
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(),
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 an old .doc".to_vec(),
            b"MZ\x90\0\x03".to_vec(),
            b"Latin-1 caf\xe9".to_vec(),
            zip,
            fake_odt,
            b"PK\x03\x04 not really a zip".to_vec(),
        ];
        for bytes in cases {
            for chunk in [1, 4096] {
                assert!(
                    matches!(kind(&bytes, chunk), Err(Refusal::Kind(_))),
                    "{:?} in chunks of {chunk}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
        assert_eq!(kind(b"", 1), Err(Refusal::Empty));
    }

    #[test]
    fn binary_is_refused_at_its_first_bytes_before_the_rest_arrives() {
        let mut r = Recognizer::new();
        let mut first = vec![0u8; HEAD];
        first[..4].copy_from_slice(b"\x7fELF");
        assert!(r.feed(&first).is_err(), "refused at the first chunk");
        let mut text = Recognizer::new();
        text.feed(&b"plain text ".repeat(100)).unwrap();
        assert!(
            text.feed(b"then a NUL \0").is_err(),
            "refused at the chunk that stops being text"
        );
    }

    #[test]
    fn a_character_cut_between_chunks_is_still_text() {
        let s = "é".repeat(600);
        let bytes = s.as_bytes();
        let mut r = Recognizer::new();
        r.feed(&bytes[..HEAD + 1]).unwrap();
        r.feed(&bytes[HEAD + 1..]).unwrap();
        assert_eq!(r.finish(Cursor::new(bytes.to_vec())), Ok(Kind::Text));
        let mut cut = Recognizer::new();
        cut.feed(&bytes[..HEAD + 1]).unwrap();
        assert!(
            cut.finish(Cursor::new(Vec::new())).is_err(),
            "a file ending inside a character"
        );
    }
}
