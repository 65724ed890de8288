//! Where a wave run writes, and the check that it can, made before the time loop.

use crate::pipeline_error::PipelineError;
use std::path::{Path, PathBuf};

/// A seismogram file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeismogramFormat {
    /// One CSV per component: time, then one column per receiver.
    Csv,
    /// Seismic Unix (little-endian), one file per component.
    Su,
    /// SEG-Y revision 2 (big-endian), one file per component.
    Segy,
}

impl SeismogramFormat {
    /// Parses `csv`, `su` or `segy`.
    pub fn parse(name: &str) -> Option<SeismogramFormat> {
        match name {
            "csv" => Some(SeismogramFormat::Csv),
            "su" => Some(SeismogramFormat::Su),
            "segy" | "sgy" => Some(SeismogramFormat::Segy),
            _ => None,
        }
    }
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            SeismogramFormat::Csv => "csv",
            SeismogramFormat::Su => "su",
            SeismogramFormat::Segy => "segy",
        }
    }
}

/// The outputs of a wave run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WaveOutputs {
    /// Path prefix of the seismograms: `<prefix>_<component>.<ext>`.
    pub seismograms: Option<PathBuf>,
    /// Seismogram formats.
    pub formats: Vec<SeismogramFormat>,
    /// A PVD file of snapshots (each a VTU next to it).
    pub snapshots: Option<PathBuf>,
    /// Steps between snapshots (`None`: 20 snapshots per run).
    pub every: Option<usize>,
    /// PNG plots: a trace gather per component and, in 2-D, each snapshot.
    pub plots: bool,
}

impl WaveOutputs {
    /// Creates the output folders and checks that files can be written there, before any
    /// work; errors name the path.
    pub fn check_writable(&self) -> Result<(), PipelineError> {
        if self.plots && self.seismograms.is_none() && self.snapshots.is_none() {
            return Err(PipelineError::Output(
                "plots need seismograms or snapshots to plot".into(),
            ));
        }
        for p in [&self.seismograms, &self.snapshots].into_iter().flatten() {
            check_dir(p)?;
        }
        Ok(())
    }
}

/// Creates the folder of `path` and writes (then removes) a file in it.
fn check_dir(path: &Path) -> Result<(), PipelineError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let fail = |what: &str, e: std::io::Error| {
        PipelineError::Output(format!(
            "cannot write output {}: {what} {}: {e}",
            path.display(),
            dir.display()
        ))
    };
    std::fs::create_dir_all(&dir).map_err(|e| fail("cannot create the folder", e))?;
    let probe = dir.join(format!(".ferrofem-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| fail("cannot write in", e))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}
