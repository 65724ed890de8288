//! The error type of every reader and writer in this crate.

use std::path::{Path, PathBuf};

/// Everything that can go wrong reading or writing a file.
///
/// Each variant names the file involved, so that a message printed by the command line
/// tells the user which file to look at (and, for parse errors, which line).
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The operating system refused an operation (open, create, read, write, flush).
    #[error("{}: {source}", path.display())]
    Os {
        /// The file involved (`<writer>`/`<reader>` for in-memory streams).
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A text file could not be understood.
    #[error("{}: line {line}: {message}", path.display())]
    Parse {
        /// The file involved (`<reader>` for in-memory streams).
        path: PathBuf,
        /// 1-based line number where reading failed (one past the last line when the file
        /// ended too early).
        line: usize,
        /// What was wrong there.
        message: String,
    },
    /// A value could not be serialised to JSON.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file being written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// Data handed to a writer is inconsistent (array lengths that do not match, indices
    /// out of range, an unsupported layout); nothing was written.
    #[error("invalid data for {}: {message}", path.display())]
    InvalidInput {
        /// The file that was to be written.
        path: PathBuf,
        /// What is inconsistent.
        message: String,
    },
}

impl IoError {
    /// An operating-system error on `path`.
    pub(crate) fn os(path: &Path, source: std::io::Error) -> IoError {
        IoError::Os {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A parse error at a 1-based line of `path`.
    pub(crate) fn parse(path: &Path, line: usize, message: impl Into<String>) -> IoError {
        IoError::Parse {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    /// Inconsistent data for a writer of `path`.
    pub(crate) fn invalid(path: &Path, message: impl Into<String>) -> IoError {
        IoError::InvalidInput {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_file_and_line() {
        let e = IoError::parse(Path::new("a.mtx"), 7, "bad number 'x'");
        assert_eq!(e.to_string(), "a.mtx: line 7: bad number 'x'");
        let e = IoError::os(
            Path::new("dir/b.vtu"),
            std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        );
        assert!(e.to_string().starts_with("dir/b.vtu: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }
}
