//! What the problem-file tests share: where the examples are, and a problem with one's own
//! physics built as the twin of a configured one.

// each test executable that includes this module uses a part of it
#![allow(dead_code)]

use ferrofem_driver::file::BoundarySpec;
use ferrofem_driver::{own_problem, FileCase, Problem, ProblemFile};
use std::path::{Path, PathBuf};

/// The repository's `examples/` (from the build's source tree, or from the working
/// directory where a test executable runs on another machine).
pub fn examples() -> PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    if built.is_dir() {
        built
    } else {
        Path::new("examples").to_path_buf()
    }
}

/// A one-region Poisson problem with expression conductivity, source and Dirichlet values
/// on the two-layer triangles, P2: its file's case, and the same physics handed to
/// `own_problem` as a plain `Physics<f64>` (its source stays in its `f0`) with the same
/// boundary conditions.
pub fn configured_and_own() -> (FileCase, Problem) {
    let text = "[mesh]\nfile = \"meshes/two_layers_tri.msh\"\norder = 2\n\
        [problem]\nkind = \"poisson\"\nsource = \"1e3 * sin(3*x) * (1 + y)\"\n\
        [[material]]\nregion = \"all\"\nkappa = \"50 + 20*exp(-x)\"\n\
        [[boundary]]\nregion = \"hot\"\ndirichlet = \"100 + 10*y\"\n\
        [[boundary]]\nregion = \"cold\"\ndirichlet = 0\n";
    let file = ProblemFile::parse(&examples().join("own.toml"), text.to_string()).unwrap();
    let case = file.setup().unwrap();
    let model = case.problem.model().unwrap();
    let physics = model.physics.configured().unwrap().clone();
    let specs: Vec<BoundarySpec> = model
        .boundaries
        .iter()
        .map(|b| BoundarySpec::new(b.group.name.as_deref().unwrap(), b.condition.clone()))
        .collect();
    let own = own_problem(
        &case.mesh.mesh,
        "own",
        2,
        std::sync::Arc::new(physics),
        &specs,
    )
    .unwrap();
    (case, own)
}
