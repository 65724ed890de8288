//! ParaView collection (`.pvd`) files: a time series of `.vtu` snapshots.

use crate::number::shortest;
use crate::xml::escape_attr;
use crate::IoError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes a `.pvd` collection listing `(time, file)` pairs, so that ParaView opens a
/// series of snapshots as one time-dependent dataset.
///
/// File names are written as given; ParaView resolves relative names against the
/// directory of the `.pvd` file, so pass names relative to it. Times must be finite.
pub fn write_pvd<S: AsRef<str>>(
    path: impl AsRef<Path>,
    entries: &[(f64, S)],
) -> Result<(), IoError> {
    let path = path.as_ref();
    if let Some((t, f)) = entries.iter().find(|(t, _)| !t.is_finite()) {
        return Err(IoError::invalid(
            path,
            format!("time {t} of '{}' is not finite", f.as_ref()),
        ));
    }
    if let Some((_, f)) = entries
        .iter()
        .find(|(_, f)| f.as_ref().chars().any(char::is_control))
    {
        return Err(IoError::invalid(
            path,
            format!("file name {:?} has control characters", f.as_ref()),
        ));
    }
    let file = File::create(path).map_err(|e| IoError::os(path, e))?;
    let mut w = BufWriter::new(file);
    let result = (|| {
        writeln!(w, r#"<?xml version="1.0"?>"#)?;
        writeln!(
            w,
            r#"<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">"#
        )?;
        writeln!(w, "  <Collection>")?;
        for (t, f) in entries {
            writeln!(
                w,
                r#"    <DataSet timestep="{}" group="" part="0" file="{}"/>"#,
                shortest(*t),
                escape_attr(f.as_ref())
            )?;
        }
        writeln!(w, "  </Collection>")?;
        writeln!(w, "</VTKFile>")?;
        w.flush()
    })();
    result.map_err(|e| IoError::os(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_snapshot_with_exact_times() {
        let path = std::env::temp_dir().join(format!("ferrofem-io-{}.pvd", std::process::id()));
        let entries: Vec<(f64, String)> = (0..3)
            .map(|i| (0.1 * i as f64, format!("snap_{i:04}.vtu")))
            .collect();
        write_pvd(&path, &entries).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        let _ = std::fs::remove_file(&path);
        assert!(text.contains(r#"<VTKFile type="Collection""#));
        let sets: Vec<&str> = text.lines().filter(|l| l.contains("<DataSet ")).collect();
        assert_eq!(sets.len(), 3);
        for ((t, f), line) in entries.iter().zip(sets) {
            let ts = line
                .split("timestep=\"")
                .nth(1)
                .and_then(|s| s.split('"').next());
            assert_eq!(ts.map(|s| s.parse::<f64>()), Some(Ok(*t)));
            assert!(line.contains(&format!("file=\"{f}\"")));
            assert!(line.trim_end().ends_with("/>"));
        }
        assert_eq!(text.matches("<Collection>").count(), 1);
        assert_eq!(text.matches("</Collection>").count(), 1);
    }

    #[test]
    fn rejects_non_finite_times() {
        let path = std::env::temp_dir().join("ferrofem-io-never-written.pvd");
        let err = write_pvd(&path, &[(f64::NAN, "a.vtu")]).unwrap_err();
        assert!(matches!(err, IoError::InvalidInput { .. }));
        assert!(!path.exists());
    }
}
