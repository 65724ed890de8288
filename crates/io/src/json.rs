//! JSON output: whole documents and JSON Lines records (one object per line) that
//! accumulate across benchmark runs.

use crate::IoError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// Writes `value` as pretty-printed JSON (with a final newline), replacing the file.
pub fn write_json(path: impl AsRef<Path>, value: &impl Serialize) -> Result<(), IoError> {
    let path = path.as_ref();
    let file = File::create(path).map_err(|e| IoError::os(path, e))?;
    let mut w = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut w, value).map_err(|e| json_error(path, e))?;
    w.write_all(b"\n")
        .and_then(|()| w.flush())
        .map_err(|e| IoError::os(path, e))
}

/// Appends `value` as one compact JSON line to `path` (created if missing).
///
/// The record is serialised first and written with a single `write` call in append
/// mode, so a failed serialisation leaves the file untouched and concurrent appenders
/// do not interleave within a line (on local file systems).
pub fn append_json_line(path: impl AsRef<Path>, value: &impl Serialize) -> Result<(), IoError> {
    let path = path.as_ref();
    let mut line = serde_json::to_vec(value).map_err(|e| json_error(path, e))?;
    line.push(b'\n');
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| IoError::os(path, e))?;
    file.write_all(&line).map_err(|e| IoError::os(path, e))
}

/// Reads every non-blank line of a JSON Lines file as a `T` (to compare benchmark
/// records across versions); a line that does not parse gives [`IoError::Parse`] with
/// its number.
pub fn read_json_lines<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<Vec<T>, IoError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| IoError::os(path, e))?;
    let mut out = Vec::new();
    for (k, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                IoError::parse(path, k + 1, "not valid UTF-8 text")
            } else {
                IoError::os(path, e)
            }
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let value =
            serde_json::from_str(&line).map_err(|e| IoError::parse(path, k + 1, e.to_string()))?;
        out.push(value);
    }
    Ok(out)
}

fn json_error(path: &Path, source: serde_json::Error) -> IoError {
    IoError::Json {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Record {
        name: String,
        gdofs: f64,
        order: u32,
    }

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("ferrofem-io-{}-{name}", std::process::id()))
    }

    #[test]
    fn pretty_json_reads_back() {
        let path = temp("doc.json");
        let r = Record {
            name: "bp5 \"hex\"".into(),
            gdofs: 1.0 / 3.0,
            order: 4,
        };
        write_json(&path, &r).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        let _ = std::fs::remove_file(&path);
        assert!(text.ends_with("}\n") && text.lines().count() > 3, "pretty");
        let back: Record = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, r);
    }

    #[test]
    fn json_lines_accumulate_one_record_per_line() {
        let path = temp("records.jsonl");
        let _ = std::fs::remove_file(&path);
        let records: Vec<Record> = (0..3)
            .map(|i| Record {
                name: format!("run\n{i}"),
                gdofs: i as f64 * 0.7,
                order: i,
            })
            .collect();
        for r in &records {
            append_json_line(&path, r).expect("appends");
        }
        let text = std::fs::read_to_string(&path).expect("reads");
        assert_eq!(
            text.lines().count(),
            3,
            "newlines inside strings are escaped"
        );
        let back: Vec<Record> = read_json_lines(&path).expect("reads back");
        assert_eq!(back, records);
        std::fs::write(&path, format!("{text}\n{{\"name\": 1}}\n")).expect("writes");
        let err = read_json_lines::<Record>(&path).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(matches!(err, IoError::Parse { line: 5, .. }), "{err}");
    }

    #[test]
    fn serialisation_failure_is_a_json_error_and_leaves_no_line() {
        let path = temp("bad.jsonl");
        let _ = std::fs::remove_file(&path);
        // maps with non-string keys cannot be JSON objects
        let mut bad = std::collections::BTreeMap::new();
        bad.insert(vec![1u8], 2);
        let err = append_json_line(&path, &bad).unwrap_err();
        assert!(matches!(err, IoError::Json { .. }));
        assert!(!path.exists());
    }
}
