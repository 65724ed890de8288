//! Point probes: the solution and its derived fields interpolated at user points (located
//! in the mesh by inverting the cells' maps), written as CSV.

use super::reduction::{Reduction, WholeMesh};
use crate::file::ProbeSpec;
use crate::pipeline_error::PipelineError;
use crate::post::DerivedField;
use ferrofem_geometry::{Located, PointLocator};
use ferrofem_io::CsvWriter;
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;
use std::path::Path;

/// A probe point located in the mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct LocatedProbe {
    /// The probe's name.
    pub name: String,
    /// The point.
    pub x: [f64; 3],
    /// Where it lies: `None` on a rank whose part does not hold it (a lower rank's does,
    /// or a higher one's alone).
    pub at: Option<Located>,
}

/// Locates every point of `probes`; a point outside the mesh is an error naming the probe.
pub fn locate_probes(
    mesh: &Mesh,
    probes: &[ProbeSpec],
) -> Result<Vec<LocatedProbe>, PipelineError> {
    locate_probes_with(mesh, probes, &WholeMesh)
}

/// [`locate_probes`] on a rank's part: each point belongs to the lowest rank whose cells
/// hold it (its `at` is `None` on the others); a point no rank holds is an error.
pub fn locate_probes_with(
    mesh: &Mesh,
    probes: &[ProbeSpec],
    reduction: &dyn Reduction,
) -> Result<Vec<LocatedProbe>, PipelineError> {
    if probes.is_empty() {
        return Ok(Vec::new());
    }
    let locator = PointLocator::new(mesh)?;
    let d = mesh.dim();
    let mut out = Vec::new();
    for p in probes {
        for x in &p.points {
            let here = locator.locate(&x[..d]);
            let Some(holder) = reduction.first_rank_with(here.is_some())? else {
                let xs: Vec<String> = x[..d].iter().map(|v| format!("{v}")).collect();
                return Err(PipelineError::Unsupported(format!(
                    "probe `{}`: the point ({}) is not in the mesh",
                    p.name.escape_debug(),
                    xs.join(", ")
                )));
            };
            out.push(LocatedProbe {
                name: p.name.clone(),
                x: *x,
                at: here.filter(|_| holder == reduction.rank()),
            });
        }
    }
    Ok(out)
}

/// The column names and, per probe point, the values of `u` (`ncomp` components) and of
/// `fields` at the located probes.
pub fn probe_values(
    space: &H1Space,
    u: &[f64],
    fields: &[DerivedField],
    probes: &[LocatedProbe],
) -> Result<(Vec<String>, Vec<Vec<f64>>), PipelineError> {
    probe_values_with(space, u, fields, probes, &WholeMesh)
}

/// [`probe_values`] on a rank's part: each point's values come from the rank that holds
/// it, and every rank gets them all.
pub fn probe_values_with(
    space: &H1Space,
    u: &[f64],
    fields: &[DerivedField],
    probes: &[LocatedProbe],
    reduction: &dyn Reduction,
) -> Result<(Vec<String>, Vec<Vec<f64>>), PipelineError> {
    let nc = space.ncomp();
    let comp = |name: &str, k: usize, n: usize| {
        if n == 1 {
            name.to_string()
        } else {
            format!("{name}_{k}")
        }
    };
    let mut columns: Vec<String> = (0..nc).map(|k| comp("u", k, nc)).collect();
    for f in fields {
        columns.extend((0..f.ncomp).map(|k| comp(f.name, k, f.ncomp)));
    }
    let spaces: Vec<H1Space> = fields
        .iter()
        .map(|f| space.with_ncomp(f.ncomp))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    let width = columns.len();
    for p in probes {
        let mut row = vec![0.0; nc];
        if let Some(at) = &p.at {
            let xi = &at.xi[..space.dim()];
            space.eval_at(at.cell, xi, u, &mut row)?;
            for (f, s) in fields.iter().zip(&spaces) {
                let mut v = vec![0.0; f.ncomp];
                s.eval_at(at.cell, xi, &f.values, &mut v)?;
                row.extend(v);
            }
        }
        row.resize(width, 0.0);
        // one rank holds the point: the sum is its values
        reduction.sum_ranks(&mut row)?;
        rows.push(row);
    }
    Ok((columns, rows))
}

/// Writes the probe values as CSV: `probe,x,y[,z],` then `columns`.
pub fn write_probes_csv(
    path: &Path,
    dim: usize,
    probes: &[LocatedProbe],
    columns: &[String],
    rows: &[Vec<f64>],
) -> Result<(), PipelineError> {
    let mut header: Vec<String> = vec!["probe".into()];
    header.extend(["x", "y", "z"][..dim].iter().map(|s| s.to_string()));
    header.extend(columns.iter().cloned());
    let mut w = CsvWriter::create(path, &header)?;
    for (p, row) in probes.iter().zip(rows) {
        let mut cells: Vec<String> = vec![p.name.clone()];
        cells.extend(p.x[..dim].iter().map(|v| format!("{v:e}")));
        cells.extend(row.iter().map(|v| format!("{v:e}")));
        w.row_str(&cells)?;
    }
    w.finish()?;
    Ok(())
}
