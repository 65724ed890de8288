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
