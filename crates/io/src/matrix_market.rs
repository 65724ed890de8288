//! Matrix Market (`.mtx`) exchange files for sparse matrices and dense vectors.
//!
//! Writing: a CSR matrix as `coordinate real general` (or `coordinate real symmetric`
//! with only the lower triangle), a vector as `array real general` with one column;
//! indices are 1-based and values carry 17 significant digits after the point
//! (`{:.17e}`), enough to read back bit-for-bit.
//!
//! Reading: `coordinate` files with `real`, `integer` or `pattern` values (pattern
//! entries become 1.0) and `general`, `symmetric` or `skew-symmetric` symmetry, and
//! `array` files with `real` or `integer` values. Symmetric storage is expanded, so a
//! [`CooMatrix`] always holds the whole matrix. (Like SciPy, the reader mirrors every
//! off-diagonal entry of a symmetric file, so files that store the upper instead of the
//! lower triangle read correctly too; a file storing both would count them twice.)
//! Every malformed input is reported as [`IoError::Parse`] with the 1-based line
//! number: bad header, bad number, index out of range (indices are 1-based), wrong
//! entry count, text that is not UTF-8.

use crate::IoError;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// The symmetry declared in a Matrix Market header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Symmetry {
    /// Every entry stored.
    General,
    /// `a_ij = a_ji`; the file stores one triangle.
    Symmetric,
    /// `a_ij = -a_ji`, zero diagonal; the file stores the strict lower triangle.
    SkewSymmetric,
}

/// A sparse matrix as a list of `(row, col, value)` triplets with 0-based indices.
///
/// Duplicates are allowed (they add up in [`CooMatrix::to_csr`]); explicit zeros from the
/// file are kept as stored entries.
#[derive(Clone, Debug, PartialEq)]
pub struct CooMatrix {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Row index of each entry.
    pub rows: Vec<u32>,
    /// Column index of each entry.
    pub cols: Vec<u32>,
    /// Value of each entry.
    pub vals: Vec<f64>,
    /// The symmetry the file declared (the entries are already expanded to the full
    /// matrix); tells a caller that, for example, CG is applicable.
    pub symmetry: Symmetry,
}

impl CooMatrix {
    /// Number of stored triplets (before duplicates are summed).
    pub fn nnz(&self) -> usize {
        self.vals.len()
    }

    /// Compressed sparse rows `(row_ptr, col_idx, vals)`: columns sorted within each row,
    /// duplicate entries summed (in file order, so the result is reproducible).
    /// Runs in `O(nnz log(max row length) + nrows)`.
    ///
    /// # Panics
    /// If an index is not below `nrows`/`ncols` or the three arrays differ in length
    /// (never the case for a matrix returned by [`read_matrix`]).
    pub fn to_csr(&self) -> (Vec<usize>, Vec<u32>, Vec<f64>) {
        assert!(
            self.rows.len() == self.vals.len() && self.cols.len() == self.vals.len(),
            "COO arrays of equal length"
        );
        let mut row_ptr = vec![0usize; self.nrows + 1];
        for &r in &self.rows {
            assert!((r as usize) < self.nrows, "row index in range");
            row_ptr[r as usize + 1] += 1;
        }
        for i in 0..self.nrows {
            row_ptr[i + 1] += row_ptr[i];
        }
        let mut next = row_ptr.clone();
        let mut entries = vec![(0u32, 0.0f64); self.vals.len()];
        for ((&r, &c), &v) in self.rows.iter().zip(&self.cols).zip(&self.vals) {
            assert!((c as usize) < self.ncols, "column index in range");
            let slot = &mut next[r as usize];
            entries[*slot] = (c, v);
            *slot += 1;
        }
        let mut col_idx = Vec::with_capacity(entries.len());
        let mut vals = Vec::with_capacity(entries.len());
        let mut out_ptr = Vec::with_capacity(self.nrows + 1);
        out_ptr.push(0);
        for i in 0..self.nrows {
            let row = &mut entries[row_ptr[i]..row_ptr[i + 1]];
            // stable: duplicates stay in file order
            row.sort_by_key(|e| e.0);
            for &(c, v) in row.iter() {
                if col_idx.len() > out_ptr[i] && col_idx.last() == Some(&c) {
                    if let Some(last) = vals.last_mut() {
                        *last += v;
                    }
                } else {
                    col_idx.push(c);
                    vals.push(v);
                }
            }
            out_ptr.push(col_idx.len());
        }
        (out_ptr, col_idx, vals)
    }
}

/// Writes a CSR matrix as `coordinate real general`, or, when `symmetric` is true, as
/// `coordinate real symmetric` with only the entries on or below the diagonal (the
/// caller vouches for the symmetry; upper-triangle entries are not written).
///
/// The arrays are checked first (row pointer shape and monotonicity, column range,
/// lengths, a square matrix when symmetric) and [`IoError::InvalidInput`] is returned
/// before anything is written if they are inconsistent.
pub fn write_csr(
    path: impl AsRef<Path>,
    nrows: usize,
    ncols: usize,
    row_ptr: &[usize],
    col_idx: &[u32],
    vals: &[f64],
    symmetric: bool,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let bad = |m: String| Err(IoError::invalid(path, m));
    if row_ptr.len() != nrows + 1 {
        return bad(format!(
            "row_ptr has {} entries, expected nrows + 1 = {}",
            row_ptr.len(),
            nrows + 1
        ));
    }
    if row_ptr[0] != 0 {
        return bad(format!("row_ptr[0] = {}, expected 0", row_ptr[0]));
    }
    if let Some(i) = (0..nrows).find(|&i| row_ptr[i] > row_ptr[i + 1]) {
        return bad(format!("row_ptr decreases at row {i}"));
    }
    let nnz = row_ptr[nrows];
    if col_idx.len() != nnz || vals.len() != nnz {
        return bad(format!(
            "row_ptr ends at {nnz} but there are {} column indices and {} values",
            col_idx.len(),
            vals.len()
        ));
    }
    if let Some(k) = col_idx.iter().position(|&c| c as usize >= ncols) {
        return bad(format!(
            "column index {} (entry {k}) is not below ncols = {ncols}",
            col_idx[k]
        ));
    }
    if symmetric && nrows != ncols {
        return bad(format!(
            "a symmetric matrix must be square, not {nrows} x {ncols}"
        ));
    }
    let in_output = |row: usize, col: u32| !symmetric || col as usize <= row;
    let written: usize = if symmetric {
        (0..nrows)
            .map(|i| {
                col_idx[row_ptr[i]..row_ptr[i + 1]]
                    .iter()
                    .filter(|&&c| in_output(i, c))
                    .count()
            })
            .sum()
    } else {
        nnz
    };

    let file = File::create(path).map_err(|e| IoError::os(path, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let result = (|| {
        let kind = if symmetric { "symmetric" } else { "general" };
        writeln!(w, "%%MatrixMarket matrix coordinate real {kind}")?;
        writeln!(w, "% written by ferrofem")?;
        writeln!(w, "{nrows} {ncols} {written}")?;
        for i in 0..nrows {
            for k in row_ptr[i]..row_ptr[i + 1] {
                if in_output(i, col_idx[k]) {
                    writeln!(w, "{} {} {:.17e}", i + 1, col_idx[k] as usize + 1, vals[k])?;
                }
            }
        }
        w.flush()
    })();
    result.map_err(|e| IoError::os(path, e))
}

/// Writes a dense vector as an `n x 1` `array real general` matrix.
pub fn write_vector(path: impl AsRef<Path>, values: &[f64]) -> Result<(), IoError> {
    let path = path.as_ref();
    let file = File::create(path).map_err(|e| IoError::os(path, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let result = (|| {
        writeln!(w, "%%MatrixMarket matrix array real general")?;
        writeln!(w, "% written by ferrofem")?;
        writeln!(w, "{} 1", values.len())?;
        for v in values {
            writeln!(w, "{v:.17e}")?;
        }
        w.flush()
    })();
    result.map_err(|e| IoError::os(path, e))
}

/// Reads a Matrix Market matrix (coordinate or array storage) into triplets, expanding
/// symmetric and skew-symmetric storage to the full matrix.
pub fn read_matrix(path: impl AsRef<Path>) -> Result<CooMatrix, IoError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| IoError::os(path, e))?;
    read_matrix_from(BufReader::new(file), path)
}

/// [`read_matrix`] from any buffered reader; `name` labels errors.
pub fn read_matrix_from<R: BufRead>(reader: R, name: &Path) -> Result<CooMatrix, IoError> {
    match parse(reader, name)? {
        Stored::Coordinate { matrix, .. } => Ok(matrix),
        Stored::Array(a) => Ok(a.into_coo()),
    }
}

/// Reads a dense vector: an `array` file with one column (or one row), or a
/// `coordinate` file with one column (or one row), whose missing entries are zero and
/// duplicate entries add up.
pub fn read_vector(path: impl AsRef<Path>) -> Result<Vec<f64>, IoError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| IoError::os(path, e))?;
    read_vector_from(BufReader::new(file), path)
}

/// [`read_vector`] from any buffered reader; `name` labels errors.
pub fn read_vector_from<R: BufRead>(reader: R, name: &Path) -> Result<Vec<f64>, IoError> {
    let not_vector = |line: usize, r: usize, c: usize| {
        Err(IoError::parse(
            name,
            line,
            format!("a vector needs one column or one row, this matrix is {r} x {c}"),
        ))
    };
    match parse(reader, name)? {
        Stored::Array(a) => {
            if a.nrows != 1 && a.ncols != 1 {
                return not_vector(a.size_line, a.nrows, a.ncols);
            }
            if a.symmetry == Symmetry::General {
                Ok(a.values)
            } else {
                // a 1 x 1 symmetric array: its single stored value (or none if skew)
                Ok(a.into_coo().vals)
            }
        }
        Stored::Coordinate { matrix, size_line } => {
            if matrix.nrows != 1 && matrix.ncols != 1 {
                return not_vector(size_line, matrix.nrows, matrix.ncols);
            }
            let mut out = vec![0.0; matrix.nrows.max(matrix.ncols)];
            if matrix.nrows == 0 || matrix.ncols == 0 {
                out.clear();
            }
            let index = if matrix.ncols == 1 {
                &matrix.rows
            } else {
                &matrix.cols
            };
            for (&i, &v) in index.iter().zip(&matrix.vals) {
                out[i as usize] += v;
            }
            Ok(out)
        }
    }
}

/// What a file holds before conversion.
enum Stored {
    Coordinate { matrix: CooMatrix, size_line: usize },
    Array(DenseArray),
}

/// A dense `array` section: values column by column (only the stored triangle for
/// symmetric and skew-symmetric files).
struct DenseArray {
    nrows: usize,
    ncols: usize,
    symmetry: Symmetry,
    values: Vec<f64>,
    size_line: usize,
}

impl DenseArray {
    /// Positions `(i, j)` of the stored values, in file order.
    fn positions(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let first_row = |j: usize| match self.symmetry {
            Symmetry::General => 0,
            Symmetry::Symmetric => j,
            Symmetry::SkewSymmetric => j + 1,
        };
        (0..self.ncols).flat_map(move |j| (first_row(j)..self.nrows).map(move |i| (i, j)))
    }

    /// All entries as triplets, mirrored for symmetric storage.
    fn into_coo(self) -> CooMatrix {
        let mut m = CooMatrix {
            nrows: self.nrows,
            ncols: self.ncols,
            rows: Vec::with_capacity(self.values.len()),
            cols: Vec::with_capacity(self.values.len()),
            vals: Vec::with_capacity(self.values.len()),
            symmetry: self.symmetry,
        };
        for ((i, j), &v) in self.positions().zip(&self.values) {
            push_mirrored(&mut m, i as u32, j as u32, v);
        }
        m
    }
}

/// Appends `(i, j, v)` and, off the diagonal of symmetric storage, its mirror image.
fn push_mirrored(m: &mut CooMatrix, i: u32, j: u32, v: f64) {
    m.rows.push(i);
    m.cols.push(j);
    m.vals.push(v);
    if i != j {
        let mirrored = match m.symmetry {
            Symmetry::General => return,
            Symmetry::Symmetric => v,
            Symmetry::SkewSymmetric => -v,
        };
        m.rows.push(j);
        m.cols.push(i);
        m.vals.push(mirrored);
    }
}

/// The value type of the entries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    Real,
    Integer,
    Pattern,
}

/// Reads lines, counting them (1-based) for error messages.
struct Lines<'p, R> {
    reader: R,
    buf: String,
    line: usize,
    path: &'p Path,
}

impl<R: BufRead> Lines<'_, R> {
    /// Reads the next line into the buffer; false at the end of the file.
    fn advance(&mut self) -> Result<bool, IoError> {
        self.buf.clear();
        let n = self.reader.read_line(&mut self.buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                IoError::parse(self.path, self.line + 1, "not valid UTF-8 text")
            } else {
                IoError::os(self.path, e)
            }
        })?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        Ok(true)
    }

    /// Reads up to the next line that is neither blank nor a `%` comment; false at the
    /// end of the file.
    fn advance_data(&mut self) -> Result<bool, IoError> {
        while self.advance()? {
            let t = self.current().trim_start();
            if !t.is_empty() && !t.starts_with('%') {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The current line without its line break.
    fn current(&self) -> &str {
        self.buf.trim_end_matches(['\n', '\r'])
    }

    /// A parse error at the current line.
    fn err(&self, message: impl Into<String>) -> IoError {
        IoError::parse(self.path, self.line, message)
    }

    /// A parse error one past the last line (the file ended too early).
    fn err_at_end(&self, message: impl Into<String>) -> IoError {
        IoError::parse(self.path, self.line + 1, message)
    }
}

/// The first (up to) four whitespace-separated tokens of `s` and the total count.
fn tokens4(s: &str) -> ([&str; 4], usize) {
    let mut out = [""; 4];
    let mut n = 0;
    for t in s.split_whitespace() {
        if n < 4 {
            out[n] = t;
        }
        n += 1;
    }
    (out, n)
}

/// Parses an unsigned size or index token.
fn parse_count(tok: &str, what: &str, lines: &Lines<'_, impl BufRead>) -> Result<usize, IoError> {
    tok.parse::<usize>().map_err(|_| {
        lines.err(format!(
            "bad {what} '{tok}' (expected a non-negative integer)"
        ))
    })
}

/// Parses a value of the given kind.
fn parse_value(
    tok: &str,
    kind: ValueKind,
    lines: &Lines<'_, impl BufRead>,
) -> Result<f64, IoError> {
    match kind {
        ValueKind::Real => tok
            .parse::<f64>()
            .map_err(|_| lines.err(format!("bad real number '{tok}'"))),
        ValueKind::Integer => tok
            .parse::<i64>()
            .map(|v| v as f64)
            .map_err(|_| lines.err(format!("bad integer '{tok}'"))),
        ValueKind::Pattern => Ok(1.0),
    }
}

/// Largest initial reservation, so that a lying header cannot exhaust memory up front.
const MAX_RESERVE: usize = 1 << 20;

/// Parses a whole file.
fn parse<R: BufRead>(reader: R, path: &Path) -> Result<Stored, IoError> {
    let mut lines = Lines {
        reader,
        buf: String::new(),
        line: 0,
        path,
    };
    // ---- header
    if !lines.advance()? {
        return Err(lines.err_at_end("empty file (expected a %%MatrixMarket header)"));
    }
    let header = lines.current().to_ascii_lowercase();
    let (tokens, ntokens) = tokens4(&header);
    if tokens[0] != "%%matrixmarket" {
        return Err(lines.err("missing '%%MatrixMarket' header"));
    }
    if ntokens != 5 {
        return Err(lines.err(format!(
            "header has {ntokens} words, expected '%%MatrixMarket matrix <format> <field> <symmetry>'"
        )));
    }
    let symmetry_word = header.split_whitespace().nth(4).unwrap_or_default();
    if tokens[1] != "matrix" {
        return Err(lines.err(format!(
            "unsupported object '{}' (expected 'matrix')",
            tokens[1]
        )));
    }
    let coordinate = match tokens[2] {
        "coordinate" => true,
        "array" => false,
        f => {
            return Err(lines.err(format!(
                "unknown format '{f}' (expected coordinate or array)"
            )))
        }
    };
    let kind = match tokens[3] {
        "real" | "double" => ValueKind::Real,
        "integer" => ValueKind::Integer,
        "pattern" if coordinate => ValueKind::Pattern,
        "pattern" => return Err(lines.err("'pattern' is only valid with coordinate format")),
        "complex" => return Err(lines.err("complex matrices are not supported")),
        f => return Err(lines.err(format!("unknown field '{f}'"))),
    };
    let symmetry = match symmetry_word {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" => return Err(lines.err("hermitian matrices are not supported")),
        s => return Err(lines.err(format!("unknown symmetry '{s}'"))),
    };

    // ---- size line
    if !lines.advance_data()? {
        return Err(lines.err_at_end("file ends before the size line"));
    }
    let size_line = lines.line;
    let size_fields = if coordinate { 3 } else { 2 };
    let (size_tokens, n) = tokens4(lines.current());
    if n != size_fields {
        return Err(lines.err(format!(
            "size line has {n} numbers, expected {size_fields} ({})",
            if coordinate {
                "rows columns entries"
            } else {
                "rows columns"
            }
        )));
    }
    let nrows = parse_count(size_tokens[0], "row count", &lines)?;
    let ncols = parse_count(size_tokens[1], "column count", &lines)?;
    for (n, what) in [(nrows, "rows"), (ncols, "columns")] {
        if n > u32::MAX as usize {
            return Err(lines.err(format!("{n} {what} exceed the 32-bit index range")));
        }
    }
    if symmetry != Symmetry::General && nrows != ncols {
        return Err(lines.err(format!(
            "a {symmetry_word} matrix must be square, not {nrows} x {ncols}"
        )));
    }

    if coordinate {
        let nnz = parse_count(size_tokens[2], "entry count", &lines)?;
        let reserve = nnz.min(MAX_RESERVE);
        let mut m = CooMatrix {
            nrows,
            ncols,
            rows: Vec::with_capacity(reserve),
            cols: Vec::with_capacity(reserve),
            vals: Vec::with_capacity(reserve),
            symmetry,
        };
        let fields = if kind == ValueKind::Pattern { 2 } else { 3 };
        let mut count = 0usize;
        while lines.advance_data()? {
            if count == nnz {
                return Err(lines.err(format!(
                    "more entries than the {nnz} announced on line {size_line}"
                )));
            }
            let (toks, n) = tokens4(lines.current());
            if n != fields {
                return Err(lines.err(format!(
                    "entry has {n} fields, expected {fields} ({})",
                    if fields == 2 {
                        "row column"
                    } else {
                        "row column value"
                    }
                )));
            }
            let index = |tok: &str, n: usize, what: &str| -> Result<u32, IoError> {
                let i = parse_count(tok, what, &lines)?;
                if i == 0 || i > n {
                    return Err(lines.err(format!(
                        "{what} {i} out of range 1..={n} (indices are 1-based)"
                    )));
                }
                // n <= u32::MAX was checked on the size line
                Ok((i - 1) as u32)
            };
            let i = index(toks[0], nrows, "row index")?;
            let j = index(toks[1], ncols, "column index")?;
            let v = parse_value(toks[2], kind, &lines)?;
            if symmetry == Symmetry::SkewSymmetric && i == j {
                return Err(lines.err(format!(
                    "diagonal entry ({}, {}) in a skew-symmetric matrix",
                    i + 1,
                    j + 1
                )));
            }
            push_mirrored(&mut m, i, j, v);
            count += 1;
        }
        if count != nnz {
            return Err(lines.err_at_end(format!(
                "file ends after {count} of the {nnz} entries announced on line {size_line}"
            )));
        }
        Ok(Stored::Coordinate {
            matrix: m,
            size_line,
        })
    } else {
        let expected = match symmetry {
            Symmetry::General => nrows.checked_mul(ncols),
            Symmetry::Symmetric => nrows.checked_mul(nrows + 1).map(|x| x / 2),
            Symmetry::SkewSymmetric => nrows.checked_mul(nrows.saturating_sub(1)).map(|x| x / 2),
        }
        .ok_or_else(|| lines.err(format!("{nrows} x {ncols} entries overflow")))?;
        let mut values = Vec::with_capacity(expected.min(MAX_RESERVE));
        while lines.advance_data()? {
            for t in lines.current().split_whitespace() {
                if values.len() == expected {
                    return Err(lines.err(format!(
                        "more values than the {expected} a {nrows} x {ncols} {symmetry_word} array holds"
                    )));
                }
                values.push(parse_value(t, kind, &lines)?);
            }
        }
        if values.len() != expected {
            return Err(lines.err_at_end(format!(
                "file ends after {} of the {expected} values of a {nrows} x {ncols} {symmetry_word} array",
                values.len()
            )));
        }
        Ok(Stored::Array(DenseArray {
            nrows,
            ncols,
            symmetry,
            values,
            size_line,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("ferrofem-io-{}-{name}", std::process::id()))
    }

    fn read_str(text: &str) -> Result<CooMatrix, IoError> {
        read_matrix_from(text.as_bytes(), Path::new("t.mtx"))
    }

    /// A small unsymmetric CSR matrix with awkward values and an empty row.
    fn sample_csr() -> (usize, usize, Vec<usize>, Vec<u32>, Vec<f64>) {
        let row_ptr = vec![0, 2, 2, 5, 6];
        let col_idx = vec![0, 4, 1, 2, 4, 3];
        let vals = vec![1.0 / 3.0, -2.5e-300, 7.0, f64::MAX, -0.1, 1e17 + 2.0];
        (4, 5, row_ptr, col_idx, vals)
    }

    #[test]
    fn general_csr_round_trips_bit_for_bit() {
        let (nr, nc, rp, ci, v) = sample_csr();
        let path = temp("general.mtx");
        write_csr(&path, nr, nc, &rp, &ci, &v, false).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        assert!(text.starts_with("%%MatrixMarket matrix coordinate real general\n"));
        let m = read_matrix(&path).expect("parses");
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            (m.nrows, m.ncols, m.nnz(), m.symmetry),
            (4, 5, 6, Symmetry::General)
        );
        let (rp2, ci2, v2) = m.to_csr();
        assert_eq!((rp2, ci2), (rp, ci));
        assert!(v.iter().zip(&v2).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    #[test]
    fn symmetric_csr_writes_lower_triangle_and_reads_back_whole() {
        // full symmetric 3x3: [[4, 1, 0], [1, 5, 2], [0, 2, 6]]
        let rp = [0, 2, 5, 7];
        let ci = [0, 1, 0, 1, 2, 1, 2];
        let v = [4.0, 1.0, 1.0, 5.0, 2.0, 2.0, 6.0];
        let path = temp("sym.mtx");
        write_csr(&path, 3, 3, &rp, &ci, &v, true).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        let mut data = text.lines().filter(|l| !l.starts_with('%'));
        assert_eq!(data.next(), Some("3 3 5"), "only the 5 lower entries");
        for l in data {
            let mut t = l.split_whitespace();
            let i: usize = t.next().unwrap().parse().unwrap();
            let j: usize = t.next().unwrap().parse().unwrap();
            assert!(j <= i, "upper entry {l}");
        }
        let m = read_matrix(&path).expect("parses");
        let _ = std::fs::remove_file(&path);
        assert_eq!(m.symmetry, Symmetry::Symmetric);
        let (rp2, ci2, v2) = m.to_csr();
        assert_eq!((&rp2[..], &ci2[..], &v2[..]), (&rp[..], &ci[..], &v[..]));
    }

    #[test]
    fn duplicates_are_summed_and_columns_sorted() {
        let m = read_str(
            "%%MatrixMarket matrix coordinate real general\n% comment\n\n2 3 5\n\
             1 3 1.0\n1 1 2.0\n1 3 0.5\n2 2 -1\n1 3 0.25\n",
        )
        .expect("parses");
        let (rp, ci, v) = m.to_csr();
        assert_eq!(rp, vec![0, 2, 3]);
        assert_eq!(ci, vec![0, 2, 1]);
        assert_eq!(v, vec![2.0, 1.75, -1.0]);
    }

    #[test]
    fn skew_integer_and_pattern_files_expand_correctly() {
        let m = read_str(
            "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 4\n3 2 -7\n",
        )
        .expect("parses");
        let (rp, ci, v) = m.to_csr();
        assert_eq!(rp, vec![0, 1, 3, 4]);
        assert_eq!(ci, vec![1, 0, 2, 1]);
        assert_eq!(v, vec![-4.0, 4.0, 7.0, -7.0]);
        let m = read_str("%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n1 1\n2 1\n")
            .expect("parses");
        let (rp, ci, v) = m.to_csr();
        assert_eq!(
            (rp, ci, v),
            (vec![0, 2, 3], vec![0, 1, 0], vec![1.0, 1.0, 1.0])
        );
        // array storage: column-major, symmetric keeps the lower triangle
        let m =
            read_str("%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n").expect("parses");
        let (rp, ci, v) = m.to_csr();
        assert_eq!(
            (rp, ci, v),
            (vec![0, 2, 4], vec![0, 1, 0, 1], vec![1.0, 2.0, 2.0, 3.0])
        );
        let m =
            read_str("%%MatrixMarket matrix array real general\n2 2\n1 2\n3 4\n").expect("parses");
        let (_, _, v) = m.to_csr();
        assert_eq!(v, vec![1.0, 3.0, 2.0, 4.0], "column-major");
    }

    #[test]
    fn vectors_round_trip_bit_for_bit() {
        let x: Vec<f64> = (0..50)
            .map(|i| ((i * i) as f64 - 7.3).sin() * 10f64.powi(i - 25))
            .collect();
        let path = temp("vec.mtx");
        write_vector(&path, &x).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        assert!(text.starts_with("%%MatrixMarket matrix array real general\n"));
        let y = read_vector(&path).expect("reads");
        let _ = std::fs::remove_file(&path);
        assert_eq!(y.len(), x.len());
        assert!(x.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits()));
        // the same file also reads as an n x 1 matrix
        write_vector(&path, &x).expect("writes");
        let m = read_matrix(&path).expect("reads");
        let _ = std::fs::remove_file(&path);
        assert_eq!((m.nrows, m.ncols), (50, 1));
        // a sparse column vector
        let v = read_vector_from(
            "%%MatrixMarket matrix coordinate real general\n4 1 3\n4 1 2.0\n2 1 1.0\n4 1 0.5\n"
                .as_bytes(),
            Path::new("v"),
        )
        .expect("reads");
        assert_eq!(v, vec![0.0, 1.0, 0.0, 2.5]);
        let empty = temp("empty.mtx");
        write_vector(&empty, &[]).expect("writes");
        assert_eq!(read_vector(&empty).expect("reads"), Vec::<f64>::new());
        let _ = std::fs::remove_file(&empty);
    }

    /// Asserts a parse error at `line` whose message contains `needle`.
    fn assert_parse_error(
        result: Result<impl std::fmt::Debug, IoError>,
        line: usize,
        needle: &str,
    ) {
        match result {
            Err(IoError::Parse {
                line: l, message, ..
            }) => {
                assert_eq!(l, line, "line of '{message}'");
                assert!(
                    message.contains(needle),
                    "'{message}' should mention '{needle}'"
                );
            }
            other => panic!("expected a parse error at line {line}, got {other:?}"),
        }
    }

    #[test]
    fn malformed_files_report_the_line() {
        let h = "%%MatrixMarket matrix coordinate real general\n";
        let cases: Vec<(String, usize, &str)> = vec![
            (String::new(), 1, "empty"),
            ("hello\n1 1 1\n".into(), 1, "header"),
            ("%%MatrixMarket matrix coordinate real\n".into(), 1, "words"),
            (
                "%%MatrixMarket vector coordinate real general\n".into(),
                1,
                "object",
            ),
            (
                "%%MatrixMarket matrix sparse real general\n".into(),
                1,
                "format",
            ),
            (
                "%%MatrixMarket matrix coordinate complex general\n".into(),
                1,
                "complex",
            ),
            (
                "%%MatrixMarket matrix array pattern general\n".into(),
                1,
                "pattern",
            ),
            (
                "%%MatrixMarket matrix coordinate real upper\n".into(),
                1,
                "symmetry",
            ),
            (format!("{h}% only comments\n"), 3, "size line"),
            (format!("{h}2 2\n"), 2, "size line has 2"),
            (format!("{h}2 x 1\n"), 2, "column count 'x'"),
            (format!("{h}2 2 -1\n"), 2, "entry count '-1'"),
            (
                "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n".into(),
                2,
                "square",
            ),
            (
                format!("{h}2 2 2\n1 1 1.0\n\n0 1 1.0\n"),
                5,
                "row index 0 out of range 1..=2",
            ),
            (
                format!("{h}2 2 2\n1 1 1.0\n1 3 1.0\n"),
                4,
                "column index 3 out of range",
            ),
            (format!("{h}2 2 1\n1 1 1.0q\n"), 3, "bad real number '1.0q'"),
            (format!("{h}2 2 1\n1.5 1 1.0\n"), 3, "row index '1.5'"),
            (format!("{h}2 2 1\n1 1\n"), 3, "2 fields"),
            (format!("{h}2 2 1\n1 1 1 1\n"), 3, "4 fields"),
            (
                format!("{h}2 2 1\n1 1 1\n2 2 1\n"),
                4,
                "more entries than the 1",
            ),
            (format!("{h}2 2 3\n1 1 1\n2 2 1\n"), 5, "after 2 of the 3"),
            (
                "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 2.5\n".into(),
                3,
                "bad integer",
            ),
            (
                "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 2 1\n".into(),
                3,
                "diagonal",
            ),
            (
                "%%MatrixMarket matrix array real general\n2 1\n1\n".into(),
                4,
                "after 1 of the 2",
            ),
            (
                "%%MatrixMarket matrix array real general\n2 1\n1\n2\n3\n".into(),
                5,
                "more values",
            ),
            (
                "%%MatrixMarket matrix array real general\n1 1\nabc\n".into(),
                3,
                "bad real number",
            ),
            (format!("{h}5000000000 1 0\n"), 2, "32-bit"),
        ];
        for (text, line, needle) in &cases {
            assert_parse_error(read_str(text), *line, needle);
        }
        // not a vector
        assert_parse_error(
            read_vector_from(
                "%%MatrixMarket matrix array real general\n% c\n2 2\n1\n2\n3\n4\n".as_bytes(),
                Path::new("v"),
            ),
            3,
            "one column",
        );
        // invalid UTF-8 on line 3
        let mut bytes = format!("{h}1 1 1\n").into_bytes();
        bytes.extend([0xff, 0xfe, b'\n']);
        assert_parse_error(read_matrix_from(&bytes[..], Path::new("b")), 3, "UTF-8");
        // the message names the file and the line
        let err = read_str(&format!("{h}1 1 1\n1 1 x\n")).unwrap_err();
        assert_eq!(err.to_string(), "t.mtx: line 3: bad real number 'x'");
    }

    #[test]
    fn missing_file_is_an_os_error_with_its_path() {
        let err = read_matrix(temp("does-not-exist.mtx")).unwrap_err();
        assert!(matches!(err, IoError::Os { .. }));
        assert!(err.to_string().contains("does-not-exist.mtx"));
    }

    #[test]
    fn inconsistent_csr_is_rejected_before_writing() {
        let (nr, nc, rp, ci, v) = sample_csr();
        let path = temp("never.mtx");
        let cases: Vec<(Result<(), IoError>, &str)> = vec![
            (
                write_csr(&path, nr + 1, nc, &rp, &ci, &v, false),
                "nrows + 1",
            ),
            (
                write_csr(&path, nr, nc, &[1, 2, 2, 5, 6], &ci, &v, false),
                "row_ptr[0]",
            ),
            (
                write_csr(&path, nr, nc, &[0, 3, 2, 5, 6], &ci, &v, false),
                "decreases at row 1",
            ),
            (
                write_csr(&path, nr, nc, &rp, &ci[..5], &v, false),
                "5 column indices",
            ),
            (
                write_csr(&path, nr, 4, &rp, &ci, &v, false),
                "column index 4",
            ),
            (write_csr(&path, nr, nc, &rp, &ci, &v, true), "square"),
        ];
        for (r, needle) in cases {
            let err = r.unwrap_err();
            assert!(matches!(err, IoError::InvalidInput { .. }));
            assert!(err.to_string().contains(needle), "{err} vs {needle}");
        }
        assert!(!path.exists());
    }
}
