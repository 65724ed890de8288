//! Problem-file errors: each names the file, line and column, and what is wrong, before
//! anything is solved.

use super::*;
use crate::pipeline_error::PipelineError;

/// A 2-D Poisson file on a box with `extra` appended (sections or keys).
fn poisson(extra: &str) -> String {
    format!("[mesh]\nbox = \"quad:4x4\"\norder = 1\n\n[problem]\nkind = \"poisson\"\n{extra}")
}

const GOOD_TAIL: &str =
    "\n[[material]]\nregion = \"all\"\nkappa = 2\n\n[[boundary]]\nregion = \"xmin\"\ndirichlet = 0\n";

/// The error of setting up `text` (which must fail), as `(line, column, message)`.
fn error_of(text: &str) -> (usize, usize, String) {
    let path = Path::new("case.toml");
    let result = ProblemFile::parse(path, text.to_string()).and_then(|f| f.setup().map(|_| ()));
    match result {
        Err(PipelineError::File(e)) => {
            assert_eq!(e.path, "case.toml");
            (e.line, e.column, e.message)
        }
        Err(other) => panic!("expected a located error, got: {other}"),
        Ok(()) => panic!("expected an error for:\n{text}"),
    }
}

#[test]
fn a_good_file_sets_up() {
    let f = ProblemFile::parse(
        Path::new("case.toml"),
        poisson(&format!("source = \"1 + x\"{GOOD_TAIL}")),
    )
    .expect("parses");
    let case = f.setup().expect("sets up");
    assert_eq!(case.problem.name(), "poisson");
    assert_eq!(case.problem.dirichlet_description(), "xmin (1)");
    assert_eq!(case.problem.constant_diffusion(), Some(2.0));
}

#[test]
fn unknown_keys_are_errors() {
    let (line, col, msg) = error_of(&poisson(&format!("colour = 3\n{GOOD_TAIL}")));
    assert_eq!((line, col), (7, 1), "{msg}");
    assert!(msg.contains("colour"), "{msg}");
    let (line, _, msg) = error_of(&poisson(&format!(
        "{GOOD_TAIL}[[boundary]]\nregion = \"xmax\"\nnewman = 1\n"
    )));
    assert_eq!(line, 17, "{msg}");
    assert!(msg.contains("newman"), "{msg}");
}

#[test]
fn expression_errors_point_into_the_string() {
    // `foo` at column 17 of line 7: `source = "1 + x*foo"` → the quote is at 10, `foo` at 17
    let (line, col, msg) = error_of(&poisson(&format!("source = \"1 + x*foo\"{GOOD_TAIL}")));
    assert_eq!((line, col), (7, 17), "{msg}");
    assert!(msg.contains("unknown name `foo`"), "{msg}");
    // z in 2-D is unknown too
    let (_, _, msg) = error_of(&poisson(&format!("source = \"z\"{GOOD_TAIL}")));
    assert!(msg.contains("`z`"), "{msg}");
    // a syntax error inside a list element
    let text = "[mesh]\nbox = \"quad:4x4\"\norder = 1\n[problem]\nkind = \"elasticity\"\n\
                [[material]]\nregion = \"all\"\nE = 1\nnu = 0.3\n[[boundary]]\nregion = \"xmin\"\n\
                dirichlet = [\"0\", \"sin(x\"]\n";
    let (line, col, msg) = error_of(text);
    assert_eq!(line, 12, "{msg}");
    assert!(col > 18, "column {col}: {msg}");
}

#[test]
fn unknown_regions_and_wrong_dimensions_are_named() {
    let (_, _, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"all\"\nkappa = 1\n[[boundary]]\nregion = \"inlet\"\ndirichlet = 0\n",
    ));
    assert!(msg.contains("`inlet`") && msg.contains("xmin (1)"), "{msg}");
    // `domain` is the box's cell group: a boundary condition on it has the wrong dimension
    let (_, _, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"all\"\nkappa = 1\n[[boundary]]\nregion = \"domain\"\ndirichlet = 0\n",
    ));
    assert!(
        msg.contains("dimension 2") && msg.contains("dimension 1"),
        "{msg}"
    );
    // and a material on a boundary group
    let (_, _, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"xmin\"\nkappa = 1\n[[boundary]]\nregion = \"xmax\"\ndirichlet = 0\n",
    ));
    assert!(
        msg.contains("`xmin` is a physical group of dimension 1"),
        "{msg}"
    );
}

#[test]
fn parameters_out_of_range_are_refused() {
    let (_, _, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"all\"\nkappa = -1\n[[boundary]]\nregion = \"xmin\"\ndirichlet = 0\n",
    ));
    assert!(msg.contains("kappa = -1"), "{msg}");
    // an expression that turns negative somewhere: found at a vertex, with the point
    let (_, _, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"all\"\nkappa = \"x - 0.5\"\n[[boundary]]\nregion = \"xmin\"\ndirichlet = 0\n",
    ));
    assert!(msg.contains("kappa") && msg.contains(" at ("), "{msg}");
    let text = "[mesh]\nbox = \"quad:4x4\"\norder = 1\n[problem]\nkind = \"elasticity\"\n\
                [[material]]\nregion = \"all\"\nE = 1\nnu = 0.5\n[[boundary]]\nregion = \"xmin\"\n\
                dirichlet = [0, 0]\n";
    let msg = match ProblemFile::parse(Path::new("e.toml"), text.into()).and_then(|f| f.setup()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("nu = 0.5 accepted"),
    };
    assert!(msg.contains("nu = 0.5") && msg.contains("0.5"), "{msg}");
}

#[test]
fn missing_pieces_are_explained() {
    // no Dirichlet condition: singular
    let (_, _, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"all\"\nkappa = 1\n[[boundary]]\nregion = \"xmin\"\nneumann = 1\n",
    ));
    assert!(msg.contains("singular"), "{msg}");
    // a kind that does not exist
    let text = "[mesh]\nbox = \"quad:4x4\"\norder = 1\n[problem]\nkind = \"heat\"\n";
    let (line, col, msg) = error_of(text);
    assert_eq!((line, col), (5, 8), "{msg}");
    assert!(msg.contains("poisson"), "{msg}");
    // two conditions on one boundary entry
    let (_, _, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"all\"\nkappa = 1\n[[boundary]]\nregion = \"xmin\"\ndirichlet = 0\nneumann = 1\n",
    ));
    assert!(msg.contains("exactly one"), "{msg}");
    // a wrong number of components
    let text = "[mesh]\nbox = \"quad:4x4\"\norder = 1\n[problem]\nkind = \"elasticity\"\n\
                [[material]]\nregion = \"all\"\nE = 1\nnu = 0.3\n[[boundary]]\nregion = \"xmin\"\n\
                dirichlet = [0, 0, 0]\n";
    let (_, _, msg) = error_of(text);
    assert!(msg.contains("expected 2 values"), "{msg}");
}

#[test]
fn wave_material_keys_are_refused_in_solves() {
    let (line, col, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"all\"\nkappa = 1\nmodel = \"vp.xyz\"\n\
         [[boundary]]\nregion = \"xmin\"\ndirichlet = 0\n",
    ));
    assert_eq!((line, col), (11, 9), "{msg}");
    assert!(
        msg.contains("model (a velocity model file) is for wave problems"),
        "{msg}"
    );
    let (line, _, msg) = error_of(&poisson(
        "\n[[material]]\nregion = \"all\"\nkappa = 1\nvp = 1500\n\
         [[boundary]]\nregion = \"xmin\"\ndirichlet = 0\n",
    ));
    assert_eq!(line, 11, "{msg}");
    assert!(
        msg.contains("vp and vs are parameters of wave problems"),
        "{msg}"
    );
}

#[test]
fn the_solver_operator_is_read_and_checked() {
    let f = ProblemFile::parse(
        Path::new("case.toml"),
        poisson(&format!(
            "{GOOD_TAIL}\n[solver]\nkind = \"pcg\"\noperator = \"assembled\"\npreconditioner = \"chebyshev\"\n"
        )),
    )
    .expect("parses");
    let case = f.setup().expect("sets up");
    assert_eq!(case.settings.operator, crate::OperatorKind::Assembled);
    assert_eq!(
        case.settings.preconditioner,
        crate::Preconditioner::Chebyshev
    );
    let (line, _, msg) = error_of(&poisson(&format!(
        "{GOOD_TAIL}\n[solver]\noperator = \"matrix_free\"\n"
    )));
    assert_eq!(line, 17, "{msg}");
    assert!(msg.contains("expected matrix-free or assembled"), "{msg}");
}
