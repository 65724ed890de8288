//! What the commands that run on several MPI ranks share: an error on any rank ends the
//! whole job, the peak memory of every rank goes to rank 0's report, and a build without
//! MPI refuses such a launch.

use crate::error::CliError;

/// Runs `job` on this rank of `comm`; an error is printed with the rank and ends the whole
/// job (`MPI_Abort`): the other ranks may be waiting for this one in an exchange.
#[cfg(feature = "mpi")]
pub fn run_or_abort(comm: &ferrofem_dist::MpiComm, job: impl FnOnce() -> Result<(), CliError>) {
    use ferrofem_dist::Communicator;
    if let Err(e) = job() {
        eprintln!("error (rank {} of {}): {e}", comm.rank(), comm.size());
        comm.abort(1);
    }
}

/// The peak resident memory of every rank, bytes, in rank order. Collective.
#[cfg(feature = "mpi")]
pub fn peak_memory_of_ranks<C: ferrofem_dist::Communicator>(
    comm: &C,
) -> Result<Vec<u64>, CliError> {
    let own = crate::peak_memory::peak_resident_bytes().unwrap_or(0);
    Ok(comm
        .gather_all(own)
        .map_err(ferrofem_driver::PipelineError::from)?)
}

/// The refusal of a launch on several ranks by a build without MPI, which would run the
/// whole problem once per rank.
#[cfg(not(feature = "mpi"))]
pub fn without_mpi() -> CliError {
    CliError::Usage(
        "started on several MPI ranks, but this ferrofem was built without MPI: build it with \
         `cargo build --release --features mpi` (README, \"Several ranks\")"
            .into(),
    )
}
