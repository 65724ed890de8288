//! Run-time specialisation of CUDA C kernels through NVRTC, with an on-disk cache.
//!
//! A [`KernelSpec`] is a source plus `-D` constants (order, quadrature size, precision,
//! block shape…). It is compiled for one architecture to a CUBIN (machine code, so the
//! driver has nothing left to JIT) or to PTX. The result is cached on disk under a key
//! that hashes the source, the options, the NVRTC version, the driver version and the
//! target, so a second run of the same command compiles nothing.

use crate::GpuError;
use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};
use std::collections::hash_map::DefaultHasher;
use std::ffi::{c_char, CStr};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// A kernel source specialised by `-D` definitions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelSpec {
    /// A short name for messages and cache files (e.g. `bp3_f64_p7`).
    pub name: String,
    /// Complete CUDA C source (no `#include`s: kernels need no CUDA headers).
    pub source: String,
    /// `-D NAME=VALUE` definitions.
    pub defines: Vec<(String, String)>,
}

impl KernelSpec {
    /// A spec with no definitions yet.
    pub fn new(name: impl Into<String>, source: impl Into<String>) -> KernelSpec {
        KernelSpec {
            name: name.into(),
            source: source.into(),
            defines: Vec::new(),
        }
    }
    /// Adds `-D key=value`.
    pub fn define(mut self, key: &str, value: impl ToString) -> KernelSpec {
        self.defines.push((key.to_string(), value.to_string()));
        self
    }
    /// The value `key` is defined to (the first definition), if any.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.defines
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// What to compile to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Machine code for `sm_<arch>` (e.g. 90 for Hopper).
    Cubin(u32),
    /// PTX for `compute_<arch>`.
    Ptx(u32),
}

/// A compiled kernel image.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// CUBIN bytes, or PTX text bytes (without a trailing NUL).
    pub image: Vec<u8>,
    /// The target it was compiled for.
    pub target: Target,
    /// NVRTC's log (with `-v` resource usage from ptxas for CUBIN targets).
    pub log: String,
    /// True when the image came from the disk cache.
    pub from_cache: bool,
    /// Seconds spent compiling (0 when cached).
    pub compile_seconds: f64,
}

/// True when `libnvrtc` can be loaded.
pub fn nvrtc_available() -> bool {
    // SAFETY: only probes for the library; loads nothing else.
    unsafe { nvrtc_sys::is_culib_present() }
}

/// NVRTC's version `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    if !nvrtc_available() {
        return Err(GpuError::NoNvrtc);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    let r = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
    if r != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(GpuError::NoNvrtc);
    }
    Ok((major, minor))
}

/// The options passed to NVRTC for `spec` and `target`.
pub fn options(spec: &KernelSpec, target: Target) -> Vec<String> {
    let mut o = vec![
        "--std=c++17".to_string(),
        match target {
            Target::Cubin(a) => format!("--gpu-architecture=sm_{a}"),
            Target::Ptx(a) => format!("--gpu-architecture=compute_{a}"),
        },
        "--fmad=true".to_string(),
        "--extra-device-vectorization".to_string(),
    ];
    if matches!(target, Target::Cubin(_)) {
        o.push("--ptxas-options=-v".to_string());
    }
    for (k, v) in &spec.defines {
        o.push(format!("-D{k}={v}"));
    }
    o
}

fn cstr_vec(v: Vec<c_char>) -> String {
    // SAFETY: NVRTC returns NUL-terminated buffers; guard against a missing NUL.
    if v.contains(&0) {
        unsafe { CStr::from_ptr(v.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    } else {
        String::from_utf8_lossy(&v.iter().map(|&c| c as u8).collect::<Vec<u8>>()).into_owned()
    }
}

/// Compiles `spec` without any cache.
pub fn compile_uncached(spec: &KernelSpec, target: Target) -> Result<Compiled, GpuError> {
    if !nvrtc_available() {
        return Err(GpuError::NoNvrtc);
    }
    let opts = options(spec, target);
    let start = std::time::Instant::now();
    let src = std::ffi::CString::new(spec.source.as_str()).map_err(|_| GpuError::Compile {
        name: spec.name.clone(),
        options: opts.clone(),
        log: "source contains a NUL byte".into(),
    })?;
    let name = std::ffi::CString::new(format!("{}.cu", spec.name)).unwrap_or_default();
    let prog = nvrtc::create_program(&src, Some(&name)).map_err(|e| GpuError::Compile {
        name: spec.name.clone(),
        options: opts.clone(),
        log: format!("nvrtcCreateProgram failed: {e:?}"),
    })?;
    // SAFETY: `prog` is live until destroyed below.
    let compiled = unsafe { nvrtc::compile_program(prog, &opts) };
    let log = unsafe { nvrtc::get_program_log(prog) }
        .map(cstr_vec)
        .unwrap_or_default();
    let result = match compiled {
        Err(_) => Err(GpuError::Compile {
            name: spec.name.clone(),
            options: opts.clone(),
            log: log.clone(),
        }),
        Ok(()) => match target {
            Target::Ptx(_) => unsafe { nvrtc::get_ptx(prog) }
                .map(|v| cstr_vec(v).into_bytes())
                .map_err(|e| GpuError::Compile {
                    name: spec.name.clone(),
                    options: opts.clone(),
                    log: format!("nvrtcGetPTX failed: {e:?}"),
                }),
            Target::Cubin(_) => unsafe { get_cubin(prog) }.map_err(|code| GpuError::Compile {
                name: spec.name.clone(),
                options: opts.clone(),
                log: format!("nvrtcGetCUBIN failed: {code:?}"),
            }),
        },
    };
    // SAFETY: destroyed exactly once.
    let _ = unsafe { nvrtc::destroy_program(prog) };
    Ok(Compiled {
        image: result?,
        target,
        log,
        from_cache: false,
        compile_seconds: start.elapsed().as_secs_f64(),
    })
}

/// # Safety
/// `prog` must be a live, successfully compiled program.
unsafe fn get_cubin(prog: nvrtc_sys::nvrtcProgram) -> Result<Vec<u8>, nvrtc_sys::nvrtcResult> {
    let mut size = 0usize;
    let r = nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size);
    if r != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(r);
    }
    let mut buf = vec![0u8; size];
    let r = nvrtc_sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut c_char);
    if r != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(r);
    }
    Ok(buf)
}

/// The on-disk kernel cache.
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    /// The cache in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// The default location: `$FERROFEM_KERNEL_CACHE`, else `$XDG_CACHE_HOME/ferrofem/kernels`,
    /// else `$HOME/.cache/ferrofem/kernels`, else a folder in the temp dir. `None` when
    /// `FERROFEM_KERNEL_CACHE` is set to `off`.
    pub fn default_location() -> Option<DiskCache> {
        if let Ok(d) = std::env::var("FERROFEM_KERNEL_CACHE") {
            if d == "off" {
                return None;
            }
            return Some(DiskCache::at(d));
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        Some(DiskCache::at(base.join("ferrofem").join("kernels")))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_for(&self, spec: &KernelSpec, key: &str, target: Target) -> PathBuf {
        let ext = match target {
            Target::Cubin(_) => "cubin",
            Target::Ptx(_) => "ptx",
        };
        let safe: String = spec
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        self.dir.join(format!("{safe}-{key}.{ext}"))
    }
}

/// The cache key of a compilation: source, options, NVRTC version, driver version, target.
pub fn cache_key(spec: &KernelSpec, target: Target, nvrtc: (i32, i32), driver: i32) -> String {
    let mut parts = [0u64; 2];
    for (salt, slot) in parts.iter_mut().enumerate() {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        spec.source.hash(&mut h);
        options(spec, target).hash(&mut h);
        nvrtc.hash(&mut h);
        driver.hash(&mut h);
        target.hash(&mut h);
        *slot = h.finish();
    }
    format!("{:016x}{:016x}", parts[0], parts[1])
}

/// Compiles `spec`, reading and writing the disk cache when given. A cache that cannot be
/// written is ignored (the compiled image is still returned).
pub fn compile(
    spec: &KernelSpec,
    target: Target,
    cache: Option<&DiskCache>,
    driver_version: i32,
) -> Result<Compiled, GpuError> {
    let Some(cache) = cache else {
        return compile_uncached(spec, target);
    };
    let key = cache_key(spec, target, nvrtc_version()?, driver_version);
    let path = cache.path_for(spec, &key, target);
    if let Ok(image) = std::fs::read(&path) {
        if !image.is_empty() {
            return Ok(Compiled {
                image,
                target,
                log: String::new(),
                from_cache: true,
                compile_seconds: 0.0,
            });
        }
    }
    let compiled = compile_uncached(spec, target)?;
    if std::fs::create_dir_all(cache.dir()).is_ok() {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &compiled.image).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    Ok(compiled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_carry_defines_and_target() {
        let s = KernelSpec::new("k", "")
            .define("P", 7)
            .define("REAL", "double");
        let o = options(&s, Target::Cubin(90));
        assert!(o.contains(&"--gpu-architecture=sm_90".to_string()));
        assert!(o.contains(&"-DP=7".to_string()));
        assert!(o.contains(&"-DREAL=double".to_string()));
        let o = options(&s, Target::Ptx(90));
        assert!(o.contains(&"--gpu-architecture=compute_90".to_string()));
    }

    #[test]
    fn cache_key_changes_with_every_input() {
        let s = KernelSpec::new("k", "src").define("P", 3);
        let k0 = cache_key(&s, Target::Cubin(90), (13, 0), 13000);
        assert_eq!(k0, cache_key(&s, Target::Cubin(90), (13, 0), 13000));
        assert_ne!(
            k0,
            cache_key(&s.clone().define("Q", 1), Target::Cubin(90), (13, 0), 13000)
        );
        assert_ne!(
            k0,
            cache_key(
                &KernelSpec::new("k", "src2").define("P", 3),
                Target::Cubin(90),
                (13, 0),
                13000
            )
        );
        assert_ne!(k0, cache_key(&s, Target::Ptx(90), (13, 0), 13000));
        assert_ne!(k0, cache_key(&s, Target::Cubin(90), (13, 1), 13000));
        assert_ne!(k0, cache_key(&s, Target::Cubin(90), (13, 0), 13010));
    }
}
