//! The command line under `mpirun -np N` (N = 1–4, `--oversubscribe`): the wave solver
//! and the solve of problem files against the serial runs of the same files, and the
//! bake-off solve over the ranks. Needs the system's MPI (feature `mpi`).

#[path = "mpi_bench.rs"]
mod bench;
#[path = "mpi_solve.rs"]
mod solve;
#[path = "mpi_wave.rs"]
mod wave;
