//! A small CSV writer for tables and time series (seismograms, convergence histories).

use crate::number::push_shortest;
use crate::IoError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// One cell of a CSV row with mixed types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CsvValue<'a> {
    /// A number, written with the fewest digits that read back exactly.
    Num(f64),
    /// An integer.
    Int(i64),
    /// Text, quoted when it contains a comma, quote, line break or edge spaces.
    Text(&'a str),
}

impl From<f64> for CsvValue<'_> {
    fn from(x: f64) -> Self {
        CsvValue::Num(x)
    }
}

impl From<i64> for CsvValue<'_> {
    fn from(x: i64) -> Self {
        CsvValue::Int(x)
    }
}

impl From<usize> for CsvValue<'_> {
    fn from(x: usize) -> Self {
        // saturates only beyond i64::MAX, which no row or step count reaches
        CsvValue::Int(i64::try_from(x).unwrap_or(i64::MAX))
    }
}

impl<'a> From<&'a str> for CsvValue<'a> {
    fn from(s: &'a str) -> Self {
        CsvValue::Text(s)
    }
}

/// Writes a comma-separated file: a header line, then rows with as many fields.
///
/// Numbers are written exactly (shortest round-trip digits, exponent notation for very
/// large or small magnitudes), so a table read back by NumPy or pandas holds the same
/// bits. Lines end in `\n`. Call [`CsvWriter::finish`] to see write errors; dropping
/// the writer flushes but cannot report them.
#[derive(Debug)]
pub struct CsvWriter {
    w: BufWriter<File>,
    path: PathBuf,
    columns: usize,
    line: String,
}

impl CsvWriter {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create<S: AsRef<str>>(
        path: impl AsRef<Path>,
        header: &[S],
    ) -> Result<CsvWriter, IoError> {
        let path = path.as_ref();
        if header.is_empty() {
            return Err(IoError::invalid(
                path,
                "a CSV header needs at least one column",
            ));
        }
        let file = File::create(path).map_err(|e| IoError::os(path, e))?;
        let mut w = CsvWriter {
            w: BufWriter::new(file),
            path: path.to_path_buf(),
            columns: header.len(),
            line: String::new(),
        };
        let cells: Vec<CsvValue<'_>> = header.iter().map(|h| CsvValue::Text(h.as_ref())).collect();
        w.row_values(&cells)?;
        Ok(w)
    }

    /// Number of columns (the header's length).
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Writes a row of numbers.
    pub fn row(&mut self, values: &[f64]) -> Result<(), IoError> {
        self.check_len(values.len())?;
        self.line.clear();
        for (k, &x) in values.iter().enumerate() {
            if k > 0 {
                self.line.push(',');
            }
            push_shortest(&mut self.line, x);
        }
        self.emit()
    }

    /// Writes a row of text fields.
    pub fn row_str<S: AsRef<str>>(&mut self, values: &[S]) -> Result<(), IoError> {
        let cells: Vec<CsvValue<'_>> = values.iter().map(|s| CsvValue::Text(s.as_ref())).collect();
        self.row_values(&cells)
    }

    /// Writes a row of mixed numbers and text.
    pub fn row_values(&mut self, values: &[CsvValue<'_>]) -> Result<(), IoError> {
        self.check_len(values.len())?;
        self.line.clear();
        for (k, v) in values.iter().enumerate() {
            if k > 0 {
                self.line.push(',');
            }
            match *v {
                CsvValue::Num(x) => push_shortest(&mut self.line, x),
                CsvValue::Int(i) => self.line.push_str(&i.to_string()),
                CsvValue::Text(s) => push_text(&mut self.line, s),
            }
        }
        self.emit()
    }

    /// Flushes buffered rows to the file (to watch a long run's output as it grows).
    pub fn flush(&mut self) -> Result<(), IoError> {
        self.w.flush().map_err(|e| IoError::os(&self.path, e))
    }

    /// Flushes and closes the file, reporting any write error.
    pub fn finish(mut self) -> Result<(), IoError> {
        self.flush()
    }

    fn check_len(&self, n: usize) -> Result<(), IoError> {
        if n == self.columns {
            Ok(())
        } else {
            Err(IoError::invalid(
                &self.path,
                format!("CSV row has {n} fields, the header has {}", self.columns),
            ))
        }
    }

    fn emit(&mut self) -> Result<(), IoError> {
        self.line.push('\n');
        self.w
            .write_all(self.line.as_bytes())
            .map_err(|e| IoError::os(&self.path, e))
    }
}

/// Appends a text field, quoted (RFC 4180) when needed.
fn push_text(out: &mut String, s: &str) {
    let needs_quotes = s.contains([',', '"', '\n', '\r'])
        || s.starts_with(char::is_whitespace)
        || s.ends_with(char::is_whitespace);
    if needs_quotes {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_header_and_exact_numbers() {
        let path = std::env::temp_dir().join(format!("ferrofem-io-{}.csv", std::process::id()));
        let rows: Vec<[f64; 3]> = (0..20)
            .map(|i| {
                let t = i as f64 * 0.1;
                [t, (t * 7.0).sin() * 1e-9, 1.0 / (t + 3.0) * 1e20]
            })
            .collect();
        let mut w = CsvWriter::create(&path, &["t", "r0", "r1"]).expect("creates");
        assert_eq!(w.columns(), 3);
        for r in &rows {
            w.row(r).expect("row");
        }
        let err = w.row(&[1.0]).unwrap_err();
        assert!(err.to_string().contains("1 fields, the header has 3"));
        w.row_values(&[CsvValue::Text("a, \"b\""), 3usize.into(), (-0.5).into()])
            .expect("mixed row");
        w.finish().expect("finishes");
        let text = std::fs::read_to_string(&path).expect("reads");
        let _ = std::fs::remove_file(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "t,r0,r1");
        assert_eq!(lines.len(), rows.len() + 2);
        for (r, line) in rows.iter().zip(&lines[1..]) {
            let back: Vec<f64> = line
                .split(',')
                .map(|s| s.parse().expect("number"))
                .collect();
            assert_eq!(back.len(), 3);
            assert!(
                r.iter().zip(&back).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{line}"
            );
        }
        assert_eq!(lines[rows.len() + 1], "\"a, \"\"b\"\"\",3,-0.5");
    }
}
