//! Seismogram writers: every header field and sample of the SU and SEG-Y files read
//! back byte by byte, the CSV tables read back exactly, and every rejected input.

use ferrofem_io::{write_segy, write_seismograms_csv, write_su, IoError, Seismograms, Station};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, empty directory under the system temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ferrofem-io-seismogram-{}-{}-{tag}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates temp dir");
    dir
}

/// Reads fixed-width fields of one byte order.
struct Reader<'a> {
    bytes: &'a [u8],
    big: bool,
}

impl Reader<'_> {
    fn take<const N: usize>(&self, at: usize) -> [u8; N] {
        self.bytes[at..at + N].try_into().expect("in range")
    }
    fn i16(&self, at: usize) -> i16 {
        let b = self.take(at);
        if self.big {
            i16::from_be_bytes(b)
        } else {
            i16::from_le_bytes(b)
        }
    }
    fn u16(&self, at: usize) -> u16 {
        let b = self.take(at);
        if self.big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    }
    fn i32(&self, at: usize) -> i32 {
        let b = self.take(at);
        if self.big {
            i32::from_be_bytes(b)
        } else {
            i32::from_le_bytes(b)
        }
    }
    fn f32(&self, at: usize) -> f32 {
        let b = self.take(at);
        if self.big {
            f32::from_be_bytes(b)
        } else {
            f32::from_le_bytes(b)
        }
    }
    fn f64(&self, at: usize) -> f64 {
        let b = self.take(at);
        if self.big {
            f64::from_be_bytes(b)
        } else {
            f64::from_le_bytes(b)
        }
    }
    fn u64(&self, at: usize) -> u64 {
        let b = self.take(at);
        if self.big {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        }
    }
}

/// Asserts that every byte of `bytes` outside the `(offset, length)` ranges is zero.
fn assert_rest_zero(bytes: &[u8], fields: &[(usize, usize)], what: &str) {
    for (k, &b) in bytes.iter().enumerate() {
        let used = fields.iter().any(|&(at, len)| (at..at + len).contains(&k));
        assert!(used || b == 0, "{what}: byte {k} = {b} is not zero");
    }
}

const NS: usize = 6;

fn stations() -> Vec<Station> {
    vec![
        Station::new("R1", [12.5, -340.25, 0.0]),
        Station::new("R2,b", [654321.1234, 1.0, -25.75]),
    ]
}

/// `[station][component][sample]` for 2 stations × 2 components, values that are not
/// exact in f32.
fn samples() -> Vec<f64> {
    let mut v = Vec::new();
    for s in 0..2 {
        for c in 0..2 {
            for k in 0..NS {
                v.push((0.3 + k as f64 * 0.7 + c as f64).sin() * 10f64.powi(s - 7) / 3.0);
            }
        }
    }
    v
}

/// Expected (scalco, gx, gy, scalel, gelev) of the two stations.
const COORDS: [(i16, i32, i32, i16, i32); 2] = [
    (-10000, 125000, -3402500, 1, 0),
    (-1000, 654321123, 1000, -10000, -257500),
];

/// Checks one trace (header and samples) of an SU or SEG-Y file.
fn check_trace(
    r: &Reader<'_>,
    at: usize,
    index: usize,
    trace: &[f64],
    dt_us: u16,
    delrt: i16,
    su: Option<(f32, f32, i32)>,
) {
    let h = Reader {
        bytes: &r.bytes[at..at + 240],
        big: r.big,
    };
    let (scalco, gx, gy, scalel, gelev) = COORDS[index];
    let n = index as i32 + 1;
    assert_eq!(h.i32(0), n, "tracl");
    assert_eq!(h.i32(4), n, "tracr");
    assert_eq!(h.i32(8), 1, "fldr");
    assert_eq!(h.i32(12), n, "tracf");
    assert_eq!(h.i16(28), 1, "trid");
    assert_eq!(h.i32(40), gelev, "gelev");
    assert_eq!(h.i16(68), scalel, "scalel");
    assert_eq!(h.i16(70), scalco, "scalco");
    assert_eq!(h.i32(80), gx, "gx");
    assert_eq!(h.i32(84), gy, "gy");
    assert_eq!(h.i16(88), 1, "counit");
    assert_eq!(h.i16(108), delrt, "delrt");
    assert_eq!(h.u16(114), trace.len() as u16, "ns");
    assert_eq!(h.u16(116), dt_us, "dt");
    let mut fields = vec![
        (0, 16),
        (28, 2),
        (40, 4),
        (68, 4),
        (80, 10),
        (108, 2),
        (114, 4),
    ];
    match su {
        Some((d1, f1, ntr)) => {
            assert_eq!(h.f32(180).to_bits(), d1.to_bits(), "d1");
            assert_eq!(h.f32(184).to_bits(), f1.to_bits(), "f1");
            assert_eq!(h.i32(204), ntr, "ntr");
            fields.extend([(180, 8), (204, 4)]);
        }
        None => {
            assert_eq!(h.i16(214), 1, "time scalar");
            fields.push((214, 2));
        }
    }
    assert_rest_zero(h.bytes, &fields, &format!("trace header {n}"));
    for (k, &x) in trace.iter().enumerate() {
        let got = r.f32(at + 240 + 4 * k);
        assert_eq!(got.to_bits(), (x as f32).to_bits(), "trace {n} sample {k}");
    }
}

#[test]
fn su_headers_and_samples_read_back() {
    let dir = temp_dir("su");
    let st = stations();
    let v = samples();
    let s = Seismograms {
        t0: -0.002,
        dt: 2.5e-4,
        stations: &st,
        components: &["ux", "uz"],
        samples: &v,
    };
    assert_eq!(s.nsamples(), NS);
    assert_eq!(s.trace(1, 0), Some(&v[2 * NS..3 * NS]));
    assert_eq!(s.trace(2, 0), None);
    for c in 0..2 {
        let path = dir.join(format!("c{c}.su"));
        write_su(&path, &s, c).expect("writes SU");
        let bytes = std::fs::read(&path).expect("reads");
        assert_eq!(bytes.len(), 2 * (240 + 4 * NS));
        let r = Reader {
            bytes: &bytes,
            big: false,
        };
        for i in 0..2 {
            let trace = s.trace(i, c).expect("trace");
            let su = Some((2.5e-4f32, -0.002f32, 2));
            check_trace(&r, i * (240 + 4 * NS), i, trace, 250, -2, su);
        }
    }
    // ultrasound: dt = 10 ns and t0 = 1.5 µs do not fit the integer fields
    let s = Seismograms {
        t0: 1.5e-6,
        dt: 1e-8,
        ..s
    };
    let path = dir.join("ultrasound.su");
    write_su(&path, &s, 1).expect("writes SU");
    let bytes = std::fs::read(&path).expect("reads");
    let r = Reader {
        bytes: &bytes,
        big: false,
    };
    for i in 0..2 {
        let trace = s.trace(i, 1).expect("trace");
        let su = Some((1e-8f32, 1.5e-6f32, 2));
        check_trace(&r, i * (240 + 4 * NS), i, trace, 0, 0, su);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Checks the SEG-Y textual and binary headers; returns the text.
fn check_segy_file_headers(bytes: &[u8], ns: u16, dt_us: u16, ext_us: f64) -> String {
    let text = std::str::from_utf8(&bytes[..3200]).expect("ASCII text header");
    assert!(text.bytes().all(|b| (b' '..=b'~').contains(&b)), "{text}");
    let lines: Vec<&str> = (0..40).map(|i| &text[80 * i..80 * (i + 1)]).collect();
    for (i, line) in lines.iter().enumerate() {
        assert!(line.starts_with(&format!("C{:>2} ", i + 1)), "{line}");
    }
    assert_eq!(lines[38].trim_end(), "C39 SEG-Y_REV2.0");
    assert_eq!(lines[39].trim_end(), "C40 END TEXTUAL HEADER");
    assert!(lines[0].contains("FERROFEM"), "{}", lines[0]);

    let r = Reader { bytes, big: true };
    assert_eq!(r.i16(3212), 2, "traces per ensemble");
    assert_eq!(r.u16(3216), dt_us, "sample interval");
    assert_eq!(r.u16(3220), ns, "samples per trace");
    assert_eq!(r.i16(3224), 5, "format code");
    assert_eq!(r.i16(3228), 1, "trace sorting");
    assert_eq!(r.i16(3254), 1, "measurement system");
    assert_eq!(r.i32(3260), 2, "extended traces per ensemble");
    assert_eq!(r.i32(3268), i32::from(ns), "extended samples per trace");
    assert_eq!(r.f64(3272).to_bits(), ext_us.to_bits(), "extended interval");
    assert_eq!(r.i32(3296), 0x0102_0304, "byte-order constant");
    assert_eq!(&bytes[3500..3502], &[2, 0], "revision");
    assert_eq!(r.i16(3502), 1, "fixed-length traces");
    assert_eq!(r.i16(3504), 0, "extended textual headers");
    assert_eq!(r.u64(3512), 2, "number of traces");
    assert_eq!(r.u64(3520), 3600, "first trace offset");
    let fields: Vec<(usize, usize)> = [
        (12, 2),
        (16, 2),
        (20, 2),
        (24, 2),
        (28, 2),
        (54, 2),
        (60, 4),
        (68, 4),
        (72, 8),
        (96, 4),
        (300, 6),
        (312, 16),
    ]
    .iter()
    .map(|&(at, len)| (at, len))
    .collect();
    assert_rest_zero(&bytes[3200..3600], &fields, "binary header");
    text.to_string()
}

#[test]
fn segy_headers_and_samples_read_back() {
    let dir = temp_dir("segy");
    let st = stations();
    let v = samples();
    let s = Seismograms {
        t0: -0.002,
        dt: 2.5e-4,
        stations: &st,
        components: &["ux", "uz"],
        samples: &v,
    };
    let path = dir.join("uz.segy");
    write_segy(&path, &s, 1).expect("writes SEG-Y");
    let bytes = std::fs::read(&path).expect("reads");
    assert_eq!(bytes.len(), 3600 + 2 * (240 + 4 * NS));
    let text = check_segy_file_headers(&bytes, NS as u16, 250, 250.0);
    assert!(text.contains("COMPONENT: uz (2 OF 2: ux uz)"), "{text}");
    assert!(text.contains("DT = 0.00025 S"), "{text}");
    assert!(
        text.contains("C 6   BYTES 3217-3218 (U16 US) = 250; 3273-3280 (F64 US)   "),
        "{text}"
    );
    assert!(text.contains("T0 = -0.002 S"), "{text}");
    assert!(text.contains("C11 1 R1 12.5 -340.25 0"), "{text}");
    assert!(text.contains("C12 2 R2,b 654321.1234 1 -25.75"), "{text}");
    let r = Reader {
        bytes: &bytes,
        big: true,
    };
    for i in 0..2 {
        let trace = s.trace(i, 1).expect("trace");
        check_trace(&r, 3600 + i * (240 + 4 * NS), i, trace, 250, -2, None);
    }

    // dt = 10 ns: only the extended interval (in µs) holds it
    let s = Seismograms {
        t0: 1.5e-6,
        dt: 1e-8,
        ..s
    };
    let path = dir.join("ultrasound.segy");
    write_segy(&path, &s, 0).expect("writes SEG-Y");
    let bytes = std::fs::read(&path).expect("reads");
    let text = check_segy_file_headers(&bytes, NS as u16, 0, 1e-8 * 1e6);
    assert!(text.contains("DT = 1e-8 S"), "{text}");
    assert!(
        text.contains("C 6   BYTES 3217-3218 (U16 US) = 0 (NOT AN INTEGER); 3273-3280 (F64 US)   "),
        "{text}"
    );
    assert!(text.contains("T0 = 1.5e-6 S"), "{text}");
    let r = Reader {
        bytes: &bytes,
        big: true,
    };
    for i in 0..2 {
        let trace = s.trace(i, 0).expect("trace");
        check_trace(&r, 3600 + i * (240 + 4 * NS), i, trace, 0, 0, None);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn segy_text_header_lists_what_fits() {
    let dir = temp_dir("many");
    let st: Vec<Station> = (0..40)
        .map(|i| Station::new(format!("S{i}é"), [i as f64, 0.0, 0.0]))
        .collect();
    let v = vec![0.5; 40 * 3];
    let s = Seismograms {
        t0: 0.0,
        dt: 0.1,
        stations: &st,
        components: &["p"],
        samples: &v,
    };
    let path = dir.join("many.sgy");
    write_segy(&path, &s, 0).expect("writes");
    let bytes = std::fs::read(&path).expect("reads");
    assert_eq!(bytes.len(), 3600 + 40 * (240 + 12));
    let text = std::str::from_utf8(&bytes[..3200]).expect("ASCII");
    let line = |i: usize| text[80 * (i - 1)..80 * i].trim_end();
    assert_eq!(line(11), "C11 1 S0? 0 0 0");
    assert_eq!(line(37), "C37 27 S26? 26 0 0");
    assert_eq!(line(38), "C38 ... AND 13 MORE");
    let r = Reader {
        bytes: &bytes,
        big: true,
    };
    // 0.1 s = 100000 µs does not fit the u16 field
    assert_eq!(r.u16(3216), 0);
    assert_eq!(r.f64(3272), 0.1 * 1e6);
    assert_eq!(r.i16(3600 + 108), 0, "delrt");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn csv_tables_read_back_exactly() {
    let dir = temp_dir("csv");
    let st = stations();
    let v = samples();
    let s = Seismograms {
        t0: -0.002,
        dt: 2.5e-4,
        stations: &st,
        components: &["ux", "uz"],
        samples: &v,
    };
    let paths = write_seismograms_csv(dir.join("shot1"), &s).expect("writes CSV");
    assert_eq!(paths, [dir.join("shot1_ux.csv"), dir.join("shot1_uz.csv")]);
    // an existing directory: <dir>/<component>.csv
    let paths_in_dir = write_seismograms_csv(&dir, &s).expect("writes CSV");
    assert_eq!(paths_in_dir, [dir.join("ux.csv"), dir.join("uz.csv")]);
    for (c, path) in paths.iter().chain(&paths_in_dir).enumerate() {
        let c = c % 2;
        let text = std::fs::read_to_string(path).expect("reads");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "t,R1,\"R2,b\"");
        assert_eq!(lines.len(), NS + 1);
        for (k, line) in lines[1..].iter().enumerate() {
            let row: Vec<f64> = line
                .split(',')
                .map(|x| x.parse().expect("number"))
                .collect();
            let want = [
                -0.002 + k as f64 * 2.5e-4,
                s.trace(0, c).expect("trace")[k],
                s.trace(1, c).expect("trace")[k],
            ];
            assert_eq!(row.len(), 3, "{line}");
            for (a, b) in row.iter().zip(want) {
                assert_eq!(a.to_bits(), b.to_bits(), "{line}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs all three writers on `s`, expecting each to reject it with a message containing
/// `needle` and to create no file.
fn rejects(s: &Seismograms<'_>, component: usize, needle: &str) {
    let dir = temp_dir("bad");
    let check = |r: Result<(), IoError>, path: &Path, what: &str| {
        let e = r.expect_err(what);
        assert!(matches!(e, IoError::InvalidInput { .. }), "{what}: {e}");
        assert!(e.to_string().contains(needle), "{what}: {e}");
        assert!(!path.exists(), "{what} created {}", path.display());
    };
    let su = dir.join("a.su");
    check(write_su(&su, s, component), &su, "SU");
    let segy = dir.join("a.segy");
    check(write_segy(&segy, s, component), &segy, "SEG-Y");
    let prefix = dir.join("a");
    check(
        write_seismograms_csv(&prefix, s).map(|_| ()),
        &prefix,
        "CSV",
    );
    let left: Vec<_> = std::fs::read_dir(&dir).expect("lists").collect();
    assert!(left.is_empty(), "files were created: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn inconsistent_input_creates_no_file() {
    let st = stations();
    let v = samples();
    let good = Seismograms {
        t0: 0.0,
        dt: 1e-3,
        stations: &st,
        components: &["ux", "uz"],
        samples: &v,
    };
    for dt in [0.0, -1e-3, f64::NAN, f64::INFINITY] {
        rejects(
            &Seismograms { dt, ..good },
            0,
            "must be positive and finite",
        );
    }
    rejects(
        &Seismograms {
            t0: f64::NAN,
            ..good
        },
        0,
        "t0 = NaN",
    );
    rejects(
        &Seismograms {
            stations: &[],
            ..good
        },
        0,
        "no stations",
    );
    rejects(
        &Seismograms {
            components: &[],
            ..good
        },
        0,
        "no components",
    );
    rejects(
        &Seismograms {
            samples: &v[1..],
            ..good
        },
        0,
        "not a whole number of traces",
    );
    rejects(
        &Seismograms {
            samples: &[],
            ..good
        },
        0,
        "no samples",
    );
    for (name, why) in [
        ("u/x", "path separator"),
        ("u\\x", "path separator"),
        ("", "is empty"),
        ("u\tx", "control character"),
        ("u:x", "not portable"),
    ] {
        rejects(
            &Seismograms {
                components: &[name, "uz"],
                ..good
            },
            0,
            why,
        );
    }
    rejects(
        &Seismograms {
            components: &["uz", "uz"],
            ..good
        },
        0,
        "appears twice",
    );
    let mut moved = stations();
    moved[1].position[2] = f64::NAN;
    rejects(
        &Seismograms {
            stations: &moved,
            ..good
        },
        0,
        "station 'R2,b' (#1) has a non-finite coordinate",
    );
    for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut w = samples();
        w[2 * NS + 3] = x; // station 1, component 0, sample 3
        rejects(
            &Seismograms {
                samples: &w,
                ..good
            },
            0,
            &format!("sample 3 (t = 0.003 s) of station 'R2,b' (#1), component 'ux' = {x}"),
        );
    }
}

#[test]
fn trace_files_check_their_own_limits() {
    let dir = temp_dir("limits");
    let st = stations();
    let v = samples();
    let good = Seismograms {
        t0: 0.0,
        dt: 1e-3,
        stations: &st,
        components: &["ux", "uz"],
        samples: &v,
    };
    let path = dir.join("x.su");
    let invalid = |r: Result<(), IoError>, needle: &str| {
        let e = r.expect_err(needle);
        assert!(matches!(e, IoError::InvalidInput { .. }), "{e}");
        assert!(e.to_string().contains(needle), "{e}");
        assert!(!path.exists());
    };
    invalid(
        write_su(&path, &good, 2),
        "component index 2 is out of range",
    );
    invalid(
        write_segy(&path, &good, 2),
        "component index 2 is out of range",
    );
    // 65536 samples: fine in CSV, too many for a trace header
    let one = [Station::new("R", [0.0; 3])];
    let long = vec![0.0; 65536];
    let s = Seismograms {
        stations: &one,
        components: &["p"],
        samples: &long,
        ..good
    };
    invalid(write_su(&path, &s, 0), "65536 samples per trace exceed");
    invalid(write_segy(&path, &s, 0), "65536 samples per trace exceed");
    write_su(
        &path,
        &Seismograms {
            samples: &long[1..],
            ..s
        },
        0,
    )
    .expect("65535 fit");
    std::fs::remove_file(&path).expect("removes");
    // beyond f32: exact in CSV, not representable in SU/SEG-Y
    let mut big = samples();
    big[NS + 1] = 1e39; // station 0, component 1, sample 1
    let s = Seismograms {
        samples: &big,
        ..good
    };
    let needle = "sample 1 (t = 0.001 s) of station 'R1' (#0), component 'uz' = 1e39 exceeds";
    invalid(write_su(&path, &s, 1), needle);
    invalid(write_segy(&path, &s, 1), needle);
    write_su(&path, &s, 0).expect("component 0 is finite in f32");
    std::fs::remove_file(&path).expect("removes");
    write_seismograms_csv(dir.join("big"), &s).expect("CSV holds f64");
    // coordinates beyond what any scalar fits in an i32
    let far = [Station::new("far", [3e13, 0.0, 0.0])];
    let s = Seismograms {
        stations: &far,
        components: &["p"],
        samples: &v[..NS],
        ..good
    };
    invalid(
        write_su(&path, &s, 0),
        "station 'far' (#0): x or y too large",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
