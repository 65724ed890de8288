//! `ferrofem mesh`: summary of a mesh, as text or JSON, and optional VTU output.

use crate::error::CliError;
use crate::mesh_source::MeshSource;
use clap::Args;
use ferrofem_io::{write_mesh_vtu, Encoding, Field};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Options of `ferrofem mesh`.
#[derive(Args, Debug)]
pub struct MeshArgs {
    #[command(flatten)]
    source: MeshSource,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Write the mesh (with cell tags, quality and colour) to a VTU file for ParaView.
    #[arg(long, short, value_name = "FILE.vtu")]
    output: Option<PathBuf>,
    /// Write the VTU file as ASCII instead of base64 binary.
    #[arg(long)]
    ascii: bool,
}

#[derive(Serialize)]
struct TagCount {
    tag: i32,
    name: Option<String>,
    count: usize,
}

#[derive(Serialize)]
struct Summary {
    origin: String,
    cell_type: String,
    dim: usize,
    cells: usize,
    vertices: usize,
    boundary_facets: usize,
    bounding_box: [Vec<f64>; 2],
    measure: f64,
    quality_min: f64,
    quality_max: f64,
    reoriented_cells: usize,
    cell_tags: Vec<TagCount>,
    facet_tags: Vec<TagCount>,
    colours: usize,
    colour_size_min: usize,
    colour_size_max: usize,
    vertex_bandwidth: usize,
    output: Option<String>,
}

fn tag_counts(tags: &[i32], dim: usize, mesh: &ferrofem_mesh::Mesh) -> Vec<TagCount> {
    let mut m: BTreeMap<i32, usize> = BTreeMap::new();
    for &t in tags {
        *m.entry(t).or_default() += 1;
    }
    m.into_iter()
        .map(|(tag, count)| TagCount {
            tag,
            name: mesh
                .physical_names()
                .iter()
                .find(|n| n.dim == dim && n.tag == tag)
                .map(|n| n.name.clone()),
            count,
        })
        .collect()
}

/// Runs `ferrofem mesh`.
pub fn run(a: MeshArgs) -> Result<(), CliError> {
    let loaded = a.source.load()?;
    let mesh = &loaded.mesh;
    mesh.validate()?;
    let quality = mesh.cell_quality();
    let (qmin, qmax) = quality
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &q| {
            (lo.min(q), hi.max(q))
        });
    let coloring = mesh.color_cells();
    let sizes = coloring.sizes();
    let (lo, hi) = mesh.bounding_box();
    let d = mesh.dim();
    if let Some(path) = &a.output {
        let colours: Vec<i32> = coloring.colors.iter().map(|&c| c as i32).collect();
        let enc = if a.ascii {
            Encoding::Ascii
        } else {
            Encoding::Binary
        };
        write_mesh_vtu(
            path,
            mesh,
            &[],
            &[
                Field::f64("quality", 1, &quality),
                Field::i32("colour", 1, &colours),
            ],
            enc,
        )?;
    }
    let s = Summary {
        origin: loaded.origin.clone(),
        cell_type: mesh.cell_type().name().to_string(),
        dim: d,
        cells: mesh.num_cells(),
        vertices: mesh.num_vertices(),
        boundary_facets: mesh.boundary_facets().len(),
        bounding_box: [lo, hi],
        measure: mesh.total_measure(),
        quality_min: qmin,
        quality_max: qmax,
        reoriented_cells: loaded.reoriented,
        cell_tags: tag_counts(mesh.cell_tags(), d, mesh),
        facet_tags: tag_counts(&mesh.facets().tags, d - 1, mesh),
        colours: coloring.num_colors,
        colour_size_min: sizes.iter().copied().min().unwrap_or(0),
        colour_size_max: sizes.iter().copied().max().unwrap_or(0),
        vertex_bandwidth: mesh.vertex_bandwidth(),
        output: a.output.as_ref().map(|p| p.display().to_string()),
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &s)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "mesh       {}", s.origin)?;
    writeln!(out, "cells      {} {} ({}-D)", s.cells, s.cell_type, s.dim)?;
    writeln!(out, "vertices   {}", s.vertices)?;
    let bbox: Vec<String> = (0..d)
        .map(|k| format!("[{}, {}]", s.bounding_box[0][k], s.bounding_box[1][k]))
        .collect();
    writeln!(out, "bbox       {}", bbox.join(" x "))?;
    writeln!(out, "measure    {:.12e}", s.measure)?;
    writeln!(
        out,
        "quality    min {:.4} max {:.4} ({})",
        s.quality_min,
        s.quality_max,
        if mesh.cell_type().is_simplex() {
            "mean ratio"
        } else {
            "min scaled corner Jacobian"
        }
    )?;
    if s.reoriented_cells > 0 {
        writeln!(
            out,
            "reoriented {} cells with mirrored vertex order",
            s.reoriented_cells
        )?;
    }
    writeln!(out, "boundary   {} facets", s.boundary_facets)?;
    let fmt_tags = |tags: &[TagCount]| -> String {
        if tags.is_empty() {
            return "none".into();
        }
        tags.iter()
            .map(|t| match &t.name {
                // names come from the file: control characters are shown escaped
                Some(n) => format!("{} \"{}\": {}", t.tag, n.escape_debug(), t.count),
                None => format!("{}: {}", t.tag, t.count),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    writeln!(out, "cell tags  {}", fmt_tags(&s.cell_tags))?;
    writeln!(out, "facet tags {}", fmt_tags(&s.facet_tags))?;
    writeln!(
        out,
        "colours    {} (cells per colour {}..{})",
        s.colours, s.colour_size_min, s.colour_size_max
    )?;
    writeln!(
        out,
        "bandwidth  {} (max vertex-index spread in a cell)",
        s.vertex_bandwidth
    )?;
    if let Some(p) = &s.output {
        writeln!(out, "wrote      {p}")?;
    }
    Ok(())
}
