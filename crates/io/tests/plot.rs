//! PNG figures: wiggle gathers and wavefield snapshots are decoded and their pixels
//! checked (size, colours where the data put them), and every rejected input leaves no
//! file behind.
//!
//! Set `FERROFEM_PLOT_EXAMPLES=<dir>` to keep a copy of the figures there for viewing.

use ferrofem_io::{
    write_field_png, write_trace_gather_png, FieldPlot, GatherPlot, IoError, Normalise, Raster,
    Seismograms, Station, TraceOffset,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, empty directory under the system temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ferrofem-io-plot-{}-{}-{tag}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates temp dir");
    dir
}

/// Copies `path` to `$FERROFEM_PLOT_EXAMPLES` when that is set.
fn keep(path: &Path) {
    if let Some(dir) = std::env::var_os("FERROFEM_PLOT_EXAMPLES") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("creates the examples dir");
        std::fs::copy(path, dir.join(path.file_name().expect("file name"))).expect("copies");
    }
}

/// A decoded RGB image.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Image {
    fn read(path: &Path) -> Image {
        let file = std::fs::File::open(path).expect("the PNG exists");
        let mut reader = png::Decoder::new(std::io::BufReader::new(file))
            .read_info()
            .expect("a PNG header");
        let mut rgb = vec![0; reader.output_buffer_size().expect("size")];
        let info = reader.next_frame(&mut rgb).expect("PNG data");
        assert_eq!(info.color_type, png::ColorType::Rgb);
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        rgb.truncate(info.buffer_size());
        Image {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }
    fn px(&self, x: usize, y: usize) -> [u8; 3] {
        self.rgb[(y * self.width + x) * 3..][..3]
            .try_into()
            .expect("3 bytes")
    }
}

fn dark([r, g, b]: [u8; 3]) -> bool {
    u32::from(r) + u32::from(g) + u32::from(b) < 200
}
fn reddish([r, g, b]: [u8; 3]) -> bool {
    r > 100 && r > g.saturating_add(60) && r > b.saturating_add(60)
}
fn bluish([r, g, b]: [u8; 3]) -> bool {
    b > 100 && b > r.saturating_add(60) && b > g.saturating_add(40)
}
fn grey([r, g, b]: [u8; 3]) -> bool {
    r == g && g == b && (150..230).contains(&r)
}

/// A Ricker wavelet of peak frequency `f` centred on `t = 0`.
fn ricker(t: f64, f: f64) -> f64 {
    let a = (std::f64::consts::PI * f * t).powi(2);
    (1.0 - 2.0 * a) * (-a).exp()
}

/// A shot gather: `ns` stations every `dx` metres along x at the surface, a source at
/// `x = xs`, a wave of speed `c` and peak frequency `f`, sampled `n` times every `dt`;
/// components `ux` and `uz` (the second of opposite sign), amplitude decaying as
/// `1/sqrt(distance)`.
struct Shot {
    stations: Vec<Station>,
    samples: Vec<f64>,
    dt: f64,
}

impl Shot {
    fn new(ns: usize, dx: f64, xs: f64, c: f64, f: f64, n: usize, dt: f64) -> Shot {
        let stations: Vec<Station> = (0..ns)
            .map(|i| Station::new(format!("S{i:03}"), [i as f64 * dx, 0.0, 0.0]))
            .collect();
        let mut samples = Vec::with_capacity(ns * 2 * n);
        for st in &stations {
            let r = (st.position[0] - xs).abs().max(dx / 2.0);
            for sign in [1.0, -1.0] {
                samples.extend((0..n).map(|k| {
                    let t = k as f64 * dt;
                    sign * ricker(t - 1.5 / f - r / c, f) / r.sqrt()
                }));
            }
        }
        Shot {
            stations,
            samples,
            dt,
        }
    }
    fn seismograms(&self) -> Seismograms<'_> {
        Seismograms {
            t0: 0.0,
            dt: self.dt,
            stations: &self.stations,
            components: &["ux", "uz"],
            samples: &self.samples,
        }
    }
}

/// Groups of adjacent columns in which more than half of the rows `rows` are dark:
/// the traces' zero lines and the plot frame.
fn vertical_lines(img: &Image, rows: std::ops::Range<usize>) -> usize {
    let mut groups = 0;
    let mut inside = false;
    for x in 0..img.width {
        let n = rows.clone().filter(|&y| dark(img.px(x, y))).count();
        let line = 2 * n > rows.len();
        if line && !inside {
            groups += 1;
        }
        inside = line;
    }
    groups
}

/// How many pixels of `img` satisfy `f`.
fn count(img: &Image, f: &dyn Fn([u8; 3]) -> bool) -> usize {
    (0..img.height)
        .flat_map(|y| (0..img.width).map(move |x| (x, y)))
        .filter(|&(x, y)| f(img.px(x, y)))
        .count()
}

fn dark_pixels(img: &Image) -> usize {
    count(img, &dark)
}

#[test]
fn a_gather_draws_one_dark_trace_per_station() {
    let dir = temp_dir("gather");
    let shot = Shot::new(12, 100.0, 250.0, 2000.0, 15.0, 1000, 1e-3);
    let s = shot.seismograms();
    let path = dir.join("gather_uz.png");
    let opts = GatherPlot {
        title: Some("uz, shot at x = 250 m".into()),
        ..GatherPlot::default()
    };
    write_trace_gather_png(&path, &s, 1, &opts).expect("writes the gather");
    keep(&path);
    let img = Image::read(&path);
    assert_eq!((img.width, img.height), (1000, 800));
    // Before the first arrival (late rows hold the waves) every trace is a straight
    // vertical line at its zero offset; the frame adds its two sides.
    let lines = vertical_lines(&img, 200..260);
    assert!(
        (12..=14).contains(&lines),
        "{lines} vertical lines for 12 traces"
    );
    // Filled lobes blacken more pixels than bare wiggles.
    let bare = dir.join("bare.png");
    let no_fill = GatherPlot {
        fill_positive: false,
        ..opts.clone()
    };
    write_trace_gather_png(&bare, &s, 1, &no_fill).expect("writes");
    let filled = dark_pixels(&img);
    let unfilled = dark_pixels(&Image::read(&bare));
    assert!(
        filled > unfilled + 2000,
        "filled {filled} vs bare {unfilled} dark pixels"
    );
    // Per-trace balancing lifts the weak far traces: more ink than a common scale.
    let balanced = dir.join("balanced.png");
    let per_trace = GatherPlot {
        normalise: Normalise::PerTrace,
        ..opts
    };
    write_trace_gather_png(&balanced, &s, 1, &per_trace).expect("writes");
    let per = dark_pixels(&Image::read(&balanced));
    assert!(
        per > filled,
        "per-trace {per} vs global {filled} dark pixels"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gathers_by_distance_and_in_microseconds() {
    let dir = temp_dir("gather-us");
    // An ultrasound record: 40 µs at 10 ns, receivers 2 mm apart, 1 MHz.
    let shot = Shot::new(16, 2e-3, 0.0, 5900.0, 1e6, 4000, 1e-8);
    let s = shot.seismograms();
    let path = dir.join("gather_ux_distance.png");
    let opts = GatherPlot {
        offset: TraceOffset::Distance([0.0, 0.0, 0.0]),
        gain: 1.5,
        width: 800,
        height: 600,
        ..GatherPlot::default()
    };
    write_trace_gather_png(&path, &s, 0, &opts).expect("writes the gather");
    keep(&path);
    let img = Image::read(&path);
    assert_eq!((img.width, img.height), (800, 600));
    assert!(dark_pixels(&img) > 5000);
    let by_x = dir.join("by_x.png");
    let opts = GatherPlot {
        offset: TraceOffset::Coordinate(0),
        normalise: Normalise::PerTrace,
        fill_positive: false,
        ..GatherPlot::default()
    };
    write_trace_gather_png(&by_x, &s, 0, &opts).expect("writes the gather");
    assert!(dark_pixels(&Image::read(&by_x)) > 5000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `nx × ny` cells over `[0, 2000] × [0, 1000]`: +1 on the left half, −1 on the right,
/// NaN in the lower-left corner block (`x < 250 m`, `y < 250 m`).
fn halves(nx: usize, ny: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(nx * ny);
    for j in 0..ny {
        for i in 0..nx {
            let (x, y) = (
                (i as f64 + 0.5) * 2000.0 / nx as f64,
                (j as f64 + 0.5) * 1000.0 / ny as f64,
            );
            v.push(if x < 250.0 && y < 250.0 {
                f64::NAN
            } else if x < 1000.0 {
                1.0
            } else {
                -1.0
            });
        }
    }
    v
}

#[test]
fn a_snapshot_is_red_where_positive_and_blue_where_negative() {
    let dir = temp_dir("field");
    let (nx, ny) = (200, 100);
    let values = halves(nx, ny);
    let raster = Raster {
        nx,
        ny,
        x0: 0.0,
        x1: 2000.0,
        y0: 0.0,
        y1: 1000.0,
        values: &values,
    };
    let opts = FieldPlot {
        title: Some("halves".into()),
        value_label: Some("p [Pa]".into()),
        sources: vec![[1500.0, 500.0]],
        receivers: (0..9).map(|i| [200.0 + 200.0 * i as f64, 1000.0]).collect(),
        ..FieldPlot::default()
    };
    let path = dir.join("halves.png");
    write_field_png(&path, &raster, &opts).expect("writes the snapshot");
    keep(&path);
    let img = Image::read(&path);
    assert_eq!((img.width, img.height), (1000, 800));

    // Along a row through the plot (away from the source star): a red run, then a blue
    // one of the same length (the two halves).
    let mid = (0..img.height)
        .filter(|&y| (0..img.width).filter(|&x| reddish(img.px(x, y))).count() > 100)
        .collect::<Vec<_>>();
    assert!(!mid.is_empty(), "no red rows");
    let y = mid[mid.len() / 4];
    let classes: Vec<char> = (0..img.width)
        .map(|x| {
            let c = img.px(x, y);
            if reddish(c) {
                'r'
            } else if bluish(c) {
                'b'
            } else {
                '.'
            }
        })
        .collect();
    let start = classes.iter().position(|&c| c == 'r').expect("red");
    let red = classes[start..].iter().take_while(|&&c| c == 'r').count();
    let blue = classes[start + red..]
        .iter()
        .take_while(|&&c| c == 'b')
        .count();
    assert!(red > 150, "red run of {red} px");
    assert!(
        red.abs_diff(blue) <= 2,
        "red {red} px vs blue {blue} px: the halves differ"
    );
    // Equal aspect ratio: the plot (2000 m x 1000 m) is twice as wide as high.
    let width = red + blue;
    let x = start + red / 2;
    let height = (0..img.height)
        .filter(|&y| {
            let c = img.px(x, y);
            reddish(c) || grey(c)
        })
        .count();
    let ratio = width as f64 / height as f64;
    assert!((ratio - 2.0).abs() < 0.05, "aspect {width}/{height}");
    // NaN cells are grey, the source star gold, receivers green.
    let nan_area = (width / 8) * (height / 4);
    let greys = count(&img, &grey);
    assert!(
        greys * 10 > nan_area * 9,
        "{greys} grey pixels for {nan_area}"
    );
    assert!(
        count(&img, &|[r, g, b]| r > 230 && g > 180 && b < 60) > 30,
        "no gold star"
    );
    assert!(
        count(&img, &|[r, g, b]| g > 140 && r < 80 && b < 100) > 9 * 20,
        "no green triangles"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A point source's wavefield: a ring with a singular peak at the source, which the
/// percentile clipping keeps from washing out the ring.
#[test]
fn clipping_keeps_the_ring_visible_next_to_a_singular_source() {
    let dir = temp_dir("ring");
    let (nx, ny) = (400, 300);
    let (lx, ly) = (0.04, 0.03); // an ultrasound block, 40 mm x 30 mm
    let src = [0.015, 0.02];
    let mut values = Vec::with_capacity(nx * ny);
    for j in 0..ny {
        for i in 0..nx {
            let x = (i as f64 + 0.5) / nx as f64 * lx;
            let y = (j as f64 + 0.5) / ny as f64 * ly;
            let r = ((x - src[0]).powi(2) + (y - src[1]).powi(2)).sqrt();
            let ring = ricker((r - 0.01) / 5900.0, 1e6) / (r + 1e-4).sqrt();
            let peak = 1e3 * (-(r / 3e-4).powi(2)).exp();
            values.push(1e-9 * (ring + peak));
        }
    }
    let raster = Raster {
        nx,
        ny,
        x0: 0.0,
        x1: lx,
        y0: 0.0,
        y1: ly,
        values: &values,
    };
    let opts = FieldPlot {
        title: Some("uz at t = 1.69 µs".into()),
        value_label: Some("uz [m]".into()),
        sources: vec![src],
        receivers: (1..8).map(|i| [i as f64 * 0.005, ly]).collect(),
        width: 900,
        height: 700,
        ..FieldPlot::default()
    };
    let path = dir.join("ring.png");
    write_field_png(&path, &raster, &opts).expect("writes");
    keep(&path);
    let img = Image::read(&path);
    assert_eq!((img.width, img.height), (900, 700));
    // The ring saturates many pixels; scaled by the source's peak it is nearly white.
    let red_clipped = count(&img, &reddish);
    let unclipped = dir.join("unclipped.png");
    let opts = FieldPlot {
        clip_percentile: 100.0,
        ..opts
    };
    write_field_png(&unclipped, &raster, &opts).expect("writes");
    let red_max = count(&Image::read(&unclipped), &reddish);
    assert!(
        red_clipped > 5 * red_max,
        "clipped {red_clipped} vs max-scaled {red_max} red pixels"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn assert_invalid(result: Result<(), IoError>, path: &Path, what: &str) {
    match result {
        Err(IoError::InvalidInput { path: p, message }) => {
            assert_eq!(p, path);
            assert!(
                message.contains(what),
                "message {message:?} does not mention {what:?}"
            );
        }
        other => panic!("expected InvalidInput about {what:?}, got {other:?}"),
    }
    assert!(!path.exists(), "a file was created for bad input ({what})");
}

#[test]
fn bad_rasters_and_options_create_no_file() {
    let dir = temp_dir("bad-field");
    let path = dir.join("bad.png");
    let values = halves(4, 2);
    let good = Raster {
        nx: 4,
        ny: 2,
        x0: 0.0,
        x1: 2000.0,
        y0: 0.0,
        y1: 1000.0,
        values: &values,
    };
    let opts = FieldPlot::default();
    write_field_png(&path, &good, &opts).expect("the good raster draws");
    std::fs::remove_file(&path).expect("removes");

    let nan = [f64::NAN; 8];
    let inf = [0.0, 1.0, f64::INFINITY, 0.0, 0.0, 0.0, 0.0, 0.0];
    let cases: Vec<(Raster<'_>, &str)> = vec![
        (
            Raster {
                nx: 0,
                values: &[],
                ..good
            },
            "0 x 2 cells",
        ),
        (Raster { nx: 3, ..good }, "8 values for a raster of 3 x 2"),
        (
            Raster {
                values: &values[..7],
                ..good
            },
            "7 values",
        ),
        (
            Raster {
                x1: f64::NAN,
                ..good
            },
            "x1 = NaN",
        ),
        (
            Raster {
                y0: f64::NEG_INFINITY,
                ..good
            },
            "y0 = -inf",
        ),
        (Raster { x1: 0.0, ..good }, "empty or inverted"),
        (Raster { y0: 2000.0, ..good }, "empty or inverted"),
        (
            Raster {
                values: &nan,
                ..good
            },
            "every value is NaN",
        ),
        (
            Raster {
                values: &inf,
                ..good
            },
            "value 2 (cell 2, 0) is inf",
        ),
    ];
    for (raster, what) in cases {
        assert_invalid(write_field_png(&path, &raster, &opts), &path, what);
    }
    let bad_opts = [
        (
            FieldPlot {
                width: 0,
                ..FieldPlot::default()
            },
            "image size 0 x 800",
        ),
        (
            FieldPlot {
                height: 100_000,
                ..FieldPlot::default()
            },
            "image size",
        ),
        (
            FieldPlot {
                clip_percentile: 0.0,
                ..FieldPlot::default()
            },
            "percentile 0",
        ),
        (
            FieldPlot {
                clip_percentile: f64::NAN,
                ..FieldPlot::default()
            },
            "percentile NaN",
        ),
        (
            FieldPlot {
                clip_percentile: 101.0,
                ..FieldPlot::default()
            },
            "percentile 101",
        ),
        (
            FieldPlot {
                sources: vec![[0.0, f64::NAN]],
                ..FieldPlot::default()
            },
            "source 0",
        ),
        (
            FieldPlot {
                receivers: vec![[1.0, 1.0], [f64::INFINITY, 0.0]],
                ..FieldPlot::default()
            },
            "receiver 1",
        ),
    ];
    for (o, what) in bad_opts {
        assert_invalid(write_field_png(&path, &good, &o), &path, what);
    }
    // A sliver that cannot be drawn at equal aspect ratio.
    let thin = [1.0; 2];
    let sliver = Raster {
        nx: 2,
        ny: 1,
        x0: 0.0,
        x1: 1e6,
        y0: 0.0,
        y1: 1.0,
        values: &thin,
    };
    assert_invalid(
        write_field_png(&path, &sliver, &opts),
        &path,
        "does not fit",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_seismograms_and_options_create_no_file() {
    let dir = temp_dir("bad-gather");
    let path = dir.join("bad.png");
    let shot = Shot::new(3, 10.0, 0.0, 1000.0, 20.0, 50, 1e-3);
    let good = shot.seismograms();
    let opts = GatherPlot::default();
    write_trace_gather_png(&path, &good, 1, &opts).expect("the good gather draws");
    std::fs::remove_file(&path).expect("removes");

    let mut nan = shot.samples.clone();
    nan[2 * 50 + 7] = f64::NAN; // station 1, component ux, sample 7
    let mut far = shot.stations.clone();
    far[2].position[1] = f64::INFINITY;
    let cases: Vec<(Seismograms<'_>, usize, &str)> = vec![
        (good, 2, "component index 2 is out of range"),
        (Seismograms { dt: 0.0, ..good }, 0, "dt = 0 s"),
        (
            Seismograms {
                t0: f64::NAN,
                ..good
            },
            0,
            "t0 = NaN",
        ),
        (
            Seismograms {
                stations: &[],
                ..good
            },
            0,
            "no stations",
        ),
        (
            Seismograms {
                components: &[],
                ..good
            },
            0,
            "no components",
        ),
        (
            Seismograms {
                samples: &shot.samples[..299],
                ..good
            },
            0,
            "299 samples",
        ),
        (
            Seismograms {
                samples: &shot.samples[..6],
                ..good
            },
            0,
            "at least two",
        ),
        (
            Seismograms {
                samples: &nan,
                ..good
            },
            0,
            "sample 7 (t = 0.007 s) of station 'S001'",
        ),
        (
            Seismograms {
                stations: &far,
                ..good
            },
            0,
            "station 'S002' (#2)",
        ),
    ];
    for (s, c, what) in cases {
        assert_invalid(write_trace_gather_png(&path, &s, c, &opts), &path, what);
    }
    // NaN in another component does not stop this one.
    write_trace_gather_png(
        &path,
        &Seismograms {
            samples: &nan,
            ..good
        },
        1,
        &opts,
    )
    .expect("uz is finite");
    std::fs::remove_file(&path).expect("removes");
    let bad_opts = [
        (
            GatherPlot {
                gain: 0.0,
                ..GatherPlot::default()
            },
            "gain 0",
        ),
        (
            GatherPlot {
                gain: f64::INFINITY,
                ..GatherPlot::default()
            },
            "gain inf",
        ),
        (
            GatherPlot {
                width: 10,
                ..GatherPlot::default()
            },
            "image size 10 x 800",
        ),
        (
            GatherPlot {
                offset: TraceOffset::Coordinate(3),
                ..GatherPlot::default()
            },
            "axis 3",
        ),
        (
            GatherPlot {
                offset: TraceOffset::Distance([0.0, f64::NAN, 0.0]),
                ..GatherPlot::default()
            },
            "reference point",
        ),
    ];
    for (o, what) in bad_opts {
        assert_invalid(write_trace_gather_png(&path, &good, 0, &o), &path, what);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_directory_is_an_os_error_naming_the_file() {
    let dir = temp_dir("missing");
    let path = dir.join("no/such/dir/field.png");
    let values = [1.0, -1.0];
    let raster = Raster {
        nx: 2,
        ny: 1,
        x0: 0.0,
        x1: 2.0,
        y0: 0.0,
        y1: 1.0,
        values: &values,
    };
    match write_field_png(&path, &raster, &FieldPlot::default()) {
        Err(e @ IoError::Os { .. }) => assert!(e.to_string().contains("field.png"), "{e}"),
        other => panic!("expected an OS error, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn extreme_sizes_draw() {
    let dir = temp_dir("extremes");
    // The smallest image, one cell, one station.
    let one = [2.5];
    let raster = Raster {
        nx: 1,
        ny: 1,
        x0: -1.0,
        x1: 1.0,
        y0: -1.0,
        y1: 1.0,
        values: &one,
    };
    let small = FieldPlot {
        title: Some("波 ✓ not in the font: boxes".into()),
        width: 160,
        height: 120,
        ..FieldPlot::default()
    };
    let path = dir.join("small_field.png");
    write_field_png(&path, &raster, &small).expect("draws a tiny field");
    keep(&path);
    let img = Image::read(&path);
    assert_eq!((img.width, img.height), (160, 120));
    assert!(count(&img, &reddish) > 100);
    let shot = Shot::new(1, 10.0, 0.0, 1000.0, 20.0, 2, 1e-3);
    let path = dir.join("small_gather.png");
    let opts = GatherPlot {
        width: 160,
        height: 120,
        ..GatherPlot::default()
    };
    write_trace_gather_png(&path, &shot.seismograms(), 0, &opts).expect("draws a tiny gather");
    keep(&path);
    assert_eq!(Image::read(&path).width, 160);

    // Many long traces and a big raster, in reasonable time.
    let start = std::time::Instant::now();
    let shot = Shot::new(300, 10.0, 1500.0, 3000.0, 10.0, 20_000, 1e-4);
    let path = dir.join("big_gather.png");
    write_trace_gather_png(&path, &shot.seismograms(), 1, &GatherPlot::default())
        .expect("draws a big gather");
    keep(&path);
    let n = 2000;
    let values: Vec<f64> = (0..n * n)
        .map(|k| ((k % n) as f64 * 0.01).sin() * ((k / n) as f64 * 0.013).cos())
        .collect();
    let raster = Raster {
        nx: n,
        ny: n,
        x0: 0.0,
        x1: 5e4,
        y0: -3e4,
        y1: 0.0,
        values: &values,
    };
    let path = dir.join("big_field.png");
    write_field_png(&path, &raster, &FieldPlot::default()).expect("draws a big field");
    keep(&path);
    let took = start.elapsed().as_secs_f64();
    assert!(took < 20.0, "{took} s for the big plots");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn extreme_magnitudes_draw() {
    let dir = temp_dir("magnitudes");
    for (k, scale) in [1e-310, 1e-200, 1e-20, 1e20, 1e300, 1.7e308]
        .into_iter()
        .enumerate()
    {
        let values: Vec<f64> = (0..64).map(|i| scale * ((i as f64) * 0.3).sin()).collect();
        let raster = Raster {
            nx: 8,
            ny: 8,
            x0: 0.0,
            x1: 1.0,
            y0: 0.0,
            y1: 1.0,
            values: &values,
        };
        let path = dir.join(format!("field{k}.png"));
        write_field_png(&path, &raster, &FieldPlot::default())
            .unwrap_or_else(|e| panic!("values of {scale}: {e}"));
        let st = [
            Station::new("a", [0.0; 3]),
            Station::new("b", [1e-300, 0.0, 0.0]),
        ];
        let s = Seismograms {
            t0: 0.0,
            dt: 1e-3,
            stations: &st,
            components: &["p"],
            samples: &values,
        };
        let path = dir.join(format!("gather{k}.png"));
        let opts = GatherPlot {
            offset: TraceOffset::Coordinate(0),
            ..GatherPlot::default()
        };
        write_trace_gather_png(&path, &s, 0, &opts)
            .unwrap_or_else(|e| panic!("samples of {scale}: {e}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
