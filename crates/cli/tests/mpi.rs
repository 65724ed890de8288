//! The command line under `mpirun -np N` (N = 1–4, `--oversubscribe`): the wave solver
//! against the serial run of the same file, and the bake-off solve over the ranks. Needs
//! the system's MPI (feature `mpi`).

#[path = "mpi_bench.rs"]
mod bench;
#[path = "mpi_wave.rs"]
mod wave;
