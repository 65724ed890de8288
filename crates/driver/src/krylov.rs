//! The Krylov dispatch both backends share: CG, PCG or GMRES on a space whose preconditioner
//! is Jacobi, or Chebyshev–Jacobi of [`CHEBYSHEV_DEGREE`] wrapped around it when asked for.

use crate::policy::GMRES_RESTART;
use crate::settings::{Preconditioner, SolveSettings, SolverKind};
use ferrofem_base::Real;
use ferrofem_solver::{
    cg, gmres, pcg, ChebyshevSpace, GmresOptions, KrylovSpace, SolveOptions, SolveStats,
    SolverError,
};

/// The degree of the Chebyshev–Jacobi polynomial (odd: positive on the spectrum).
pub(crate) const CHEBYSHEV_DEGREE: usize = 3;

/// Solves `A x = b` on `space` (Jacobi-preconditioned for PCG and GMRES) by `solver`, with
/// `preconditioner` on top for the preconditioned ones.
pub(crate) fn run_krylov<T: Real, S: KrylovSpace<T>>(
    space: &S,
    solver: SolverKind,
    preconditioner: Preconditioner,
    b: &S::Vector,
    x: &mut S::Vector,
    opts: &SolveOptions,
) -> Result<SolveStats, SolverError> {
    let restart = GmresOptions {
        restart: GMRES_RESTART,
        ..GmresOptions::default()
    };
    match (solver, preconditioner) {
        (SolverKind::Pcg | SolverKind::Gmres, Preconditioner::Chebyshev) => {
            let cheb = ChebyshevSpace::new(space, CHEBYSHEV_DEGREE, b)?;
            if solver == SolverKind::Pcg {
                pcg(&cheb, b, x, opts)
            } else {
                gmres(&cheb, b, x, opts, &restart)
            }
        }
        (SolverKind::Pcg, _) => pcg(space, b, x, opts),
        (SolverKind::Gmres, _) => gmres(space, b, x, opts, &restart),
        _ => cg(space, b, x, opts),
    }
}

/// How the preconditioner reads in a method description.
pub(crate) fn preconditioner_name(p: Preconditioner) -> String {
    match p {
        Preconditioner::Jacobi => "Jacobi".to_string(),
        Preconditioner::Chebyshev => format!("Chebyshev–Jacobi (degree {CHEBYSHEV_DEGREE})"),
    }
}

/// The Krylov solvers' options from the solve settings (tolerance and iteration cap).
pub(crate) fn krylov_options(settings: &SolveSettings) -> SolveOptions {
    SolveOptions {
        rtol: settings.rtol(),
        max_iter: settings.max_iter,
        ..SolveOptions::default()
    }
}

/// How a Krylov solve reads in a method description: `CG`, `<preconditioner>-PCG` or
/// `GMRES(m), right <preconditioner>`, with where the Jacobi diagonal came from
/// (`diagonal`) for the preconditioned ones.
pub(crate) fn krylov_name(
    solver: SolverKind,
    preconditioner: Preconditioner,
    diagonal: Option<&str>,
) -> String {
    let from = diagonal.map_or(String::new(), |d| format!(" ({d})"));
    match solver {
        SolverKind::Pcg => format!("{}-PCG{from}", preconditioner_name(preconditioner)),
        SolverKind::Gmres => format!(
            "GMRES({GMRES_RESTART}), right {}{from}",
            preconditioner_name(preconditioner)
        ),
        _ => "CG".to_string(),
    }
}
