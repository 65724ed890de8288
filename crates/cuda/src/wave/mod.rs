//! Spectral-element wave propagation on the GPU: the time loop of a
//! [`Simulation`](ferrofem_wave::Simulation) with every step on the device
//! ([`GpuWave`]). The kernels (`kernels/wave.cu`) are the collocated tensor-product
//! stiffness with the acoustic or elastic physics at the GLL points, the same quadrature
//! data as the CPU operator, fused with the leapfrog update of the nodes interior to an
//! element ([`WaveLayout`] numbers them last, contiguous per element).

mod halo;
mod kernel;
mod layout;
mod simulation;

pub use kernel::{wave_kernel, WaveKernelShape};
pub use layout::{LocalSlots, WaveLayout};
pub use simulation::{GpuWave, GpuWaveError, WaveModel, WaveTimings, MAX_GPU_ORDER};
