//! Property-based tests of the Gmsh reader: real files from tests/data/gmsh (MSH 2.2 and
//! 4.1, ASCII and binary) mutated by bit flips, truncations, deletions, insertions,
//! duplicated chunks and numbers replaced in each section (ASCII numbers and binary
//! words); small meshes whose numbers are replaced by small ones (so that the reader gets
//! past the syntax to the cell checks); counts announcing far more data than follows;
//! random bytes, alone and behind a valid header; random token streams.
//!
//! Whatever the input, the reader must return (no panic) without allocating more than the
//! input can justify, and
//! - an accepted mesh is valid: every cell positively oriented, no fold left to find,
//!   and (for triangles, quadrilaterals and tetrahedra) the cells' total measure equals
//!   what the boundary encloses, an independent check that no cells overlap;
//! - a refusal names the file and holds no control characters (text from the file is
//!   escaped).
//!
//! Memory is measured by a counting global allocator (this test binary only). Its
//! counters are per thread (the reader is single-threaded, and the test harness runs
//! tests on several threads); the bound is on the peak of the bytes a read holds live at
//! once, and on its largest single allocation:
//!
//! `peak <= ALLOC_PER_INPUT_BYTE * input length + ALLOC_SLACK`: 64 bytes per input byte
//! plus 1 MiB.
//!
//! Why 64 per byte: the densest records of an MSH file are ASCII lines such as a node tag
//! line of MSH 4.1 (`"7\n"`, 2 bytes) or a triangle (`"1 2 3 4\n"`, 8 bytes). A triangle
//! becomes an element record (type, tag, group, location, node offsets and nodes: about
//! 50 bytes, briefly more while a vector grows), a cell of the mesh (16 bytes) and three
//! entries of the facet matching of the fold check (24 bytes each, sorted into a second
//! array: 144 bytes): at most about 35 bytes per input byte even if all of it were live
//! at once, and the other tables (nodes, tag index, hash sets) stay below that. The bound
//! leaves room above that estimate for allocator growth policies; anything that scales
//! with a number the file states rather than with the bytes it holds (a reservation for
//! an announced count, a dense index up to a large tag, records multiplied by a list
//! length) exceeds it quickly. The slack covers fixed costs (hash maps, messages). The
//! worst ratios measured here (printed by `cargo test -- --nocapture`) are about 14
//! bytes per input byte for the densest valid files and 8 for mutated ones.
//!
//! Time: the case counts are chosen so that the whole file runs in a few seconds in
//! release mode (about 3 s on two cores), well inside a minute. `PROPTEST_CASES` sets
//! the case count of every proptest here (for longer local runs), and `PROPTEST_RNG_SEED`
//! picks other inputs; by default the seed is fixed, so CI runs reproduce.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ops::Range;
use std::path::PathBuf;

use ferrofem_mesh::{read_gmsh_bytes_with_info, MeshError};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed};

// ---------------------------------------------------------------------------------------
// Counting allocator.

/// Bytes of live allocation allowed per input byte (see the module documentation).
const ALLOC_PER_INPUT_BYTE: usize = 64;
/// Live bytes allowed on top of that.
const ALLOC_SLACK: usize = 1 << 20;

/// The system allocator, counting per thread the bytes held and their peak.
struct Counting;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// Highest `LIVE` since the last [`measure`] began.
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// Largest single allocation since the last [`measure`] began.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// Records that `grow` bytes are about to be held in addition to what is live now (the
/// new block of a reallocation counts before the old one is freed), then that `freed`
/// bytes are released.
fn note(grow: usize, freed: usize) {
    // try_with: the counters have no destructor, but stay safe during thread teardown
    let _ = LIVE.try_with(|live| {
        let now = live.get() + grow as isize;
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        let _ = LARGEST.try_with(|l| l.set(l.get().max(grow)));
        live.set(now - freed as isize);
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the bookkeeping only
// touches thread-local counters that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            note(layout.size(), 0);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            note(layout.size(), 0);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        note(0, layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            note(new_size, layout.size());
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Memory held by one call.
#[derive(Clone, Copy, Debug)]
struct Usage {
    /// Peak bytes held at once beyond what was held before the call.
    peak: usize,
    /// Largest single allocation.
    largest: usize,
}

/// Runs `f`, measuring the memory it allocates on this thread.
fn measure<T>(f: impl FnOnce() -> T) -> (T, Usage) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    LARGEST.with(|l| l.set(0));
    let out = f();
    let peak = PEAK.with(Cell::get) - base;
    let usage = Usage {
        peak: peak.max(0) as usize,
        largest: LARGEST.with(Cell::get),
    };
    (out, usage)
}

// ---------------------------------------------------------------------------------------
// The property.

/// The largest peak-to-input ratio seen (for the report printed at the end of a test).
fn ratio(usage: Usage, len: usize) -> f64 {
    usage.peak as f64 / len.max(1) as f64
}

/// Reads `bytes` and checks the reader's promises; returns the bytes-held-per-input-byte
/// ratio and whether a mesh was accepted.
fn check(bytes: &[u8]) -> Result<(f64, bool), TestCaseError> {
    let (result, usage) = measure(|| read_gmsh_bytes_with_info(bytes, "fuzz.msh"));
    let bound = ALLOC_PER_INPUT_BYTE * bytes.len() + ALLOC_SLACK;
    prop_assert!(
        usage.peak <= bound && usage.largest <= bound,
        "reading {} bytes held up to {} bytes at once (largest allocation {}), above the \
         bound {bound}",
        bytes.len(),
        usage.peak,
        usage.largest
    );
    let accepted = match result {
        Ok((mut mesh, info)) => {
            prop_assert!(mesh.num_cells() > 0);
            if let Err(e) = mesh.validate() {
                return Err(TestCaseError::fail(format!(
                    "an accepted mesh is invalid: {e}"
                )));
            }
            match mesh.orient_cells() {
                Ok(0) => {}
                other => {
                    return Err(TestCaseError::fail(format!(
                        "an accepted mesh still needs orienting: {other:?}"
                    )))
                }
            }
            if let Some((cells, boundary)) = measure_two_ways(&mesh) {
                prop_assert!(
                    (cells - boundary).abs() <= 1e-9 * cells.abs().max(1e-300),
                    "an accepted mesh overlaps itself: its cells measure {cells}, its \
                     boundary encloses {boundary}"
                );
            }
            for s in &info.skipped_sections {
                prop_assert!(!s.chars().any(char::is_control), "section name {s:?}");
            }
            true
        }
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(
                !msg.chars().any(char::is_control),
                "error message with control characters: {msg:?}"
            );
            prop_assert!(msg.starts_with("fuzz.msh"), "the file is not named: {msg}");
            false
        }
    };
    Ok((ratio(usage, bytes.len()), accepted))
}

/// The measure of a mesh of triangles, quadrilaterals or tetrahedra two ways: the sum of
/// its cells' measures, and what its boundary encloses (Green's or the divergence
/// theorem: each boundary facet oriented outwards from its cell, coned to a point).
/// They agree for a mesh whose cells meet properly; where two cells overlap, the cells
/// count the overlap twice and the boundary does not, so this checks the reader's fold
/// detection independently. `None` for hexahedra (their faces are not flat).
fn measure_two_ways(mesh: &ferrofem_mesh::Mesh) -> Option<(f64, f64)> {
    use ferrofem_mesh::CellType;
    let ct = mesh.cell_type();
    if ct == CellType::Hexahedron {
        return None;
    }
    let d = mesh.dim();
    let p = [0.123_456, 0.654_321, 0.314_159]; // the cone's apex, off any likely line
    let x = |v: u32| {
        let mut q = [0.0; 3];
        q[..d].copy_from_slice(mesh.vertex(v as usize));
        [q[0] - p[0], q[1] - p[1], q[2] - p[2]]
    };
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let det3 = |a: [f64; 3], b: [f64; 3], c: [f64; 3]| {
        a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
            + a[2] * (b[0] * c[1] - b[1] * c[0])
    };
    let cells: f64 = (0..mesh.num_cells()).map(|c| mesh.cell_measure(c)).sum();
    let facets = ct.facets();
    let mut boundary = 0.0;
    for (c, l) in mesh.boundary_facets() {
        let cell = mesh.cell(c as usize);
        let n = cell.len() as f64;
        let mut w = [0.0; 3];
        for &v in cell {
            let q = x(v);
            for k in 0..3 {
                w[k] += q[k] / n;
            }
        }
        let f: Vec<[f64; 3]> = facets[l as usize].iter().map(|&k| x(cell[k])).collect();
        if d == 2 {
            let (a, b) = (f[0], f[1]);
            let e = sub(b, a);
            let inner = sub(w, a);
            // counter-clockwise around the cell: its centre on the left
            let s = (e[0] * inner[1] - e[1] * inner[0]).signum();
            boundary += s * (a[0] * b[1] - a[1] * b[0]) / 2.0;
        } else {
            let (a, b, c3) = (f[0], f[1], f[2]);
            // outwards: the cell's centre on the negative side
            let s = -det3(sub(b, a), sub(c3, a), sub(w, a)).signum();
            boundary += s * det3(a, b, c3) / 6.0;
        }
    }
    Some((cells, boundary))
}

/// The proptest configuration: `cases` cases unless `PROPTEST_CASES` says otherwise,
/// a fixed seed unless `PROPTEST_RNG_SEED` gives one, no regression files.
fn config(cases: u32) -> Config {
    let mut c = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    };
    if let Some(n) = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        c.cases = n;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(0x00fe_770f_e3a1_d1ce);
    }
    c
}

/// Inputs at least this long count for the reported worst ratio (for shorter ones the
/// fixed costs, such as an error message, dominate any ratio).
const RATIO_MIN_LEN: usize = 4096;

/// Tracks the worst ratio (over inputs of at least [`RATIO_MIN_LEN`] bytes) and the
/// acceptance count across the cases of one test, and reports them when the test ends.
struct Tally {
    name: &'static str,
    worst: Cell<f64>,
    accepted: Cell<usize>,
    cases: Cell<usize>,
}

impl Tally {
    fn new(name: &'static str) -> Tally {
        Tally {
            name,
            worst: Cell::new(0.0),
            accepted: Cell::new(0),
            cases: Cell::new(0),
        }
    }

    fn record(&self, bytes: &[u8]) -> Result<(), TestCaseError> {
        let (r, ok) = check(bytes)?;
        self.note(bytes.len(), r, ok);
        Ok(())
    }

    fn note(&self, len: usize, ratio: f64, accepted: bool) {
        if len >= RATIO_MIN_LEN {
            self.worst.set(self.worst.get().max(ratio));
        }
        self.cases.set(self.cases.get() + 1);
        self.accepted.set(self.accepted.get() + accepted as usize);
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        println!(
            "{}: {} cases, {} accepted, peak memory at most {:.1} bytes per input byte \
             (inputs of {RATIO_MIN_LEN} bytes or more)",
            self.name,
            self.cases.get(),
            self.accepted.get(),
            self.worst.get()
        );
    }
}

// ---------------------------------------------------------------------------------------
// Inputs.

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/gmsh")
}

/// Every committed test mesh except the large one, name and bytes.
fn small_files() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(data_dir())
        .expect("test data")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "msh"))
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 100_000))
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("readable"))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 20, "the committed meshes are there");
    files
}

/// Body of each section: from after its `$Name` line to the next line starting with `$`.
fn sections(bytes: &[u8]) -> Vec<Range<usize>> {
    let mut starts = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'$' && (i == 0 || bytes[i - 1] == b'\n') {
            starts.push(i);
        }
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let body = bytes[s..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |n| s + n + 1);
        let end = starts.get(k + 1).copied().unwrap_or(bytes.len());
        if body < end {
            out.push(body..end);
        }
    }
    if out.is_empty() {
        out.push(0..bytes.len());
    }
    out
}

/// Numbers worth trying in place of a count, tag, type or coordinate.
const INTERESTING: [i64; 22] = [
    0,
    1,
    -1,
    2,
    3,
    4,
    5,
    8,
    15,
    31,
    92,
    255,
    65_535,
    1 << 20,
    1_000_000_000,
    i32::MAX as i64,
    i32::MIN as i64,
    u32::MAX as i64,
    1 << 40,
    i64::MAX,
    i64::MIN,
    -2,
];

/// Texts worth trying in place of an ASCII number.
const ODD_NUMBERS: [&str; 14] = [
    "1e308",
    "-1e308",
    "1e999",
    "nan",
    "inf",
    "-0",
    "0.5",
    "1e-320",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "+7",
    "0x10",
    "",
];

/// One change to a file.
#[derive(Clone, Debug)]
enum Mutation {
    /// Flip one bit.
    Flip(Index, u8),
    /// Cut the file.
    Truncate(Index),
    /// Remove up to 64 bytes.
    Delete(Index, usize),
    /// Insert bytes.
    Insert(Index, Vec<u8>),
    /// Copy a chunk of the file elsewhere (repeated lines, sections, records).
    Duplicate(Index, usize, Index),
    /// Replace an ASCII number of a section by another.
    Number(Index, Index, String),
    /// Overwrite 4 or 8 bytes of a section by a binary integer of either byte order.
    Binary(Index, Index, i64, bool, bool),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let number = prop_oneof![
        (0i64..12).prop_map(|v| v.to_string()),
        prop::sample::select(&INTERESTING[..]).prop_map(|v| v.to_string()),
        prop::sample::select(&ODD_NUMBERS[..]).prop_map(str::to_string),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:e}")),
    ];
    let insert = prop_oneof![
        prop::collection::vec(any::<u8>(), 1..16),
        prop::sample::select(
            &[
                "\n",
                " ",
                "\r\n",
                "$",
                "$Nodes\n",
                "$EndNodes\n",
                "$Elements\n",
                "$EndElements\n",
                "$Entities\n",
                "$EndEntities\n",
                "$PhysicalNames\n",
                "$MeshFormat\n",
                "\x1b[31m",
                "\0",
                "-",
                "9",
                "\"",
            ][..]
        )
        .prop_map(|s| s.as_bytes().to_vec()),
    ];
    prop_oneof![
        3 => (any::<Index>(), 0..8u8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), 1..64usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
        2 => (any::<Index>(), insert).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => (any::<Index>(), 1..400usize, any::<Index>())
            .prop_map(|(a, n, b)| Mutation::Duplicate(a, n, b)),
        4 => (any::<Index>(), any::<Index>(), number)
            .prop_map(|(s, k, v)| Mutation::Number(s, k, v)),
        3 => (
            any::<Index>(),
            any::<Index>(),
            prop_oneof![prop::sample::select(&INTERESTING[..]), any::<i64>()],
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(s, k, v, wide, big)| Mutation::Binary(s, k, v, wide, big)),
    ]
}

/// Byte ranges of the ASCII number tokens in `range`.
fn number_tokens(bytes: &[u8], range: Range<usize>) -> Vec<Range<usize>> {
    let is_num = |b: u8| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E');
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        if is_num(bytes[i]) && (i == 0 || bytes[i - 1].is_ascii_whitespace()) {
            let mut j = i;
            while j < range.end && is_num(bytes[j]) {
                j += 1;
            }
            out.push(i..j);
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len();
    let at = |i: &Index| if len == 0 { 0 } else { i.index(len) };
    match m {
        Mutation::Flip(i, bit) => {
            if len > 0 {
                bytes[at(i)] ^= 1 << bit;
            }
        }
        Mutation::Truncate(i) => bytes.truncate(at(i)),
        Mutation::Delete(i, n) => {
            let s = at(i);
            bytes.drain(s..(s + n).min(len));
        }
        Mutation::Insert(i, b) => {
            let s = at(i);
            bytes.splice(s..s, b.iter().copied());
        }
        Mutation::Duplicate(from, n, to) => {
            let s = at(from);
            let chunk = bytes[s..(s + n).min(len)].to_vec();
            let t = at(to);
            bytes.splice(t..t, chunk);
        }
        Mutation::Number(section, which, value) => {
            let secs = sections(bytes);
            let range = secs[section.index(secs.len())].clone();
            let tokens = number_tokens(bytes, range);
            if !tokens.is_empty() {
                let t = tokens[which.index(tokens.len())].clone();
                bytes.splice(t, value.bytes());
            }
        }
        Mutation::Binary(section, which, value, wide, big) => {
            let secs = sections(bytes);
            let range = secs[section.index(secs.len())].clone();
            let width = if *wide { 8 } else { 4 };
            if range.len() >= width {
                let s = range.start + which.index(range.len() - width + 1);
                let v: Vec<u8> = match (wide, big) {
                    (true, false) => value.to_le_bytes().to_vec(),
                    (true, true) => value.to_be_bytes().to_vec(),
                    (false, false) => (*value as i32).to_le_bytes().to_vec(),
                    (false, true) => (*value as i32).to_be_bytes().to_vec(),
                };
                bytes[s..s + width].copy_from_slice(&v);
            }
        }
    }
}

/// Headers that bring random data to each parser: ASCII or binary MSH 2.2 or 4.1.
fn headers() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (version, size) in [("2.2", 8), ("4.1", 8), ("4.1", 4)] {
        out.push(format!("$MeshFormat\n{version} 0 {size}\n$EndMeshFormat\n").into_bytes());
        for big in [false, true] {
            let mut h = format!("$MeshFormat\n{version} 1 {size}\n").into_bytes();
            h.extend(if big {
                1i32.to_be_bytes()
            } else {
                1i32.to_le_bytes()
            });
            h.extend(b"\n$EndMeshFormat\n");
            out.push(h);
        }
    }
    out
}

/// Tokens of an MSH file, for random ASCII streams with a plausible shape.
const TOKENS: [&str; 24] = [
    "$Nodes",
    "$EndNodes",
    "$Elements",
    "$EndElements",
    "$Entities",
    "$EndEntities",
    "$PhysicalNames",
    "$EndPhysicalNames",
    "$Periodic",
    "$EndPeriodic",
    "\n",
    "\n",
    "\n",
    " ",
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "0.5",
    "-1",
    "\"a\"",
    "1000000000",
];

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn mutated_committed_files_are_read_or_refused_within_bounds() {
    let files = small_files();
    let tally = Tally::new("mutated committed files");
    proptest!(config(60_000), |(file in any::<Index>(), ms in prop::collection::vec(mutation(), 1..6))| {
        let mut bytes = files[file.index(files.len())].1.clone();
        for m in &ms {
            apply(&mut bytes, m);
        }
        tally.record(&bytes)?;
    });
    // mutations of coordinates and of skipped parts leave meshes readable
    assert!(tally.accepted.get() > 0, "no mutated file was readable");
}

#[test]
fn mutated_large_hexahedral_mesh_is_read_or_refused_within_bounds() {
    let good = std::fs::read(data_dir().join("plate_hole_hex_v41_binary.msh")).expect("mesh");
    let tally = Tally::new("mutated 400 kB hexahedral mesh");
    proptest!(config(600), |(ms in prop::collection::vec(mutation(), 1..4))| {
        let mut bytes = good.clone();
        for m in &ms {
            apply(&mut bytes, m);
        }
        tally.record(&bytes)?;
    });
}

#[test]
fn random_bytes_are_refused_within_bounds() {
    let tally = Tally::new("random bytes");
    proptest!(config(10_000), |(bytes in prop::collection::vec(any::<u8>(), 0..8192))| {
        tally.record(&bytes)?;
    });
    let headers = headers();
    let tally = Tally::new("random bytes after a valid header");
    proptest!(config(10_000), |(
        h in any::<Index>(),
        section in prop::sample::select(&["$Nodes\n", "$Elements\n", "$Entities\n", "$PhysicalNames\n", ""][..]),
        bytes in prop::collection::vec(any::<u8>(), 0..4096),
    )| {
        let mut b = headers[h.index(headers.len())].clone();
        b.extend(section.as_bytes());
        b.extend(&bytes);
        tally.record(&b)?;
    });
}

#[test]
fn random_token_streams_are_read_or_refused_within_bounds() {
    let headers = headers();
    let tally = Tally::new("random token streams");
    proptest!(config(5000), |(
        h in any::<Index>(),
        tokens in prop::collection::vec(prop::sample::select(&TOKENS[..]), 0..400),
    )| {
        let mut b = headers[h.index(headers.len() / 3) * 3].clone(); // ASCII headers
        for t in &tokens {
            b.extend(t.as_bytes());
            if t.starts_with('$') {
                b.push(b'\n');
            } else {
                b.push(b' ');
            }
        }
        tally.record(&b)?;
    });
}

/// Small meshes (the unit square as 8 triangles, two tetrahedra, two hexahedra) in MSH 2.2
/// and 4.1 ASCII, whose numbers the next test replaces by small ones: counts, tags,
/// types, node references and coordinates that are plausible, so that the reader gets
/// past the syntax into the mesh checks (repeated and missing nodes, degenerate, tangled,
/// mirrored and folded cells).
fn templates() -> Vec<String> {
    let square_nodes = "1 0 0 0\n2 0.5 0 0\n3 1 0 0\n4 0 0.5 0\n5 0.5 0.5 0\n6 1 0.5 0\n\
                        7 0 1 0\n8 0.5 1 0\n9 1 1 0\n";
    let square_tris = [
        [1, 2, 5],
        [1, 5, 4],
        [2, 3, 6],
        [2, 6, 5],
        [4, 5, 8],
        [4, 8, 7],
        [5, 6, 9],
        [5, 9, 8],
    ];
    let mut v22 = format!("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n9\n{square_nodes}");
    v22 += "$EndNodes\n$Elements\n10\n";
    for (k, t) in square_tris.iter().enumerate() {
        v22 += &format!("{} 2 2 1 1 {} {} {}\n", k + 1, t[0], t[1], t[2]);
    }
    v22 += "9 1 2 2 2 1 2\n10 1 2 2 2 2 3\n$EndElements\n";
    let mut v41 = String::from(
        "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Entities\n0 1 1 0\n\
         1 0 0 0 1 0 0 1 2 0\n1 0 0 0 1 1 0 1 1 0\n$EndEntities\n$Nodes\n1 9 1 9\n2 1 0 9\n",
    );
    for k in 1..=9 {
        v41 += &format!("{k}\n");
    }
    for line in square_nodes.lines() {
        let x: Vec<&str> = line.split(' ').skip(1).collect();
        v41 += &format!("{}\n", x.join(" "));
    }
    v41 += "$EndNodes\n$Elements\n2 10 1 10\n2 1 2 8\n";
    for (k, t) in square_tris.iter().enumerate() {
        v41 += &format!("{} {} {} {}\n", k + 1, t[0], t[1], t[2]);
    }
    v41 += "1 1 1 2\n9 1 2\n10 2 3\n$EndElements\n";
    let tets = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n5\n1 0 0 0\n2 1 0 0\n\
                3 0 1 0\n4 0 0 1\n5 0.2 0.2 -1\n$EndNodes\n$Elements\n2\n\
                1 4 2 1 1 1 2 3 4\n2 4 2 1 1 1 3 2 5\n$EndElements\n"
        .to_string();
    let mut hexes = String::from("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n12\n");
    let mut k = 1;
    for z in 0..2 {
        for y in 0..2 {
            for x in 0..3 {
                hexes += &format!("{k} {x} {y} {z}\n");
                k += 1;
            }
        }
    }
    hexes += "$EndNodes\n$Elements\n2\n1 5 2 1 1 1 2 5 4 7 8 11 10\n\
              2 5 2 1 1 2 3 6 5 8 9 12 11\n$EndElements\n";
    let texts = vec![v22, v41, tets, hexes];
    for (t, cells) in texts.iter().zip([8, 8, 2, 2]) {
        let m = ferrofem_mesh::read_gmsh_bytes(t.as_bytes(), "template").expect("template reads");
        assert_eq!(m.num_cells(), cells, "{t}");
    }
    texts
}

#[test]
fn templates_with_random_small_numbers_are_read_or_refused_within_bounds() {
    let templates = templates();
    let tally = Tally::new("templates with random small numbers");
    let in_file = Cell::new(0usize);
    let folds = Cell::new(0usize);
    proptest!(config(20_000), |(
        t in any::<Index>(),
        changes in prop::collection::vec((0..40u8, -1i64..12, 0..4u8), 200),
    )| {
        let text = &templates[t.index(templates.len())];
        let mut out = String::new();
        let mut last = 0;
        for (k, r) in number_tokens(text.as_bytes(), 0..text.len()).into_iter().enumerate() {
            out += &text[last..r.start];
            match changes.get(k) {
                // one number in forty: a small integer, or a half for coordinates
                Some(&(0, v, half)) => {
                    out += &v.to_string();
                    if half == 0 {
                        out += ".5";
                    }
                }
                _ => out += &text[r.clone()],
            }
            last = r.end;
        }
        out += &text[last..];
        tally.record(out.as_bytes())?;
        if let Err(MeshError::InFile { source, .. }) = read_gmsh_bytes_with_info(out.as_bytes(), "t") {
            in_file.set(in_file.get() + 1);
            if matches!(*source, MeshError::FoldedCells { .. }) {
                folds.set(folds.get() + 1);
            }
        }
    });
    println!(
        "templates: {} refused for their cells, {} of them folds",
        in_file.get(),
        folds.get()
    );
    // many changes leave a readable mesh; some make cells the reader must refuse
    assert!(
        10 * tally.accepted.get() > tally.cases.get(),
        "{}",
        tally.accepted.get()
    );
    assert!(folds.get() > 0 && in_file.get() > folds.get());
}

/// Counts that promise far more data than follows, in every section that has one: the
/// reader must not reserve memory for them.
#[test]
fn huge_announced_counts_do_not_allocate() {
    let huge = [
        "1000000000",
        "4294967295",
        "18446744073709551615",
        "9223372036854775807",
    ];
    let tally = Tally::new("huge counts");
    for (name, bytes) in small_files() {
        let text = !name.contains("binary");
        for range in sections(&bytes) {
            // binary files: only their text count lines (MSH 2.2, $PhysicalNames)
            let take = if text { 12 } else { 1 };
            let tokens = number_tokens(&bytes, range.clone());
            for t in tokens.into_iter().take(take) {
                for h in huge {
                    let mut b = bytes.clone();
                    b.splice(t.clone(), h.bytes());
                    tally.record(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
                }
            }
            // binary counts: every aligned 4- and 8-byte word of the first 200 bytes of
            // the section set to a huge value
            if !text {
                for s in (range.start..range.end.min(range.start + 200)).step_by(4) {
                    for (w, v) in [(4, i32::MAX as i64), (8, i64::MAX), (8, 1 << 40)] {
                        if s + w <= range.end {
                            let mut b = bytes.clone();
                            let v = if w == 4 {
                                (v as i32).to_le_bytes().to_vec()
                            } else {
                                v.to_le_bytes().to_vec()
                            };
                            b[s..s + w].copy_from_slice(&v);
                            tally.record(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
                        }
                    }
                }
            }
        }
    }
    assert!(tally.cases.get() > 500);
}

/// The committed files themselves are read within the bound, and accepted.
#[test]
fn committed_files_are_read_within_bounds() {
    let tally = Tally::new("committed files");
    for (name, bytes) in small_files() {
        let (ratio, ok) = check(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(ok, "{name} is refused");
        assert!(ratio < ALLOC_PER_INPUT_BYTE as f64, "{name}: {ratio}");
        tally.note(bytes.len(), ratio, ok);
    }
    let big = std::fs::read(data_dir().join("plate_hole_hex_v41_binary.msh")).expect("mesh");
    let (ratio, ok) = check(&big).unwrap_or_else(|e| panic!("plate: {e}"));
    assert!(ok);
    tally.note(big.len(), ratio, ok);
}

/// A box mesh with integer coordinates written as compactly as MSH 4.1 ASCII allows
/// (one-digit-ish numbers, single spaces): the densest valid input, so the largest
/// memory per input byte that a file the reader accepts can ask for. The boundary
/// facets at `x = 0` form an entity in `groups` physical groups.
fn compact_msh41(ct: ferrofem_mesh::CellType, n: usize, groups: usize) -> String {
    use ferrofem_mesh::{generate_box, BoxSpec, CellType};
    use std::fmt::Write;
    let d = ct.dim();
    let mut spec = BoxSpec::unit(ct, &vec![n; d]);
    spec.max = vec![n as f64; d];
    let mesh = generate_box(&spec).expect("box");
    // ferrofem lexicographic -> Gmsh counter-clockwise order for quads and hexahedra
    let order: &[usize] = match ct {
        CellType::Quadrilateral => &[0, 1, 3, 2],
        CellType::Hexahedron => &[0, 1, 3, 2, 4, 5, 7, 6],
        _ => &[0, 1, 2, 3][..ct.num_vertices()],
    };
    let gmsh_type = match ct {
        CellType::Triangle => 2,
        CellType::Quadrilateral => 3,
        CellType::Tetrahedron => 4,
        CellType::Hexahedron => 5,
    };
    let facet_type = match ct {
        CellType::Triangle | CellType::Quadrilateral => 1,
        CellType::Tetrahedron => 2,
        CellType::Hexahedron => 3,
    };
    let facet_order = order_of_facet(ct);
    let (lo_facets, _): (Vec<(u32, u8)>, Vec<_>) =
        mesh.boundary_facets().into_iter().partition(|&(c, l)| {
            let cell = mesh.cell(c as usize);
            ct.facets()[l as usize]
                .iter()
                .all(|&lv| mesh.vertex(cell[lv] as usize)[0] == 0.0)
        });
    let mut s = String::from("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n");
    let tags: Vec<String> = (1..=groups).map(|t| t.to_string()).collect();
    let counts = if d == 2 { "0 1 1 0" } else { "0 0 1 1" };
    let _ = write!(
        s,
        "$Entities\n{counts}\n1 0 0 0 1 1 1 {groups} {} 0\n",
        tags.join(" ")
    );
    let _ = write!(s, "1 0 0 0 1 1 1 0 0\n$EndEntities\n");
    let nv = mesh.num_vertices();
    let _ = write!(s, "$Nodes\n1 {nv} 1 {nv}\n{d} 1 0 {nv}\n");
    for v in 1..=nv {
        let _ = writeln!(s, "{v}");
    }
    for v in 0..nv {
        let x = mesh.vertex(v);
        let z = if d == 3 { x[2] } else { 0.0 };
        let _ = writeln!(s, "{} {} {z}", x[0], x[1]);
    }
    let nc = mesh.num_cells();
    let nf = lo_facets.len();
    let _ = write!(s, "$EndNodes\n$Elements\n2 {} 1 {}\n", nc + nf, nc + nf);
    let _ = writeln!(s, "{d} 1 {gmsh_type} {nc}");
    for c in 0..nc {
        let cell = mesh.cell(c);
        let nodes: Vec<String> = order.iter().map(|&k| (cell[k] + 1).to_string()).collect();
        let _ = writeln!(s, "{} {}", c + 1, nodes.join(" "));
    }
    let _ = writeln!(s, "{} 1 {facet_type} {nf}", d - 1);
    for (i, &(c, l)) in lo_facets.iter().enumerate() {
        let cell = mesh.cell(c as usize);
        let f = ct.facets()[l as usize];
        let nodes: Vec<String> = facet_order
            .iter()
            .map(|&k| (cell[f[k]] + 1).to_string())
            .collect();
        let _ = writeln!(s, "{} {}", nc + i + 1, nodes.join(" "));
    }
    s.push_str("$EndElements\n");
    s
}

/// Gmsh order of the vertices of a facet given in ferrofem's order.
fn order_of_facet(ct: ferrofem_mesh::CellType) -> &'static [usize] {
    match ct {
        ferrofem_mesh::CellType::Hexahedron => &[0, 1, 3, 2],
        ferrofem_mesh::CellType::Tetrahedron => &[0, 1, 2],
        _ => &[0, 1],
    }
}

/// The densest valid files stay within the bound; an entity in thousands of physical
/// groups (a facet is recorded once per group) is refused instead of multiplying memory.
#[test]
fn compact_files_and_many_physical_groups_stay_within_bounds() {
    use ferrofem_mesh::CellType;
    let tally = Tally::new("compact valid files");
    for (ct, n) in [
        (CellType::Triangle, 40),
        (CellType::Quadrilateral, 40),
        (CellType::Tetrahedron, 9),
        (CellType::Hexahedron, 12),
    ] {
        for groups in [1, 3] {
            let text = compact_msh41(ct, n, groups);
            let (r, ok) = check(text.as_bytes()).unwrap_or_else(|e| panic!("{ct}: {e}"));
            assert!(ok, "{ct}: the compact file is accepted");
            assert!(
                r < ALLOC_PER_INPUT_BYTE as f64 / 2.0,
                "{ct}: {r} bytes per byte"
            );
            tally.note(text.len(), r, ok);
        }
        let mesh =
            ferrofem_mesh::read_gmsh_bytes(compact_msh41(ct, n, 3).as_bytes(), "c").expect("reads");
        assert_eq!(
            mesh.facets().len(),
            3 * n.pow(ct.dim() as u32 - 1) * (1 + (ct == CellType::Tetrahedron) as usize)
        );
    }
    // the 40 facets at x = 0 in an entity of 50 000 physical groups: 2 million facet
    // records (24 MB) asked for by a file of 330 kB
    let many: Vec<String> = (1..=50_000).map(|t| t.to_string()).collect();
    let text = compact_msh41(CellType::Triangle, 40, 1).replacen(
        "1 0 0 0 1 1 1 1 1 0\n",
        &format!("1 0 0 0 1 1 1 50000 {} 0\n", many.join(" ")),
        1,
    );
    assert!(
        text.contains(" 50000 1 2 3 "),
        "the entity line was replaced"
    );
    let (r, ok) = check(text.as_bytes()).expect("within bounds");
    assert!(!ok, "refused");
    match ferrofem_mesh::read_gmsh_bytes(text.as_bytes(), "many.msh") {
        Err(MeshError::Unsupported { message, .. }) => {
            assert!(message.contains("physical groups"), "{message}")
        }
        other => panic!("expected a refusal, got {:?}", other.map(|m| m.num_cells())),
    }
    tally.note(text.len(), r, ok);
}

/// Many element blocks of one entity that lists many physical groups: the groups are
/// looked up once per entity, not copied per block.
#[test]
fn many_blocks_of_an_entity_in_many_groups_stay_within_bounds() {
    let groups: Vec<String> = (1..=5000).map(|t| t.to_string()).collect();
    let blocks = 2000;
    let mut s = format!(
        "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Entities\n0 0 1 0\n\
         1 0 0 0 1 1 0 5000 {} 0\n$EndEntities\n\
         $Nodes\n1 3 1 3\n2 1 0 3\n1\n2\n3\n0 0 0\n1 0 0\n0 1 0\n$EndNodes\n\
         $Elements\n{blocks} {blocks} 1 {blocks}\n",
        groups.join(" ")
    );
    for t in 1..=blocks {
        s += &format!("2 1 2 1\n{t} 1 2 3\n");
    }
    s += "$EndElements\n";
    let (_, accepted) = check(s.as_bytes()).expect("within bounds");
    // 2000 copies of one triangle share their edges: not a mesh
    assert!(!accepted);
}

/// The overlap check of accepted meshes sees a fold that every cell-by-cell check passes.
#[test]
fn the_overlap_oracle_sees_a_fold() {
    use ferrofem_mesh::{CellType, Mesh};
    // the unit square as 8 triangles around the middle vertex 4, moved below the bottom
    // edge; the two triangles that turn over are listed the other way round, so that
    // every cell is positively oriented
    let coords = vec![
        0.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.5, 0.5, -0.1, 1.0, 0.5, 0.0, 1.0, 0.5, 1.0, 1.0, 1.0,
    ];
    let cells = vec![
        0, 4, 1, 0, 4, 3, 1, 2, 5, 1, 4, 5, 3, 4, 7, 3, 7, 6, 4, 5, 8, 4, 8, 7,
    ];
    let mut mesh = Mesh::new(CellType::Triangle, coords, cells).expect("mesh");
    mesh.validate().expect("every cell is positive");
    let (cells, boundary) = measure_two_ways(&mesh).expect("triangles");
    // the cells cover 1.1; the folded edges are traversed twice in the same direction,
    // so the boundary facets no longer form a closed curve around what the cells cover
    assert!((cells - 1.1).abs() < 1e-12, "{cells}");
    assert!((cells - boundary).abs() > 0.05, "{cells} {boundary}");
    assert!(matches!(
        mesh.orient_cells(),
        Err(MeshError::FoldedCells { folds: 3, .. })
    ));
}

/// The counting allocator sees what the reader allocates (the bound is not vacuous).
#[test]
fn the_allocator_counts() {
    let (v, usage) = measure(|| vec![0u8; 3 << 20]);
    assert_eq!(v.len(), 3 << 20);
    assert!(
        usage.peak >= 3 << 20 && usage.largest >= 3 << 20,
        "{usage:?}"
    );
    let bytes = std::fs::read(data_dir().join("plate_hole_hex_v41_binary.msh")).expect("mesh");
    let (m, usage) = measure(|| read_gmsh_bytes_with_info(&bytes, "plate"));
    let (mesh, _) = m.expect("reads");
    // at least the connectivity of the result was counted
    assert!(usage.peak >= mesh.cells().len() * 4, "{usage:?}");
    drop(mesh);
    let err: MeshError = read_gmsh_bytes_with_info(b"", "empty").unwrap_err();
    assert!(err.to_string().starts_with("empty"));
}
