//! Seismogram output: CSV tables, Seismic Unix (`.su`) and SEG-Y revision 2.0 files.
//!
//! A [`Seismograms`] borrows what a wave solver recorded: one or more components
//! (pressure `p`, displacements `ux`, `uz`, ...) at several receivers ([`Station`]s),
//! sampled uniformly at `t_k = t0 + k·dt`, `k = 0..nsamples`. Three writers:
//!
//! * [`write_seismograms_csv`]: one CSV table per component, time first, numbers with
//!   the fewest digits that read back exactly;
//! * [`write_su`]: one component in the Seismic Unix format (little-endian, as SU on
//!   x86 and SPECFEM write it);
//! * [`write_segy`]: one component in SEG-Y revision 2.0 (big-endian, ASCII textual
//!   header, IEEE floats).
//!
//! Every writer checks the whole input first (a positive finite `dt`, consistent
//! lengths, usable component names, finite samples and coordinates, header limits) and
//! creates no file when something is wrong. A seismogram holding NaN or an infinity is
//! a solver failure: it is reported with the station, component and sample, never
//! written. The trace header layout shared by SU and SEG-Y is documented on
//! [`write_su`].

use crate::csv::CsvWriter;
use crate::number::shortest;
use crate::IoError;
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// One receiver's metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct Station {
    /// Name, used as the CSV column header and listed in the SEG-Y textual header.
    pub name: String,
    /// Position `[x, y, z]` in metres (2-D: `z = 0`).
    pub position: [f64; 3],
}

impl Station {
    /// A station named `name` at `position`.
    pub fn new(name: impl Into<String>, position: [f64; 3]) -> Station {
        Station {
            name: name.into(),
            position,
        }
    }
}

/// Seismograms of several receivers, one or more components each, sampled uniformly at
/// `t_k = t0 + k·dt`.
///
/// `samples` is laid out `[station][component][sample]`: the trace of station `s` and
/// component `c` is `samples[(s * ncomp + c) * nsamples..][..nsamples]`, where
/// `nsamples = samples.len() / (stations.len() * components.len())`.
#[derive(Clone, Copy, Debug)]
pub struct Seismograms<'a> {
    /// Time of sample 0, seconds.
    pub t0: f64,
    /// Sample interval, seconds (positive and finite).
    pub dt: f64,
    /// The receivers, in trace order.
    pub stations: &'a [Station],
    /// Component names, e.g. `["p"]` or `["ux", "uz"]`: non-empty, distinct, and usable
    /// in file names (no path separators, control characters or `:*?"<>|`).
    pub components: &'a [&'a str],
    /// The samples, `[station][component][sample]`.
    pub samples: &'a [f64],
}

impl Seismograms<'_> {
    /// Samples per trace (0 when there are no stations or components).
    pub fn nsamples(&self) -> usize {
        self.samples
            .len()
            .checked_div(self.stations.len() * self.components.len())
            .unwrap_or(0)
    }

    /// The trace of `station` and `component`, or `None` when either index is out of
    /// range or `samples` is shorter than the layout requires.
    pub fn trace(&self, station: usize, component: usize) -> Option<&[f64]> {
        if station >= self.stations.len() || component >= self.components.len() {
            return None;
        }
        let n = self.nsamples();
        let start = (station * self.components.len() + component) * n;
        self.samples.get(start..start + n)
    }

    /// Checks everything except sample values; returns `nsamples`.
    fn check(&self, path: &Path) -> Result<usize, IoError> {
        let bad = |m: String| Err(IoError::invalid(path, m));
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return bad(format!(
                "the sample interval dt = {} s must be positive and finite",
                self.dt
            ));
        }
        if !self.t0.is_finite() {
            return bad(format!("the start time t0 = {} s is not finite", self.t0));
        }
        if self.stations.is_empty() {
            return bad("there are no stations".into());
        }
        if self.components.is_empty() {
            return bad("there are no components".into());
        }
        let mut seen = HashSet::new();
        for &c in self.components {
            if let Some(why) = component_name_problem(c) {
                return bad(format!("component name {c:?} {why}"));
            }
            if !seen.insert(c) {
                return bad(format!("component name {c:?} appears twice"));
            }
        }
        for (s, st) in self.stations.iter().enumerate() {
            if let Some(x) = st.position.iter().find(|x| !x.is_finite()) {
                return bad(format!(
                    "station '{}' (#{s}) has a non-finite coordinate {x}",
                    st.name
                ));
            }
        }
        let ntraces = self.stations.len() * self.components.len();
        let n = self.samples.len() / ntraces;
        if n * ntraces != self.samples.len() {
            return bad(format!(
                "{} samples are not a whole number of traces for {} stations x {} components",
                self.samples.len(),
                self.stations.len(),
                self.components.len()
            ));
        }
        if n == 0 {
            return bad("the seismograms have no samples".into());
        }
        Ok(n)
    }

    /// Rejects samples of `component` (all components when `None`) that are not finite
    /// or, when `f32_range`, that overflow an `f32`.
    fn check_values(
        &self,
        path: &Path,
        n: usize,
        component: Option<usize>,
        f32_range: bool,
    ) -> Result<(), IoError> {
        let nc = self.components.len();
        for (s, st) in self.stations.iter().enumerate() {
            for c in 0..nc {
                if component.is_some_and(|k| k != c) {
                    continue;
                }
                let trace = &self.samples[(s * nc + c) * n..][..n];
                let bad = trace
                    .iter()
                    .position(|x| !x.is_finite() || (f32_range && (*x as f32).is_infinite()));
                if let Some(k) = bad {
                    let x = trace[k];
                    let what = if x.is_finite() {
                        "exceeds the f32 range of the file format"
                    } else {
                        "is not finite (a solver failure?)"
                    };
                    return Err(IoError::invalid(
                        path,
                        format!(
                            "sample {k} (t = {} s) of station '{}' (#{s}), component '{}' \
                             = {} {what}",
                            shortest(self.t0 + k as f64 * self.dt),
                            st.name,
                            self.components[c],
                            shortest(x)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The checks shared by the SU and SEG-Y writers; returns `nsamples` as a `u16`.
    fn check_trace_file(&self, path: &Path, component: usize) -> Result<u16, IoError> {
        let n = self.check(path)?;
        if component >= self.components.len() {
            return Err(IoError::invalid(
                path,
                format!(
                    "component index {component} is out of range ({} components)",
                    self.components.len()
                ),
            ));
        }
        let ns = u16::try_from(n).map_err(|_| {
            IoError::invalid(
                path,
                format!("{n} samples per trace exceed the 65535 a trace header can hold"),
            )
        })?;
        if i32::try_from(self.stations.len()).is_err() {
            return Err(IoError::invalid(
                path,
                "too many stations for i32 trace numbers",
            ));
        }
        self.check_values(path, n, Some(component), true)?;
        Ok(ns)
    }
}

/// Why `name` cannot be a component name (`None`: it can).
fn component_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if name.contains(['/', '\\']) {
        Some("contains a path separator")
    } else if name.chars().any(char::is_control) {
        Some("contains a control character")
    } else if name.contains([':', '*', '?', '"', '<', '>', '|']) {
        Some("contains a character that is not portable in file names (:*?\"<>|)")
    } else {
        None
    }
}

/// Writes one CSV table per component and returns the paths written, in component
/// order.
///
/// If `prefix` is an existing directory the files are `<prefix>/<component>.csv`,
/// otherwise `<prefix>_<component>.csv` (e.g. `out/shot1` gives `out/shot1_ux.csv`).
/// Each table has the header `t,<station names...>` and one row per sample: the time
/// `t0 + k·dt`, then every station's value. Numbers are written with the fewest
/// digits that read back exactly (exponent notation for very large or small
/// magnitudes); station names containing commas or quotes are quoted.
pub fn write_seismograms_csv(
    prefix: impl AsRef<Path>,
    seismograms: &Seismograms<'_>,
) -> Result<Vec<PathBuf>, IoError> {
    let prefix = prefix.as_ref();
    let s = seismograms;
    let n = s.check(prefix)?;
    s.check_values(prefix, n, None, false)?;
    let paths: Vec<PathBuf> = s
        .components
        .iter()
        .map(|c| {
            if prefix.is_dir() {
                prefix.join(format!("{c}.csv"))
            } else {
                let mut p = prefix.as_os_str().to_owned();
                p.push(format!("_{c}.csv"));
                PathBuf::from(p)
            }
        })
        .collect();
    let mut header = Vec::with_capacity(s.stations.len() + 1);
    header.push("t");
    header.extend(s.stations.iter().map(|st| st.name.as_str()));
    let nc = s.components.len();
    let mut row = vec![0.0; s.stations.len() + 1];
    for (c, path) in paths.iter().enumerate() {
        let mut w = CsvWriter::create(path, &header)?;
        for k in 0..n {
            row[0] = s.t0 + k as f64 * s.dt;
            for (st, v) in row[1..].iter_mut().enumerate() {
                *v = s.samples[(st * nc + c) * n + k];
            }
            w.row(&row)?;
        }
        w.finish()?;
    }
    Ok(paths)
}

/// Writes component `component` (an index into [`Seismograms::components`]) as a
/// Seismic Unix file: per station, a 240-byte little-endian trace header then the
/// samples as little-endian IEEE `f32`.
///
/// This is SU's native layout on x86, the one SPECFEM writes and Seismic Unix reads
/// there; there is no file header, the file is the traces back to back.
///
/// Fails, creating no file, on inconsistent input (see [`Seismograms`]), a component
/// index out of range, more than 65535 samples, non-finite samples or samples beyond
/// the `f32` range.
///
/// # Trace header (SU and SEG-Y)
///
/// Both binary formats store each receiver as one trace: a 240-byte header followed by
/// `nsamples` 4-byte IEEE floats (the `f64` samples rounded to `f32`). Offsets below
/// are 0-based bytes within the trace header (the SEG-Y standard counts from 1: add
/// one). Fields not listed are zero.
///
/// | bytes   | SU name  | type | value                                                     |
/// |---------|----------|------|-----------------------------------------------------------|
/// | 0–3     | `tracl`  | i32  | trace index, 1-based (receiver order of the input)        |
/// | 4–7     | `tracr`  | i32  | same                                                      |
/// | 8–11    | `fldr`   | i32  | 1 (one shot per file)                                     |
/// | 12–15   | `tracf`  | i32  | trace index, 1-based                                      |
/// | 28–29   | `trid`   | i16  | 1 (time-domain seismic data)                              |
/// | 40–43   | `gelev`  | i32  | receiver `z`, scaled by `scalel`                          |
/// | 68–69   | `scalel` | i16  | scalar of `gelev`                                         |
/// | 70–71   | `scalco` | i16  | scalar of `gx`, `gy`                                      |
/// | 80–83   | `gx`     | i32  | receiver `x`, scaled by `scalco`                          |
/// | 84–87   | `gy`     | i32  | receiver `y`, scaled by `scalco`                          |
/// | 88–89   | `counit` | i16  | 1 (length: metres)                                        |
/// | 108–109 | `delrt`  | i16  | `t0` in ms when an exact integer in i16 range, else 0     |
/// | 114–115 | `ns`     | u16  | `nsamples` (at most 65535)                                |
/// | 116–117 | `dt`     | u16  | `dt` in µs when an integer in 1..=65535 (to 1e-9), else 0 |
/// | 180–183 | `d1`     | f32  | SU only: `dt` in seconds                                  |
/// | 184–187 | `f1`     | f32  | SU only: `t0` in seconds                                  |
/// | 204–207 | `ntr`    | i32  | SU only: number of traces in the file                     |
/// | 214–215 | —        | i16  | SEG-Y only: time scalar, 1 (times in ms as written)       |
///
/// SU's `d1`/`f1` keep the sampling when the integer fields cannot (ultrasound steps of
/// 1e-8 s, fractional-millisecond start times); in SEG-Y those bytes are the CDP
/// coordinates, so they stay zero there and the binary header's extended sample
/// interval and the textual header carry the exact values instead.
///
/// Coordinates: `gx = x`, `gy = y`, `gelev = z` of [`Station::position`]. This is what
/// SPECFEM writes in both dimensions: SPECFEM2D puts its (x, z) plane's second
/// coordinate in `gy`, which is ferrofem's 2-D `y`; SPECFEM3D puts `x`, `y` in `gx`,
/// `gy` and `z` in `gelev`. No dimension flag is needed, and a 3-D receiver at `z = 0`
/// is not mistaken for a 2-D one. Each trace gets its own scalars (`scalco` for
/// `gx`/`gy`, `scalel` for `gelev`), chosen among ±1, ±10, ±100, ±1000, ±10000 (the
/// powers of ten the SEG-Y standard allows; negative means "divide by") as the finest
/// one whose scaled, rounded coordinates still fit in an i32: 0.1 mm resolution for
/// coordinates below 214 km. Zero coordinates get scalar 1.
///
/// Readers that use only the u16 `dt` (ObsPy, segyio) see 0 when `dt` is not a whole
/// number of microseconds; ObsPy's SU byte-order detection then fails and needs
/// `byteorder="<"`.
pub fn write_su(
    path: impl AsRef<Path>,
    seismograms: &Seismograms<'_>,
    component: usize,
) -> Result<(), IoError> {
    write_traces(path.as_ref(), seismograms, component, Format::Su)
}

/// Writes component `component` (an index into [`Seismograms::components`]) as a
/// SEG-Y revision 2.0 file, big-endian throughout.
///
/// Layout (1-based file bytes, as in the standard):
///
/// * 1–3200: textual header, 40 ASCII lines of 80 characters `C 1`…`C40` naming
///   ferrofem, the component, the number of traces and samples, `dt`, `t0` (shortest
///   exact decimal), the coordinate convention and the receivers; `C39 SEG-Y_REV2.0`,
///   `C40 END TEXTUAL HEADER`. Characters outside printable ASCII become `?`.
/// * 3201–3600: binary header. 3213–3214 traces per ensemble (number of stations, 0
///   above 32767), 3217–3218 sample interval in µs (u16; 0 when `dt` in µs is not an
///   integer in 1..=65535), 3221–3222 samples per trace (u16), 3225–3226 format code 5
///   (4-byte IEEE float), 3229–3230 trace sorting 1 (as recorded), 3255–3256
///   measurement system 1 (metres), 3261–3264 extended traces per ensemble (i32),
///   3269–3272 extended samples per trace (i32), **3273–3280 extended sample interval**
///   (IEEE f64, in the same unit as 3217–3218, i.e. microseconds for time data; the
///   standard lets a non-zero value override 3217–3218, so it is always written:
///   `dt·1e6`, or exactly the u16 value when that one is set), 3297–3300 the byte-order
///   constant 16909060 (0x01020304), 3501–3502 revision 0x0200, 3503–3504 fixed-length
///   traces 1, 3505–3506 extended textual headers 0, 3513–3520 number of traces (u64),
///   3521–3528 byte offset of the first trace, 3600 (u64).
/// * From byte 3601, per station: a 240-byte trace header, the fields listed for
///   [`write_su`] except SU's `d1`, `f1` and `ntr` (those bytes are the CDP
///   coordinates and more in SEG-Y) plus the time scalar, then the samples as
///   big-endian IEEE `f32`.
///
/// Readers that only look at the u16 sample interval (segyio's `dt`, for one) see 0
/// for intervals such as 1e-8 s and must be pointed at the extended interval.
///
/// Fails, creating no file, on the same input as [`write_su`].
pub fn write_segy(
    path: impl AsRef<Path>,
    seismograms: &Seismograms<'_>,
    component: usize,
) -> Result<(), IoError> {
    write_traces(path.as_ref(), seismograms, component, Format::Segy)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Su,
    Segy,
}

/// Size of a trace header and of the SEG-Y binary file header.
const TRACE_HEADER_BYTES: usize = 240;
const SEGY_TEXT_BYTES: usize = 3200;
const SEGY_BINARY_BYTES: usize = 400;

fn write_traces(
    path: &Path,
    s: &Seismograms<'_>,
    component: usize,
    format: Format,
) -> Result<(), IoError> {
    let ns = s.check_trace_file(path, component)?;
    let n = usize::from(ns);
    let ntraces = s.stations.len();
    // Scalars first: a coordinate too large for any scalar is an input error.
    let mut coords = Vec::with_capacity(ntraces);
    for (i, st) in s.stations.iter().enumerate() {
        let [x, y, z] = st.position;
        let too_large = |what: &str| {
            IoError::invalid(
                path,
                format!(
                    "station '{}' (#{i}): {what} too large for a 32-bit trace header field",
                    st.name
                ),
            )
        };
        let (scalco, gxy) = coordinate_scalar(&[x, y]).ok_or_else(|| too_large("x or y"))?;
        let (scalel, gz) = coordinate_scalar(&[z]).ok_or_else(|| too_large("z"))?;
        coords.push((scalco, gxy, scalel, gz[0]));
    }
    let dt_us = dt_microseconds(s.dt);
    let delrt = delay_milliseconds(s.t0);

    let file = File::create(path).map_err(|e| IoError::os(path, e))?;
    let mut w = BufWriter::new(file);
    let big = format == Format::Segy;
    let result = (|| {
        if big {
            w.write_all(&segy_text_header(s, component, n, dt_us, delrt))?;
            w.write_all(&segy_binary_header(s, ns, ntraces, dt_us))?;
        }
        let mut buf = Vec::with_capacity(TRACE_HEADER_BYTES + 4 * n);
        let nc = s.components.len();
        for (i, (scalco, gxy, scalel, gz)) in coords.iter().enumerate() {
            // check_trace_file guarantees the trace count fits in an i32
            let index = i32::try_from(i + 1).unwrap_or(i32::MAX);
            let mut h = Header::new(big);
            h.i32(0, index); // tracl
            h.i32(4, index); // tracr
            h.i32(8, 1); // fldr
            h.i32(12, index); // tracf
            h.i16(28, 1); // trid: seismic data
            h.i32(40, *gz); // gelev
            h.i16(68, *scalel); // scalel
            h.i16(70, *scalco); // scalco
            h.i32(80, gxy[0]); // gx
            h.i32(84, gxy[1]); // gy
            h.i16(88, 1); // counit: length (metres)
            h.i16(108, delrt.unwrap_or(0)); // delrt, ms
            h.u16(114, ns); // ns
            h.u16(116, dt_us.unwrap_or(0)); // dt, µs
            match format {
                Format::Su => {
                    h.f32(180, s.dt as f32); // d1
                    h.f32(184, s.t0 as f32); // f1
                    h.i32(204, i32::try_from(ntraces).unwrap_or(i32::MAX)); // ntr
                }
                Format::Segy => h.i16(214, 1), // time scalar
            }
            buf.clear();
            buf.extend_from_slice(&h.bytes);
            let trace = &s.samples[(i * nc + component) * n..][..n];
            for &x in trace {
                let v = x as f32;
                buf.extend_from_slice(&if big {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                });
            }
            w.write_all(&buf)?;
        }
        w.flush()
    })();
    result.map_err(|e| IoError::os(path, e))
}

/// A 240-byte trace header being filled in one byte order.
struct Header {
    bytes: [u8; TRACE_HEADER_BYTES],
    big: bool,
}

impl Header {
    fn new(big: bool) -> Header {
        Header {
            bytes: [0; TRACE_HEADER_BYTES],
            big,
        }
    }

    fn put<const N: usize>(&mut self, at: usize, be: [u8; N], le: [u8; N]) {
        self.bytes[at..at + N].copy_from_slice(if self.big { &be } else { &le });
    }

    fn i16(&mut self, at: usize, v: i16) {
        self.put(at, v.to_be_bytes(), v.to_le_bytes());
    }

    fn u16(&mut self, at: usize, v: u16) {
        self.put(at, v.to_be_bytes(), v.to_le_bytes());
    }

    fn i32(&mut self, at: usize, v: i32) {
        self.put(at, v.to_be_bytes(), v.to_le_bytes());
    }

    fn f32(&mut self, at: usize, v: f32) {
        self.put(at, v.to_be_bytes(), v.to_le_bytes());
    }
}

/// `dt` in whole microseconds when `dt·1e6` is an integer in 1..=65535 to 1e-9
/// relative, else `None`.
fn dt_microseconds(dt: f64) -> Option<u16> {
    let us = dt * 1e6;
    let r = us.round();
    ((1.0..=65535.0).contains(&r) && (us - r).abs() <= 1e-9 * us).then_some(r as u16)
}

/// `t0` in whole milliseconds when `t0·1e3` is an integer in the i16 range to 1e-9
/// relative, else `None`.
fn delay_milliseconds(t0: f64) -> Option<i16> {
    let ms = t0 * 1e3;
    let r = ms.round();
    ((-32768.0..=32767.0).contains(&r) && (ms - r).abs() <= 1e-9 * ms.abs()).then_some(r as i16)
}

/// The finest SEG-Y coordinate scalar (−10000 … −10, 1, 10 … 10000) at which every
/// value, scaled and rounded, fits in an i32, with the scaled values; scalar 1 when all
/// values are zero; `None` when even ×10000 does not fit (|v| > 2.1e13).
fn coordinate_scalar(values: &[f64]) -> Option<(i16, Vec<i32>)> {
    if values.iter().all(|&v| v == 0.0) {
        return Some((1, vec![0; values.len()]));
    }
    const SCALARS: [i16; 9] = [-10000, -1000, -100, -10, 1, 10, 100, 1000, 10000];
    SCALARS.iter().find_map(|&scalar| {
        let f = f64::from(scalar.unsigned_abs());
        let scaled: Vec<f64> = values
            .iter()
            .map(|&v| if scalar < 0 { v * f } else { v / f }.round())
            .collect();
        scaled
            .iter()
            .all(|&v| v.abs() <= f64::from(i32::MAX))
            .then(|| (scalar, scaled.iter().map(|&v| v as i32).collect()))
    })
}

/// The 3200-byte ASCII textual header of a SEG-Y file.
fn segy_text_header(
    s: &Seismograms<'_>,
    component: usize,
    n: usize,
    dt_us: Option<u16>,
    delrt: Option<i16>,
) -> Vec<u8> {
    let ntr = s.stations.len();
    let mut lines: Vec<String> = vec![
        format!(
            "SEISMOGRAMS WRITTEN BY FERROFEM {} (SEG-Y REV 2.0, ASCII HEADER)",
            env!("CARGO_PKG_VERSION")
        ),
        format!(
            "COMPONENT: {} ({} OF {}: {})",
            s.components[component],
            component + 1,
            s.components.len(),
            s.components.join(" ")
        ),
        format!("TRACES: {ntr}, ONE PER RECEIVER IN INPUT ORDER (TRACL = TRACF = 1..{ntr})"),
        format!("SAMPLES PER TRACE: {n}, AT T = T0 + K*DT, K = 0..{}", n - 1),
        format!("SAMPLE INTERVAL DT = {} S", shortest(s.dt)),
        format!(
            "  BYTES 3217-3218 (U16 US) = {}; 3273-3280 (F64 US)",
            dt_us.map_or_else(|| "0 (NOT AN INTEGER)".to_string(), |v| v.to_string())
        ),
        format!(
            "FIRST SAMPLE T0 = {} S (TRACE DELRT {})",
            shortest(s.t0),
            delrt.map_or_else(|| "0: NOT WHOLE MS".to_string(), |v| format!("{v} MS"))
        ),
        "DATA: 4-BYTE IEEE FLOAT (FORMAT 5), BIG-ENDIAN".to_string(),
        "RECEIVERS: GX = X, GY = Y (SCALCO), GELEV = Z (SCALEL), METRES".to_string(),
        "TRACE NAME X Y Z:".to_string(),
    ];
    // lines 10..=38 list the receivers
    let room = 38 - lines.len();
    for (i, st) in s.stations.iter().enumerate() {
        if i + 1 == room && ntr > room {
            lines.push(format!("... AND {} MORE", ntr - i));
            break;
        }
        let [x, y, z] = st.position;
        lines.push(format!(
            "{} {} {} {} {}",
            i + 1,
            st.name,
            shortest(x),
            shortest(y),
            shortest(z)
        ));
    }
    lines.resize(38, String::new());
    lines.push("SEG-Y_REV2.0".to_string());
    lines.push("END TEXTUAL HEADER".to_string());
    let mut out = Vec::with_capacity(SEGY_TEXT_BYTES);
    for (i, text) in lines.iter().enumerate() {
        let mut line: Vec<u8> = format!("C{:>2} {text}", i + 1)
            .chars()
            .map(|c| {
                if c.is_ascii() && !c.is_ascii_control() {
                    c as u8
                } else {
                    b'?'
                }
            })
            .collect();
        line.resize(80, b' ');
        out.extend_from_slice(&line);
    }
    out
}

/// The 400-byte big-endian binary file header of a SEG-Y revision 2.0 file.
fn segy_binary_header(
    s: &Seismograms<'_>,
    ns: u16,
    ntraces: usize,
    dt_us: Option<u16>,
) -> [u8; SEGY_BINARY_BYTES] {
    let mut b = [0u8; SEGY_BINARY_BYTES];
    // offsets relative to file byte 3201 (1-based), i.e. 0-based file offset - 3200
    let mut put = |at: usize, bytes: &[u8]| b[at..at + bytes.len()].copy_from_slice(bytes);
    put(12, &i16::try_from(ntraces).unwrap_or(0).to_be_bytes()); // traces per ensemble
    put(16, &dt_us.unwrap_or(0).to_be_bytes()); // sample interval, µs
    put(20, &ns.to_be_bytes()); // samples per trace
    put(24, &5i16.to_be_bytes()); // format: 4-byte IEEE float
    put(28, &1i16.to_be_bytes()); // trace sorting: as recorded
    put(54, &1i16.to_be_bytes()); // measurement system: metres
    put(60, &i32::try_from(ntraces).unwrap_or(0).to_be_bytes()); // extended traces
    put(68, &i32::from(ns).to_be_bytes()); // extended samples per trace
    let ext_us = dt_us.map_or(s.dt * 1e6, f64::from);
    put(72, &ext_us.to_be_bytes()); // extended sample interval, µs
    put(96, &0x0102_0304i32.to_be_bytes()); // byte-order constant
    put(300, &[2, 0]); // SEG-Y revision 2.0
    put(302, &1i16.to_be_bytes()); // fixed-length traces
    put(304, &0i16.to_be_bytes()); // extended textual headers
    put(312, &(ntraces as u64).to_be_bytes()); // number of traces
    let first = (SEGY_TEXT_BYTES + SEGY_BINARY_BYTES) as u64;
    put(320, &first.to_be_bytes()); // byte offset of the first trace
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_keep_the_most_digits_that_fit() {
        assert_eq!(coordinate_scalar(&[0.0, 0.0]), Some((1, vec![0, 0])));
        assert_eq!(
            coordinate_scalar(&[12.5, -340.25]),
            Some((-10000, vec![125000, -3402500]))
        );
        // 654321 m × 10000 overflows an i32; × 1000 fits
        assert_eq!(
            coordinate_scalar(&[654321.1234, 1.0]),
            Some((-1000, vec![654321123, 1000]))
        );
        assert_eq!(
            coordinate_scalar(&[3.0e12]),
            Some((10000, vec![300_000_000]))
        );
        assert_eq!(coordinate_scalar(&[3.0e13]), None);
        assert_eq!(
            coordinate_scalar(&[2147483647.0]),
            Some((1, vec![2147483647]))
        );
    }

    #[test]
    fn integer_time_fields_only_when_exact() {
        assert_eq!(dt_microseconds(1e-3), Some(1000));
        assert_eq!(dt_microseconds(2.5e-4), Some(250));
        assert_eq!(dt_microseconds(1e-6), Some(1));
        assert_eq!(dt_microseconds(0.065535), Some(65535));
        assert_eq!(dt_microseconds(0.065536), None);
        assert_eq!(dt_microseconds(1e-8), None);
        assert_eq!(dt_microseconds(1.5e-6), None);
        assert_eq!(delay_milliseconds(0.0), Some(0));
        assert_eq!(delay_milliseconds(-0.002), Some(-2));
        assert_eq!(delay_milliseconds(0.1), Some(100));
        assert_eq!(delay_milliseconds(-0.0012), None);
        assert_eq!(delay_milliseconds(40.0), None);
    }

    #[test]
    fn component_names_must_be_file_name_safe() {
        assert_eq!(component_name_problem("ux"), None);
        assert!(component_name_problem("").is_some());
        assert!(component_name_problem("a/b").is_some());
        assert!(component_name_problem("a\\b").is_some());
        assert!(component_name_problem("a\nb").is_some());
        assert!(component_name_problem("a:b").is_some());
    }
}
