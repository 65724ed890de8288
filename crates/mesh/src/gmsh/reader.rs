//! A cursor over the bytes of an MSH file: text lines split into numeric fields, binary
//! integers and doubles of either byte order, section skipping, and errors that name the
//! line (ASCII files) or byte offset (binary files) where reading failed.

use crate::{FileLocation, MeshError};

/// Longest excerpt of offending text quoted in an error message.
const QUOTE_LIMIT: usize = 40;

/// The reading position in an MSH file and what is known about its encoding.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: &'a str,
    binary: bool,
    big_endian: bool,
    size_t: usize,
}

/// One non-blank line of text: where it starts and its bytes without the line ending.
#[derive(Clone, Copy)]
pub(crate) struct Line<'a> {
    /// Byte offset of the line's first byte.
    pub start: usize,
    /// The line without `\n` / `\r\n`.
    pub text: &'a [u8],
}

impl Line<'_> {
    /// The line with surrounding whitespace removed.
    pub fn trimmed(&self) -> &[u8] {
        self.text.trim_ascii()
    }
}

/// Quotes (a prefix of) some bytes for an error message, escaped by [`escape`].
pub(crate) fn quote(bytes: &[u8]) -> String {
    format!("'{}'", escape(bytes))
}

/// Text read from a file, made safe to print: control and other non-printable characters
/// (terminal escape sequences, line breaks, bidirectional overrides) are written as Rust
/// escapes (`\u{1b}`, `\n`, ...), bytes that are not UTF-8 as `\xNN`, and anything
/// after the first [`QUOTE_LIMIT`] characters is cut and marked with `...`.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut shown = 0;
    for chunk in bytes.utf8_chunks() {
        let bad = chunk.invalid().iter().map(|b| format!("\\x{b:02x}"));
        let good = chunk.valid().chars().map(|c| c.escape_debug().to_string());
        for piece in good.chain(bad) {
            if shown == QUOTE_LIMIT {
                out.push_str("...");
                return out;
            }
            out.push_str(&piece);
            shown += 1;
        }
    }
    out
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`, in text mode.
    pub fn new(bytes: &'a [u8], path: &'a str) -> Reader<'a> {
        Reader {
            bytes,
            pos: 0,
            path,
            binary: false,
            big_endian: false,
            size_t: 8,
        }
    }

    /// Switches to binary mode: from now on locations are byte offsets, and binary values
    /// are read with the given byte order and `size_t` width (4 or 8).
    pub fn set_binary(&mut self, big_endian: bool, size_t: usize) {
        self.binary = true;
        self.big_endian = big_endian;
        self.size_t = size_t;
    }

    /// Whether the file is binary.
    pub fn is_binary(&self) -> bool {
        self.binary
    }

    /// Whether binary values are big-endian.
    pub fn is_big_endian(&self) -> bool {
        self.big_endian
    }

    /// The current byte offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left after the current position.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Offset of the end of the file.
    pub fn end(&self) -> usize {
        self.bytes.len()
    }

    /// The location of byte offset `at`: a byte offset in binary files, else the 1-based
    /// line number (counted only when an error is reported).
    pub fn location(&self, at: usize) -> FileLocation {
        if self.binary {
            FileLocation::Byte(at)
        } else {
            let upto = &self.bytes[..at.min(self.bytes.len())];
            FileLocation::Line(1 + upto.iter().filter(|&&b| b == b'\n').count())
        }
    }

    /// A [`MeshError::Gmsh`] at byte offset `at`.
    pub fn error(&self, at: usize, message: impl Into<String>) -> MeshError {
        MeshError::Gmsh {
            path: self.path.to_string(),
            location: self.location(at),
            message: message.into(),
        }
    }

    /// A [`MeshError::InFile`] for this file: an error found in the mesh built from it,
    /// located at byte offset `at` when known.
    pub fn in_file(
        &self,
        at: Option<usize>,
        elements: Vec<(usize, u64)>,
        nodes: Vec<(u32, u64)>,
        source: MeshError,
    ) -> MeshError {
        MeshError::InFile {
            path: self.path.to_string(),
            location: at.map(|at| self.location(at)),
            elements,
            nodes,
            source: Box::new(source),
        }
    }

    /// A [`MeshError::Unsupported`] for this file.
    pub fn unsupported(&self, message: impl Into<String>) -> MeshError {
        MeshError::Unsupported {
            path: self.path.to_string(),
            message: message.into(),
        }
    }

    /// The next line that is not blank, or `None` at the end of the file.
    pub fn next_line(&mut self) -> Option<Line<'a>> {
        while self.pos < self.bytes.len() {
            let start = self.pos;
            let rest = &self.bytes[start..];
            let (mut text, next) = match rest.iter().position(|&b| b == b'\n') {
                Some(n) => (&rest[..n], start + n + 1),
                None => (rest, self.bytes.len()),
            };
            if let Some(t) = text.strip_suffix(b"\r") {
                text = t;
            }
            self.pos = next;
            if !text.trim_ascii().is_empty() {
                return Some(Line { start, text });
            }
        }
        None
    }

    /// The next line of section data. Fails at the end of the file and on a `$` line
    /// (a section ended before all announced entries were read); `what` describes the
    /// expected entry and is only evaluated for the message.
    pub fn data_line(&mut self, what: impl FnOnce() -> String) -> Result<Line<'a>, MeshError> {
        match self.next_line() {
            None => Err(self.error(
                self.bytes.len(),
                format!("unexpected end of file: expected {}", what()),
            )),
            Some(line) if line.trimmed().starts_with(b"$") => Err(self.error(
                line.start,
                format!(
                    "found {} where {} was expected (the section holds fewer entries than it announced)",
                    quote(line.trimmed()),
                    what()
                ),
            )),
            Some(line) => Ok(line),
        }
    }

    /// Numeric fields of a line.
    pub fn fields<'r>(&'r self, line: Line<'a>) -> Fields<'r, 'a> {
        Fields {
            reader: self,
            start: line.start,
            rest: line.text,
        }
    }

    /// Reads the `$End<name>` line that closes a section.
    pub fn expect_end(&mut self, name: &str) -> Result<(), MeshError> {
        let at = self.pos;
        match self.next_line() {
            None => Err(self.error(
                self.bytes.len(),
                format!("unexpected end of file: expected $End{name}"),
            )),
            Some(line) => {
                let t = line.trimmed();
                if t.strip_prefix(b"$End") == Some(name.as_bytes()) {
                    Ok(())
                } else {
                    let hint = if t.starts_with(b"$") {
                        ""
                    } else {
                        " (the section holds more entries than it announced?)"
                    };
                    let where_ = if self.binary { at } else { line.start };
                    Err(self.error(
                        where_,
                        format!("expected $End{name}, found {}{hint}", quote(t)),
                    ))
                }
            }
        }
    }

    /// Skips a section whose contents are not read, up to and including its
    /// `$End<name>` line; `start` is the offset of the `$<name>` line, for the error.
    pub fn skip_section(&mut self, name: &[u8], start: usize) -> Result<(), MeshError> {
        let marker = [b"$End", name].concat();
        let marker = &marker[..];
        let mut from = self.pos;
        while let Some(k) = find(&self.bytes[from..], marker) {
            let at = from + k;
            let after = at + marker.len();
            let line_start = at == 0 || self.bytes[at - 1] == b'\n';
            let line_end = matches!(
                self.bytes.get(after),
                None | Some(b'\n' | b'\r' | b' ' | b'\t')
            );
            if line_start && line_end {
                self.pos = after;
                // Consume the rest of the marker line.
                self.next_line_raw();
                return Ok(());
            }
            from = at + 1;
        }
        let name = escape(name);
        Err(self.error(
            start,
            format!("section ${name} starting here has no matching $End{name}"),
        ))
    }

    /// Advances past the end of the current line (blank or not).
    fn next_line_raw(&mut self) {
        match self.bytes[self.pos..].iter().position(|&b| b == b'\n') {
            Some(n) => self.pos += n + 1,
            None => self.pos = self.bytes.len(),
        }
    }

    /// The next `n` bytes of binary data.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], MeshError> {
        if self.remaining() < n {
            return Err(self.error(
                self.pos,
                format!(
                    "unexpected end of file reading {what} ({n} bytes needed, {} left)",
                    self.remaining()
                ),
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], MeshError> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        if self.big_endian {
            a.reverse();
        }
        Ok(a)
    }

    /// A binary 4-byte signed integer.
    pub fn i32(&mut self, what: &str) -> Result<i32, MeshError> {
        Ok(i32::from_le_bytes(self.array::<4>(what)?))
    }

    /// A binary 4-byte integer that must not be negative (a count, type or node tag).
    pub fn u32_nonneg(&mut self, what: &str) -> Result<u32, MeshError> {
        let at = self.pos;
        let v = self.i32(what)?;
        u32::try_from(v)
            .map_err(|_| self.error(at, format!("bad {what} {v}: must not be negative")))
    }

    /// A binary `size_t` (4 or 8 bytes, as announced in `$MeshFormat`).
    pub fn size_t(&mut self, what: &str) -> Result<u64, MeshError> {
        if self.size_t == 4 {
            Ok(u32::from_le_bytes(self.array::<4>(what)?) as u64)
        } else {
            Ok(u64::from_le_bytes(self.array::<8>(what)?))
        }
    }

    /// A binary 8-byte double.
    pub fn f64(&mut self, what: &str) -> Result<f64, MeshError> {
        Ok(f64::from_le_bytes(self.array::<8>(what)?))
    }
}

/// Offset of the first occurrence of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    let mut from = 0;
    while let Some(k) = hay[from..].iter().position(|&b| b == first) {
        let at = from + k;
        if hay[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Whitespace-separated numeric fields of one line, parsed on demand; errors point at the
/// line.
pub(crate) struct Fields<'r, 'a> {
    reader: &'r Reader<'a>,
    start: usize,
    rest: &'a [u8],
}

impl<'a> Fields<'_, 'a> {
    /// An error at this line.
    pub fn error(&self, message: impl Into<String>) -> MeshError {
        self.reader.error(self.start, message)
    }

    fn token(&mut self, what: &str) -> Result<&'a [u8], MeshError> {
        let r = self.rest.trim_ascii_start();
        let n = r
            .iter()
            .position(|b| b.is_ascii_whitespace())
            .unwrap_or(r.len());
        if n == 0 {
            return Err(self.error(format!("line ends early: expected {what}")));
        }
        self.rest = &r[n..];
        Ok(&r[..n])
    }

    fn parse<T: std::str::FromStr>(&mut self, what: &str, kind: &str) -> Result<T, MeshError> {
        let tok = self.token(what)?;
        std::str::from_utf8(tok)
            .ok()
            .and_then(|s| s.parse::<T>().ok())
            .ok_or_else(|| {
                self.error(format!(
                    "bad number {} (expected {what}, {kind})",
                    quote(tok)
                ))
            })
    }

    /// A non-negative integer (tag, count).
    pub fn u64(&mut self, what: &str) -> Result<u64, MeshError> {
        self.parse(what, "a non-negative integer")
    }

    /// A non-negative integer used as a count.
    pub fn usize(&mut self, what: &str) -> Result<usize, MeshError> {
        self.parse(what, "a non-negative integer")
    }

    /// A non-negative integer below 2^32 (element type).
    pub fn u32(&mut self, what: &str) -> Result<u32, MeshError> {
        self.parse(what, "a non-negative integer")
    }

    /// A signed 32-bit integer (physical or entity tag).
    pub fn i32(&mut self, what: &str) -> Result<i32, MeshError> {
        self.parse(what, "a 32-bit integer")
    }

    /// A finite floating-point number.
    pub fn f64(&mut self, what: &str) -> Result<f64, MeshError> {
        let v: f64 = self.parse(what, "a floating-point number")?;
        if v.is_finite() {
            Ok(v)
        } else {
            Err(self.error(format!("{what} is not finite ({v})")))
        }
    }

    /// Number of fields not yet read.
    pub fn count_left(&self) -> usize {
        self.rest
            .split(|b| b.is_ascii_whitespace())
            .filter(|s| !s.is_empty())
            .count()
    }

    /// The unread rest of the line.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Checks that nothing but whitespace is left on the line.
    pub fn finish(mut self, after: &str) -> Result<(), MeshError> {
        let r = self.rest.trim_ascii();
        if r.is_empty() {
            return Ok(());
        }
        let tok = self.token(after)?;
        Err(self.error(format!(
            "unexpected extra value {} after {after}",
            quote(tok)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_skip_blanks_and_report_numbers() {
        let text = b"a\n\n  \r\nb c\r\nd";
        let mut r = Reader::new(text, "x");
        let l = r.next_line().map(|l| l.text.to_vec());
        assert_eq!(l.as_deref(), Some(&b"a"[..]));
        let l = r.next_line().expect("b c");
        assert_eq!(l.text, b"b c");
        assert_eq!(r.location(l.start), FileLocation::Line(4));
        let l = r.next_line().expect("d");
        assert_eq!(l.text, b"d");
        assert!(r.next_line().is_none());
        assert_eq!(r.location(r.end()), FileLocation::Line(5));
    }

    #[test]
    fn fields_parse_and_name_bad_tokens() {
        let text = b"1 2.5 abc";
        let mut r = Reader::new(text, "f.msh");
        let line = r.next_line().expect("line");
        let mut f = r.fields(line);
        assert_eq!(f.u64("tag").ok(), Some(1));
        assert_eq!(f.f64("x").ok(), Some(2.5));
        assert_eq!(f.count_left(), 1);
        let e = f.f64("y").expect_err("abc");
        let msg = e.to_string();
        assert!(msg.contains("bad number 'abc'"), "{msg}");
        assert!(msg.contains("f.msh: line 1"), "{msg}");
    }

    #[test]
    fn quoted_text_is_escaped_and_cut() {
        assert_eq!(quote(b"abc"), "'abc'");
        // a terminal colour sequence, a line break, a bidirectional override and a byte
        // that is not UTF-8 all come out as visible escapes
        let q = quote(b"\x1b[31mred\r\n\xe2\x80\xae\xc3\xa9\xff");
        assert_eq!(q, "'\\u{1b}[31mred\\r\\n\\u{202e}\u{e9}\\xff'");
        assert!(!q.chars().any(|c| c.is_control()), "{q}");
        let long = [b'7'; 100];
        let q = quote(&long);
        assert_eq!(q, format!("'{}...'", "7".repeat(QUOTE_LIMIT)));
        // the limit counts characters, not the bytes of their escapes
        let q = quote(&[0u8; 100]);
        assert_eq!(q.matches("\\0").count(), QUOTE_LIMIT, "{q}");
    }

    #[test]
    fn binary_values_in_both_byte_orders() {
        let mut le = 7i32.to_le_bytes().to_vec();
        le.extend(2.5f64.to_le_bytes());
        le.extend(9u64.to_le_bytes());
        let mut r = Reader::new(&le, "x");
        r.set_binary(false, 8);
        assert_eq!(r.i32("i").ok(), Some(7));
        assert_eq!(r.f64("d").ok(), Some(2.5));
        assert_eq!(r.size_t("s").ok(), Some(9));
        let mut be = 7i32.to_be_bytes().to_vec();
        be.extend(2.5f64.to_be_bytes());
        be.extend(9u32.to_be_bytes());
        let mut r = Reader::new(&be, "x");
        r.set_binary(true, 4);
        assert_eq!(r.i32("i").ok(), Some(7));
        assert_eq!(r.f64("d").ok(), Some(2.5));
        assert_eq!(r.size_t("s").ok(), Some(9));
        match r.i32("i") {
            Err(MeshError::Gmsh { location, .. }) => assert_eq!(location, FileLocation::Byte(16)),
            other => panic!("expected an end-of-file error, got {other:?}"),
        }
    }

    #[test]
    fn sections_are_skipped_to_their_end_marker() {
        let text = b"$Foo\n$EndFooBar\n1 2\n$EndFoo\nnext\n";
        let mut r = Reader::new(text, "x");
        let start = r.next_line().expect("header").start;
        r.skip_section(b"Foo", start).expect("skips");
        assert_eq!(r.next_line().map(|l| l.text), Some(&b"next"[..]));
        let mut r = Reader::new(b"$Foo\n1\n", "x");
        let start = r.next_line().expect("header").start;
        match r.skip_section(b"Foo", start) {
            Err(MeshError::Gmsh { location, .. }) => assert_eq!(location, FileLocation::Line(1)),
            other => panic!("expected a missing-end error, got {other:?}"),
        }
    }
}
