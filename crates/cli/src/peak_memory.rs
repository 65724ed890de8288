//! The peak resident memory of this process, for the reports of runs (per rank in a
//! distributed run, where rank 0 alone holds the whole mesh it read).

/// This process's peak resident set in bytes so far (`getrusage`), if the system says.
pub fn peak_resident_bytes() -> Option<u64> {
    // SAFETY: `rusage` is plain data, and getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is a valid target.
    let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    // (Linux reports kibibytes)
    (status == 0 && usage.ru_maxrss > 0).then(|| usage.ru_maxrss as u64 * 1024)
}

/// The report's line on the peak resident memory of each rank (`memory`, bytes; none when
/// empty): rank 0 read the mesh, so it is given apart from the others' largest.
pub fn memory_line(memory: &[u64]) -> Option<String> {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    match memory {
        [] => None,
        [one] => Some(format!("peak resident {:.0} MiB", mib(*one))),
        [first, rest @ ..] => Some(format!(
            "peak resident per rank: {:.0} MiB on rank 0 (reads the mesh), at most {:.0} MiB \
             on the others",
            mib(*first),
            mib(rest.iter().copied().max().unwrap_or(0))
        )),
    }
}
