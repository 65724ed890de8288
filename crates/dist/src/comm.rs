//! The messages a distributed run needs, behind one trait: the rank and the number of
//! ranks, sums of one value per rank, gathers, and point-to-point exchanges with the
//! neighbouring ranks. [`SingleRank`] is the serial case; [`MpiComm`] (feature `mpi`)
//! runs them over the system's MPI.

use crate::DistError;

/// A value that travels in messages.
#[cfg(not(feature = "mpi"))]
pub trait Payload: Copy + Default + Send + Sync + 'static {}
/// A value that travels in messages.
#[cfg(feature = "mpi")]
pub trait Payload: Copy + Default + Send + Sync + 'static + mpi::traits::Equivalence {}

impl Payload for f32 {}
impl Payload for f64 {}
impl Payload for u32 {}
impl Payload for u64 {}

/// The communication of a distributed run.
///
/// Every rank calls the collective methods ([`Communicator::sum`],
/// [`Communicator::gather_all`]) in the same order; an exchange is called by every rank of
/// each pair it names.
pub trait Communicator {
    /// This rank, in `0..size()`.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// This rank among the ranks on its machine (node), in `0..` their count: which of
    /// the machine's GPUs it takes.
    fn node_rank(&self) -> usize;
    /// One value from every rank, in rank order, on every rank.
    fn gather_all<T: Payload>(&self, local: T) -> Result<Vec<T>, DistError>;
    /// Sends `send[i]` to rank `ranks[i]` and receives `recv[i]` from it, for every `i`
    /// (no rank twice, not this rank; the lengths agree with the partner's).
    fn exchange<T: Payload>(
        &self,
        ranks: &[usize],
        send: &[&[T]],
        recv: &mut [&mut [T]],
    ) -> Result<(), DistError>;

    /// Element-wise sums of `v` over the ranks, on every rank, in the order the transport
    /// chooses (exact where at most one rank holds a nonzero value, as in records that one
    /// rank makes each).
    fn sum_all(&self, v: &mut [f64]) -> Result<(), DistError>;

    /// The sum over the ranks of `local`, added in rank order: the same bits on every
    /// rank and in every run with the same number of ranks.
    fn sum(&self, local: f64) -> Result<f64, DistError> {
        Ok(self.gather_all(local)?.into_iter().sum())
    }

    /// The minimum over the ranks of `local` (NaN where any rank has NaN).
    fn min(&self, local: f64) -> Result<f64, DistError> {
        Ok(self
            .gather_all(local)?
            .into_iter()
            .fold(f64::INFINITY, |m, x| {
                if x.is_nan() || m.is_nan() {
                    f64::NAN
                } else {
                    m.min(x)
                }
            }))
    }

    /// The lowest rank whose `flag` is true, if any.
    fn first_rank_with(&self, flag: bool) -> Result<Option<usize>, DistError> {
        Ok(self
            .gather_all(u32::from(flag))?
            .into_iter()
            .position(|f| f != 0))
    }

    /// Sends vectors of any length: `send[i]` to `ranks[i]`, returning what each of them
    /// sent back (lengths first, then the values).
    fn exchange_vecs<T: Payload>(
        &self,
        ranks: &[usize],
        send: &[Vec<T>],
    ) -> Result<Vec<Vec<T>>, DistError> {
        let lens: Vec<[u64; 1]> = send.iter().map(|s| [s.len() as u64]).collect();
        let mut their: Vec<[u64; 1]> = vec![[0]; ranks.len()];
        {
            let send_lens: Vec<&[u64]> = lens.iter().map(|l| &l[..]).collect();
            let mut recv_lens: Vec<&mut [u64]> = their.iter_mut().map(|l| &mut l[..]).collect();
            self.exchange(ranks, &send_lens, &mut recv_lens)?;
        }
        let mut recv: Vec<Vec<T>> = their
            .iter()
            .map(|l| vec![T::default(); l[0] as usize])
            .collect();
        let send_refs: Vec<&[T]> = send.iter().map(Vec::as_slice).collect();
        let mut recv_refs: Vec<&mut [T]> = recv.iter_mut().map(Vec::as_mut_slice).collect();
        self.exchange(ranks, &send_refs, &mut recv_refs)?;
        Ok(recv)
    }
}

/// One rank alone: sums and gathers of its own value, no neighbours.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleRank;

impl Communicator for SingleRank {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn node_rank(&self) -> usize {
        0
    }
    fn gather_all<T: Payload>(&self, local: T) -> Result<Vec<T>, DistError> {
        Ok(vec![local])
    }
    fn sum_all(&self, _v: &mut [f64]) -> Result<(), DistError> {
        Ok(())
    }
    fn exchange<T: Payload>(
        &self,
        ranks: &[usize],
        _send: &[&[T]],
        _recv: &mut [&mut [T]],
    ) -> Result<(), DistError> {
        match ranks.first() {
            None => Ok(()),
            Some(&r) => Err(DistError::Exchange(format!(
                "a single rank has no neighbour {r}"
            ))),
        }
    }
}

/// Whether this process was started by an MPI launcher with more than one rank
/// (`mpirun -np N`, N > 1), read from the launcher's environment before any MPI call
/// (Open MPI, MPICH and Slurm's variables). Available without MPI, so that a build
/// without it can refuse such a launch instead of running N serial copies.
pub fn launched_in_parallel() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_SIZE",
        "MPI_LOCALNRANKS",
        "SLURM_NTASKS",
    ]
    .iter()
    .filter_map(|v| std::env::var(v).ok())
    .filter_map(|s| s.parse::<usize>().ok())
    .any(|n| n > 1)
}

#[cfg(feature = "mpi")]
pub use mpi_comm::MpiComm;

#[cfg(feature = "mpi")]
mod mpi_comm {
    use super::{Communicator, Payload};
    use crate::DistError;
    use mpi::collective::SystemOperation;
    use mpi::request::WaitGuard;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::Communicator as _;
    use mpi::traits::*;
    use mpi::Threading;
    use std::sync::{Mutex, MutexGuard};

    /// `MPI_COMM_WORLD` of the system's MPI, initialised when made and finalised when
    /// dropped (once per process, on the thread that made it).
    ///
    /// MPI is initialised for calls from any thread, one at a time
    /// (`MPI_THREAD_SERIALIZED`), and every call holds a lock, so the communicator may be
    /// shared between threads (a simulation's steps run on the thread pool).
    pub struct MpiComm {
        world: Mutex<SimpleCommunicator>,
        rank: usize,
        size: usize,
        node_rank: usize,
        // Dropped after `world`: finalises MPI.
        _universe: mpi::environment::Universe,
    }

    // SAFETY: MPI runs at MPI_THREAD_SERIALIZED or above (checked in `init`), and every use
    // of the communicator goes through the mutex, so no two threads call MPI at once.
    unsafe impl Send for MpiComm {}
    // SAFETY: as for `Send`.
    unsafe impl Sync for MpiComm {}

    impl MpiComm {
        /// Initialises MPI. Fails where MPI was initialised before in this process or
        /// cannot take calls from more than one thread in turn.
        pub fn init() -> Result<MpiComm, DistError> {
            let (universe, level) = mpi::initialize_with_threading(Threading::Serialized)
                .ok_or_else(|| {
                    DistError::Exchange("MPI was initialised before in this process".into())
                })?;
            if level < Threading::Serialized {
                return Err(DistError::Exchange(format!(
                    "the MPI library offers threading {level:?}, SERIALIZED is needed"
                )));
            }
            let world = universe.world();
            // the ranks that share this one's memory: its machine
            let node_rank = world.split_shared(world.rank()).rank() as usize;
            Ok(MpiComm {
                rank: world.rank() as usize,
                size: world.size() as usize,
                node_rank,
                world: Mutex::new(world),
                _universe: universe,
            })
        }

        fn world(&self) -> MutexGuard<'_, SimpleCommunicator> {
            // a panic while holding the lock leaves the communicator as it was
            self.world.lock().unwrap_or_else(|e| e.into_inner())
        }

        /// Ends every rank of the job with `code` (`MPI_Abort`), for an error on one rank
        /// that the others, waiting in a collective call, would never see.
        pub fn abort(&self, code: i32) -> ! {
            self.world().abort(code)
        }
    }

    impl Communicator for MpiComm {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.size
        }
        fn node_rank(&self) -> usize {
            self.node_rank
        }
        fn gather_all<T: Payload>(&self, local: T) -> Result<Vec<T>, DistError> {
            let mut all = vec![T::default(); self.size()];
            self.world().all_gather_into(&local, &mut all[..]);
            Ok(all)
        }
        fn sum_all(&self, v: &mut [f64]) -> Result<(), DistError> {
            let local = v.to_vec();
            self.world()
                .all_reduce_into(&local[..], v, SystemOperation::sum());
            Ok(())
        }
        fn exchange<T: Payload>(
            &self,
            ranks: &[usize],
            send: &[&[T]],
            recv: &mut [&mut [T]],
        ) -> Result<(), DistError> {
            if send.len() != ranks.len() || recv.len() != ranks.len() {
                return Err(DistError::Exchange(format!(
                    "{} ranks, {} send and {} receive buffers",
                    ranks.len(),
                    send.len(),
                    recv.len()
                )));
            }
            if let Some(&r) = ranks
                .iter()
                .find(|&&r| r >= self.size() || r == self.rank())
            {
                return Err(DistError::Exchange(format!(
                    "rank {} cannot exchange with rank {r} of {}",
                    self.rank(),
                    self.size()
                )));
            }
            let world = self.world();
            mpi::request::scope(|scope| {
                let mut pending = Vec::with_capacity(2 * ranks.len());
                for (&r, buf) in ranks.iter().zip(recv.iter_mut()) {
                    let req = world
                        .process_at_rank(r as i32)
                        .immediate_receive_into(scope, &mut **buf);
                    pending.push(WaitGuard::from(req));
                }
                for (&r, buf) in ranks.iter().zip(send) {
                    let req = world.process_at_rank(r as i32).immediate_send(scope, *buf);
                    pending.push(WaitGuard::from(req));
                }
                drop(pending);
            });
            Ok(())
        }
    }
}
