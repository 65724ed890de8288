//! How much memory a computation may still take, and a typed refusal when an estimate of
//! what it needs exceeds that, so that a command stops with the two numbers instead of
//! being aborted by a failed allocation ("memory allocation of N bytes failed") or killed
//! by the kernel part-way through.
//!
//! [`available_memory`] is the smallest of the limits that apply to this process on Linux:
//! the kernel's estimate of memory available without swapping (`MemAvailable` of
//! `/proc/meminfo`), the room left under the memory limit of the process's cgroup and of
//! every cgroup above it (`memory.max` of cgroup version 2, `memory.limit_in_bytes` of
//! version 1), and the room left under the address-space limit (`ulimit -v`). Elsewhere it is unknown (`None`) and the
//! checks pass. The files are read directly (a handful of lines) rather than through a
//! system-information crate, which would add a dependency tree for two numbers.
//!
//! Where a size cannot be estimated up front, [`try_vec`] allocates fallibly and reports a
//! failure as the same error type.

use std::fmt;

/// `2^30`.
const GIB: f64 = (1u64 << 30) as f64;
/// `2^20`.
const MIB: f64 = (1u64 << 20) as f64;

/// What the generic refusal suggests when the caller gives nothing more specific.
const GENERIC_REMEDY: &str =
    "use a smaller problem (fewer cells, a lower order, fewer refinement levels) or a machine with more memory";

/// Why a computation was refused or an allocation failed for lack of memory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// The estimate of what a computation needs exceeds the memory available.
    #[error(
        "not enough memory for {what}: it needs about {}, but {} is available; {remedy}",
        human_bytes(*.needed),
        human_bytes(*.available)
    )]
    TooLarge {
        /// What was to be computed or allocated.
        what: String,
        /// The estimate of the bytes it needs.
        needed: u64,
        /// The bytes available (see [`available_memory`]).
        available: u64,
        /// What the user can do about it.
        remedy: String,
    },
    /// An allocation whose size could not be estimated beforehand failed.
    #[error("out of memory allocating {} for {what}; {remedy}", human_bytes(*.bytes))]
    AllocationFailed {
        /// What the allocation was for.
        what: String,
        /// Its size in bytes.
        bytes: u64,
        /// What the user can do about it.
        remedy: String,
    },
}

impl MemoryError {
    /// The same error with `remedy` (e.g. "give a smaller --bytes") as its advice.
    pub fn with_remedy(self, remedy: impl Into<String>) -> MemoryError {
        let remedy = remedy.into();
        match self {
            MemoryError::TooLarge {
                what,
                needed,
                available,
                ..
            } => MemoryError::TooLarge {
                what,
                needed,
                available,
                remedy,
            },
            MemoryError::AllocationFailed { what, bytes, .. } => MemoryError::AllocationFailed {
                what,
                bytes,
                remedy,
            },
        }
    }

    /// The bytes asked for: the estimate, or the failed allocation's size.
    pub fn needed(&self) -> u64 {
        match self {
            MemoryError::TooLarge { needed, .. } => *needed,
            MemoryError::AllocationFailed { bytes, .. } => *bytes,
        }
    }
}

/// A byte count in binary units with three significant digits: `512 B`, `12.0 MiB`,
/// `1.50 GiB`, `37.2 TiB` (from 1 TiB on in TiB).
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1 << 20 {
        if bytes < 1 << 10 {
            format!("{bytes} B")
        } else {
            format!("{:.1} KiB", b / 1024.0)
        }
    } else if b < GIB {
        format!("{:.1} MiB", b / MIB)
    } else if b < 1024.0 * GIB {
        format!("{} GiB", three_digits(b / GIB))
    } else {
        format!("{} TiB", three_digits(b / (1024.0 * GIB)))
    }
}

/// `x` with three significant digits (at least the integer part): 1.50, 12.0, 512, 2048.
fn three_digits(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// The check against a given amount of available memory (`None`: unknown, so it passes):
/// the pure form of [`check_fits`].
pub fn fits(what: &str, needed: u64, available: Option<u64>) -> Result<(), MemoryError> {
    match available {
        Some(available) if needed > available => Err(MemoryError::TooLarge {
            what: what.to_string(),
            needed,
            available,
            remedy: GENERIC_REMEDY.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Refuses `what` when its estimated size `needed` (bytes) exceeds [`available_memory`].
/// Passes when the available memory is unknown.
pub fn check_fits(what: &str, needed: u64) -> Result<(), MemoryError> {
    fits(what, needed, available_memory())
}

/// An empty vector with room for `len` entries, or [`MemoryError::AllocationFailed`]
/// naming `what` (also when `len` entries would overflow the address space).
pub fn try_vec<T>(len: usize, what: &str) -> Result<Vec<T>, MemoryError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| MemoryError::AllocationFailed {
            what: what.to_string(),
            bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
            remedy: GENERIC_REMEDY.to_string(),
        })?;
    Ok(v)
}

/// A vector of `len` copies of `value`, allocated fallibly (see [`try_vec`]).
pub fn try_filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>, MemoryError> {
    let mut v = try_vec(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// The bytes this process can still allocate without swapping or hitting a limit: the
/// smallest of `MemAvailable`, the room under the cgroup memory limits and the room under
/// the address-space limit. `None` where none of them can be read (not Linux).
pub fn available_memory() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let mut best: Option<u64> = None;
    let mut take = |v: Option<u64>| {
        if let Some(v) = v {
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    };
    take(read("/proc/meminfo").and_then(|s| meminfo_available(&s)));
    if let Some(cgroups) = read("/proc/self/cgroup") {
        for dir in cgroup_dirs(&cgroups) {
            let file = |name: &str| read(&format!("{dir}/{name}"));
            take(cgroup_room(
                file("memory.max").or_else(|| file("memory.limit_in_bytes")),
                file("memory.current").or_else(|| file("memory.usage_in_bytes")),
                file("memory.stat"),
            ));
        }
    }
    take(address_space_room(
        read("/proc/self/limits").as_deref(),
        read("/proc/self/status").as_deref(),
    ));
    best
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn meminfo_available(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(kib_field)
}

/// A `/proc` field like `  1234 kB` in bytes.
fn kib_field(s: &str) -> Option<u64> {
    let mut it = s.split_whitespace();
    let v: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") | None => Some(v.saturating_mul(1024)),
        _ => None,
    }
}

/// The memory-cgroup directories that limit this process, from `/proc/self/cgroup`: its
/// own cgroup and every ancestor up to the hierarchy's root, for the unified hierarchy
/// of cgroup version 2 (`0::/path`) and the memory hierarchy of version 1
/// (`N:memory:/path`).
fn cgroup_dirs(self_cgroup: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    for line in self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let root = if controllers.is_empty() {
            "/sys/fs/cgroup"
        } else if controllers.split(',').any(|c| c == "memory") {
            "/sys/fs/cgroup/memory"
        } else {
            continue;
        };
        let mut p = path.trim_end_matches('/');
        loop {
            dirs.push(format!("{root}{p}"));
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => break,
            }
            if p.is_empty() {
                dirs.push(root.to_string());
                break;
            }
        }
    }
    dirs.dedup();
    dirs
}

/// The room under one cgroup's limit: `limit − (usage − inactive file cache)` (the page
/// cache the kernel drops first is not counted as used). `None` without a limit (`max`,
/// or version 1's "unlimited" value near `i64::MAX`) or when the files are missing.
fn cgroup_room(limit: Option<String>, usage: Option<String>, stat: Option<String>) -> Option<u64> {
    let limit: u64 = limit?.trim().parse().ok()?;
    if limit >= 1 << 60 {
        return None;
    }
    let usage: u64 = usage.and_then(|u| u.trim().parse().ok()).unwrap_or(0);
    let inactive = stat
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("inactive_file ")
                    .or_else(|| l.strip_prefix("total_inactive_file "))
                    .and_then(|v| v.trim().parse::<u64>().ok())
            })
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(inactive)))
}

/// The room under the address-space limit (`Max address space` of `/proc/self/limits`,
/// the soft value) given the current virtual size (`VmSize` of `/proc/self/status`).
/// `None` when unlimited or unreadable.
fn address_space_room(limits: Option<&str>, status: Option<&str>) -> Option<u64> {
    let limit: u64 = limits?
        .lines()
        .find_map(|l| l.strip_prefix("Max address space"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let used = status?
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(kib_field)
        .unwrap_or(0);
    Some(limit.saturating_sub(used))
}

/// A sum of byte counts that saturates instead of overflowing, for estimates built from
/// products of user-given sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl Bytes {
    /// `count` items of `size` bytes each.
    pub fn of(count: u64, size: u64) -> Bytes {
        Bytes(count.saturating_mul(size))
    }
    /// `count` items of type `T`.
    pub fn array<T>(count: u64) -> Bytes {
        Bytes::of(count, std::mem::size_of::<T>() as u64)
    }
    /// This times `k` (saturating).
    pub fn times(self, k: u64) -> Bytes {
        Bytes(self.0.saturating_mul(k))
    }
}

impl std::ops::Add for Bytes {
    type Output = Bytes;
    fn add(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(other.0))
    }
}

impl std::ops::AddAssign for Bytes {
    fn add_assign(&mut self, other: Bytes) {
        *self = *self + other;
    }
}

impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        iter.fold(Bytes(0), |a, b| a + b)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&human_bytes(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1000), "1000 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(12 << 20), "12.0 MiB");
        assert_eq!(human_bytes(3 << 29), "1.50 GiB");
        assert_eq!(human_bytes(24 << 30), "24.0 GiB");
        assert_eq!(human_bytes(700 << 30), "700 GiB");
        assert_eq!(human_bytes(1u64 << 50), "1024 TiB");
        assert_eq!(human_bytes(u64::MAX), "16777216 TiB");
    }

    #[test]
    fn the_check_refuses_only_above_what_is_available() {
        assert_eq!(fits("x", 10 << 30, Some(10 << 30)), Ok(()));
        assert_eq!(fits("x", u64::MAX, None), Ok(()));
        let e = fits("the refined mesh", 48 << 30, Some(20 << 30)).unwrap_err();
        assert_eq!(
            e,
            MemoryError::TooLarge {
                what: "the refined mesh".into(),
                needed: 48 << 30,
                available: 20 << 30,
                remedy: GENERIC_REMEDY.into(),
            }
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "not enough memory for the refined mesh: it needs about 48.0 GiB, but 20.0 GiB is available; "
            ),
            "{msg}"
        );
        let msg = e.with_remedy("give fewer levels").to_string();
        assert!(msg.ends_with("is available; give fewer levels"), "{msg}");
    }

    #[test]
    fn fallible_allocation_reports_the_size() {
        let v: Vec<u64> = try_vec(16, "a small buffer").unwrap();
        assert!(v.capacity() >= 16 && v.is_empty());
        let e = try_vec::<u64>(usize::MAX / 4, "an impossible buffer").unwrap_err();
        assert_eq!(e.needed(), u64::MAX);
        assert!(
            e.to_string().starts_with("out of memory allocating "),
            "{e}"
        );
        assert!(e.to_string().contains("for an impossible buffer"), "{e}");
        assert_eq!(try_filled(3, 7u8, "x").unwrap(), vec![7, 7, 7]);
    }

    #[test]
    fn meminfo_is_parsed() {
        let s = "MemTotal:       24683656 kB\nMemFree:        21000000 kB\nMemAvailable:   24302000 kB\n";
        assert_eq!(meminfo_available(s), Some(24302000 * 1024));
        assert_eq!(meminfo_available("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn cgroup_paths_cover_the_ancestors() {
        let v2 = "0::/user.slice/session-1.scope\n";
        assert_eq!(
            cgroup_dirs(v2),
            vec![
                "/sys/fs/cgroup/user.slice/session-1.scope",
                "/sys/fs/cgroup/user.slice",
                "/sys/fs/cgroup",
            ]
        );
        assert_eq!(cgroup_dirs("0::/\n"), vec!["/sys/fs/cgroup"]);
        let v1 = "5:devices:/\n4:memory:/jobs/abc\n0::/\n";
        assert_eq!(
            cgroup_dirs(v1),
            vec![
                "/sys/fs/cgroup/memory/jobs/abc",
                "/sys/fs/cgroup/memory/jobs",
                "/sys/fs/cgroup/memory",
                "/sys/fs/cgroup",
            ]
        );
    }

    #[test]
    fn cgroup_room_subtracts_the_usage_but_not_the_inactive_cache() {
        let s = |x: &str| Some(x.to_string());
        assert_eq!(cgroup_room(s("max\n"), s("100\n"), None), None);
        assert_eq!(
            cgroup_room(s("9223372036854771712\n"), s("1704247296\n"), None),
            None
        );
        assert_eq!(cgroup_room(s("1000\n"), s("300\n"), None), Some(700));
        assert_eq!(
            cgroup_room(s("1000\n"), s("300\n"), s("anon 100\ninactive_file 200\n")),
            Some(900)
        );
        assert_eq!(cgroup_room(s("1000\n"), s("3000\n"), None), Some(0));
        assert_eq!(cgroup_room(None, s("1"), None), None);
    }

    #[test]
    fn address_space_limit_is_read() {
        let unlimited =
            "Limit                     Soft Limit           Hard Limit           Units\nMax address space         unlimited            unlimited            bytes\n";
        assert_eq!(
            address_space_room(Some(unlimited), Some("VmSize: 10 kB\n")),
            None
        );
        let limited = "Max address space         4096000000           unlimited            bytes\n";
        assert_eq!(
            address_space_room(Some(limited), Some("Name: x\nVmSize:\t  1000 kB\n")),
            Some(4096000000 - 1024000)
        );
    }

    #[test]
    fn available_memory_is_known_on_linux() {
        if cfg!(target_os = "linux") {
            let a = available_memory().expect("readable /proc/meminfo");
            assert!(a > 0);
        }
    }

    #[test]
    fn byte_sums_saturate() {
        let b = Bytes::of(u64::MAX / 2, 4) + Bytes(1);
        assert_eq!(b, Bytes(u64::MAX));
        assert_eq!(Bytes::array::<u32>(10).times(3), Bytes(120));
        assert_eq!([Bytes(1), Bytes(2)].into_iter().sum::<Bytes>(), Bytes(3));
    }
}
