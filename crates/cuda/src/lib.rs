//! The GPU backend of ferrofem (CUDA through `cudarc`, loaded at run time).
//!
//! The crate builds and its host-side tests pass on a machine without CUDA: the driver
//! (`libcuda`) and NVRTC (`libnvrtc`) are opened only when a device or a compilation is
//! asked for, and their absence is a typed error ([`GpuError::NoDriver`],
//! [`GpuError::NoNvrtc`]), never a panic.
//!
//! Kernels are CUDA C sources in `kernels/*.cu`, specialised at run time with `-D`
//! constants through NVRTC for the device's architecture, compiled once per specialisation
//! and cached in memory and on disk ([`compile`]).

pub mod assembly;
pub mod blas;
pub mod bp;
pub mod compile;
mod compressible;
mod device;
mod error;
pub mod halo;
pub mod krylov;
pub mod nccl;
pub mod part_krylov;
pub mod residual;
pub mod sources;
pub mod sparse;
mod timing;
mod vector;
pub mod wave;

pub use device::{device_count, driver_present, GpuDevice};
pub use error::GpuError;
pub use timing::{median, GpuTimer};
pub use vector::{DeviceVec, GpuReal};
