//! Cached launch-parameter choices of autotuned GPU kernels, per device and problem class
//! (a JSON map in the kernel cache folder, `autotune.json`).

use std::collections::BTreeMap;
use std::path::PathBuf;

fn path() -> Option<PathBuf> {
    #[cfg(feature = "cuda")]
    {
        ferrofem_cuda::compile::DiskCache::default_location().map(|c| c.dir().join("autotune.json"))
    }
    #[cfg(not(feature = "cuda"))]
    {
        None
    }
}

fn load_all() -> BTreeMap<String, Vec<usize>> {
    path()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

/// The cached choice for `key`, if any.
pub fn lookup(key: &str) -> Option<Vec<usize>> {
    load_all().get(key).cloned()
}

/// Records the choice for `key` (best effort: an unwritable cache is ignored).
pub fn store(key: &str, value: Vec<usize>) {
    let Some(p) = path() else { return };
    let mut all = load_all();
    all.insert(key.to_string(), value);
    if let Some(dir) = p.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(s) = serde_json::to_string_pretty(&all) {
        let tmp = p.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, s).is_ok() {
            let _ = std::fs::rename(&tmp, &p);
        }
    }
}
