//! PNG figures of wave simulations: wiggle trace gathers of [`Seismograms`] and
//! snapshots of a 2-D wavefield sampled on a uniform [`Raster`].
//!
//! Both writers draw with `plotters` into an in-memory RGB bitmap and encode it with
//! `png`; text is rendered from a subset of DejaVu Sans embedded in the library
//! (`crates/io/fonts/`, Bitstream Vera licence), so the figures need no system fonts and
//! no fontconfig and look the same on every machine.
//!
//! * [`write_trace_gather_png`]: one component of a set of seismograms as a "wiggle"
//!   gather, in the convention of exploration seismology (Seismic Unix `suxwigb`, the
//!   shot gathers of SPECFEM users): time on the vertical axis increasing downwards,
//!   one trace per station side by side, offset by station index, by a coordinate or
//!   by the distance from a point (the source), positive lobes filled black;
//! * [`write_field_png`]: a snapshot on a blue–white–red colour map symmetric about
//!   zero, clipped at a percentile of `|value|` so that the singular peak at a point
//!   source does not wash out the wavefield, with a colour bar, equal aspect ratio and
//!   optional source (star) and receiver (triangle) markers.
//!
//! Like every writer of the crate they check the whole input first and create no file
//! when something is wrong; the picture is drawn completely in memory before the file
//! is created. Times are labelled in s, ms, µs or ns and lengths in km, m, mm or µm,
//! whichever keeps the tick labels short.

use crate::{IoError, Seismograms};
use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::OnceLock;

/// How the traces of a gather are scaled before drawing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Normalise {
    /// All traces share one scale: the largest `|sample|` of the component over all
    /// stations reaches [`GatherPlot::gain`] trace spacings. Relative amplitudes
    /// (geometric spreading, attenuation) stay visible.
    #[default]
    Global,
    /// Each trace is scaled by its own largest `|sample|` (trace balancing), so that
    /// weak far-offset arrivals are as visible as the near ones. All-zero traces stay
    /// flat.
    PerTrace,
}

/// Where each trace's zero line lies on the horizontal axis of a gather.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum TraceOffset {
    /// At the station's index (0, 1, 2, ... in the order of
    /// [`Seismograms::stations`]), evenly spaced.
    #[default]
    Index,
    /// At the station's coordinate `axis` (0: `x`, 1: `y`, 2: `z`), in metres: a line
    /// of receivers along an axis.
    Coordinate(usize),
    /// At the station's distance from this point (usually the source), in metres.
    Distance([f64; 3]),
}

/// Options of [`write_trace_gather_png`].
#[derive(Clone, Debug, PartialEq)]
pub struct GatherPlot {
    /// Title above the gather; `None` gives the component name.
    pub title: Option<String>,
    /// Common or per-trace amplitude scaling (default: common).
    pub normalise: Normalise,
    /// Horizontal position of the traces (default: station index).
    pub offset: TraceOffset,
    /// Largest excursion of a trace, in trace spacings (in `(0, 1000]`; default 1:
    /// the largest peak reaches the neighbouring trace's zero line). With
    /// [`TraceOffset::Coordinate`] or [`TraceOffset::Distance`] the spacing is the
    /// median gap between neighbouring stations.
    pub gain: f64,
    /// Fill the positive lobes black (variable-area wiggles; default `true`).
    pub fill_positive: bool,
    /// Image width in pixels (160 to 16384; default 1000).
    pub width: u32,
    /// Image height in pixels (120 to 16384; default 800).
    pub height: u32,
}

impl Default for GatherPlot {
    fn default() -> Self {
        GatherPlot {
            title: None,
            normalise: Normalise::Global,
            offset: TraceOffset::Index,
            gain: 1.0,
            fill_positive: true,
            width: 1000,
            height: 800,
        }
    }
}

/// A scalar field sampled on a uniform 2-D grid of `nx × ny` cells covering the box
/// `[x0, x1] × [y0, y1]` (metres): `values[j * nx + i]` is the value of cell `i` in `x`
/// and `j` in `y` (row-major, `y` outer, `j = 0` at `y0`), i.e. at the cell centre
/// `(x0 + (i + ½)·(x1 − x0)/nx, y0 + (j + ½)·(y1 − y0)/ny)`.
///
/// NaN marks cells outside the mesh: they are drawn grey. Infinite values are rejected.
#[derive(Clone, Copy, Debug)]
pub struct Raster<'a> {
    /// Cells in `x` (at least 1).
    pub nx: usize,
    /// Cells in `y` (at least 1).
    pub ny: usize,
    /// Left edge, metres.
    pub x0: f64,
    /// Right edge, metres (greater than `x0`).
    pub x1: f64,
    /// Bottom edge, metres.
    pub y0: f64,
    /// Top edge, metres (greater than `y0`).
    pub y1: f64,
    /// `nx * ny` values, row-major with `y` outer; NaN outside the mesh.
    pub values: &'a [f64],
}

/// Options of [`write_field_png`].
#[derive(Clone, Debug, PartialEq)]
pub struct FieldPlot {
    /// Title above the picture, e.g. `"p at t = 1.25 ms"`; `None` gives none.
    pub title: Option<String>,
    /// Name and unit of the plotted quantity, written along the colour bar, e.g.
    /// `"p [Pa]"`; `None` gives none.
    pub value_label: Option<String>,
    /// The colour scale saturates at this percentile of `|value|` over the finite cells
    /// (in `(0, 100]`; default 99): values beyond it get the end colours, so that a
    /// source's singular peak does not wash out the wavefield. 100 scales by the
    /// maximum.
    pub clip_percentile: f64,
    /// Source positions `[x, y]` in metres, drawn as stars; those outside the raster's
    /// box are not drawn.
    pub sources: Vec<[f64; 2]>,
    /// Receiver positions `[x, y]` in metres, drawn as triangles; those outside the
    /// raster's box are not drawn.
    pub receivers: Vec<[f64; 2]>,
    /// Image width in pixels (160 to 16384; default 1000). The plot keeps the raster's
    /// aspect ratio inside the image.
    pub width: u32,
    /// Image height in pixels (120 to 16384; default 800).
    pub height: u32,
}

impl Default for FieldPlot {
    fn default() -> Self {
        FieldPlot {
            title: None,
            value_label: None,
            clip_percentile: 99.0,
            sources: Vec::new(),
            receivers: Vec::new(),
            width: 1000,
            height: 800,
        }
    }
}

/// The family name of the text styles (only one font is embedded, so [`Canvas`]
/// draws every family with it).
const FONT: &str = "DejaVu Sans";
/// DejaVu Sans 2.37, subset to Latin-1, Greek and a few symbols (see
/// `crates/io/fonts/README.md`).
static FONT_DATA: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

/// The embedded font, parsed once per process (`None`: it did not parse, a bug).
fn font() -> Option<&'static FontRef<'static>> {
    static FONT_REF: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT_REF
        .get_or_init(|| FontRef::try_from_slice(FONT_DATA).ok())
        .as_ref()
}

/// Colour of NaN cells (outside the mesh).
const OUTSIDE: [u8; 3] = [190, 190, 190];
const MIN_SIZE: (u32, u32) = (160, 120);
const MAX_SIDE: u32 = 16384;

/// A text style of the embedded font, `px` pixels high, anchored at `h`, `v`.
fn text(px: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle {
        font: FontDesc::new(FontFamily::Name(FONT), px, FontStyle::Normal),
        color: BLACK.to_backend_color(),
        pos: Pos::new(h, v),
    }
}

/// The bitmap backend with text drawn from the embedded font by `ab_glyph`: glyphs
/// are placed at their side bearings with kerning and anti-aliased, and the anchor and
/// rotation of plotters' text styles are honoured. (plotters' own `ab_glyph` text
/// ignores the side bearings, which spaces narrow glyphs unevenly.)
struct Canvas<'a> {
    inner: BitMapBackend<'a>,
    font: &'static FontRef<'static>,
}

/// One laid-out line of text: glyphs at their pen positions (baseline at `y = ascent`),
/// its advance width and height (ascent − descent, the pixel size).
struct Line {
    glyphs: Vec<ab_glyph::Glyph>,
    width: f32,
    height: f32,
}

impl Canvas<'_> {
    fn layout(&self, text: &str, size: f64) -> Line {
        let scaled = self.font.as_scaled(PxScale::from(size as f32));
        let mut x = 0.0f32;
        let mut prev = None;
        let mut glyphs = Vec::with_capacity(text.len());
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                x += scaled.kern(p, id);
            }
            glyphs.push(id.with_scale_and_position(scaled.scale(), point(x, scaled.ascent())));
            x += scaled.h_advance(id);
            prev = Some(id);
        }
        Line {
            glyphs,
            width: x,
            height: scaled.ascent() - scaled.descent(),
        }
    }
}

impl<'a> DrawingBackend for Canvas<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }
    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<T: BackendTextStyle>(
        &self,
        text: &str,
        style: &T,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let line = self.layout(text, style.size());
        Ok((line.width.ceil() as u32, line.height.ceil() as u32))
    }

    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let line = self.layout(text, style.size());
        // The anchor within the unrotated line box, as plotters' default does.
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0.0,
            HPos::Center => -line.width / 2.0,
            HPos::Right => -line.width,
        };
        let dy = match anchor.v_pos {
            VPos::Top => 0.0,
            VPos::Center => -line.height / 2.0,
            VPos::Bottom => -line.height,
        };
        let trans = style.transform();
        for glyph in line.glyphs {
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue; // blank glyph (space)
            };
            let b = outline.px_bounds();
            let mut pixels = Vec::new();
            outline.draw(|x, y, c| pixels.push((x, y, c)));
            for (x, y, c) in pixels {
                let c = f64::from(c.clamp(0.0, 1.0));
                if c <= 0.0 {
                    continue;
                }
                let gx = (b.min.x + x as f32 + dx).round() as i32;
                let gy = (b.min.y + y as f32 + dy).round() as i32;
                let (tx, ty) = trans.transform(gx, gy);
                self.inner.draw_pixel(
                    (pos.0 + tx, pos.1 + ty),
                    BackendColor {
                        alpha: color.alpha * c,
                        rgb: color.rgb,
                    },
                )?;
            }
        }
        Ok(())
    }
}

/// Draws `line` centred across the image with its top at `y`, `px` pixels high or
/// smaller so that it fits the width.
fn centred_line(
    root: &DrawingArea<Canvas<'_>, Shift>,
    line: &str,
    px: f64,
    y: i32,
) -> Result<(), DrawingAreaErrorKind<<Canvas<'static> as DrawingBackend>::ErrorType>> {
    let (w, _) = root.dim_in_pixel();
    let room = 0.96 * f64::from(w);
    let (tw, _) = root.estimate_text_size(line, &text(px, HPos::Center, VPos::Top))?;
    let px = if f64::from(tw) > room {
        px * room / f64::from(tw)
    } else {
        px
    };
    root.draw_text(line, &text(px, HPos::Center, VPos::Top), (w as i32 / 2, y))
}

/// A failure of the drawing library (which draws in memory, so this is a bug, not a
/// property of the input).
fn draw_failed(path: &Path, e: impl std::fmt::Display) -> IoError {
    IoError::os(
        path,
        std::io::Error::other(format!("drawing the plot failed: {e}")),
    )
}

/// Checks the image size.
fn check_size(path: &Path, width: u32, height: u32) -> Result<(), IoError> {
    if width < MIN_SIZE.0 || height < MIN_SIZE.1 || width > MAX_SIDE || height > MAX_SIDE {
        return Err(IoError::invalid(
            path,
            format!(
                "the image size {width} x {height} pixels is outside {} x {} to \
                 {MAX_SIDE} x {MAX_SIDE}",
                MIN_SIZE.0, MIN_SIZE.1
            ),
        ));
    }
    Ok(())
}

/// Font and layout sizes scaled to the image.
#[derive(Clone, Copy)]
struct Sizes {
    /// Axis descriptions.
    label: f64,
    /// Tick labels.
    tick: f64,
    /// Title.
    title: f64,
    /// Subtitle (scaling information).
    note: f64,
}

impl Sizes {
    /// Length of the tick marks, pixels (tick labels sit twice as far from the axis).
    fn tick_mark(&self) -> i32 {
        (0.4 * self.tick).round().max(3.0) as i32
    }

    fn for_image(width: u32, height: u32) -> Sizes {
        let s = (f64::from(width.min(height)) / 750.0).clamp(0.6, 4.0);
        Sizes {
            label: 16.0 * s,
            tick: 14.0 * s,
            title: 21.0 * s,
            note: 13.0 * s,
        }
    }
}

/// A display unit: the name and the factor from SI units to it.
type Unit = (&'static str, f64);

/// The unit of time that keeps labels short for times up to `tmax` seconds.
fn time_unit(tmax: f64) -> Unit {
    if tmax >= 1.0 {
        ("s", 1.0)
    } else if tmax >= 1e-3 {
        ("ms", 1e3)
    } else if tmax >= 1e-6 {
        ("µs", 1e6)
    } else {
        ("ns", 1e9)
    }
}

/// The unit of length that keeps labels short for coordinates up to `lmax` metres.
fn length_unit(lmax: f64) -> Unit {
    if lmax >= 1e4 {
        ("km", 1e-3)
    } else if lmax >= 0.1 {
        ("m", 1.0)
    } else if lmax >= 1e-4 {
        ("mm", 1e3)
    } else {
        ("µm", 1e6)
    }
}

/// A tick label for `v` on an axis spanning `span` (same units): enough decimals for
/// the tick spacing plotters picks, trailing zeros removed.
fn tick_label(v: f64, span: f64) -> String {
    let decimals = if span > 0.0 {
        (3 - span.log10().floor() as i32).clamp(0, 15) as usize
    } else {
        3
    };
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if s == "-0" {
        s = "0".into();
    }
    s.replace('-', "\u{2212}")
}

/// `10^e` with a superscript exponent, e.g. `×10⁻⁶`.
fn times_ten_to(e: i32) -> String {
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let mut s = String::from("×10");
    if e < 0 {
        s.push('⁻');
    }
    for d in e.unsigned_abs().to_string().bytes() {
        s.push(SUP[usize::from(d - b'0')]);
    }
    s
}

/// A short number in scientific notation for titles, e.g. `1.23e-6`.
fn short(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e4 || v.abs() < 1e-2) {
        format!("{v:.2e}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Encodes an RGB8 bitmap as PNG at `path`.
fn write_png(path: &Path, rgb: &[u8], width: u32, height: u32) -> Result<(), IoError> {
    let file = File::create(path).map_err(|e| IoError::os(path, e))?;
    let mut w = BufWriter::new(file);
    let png_err = |e: png::EncodingError| match e {
        png::EncodingError::IoError(e) => IoError::os(path, e),
        e => IoError::os(path, std::io::Error::other(e)),
    };
    {
        let mut enc = png::Encoder::new(&mut w, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(png_err)?;
        writer.write_image_data(rgb).map_err(png_err)?;
        writer.finish().map_err(png_err)?;
    }
    w.flush().map_err(|e| IoError::os(path, e))
}

/// Draws with `draw` on a white `width × height` bitmap, then writes it as PNG.
fn render(
    path: &Path,
    width: u32,
    height: u32,
    draw: impl FnOnce(&DrawingArea<Canvas<'_>, Shift>) -> Result<(), IoError>,
) -> Result<(), IoError> {
    let font = font().ok_or_else(|| draw_failed(path, "the embedded font does not parse"))?;
    let mut rgb = vec![255u8; width as usize * height as usize * 3];
    {
        let canvas = Canvas {
            inner: BitMapBackend::with_buffer(&mut rgb, (width, height)),
            font,
        };
        let root = canvas.into_drawing_area();
        draw(&root)?;
        root.present().map_err(|e| draw_failed(path, e))?;
    }
    write_png(path, &rgb, width, height)
}

// ---------------------------------------------------------------------------------
// Trace gathers
// ---------------------------------------------------------------------------------

/// Draws component `component` (an index into [`Seismograms::components`]) of
/// `seismograms` as a wiggle trace gather and writes it as a PNG image.
///
/// Time runs down the vertical axis (the convention of exploration seismology and of
/// Seismic Unix's `suxwigb`, which SPECFEM users plot their shot gathers with), labelled
/// `t [s]`, `[ms]`, `[µs]` or `[ns]` by the length of the record. Each station's trace
/// is drawn about its zero line at the position chosen by [`GatherPlot::offset`], with
/// the amplitude scaled as [`GatherPlot::normalise`] says so that the largest excursion
/// is [`GatherPlot::gain`] trace spacings; positive lobes are filled black unless
/// [`GatherPlot::fill_positive`] is off. The station axis is on top; a line under the
/// title gives the amplitude the traces are scaled by.
///
/// Fails, creating no file, when the seismograms are inconsistent (see
/// [`Seismograms`]), have fewer than two samples, a non-finite sample in the component
/// or a non-finite station coordinate, when `component` is out of range, or when the
/// options are unusable (image size outside 160 × 120 to 16384 × 16384, a gain that is
/// not in `(0, 1000]`, a coordinate axis above 2, a non-finite reference point).
pub fn write_trace_gather_png(
    path: impl AsRef<Path>,
    seismograms: &Seismograms<'_>,
    component: usize,
    opts: &GatherPlot,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let g = Gather::new(path, seismograms, component, opts)?;
    render(path, opts.width, opts.height, |root| {
        g.draw(root, opts).map_err(|e| draw_failed(path, e))
    })
}

/// A checked gather, ready to draw.
struct Gather<'a> {
    /// The traces of the component, one per station.
    traces: Vec<&'a [f64]>,
    /// Zero line of each trace, display units.
    positions: Vec<f64>,
    /// Amplitude that is drawn `excursion` wide, per trace (0: an all-zero trace).
    norms: Vec<f64>,
    /// Width of the largest excursion, horizontal display units.
    excursion: f64,
    /// Horizontal range drawn, display units.
    x_range: (f64, f64),
    /// Description of the horizontal axis.
    x_desc: String,
    /// Whether the horizontal axis counts stations (integer ticks only).
    by_index: bool,
    /// First sample time and step, display units.
    t0: f64,
    dt: f64,
    time_unit: &'static str,
    title: String,
    note: String,
}

impl<'a> Gather<'a> {
    fn new(
        path: &Path,
        s: &Seismograms<'a>,
        component: usize,
        opts: &GatherPlot,
    ) -> Result<Gather<'a>, IoError> {
        let bad = |m: String| Err(IoError::invalid(path, m));
        check_size(path, opts.width, opts.height)?;
        if !(opts.gain.is_finite() && opts.gain > 0.0) {
            return bad(format!(
                "the gain {} must be positive and finite",
                opts.gain
            ));
        }
        match opts.offset {
            TraceOffset::Coordinate(axis) if axis > 2 => {
                return bad(format!(
                    "coordinate axis {axis} is not 0 (x), 1 (y) or 2 (z)"
                ))
            }
            TraceOffset::Distance(p) if p.iter().any(|x| !x.is_finite()) => {
                return bad(format!("the reference point {p:?} is not finite"))
            }
            _ => {}
        }
        if !(s.dt.is_finite() && s.dt > 0.0) {
            return bad(format!(
                "the sample interval dt = {} s must be positive and finite",
                s.dt
            ));
        }
        if !s.t0.is_finite() {
            return bad(format!("the start time t0 = {} s is not finite", s.t0));
        }
        if s.stations.is_empty() {
            return bad("there are no stations".into());
        }
        if s.components.is_empty() {
            return bad("there are no components".into());
        }
        if component >= s.components.len() {
            return bad(format!(
                "component index {component} is out of range ({} components)",
                s.components.len()
            ));
        }
        let ntraces = s.stations.len() * s.components.len();
        let n = s.samples.len() / ntraces;
        if n * ntraces != s.samples.len() {
            return bad(format!(
                "{} samples are not a whole number of traces for {} stations x {} components",
                s.samples.len(),
                s.stations.len(),
                s.components.len()
            ));
        }
        if n < 2 {
            return bad(format!("{n} samples per trace: a trace needs at least two"));
        }
        let t_end = s.t0 + (n - 1) as f64 * s.dt;
        if !t_end.is_finite() {
            return bad(format!("the end time {t_end} s is not finite"));
        }
        let name = s.components[component];
        let mut traces = Vec::with_capacity(s.stations.len());
        for (i, st) in s.stations.iter().enumerate() {
            if let Some(x) = st.position.iter().find(|x| !x.is_finite()) {
                return bad(format!(
                    "station '{}' (#{i}) has a non-finite coordinate {x}",
                    st.name
                ));
            }
            let samples: &'a [f64] = s.samples;
            let trace = &samples[(i * s.components.len() + component) * n..][..n];
            if let Some(k) = trace.iter().position(|x| !x.is_finite()) {
                return bad(format!(
                    "sample {k} (t = {} s) of station '{}' (#{i}), component '{name}' = {} \
                     is not finite (a solver failure?)",
                    s.t0 + k as f64 * s.dt,
                    st.name,
                    trace[k]
                ));
            }
            traces.push(trace);
        }

        // Zero lines and their typical spacing.
        let (positions, spacing, x_desc) = match opts.offset {
            TraceOffset::Index => (
                (0..traces.len()).map(|i| i as f64).collect::<Vec<_>>(),
                1.0,
                "station index".to_string(),
            ),
            TraceOffset::Coordinate(_) | TraceOffset::Distance(_) => {
                let metres: Vec<f64> = s
                    .stations
                    .iter()
                    .map(|st| match opts.offset {
                        TraceOffset::Coordinate(a) => st.position[a],
                        TraceOffset::Distance(p) => (0..3)
                            .map(|k| (st.position[k] - p[k]).powi(2))
                            .sum::<f64>()
                            .sqrt(),
                        TraceOffset::Index => 0.0,
                    })
                    .collect();
                let lmax = metres.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                let (unit, f) = length_unit(lmax);
                let positions: Vec<f64> = metres.iter().map(|x| x * f).collect();
                let what = match opts.offset {
                    TraceOffset::Coordinate(0) => "x",
                    TraceOffset::Coordinate(1) => "y",
                    TraceOffset::Coordinate(_) => "z",
                    _ => "distance",
                };
                (
                    positions.clone(),
                    median_gap(&positions),
                    format!("{what} [{unit}]"),
                )
            }
        };

        // Amplitude scaling.
        let peaks: Vec<f64> = traces
            .iter()
            .map(|t| t.iter().fold(0.0f64, |m, x| m.max(x.abs())))
            .collect();
        let global = peaks.iter().fold(0.0f64, |m, &x| m.max(x));
        let excursion = opts.gain * spacing;
        let norms: Vec<f64> = peaks
            .iter()
            .map(|&p| match opts.normalise {
                Normalise::Global => global,
                Normalise::PerTrace => p,
            })
            .collect();
        let note = match opts.normalise {
            Normalise::Global if global > 0.0 => format!(
                "common scale: max |{name}| = {} is {} trace spacing{}",
                short(global),
                short(opts.gain),
                if opts.gain == 1.0 { "" } else { "s" }
            ),
            Normalise::Global => format!("all traces are zero (|{name}| = 0)"),
            Normalise::PerTrace => format!(
                "each trace scaled by its own max |{name}| (overall max {})",
                short(global)
            ),
        };

        let pmin = positions.iter().fold(f64::INFINITY, |m, &x| m.min(x));
        let pmax = positions.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
        let pad = excursion * 1.05 + 0.02 * (pmax - pmin);
        let (tu, tf) = time_unit(s.t0.abs().max(t_end.abs()));
        Ok(Gather {
            traces,
            positions,
            norms,
            excursion,
            x_range: (pmin - pad, pmax + pad),
            x_desc,
            by_index: opts.offset == TraceOffset::Index,
            t0: s.t0 * tf,
            dt: s.dt * tf,
            time_unit: tu,
            title: opts.title.clone().unwrap_or_else(|| name.to_string()),
            note,
        })
    }

    /// The smallest and largest zero-line position.
    fn station_span(&self) -> (f64, f64) {
        self.positions
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &p| {
                (a.min(p), b.max(p))
            })
    }

    fn draw(
        &self,
        root: &DrawingArea<Canvas<'_>, Shift>,
        opts: &GatherPlot,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let (w, h) = (opts.width as i32, opts.height as i32);
        let sz = Sizes::for_image(opts.width, opts.height);
        let n = self.traces[0].len();
        let t_end = self.t0 + (n - 1) as f64 * self.dt;

        // Title and the scaling note.
        let top = (0.6 * sz.title) as i32;
        centred_line(root, &self.title, sz.title, top)?;
        let note_y = top + (1.45 * sz.title) as i32;
        centred_line(root, &self.note, sz.note, note_y)?;
        let chart_top = note_y + (2.2 * sz.note) as i32;

        let left = (0.8 * sz.label) as i32;
        let right = (1.5 * sz.label) as i32;
        let bottom = (1.2 * sz.label) as i32;
        let area = root.clone().shrink(
            (left, chart_top),
            (w - left - right, h - chart_top - bottom),
        );
        let mut chart = ChartBuilder::on(&area)
            .margin(0)
            .set_label_area_size(LabelAreaPosition::Top, (3.4 * sz.label) as i32)
            .set_label_area_size(LabelAreaPosition::Left, (4.2 * sz.label) as i32)
            .build_cartesian_2d(self.x_range.0..self.x_range.1, t_end..self.t0)?;
        let (pw, ph) = chart.plotting_area().dim_in_pixel();

        // Integer station ticks that fit; plotters picks "nice" values, so ask for at
        // most as many labels as there are stations.
        let x_span = self.x_range.1 - self.x_range.0;
        let t_span = (t_end - self.t0).abs();
        let label_w = {
            let widest = format!("{}", self.positions.len().saturating_sub(1));
            let digits = widest.len().max(4) as f64;
            0.62 * sz.tick * digits + sz.tick
        };
        let mut x_labels = ((f64::from(pw) / label_w) as usize).max(2);
        if self.by_index {
            x_labels = x_labels.min(self.positions.len().max(2));
        }
        // Labels only at station indices, or within the stations' span.
        let by_index = self.by_index;
        let (lo, hi) = self.station_span();
        let tol = 1e-9 * x_span;
        let x_fmt = move |v: &f64| {
            if *v < lo - tol || *v > hi + tol || (by_index && (v - v.round()).abs() > 1e-9) {
                String::new()
            } else {
                tick_label(*v, x_span)
            }
        };
        let y_fmt = move |v: &f64| tick_label(*v, t_span);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .set_all_tick_mark_size(sz.tick_mark())
            .bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(TRANSPARENT)
            .x_labels(x_labels)
            .y_labels(((f64::from(ph) / (2.5 * sz.tick)) as usize).clamp(2, 20))
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(text(sz.tick, HPos::Center, VPos::Center))
            .axis_desc_style(text(sz.label, HPos::Center, VPos::Center))
            .x_desc(self.x_desc.as_str())
            .y_desc(format!("t [{}]", self.time_unit))
            .draw()?;

        // The traces: min/max per pixel row when there are many more samples than rows.
        let keep = envelope_indices(self.traces.iter().map(|t| t.len()).max().unwrap_or(0), ph);
        for ((trace, &p), &norm) in self.traces.iter().zip(&self.positions).zip(&self.norms) {
            // Divide first: a tiny norm times the excursion could overflow.
            let ex = |u: f64| {
                if norm > 0.0 {
                    u / norm * self.excursion
                } else {
                    0.0
                }
            };
            let pts: Vec<(f64, f64)> = match &keep {
                Some(bins) => bins
                    .iter()
                    .flat_map(|&(a, b)| {
                        let (lo, hi) = min_max_index(trace, a, b);
                        if lo <= hi {
                            [lo, hi]
                        } else {
                            [hi, lo]
                        }
                    })
                    .map(|k| (ex(trace[k]), self.t0 + k as f64 * self.dt))
                    .collect(),
                None => trace
                    .iter()
                    .enumerate()
                    .map(|(k, &u)| (ex(u), self.t0 + k as f64 * self.dt))
                    .collect(),
            };
            if opts.fill_positive {
                for lobe in positive_lobes(&pts) {
                    let poly: Vec<(f64, f64)> = lobe.into_iter().map(|(a, t)| (p + a, t)).collect();
                    chart.draw_series(std::iter::once(Polygon::new(poly, BLACK.filled())))?;
                }
            }
            let line: Vec<(f64, f64)> = pts.iter().map(|&(a, t)| (p + a, t)).collect();
            chart.draw_series(std::iter::once(PathElement::new(
                line,
                BLACK.stroke_width(1),
            )))?;
        }
        // Frame.
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        root.draw(&PathElement::new(
            vec![
                (xr.start, yr.start),
                (xr.end - 1, yr.start),
                (xr.end - 1, yr.end - 1),
                (xr.start, yr.end - 1),
                (xr.start, yr.start),
            ],
            BLACK.stroke_width(1),
        ))?;
        Ok(())
    }
}

/// The median of the positive gaps between sorted `positions` (1 when there is none).
fn median_gap(positions: &[f64]) -> f64 {
    let mut p = positions.to_vec();
    p.sort_by(f64::total_cmp);
    let mut gaps: Vec<f64> = p
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&g| g > 0.0)
        .collect();
    if gaps.is_empty() {
        return 1.0;
    }
    gaps.sort_by(f64::total_cmp);
    gaps[gaps.len() / 2]
}

/// When `n` samples are many more than `rows` pixel rows, the sample ranges of the
/// rows (each drawn by its minimum and maximum, in time order); `None` to draw every
/// sample.
fn envelope_indices(n: usize, rows: u32) -> Option<Vec<(usize, usize)>> {
    let rows = rows.max(1) as usize;
    if n <= 4 * rows {
        return None;
    }
    Some(
        (0..rows)
            .map(|r| (r * n / rows, ((r + 1) * n / rows).max(r * n / rows + 1)))
            .collect(),
    )
}

/// Indices of the minimum and maximum of `v[a..b]`.
fn min_max_index(v: &[f64], a: usize, b: usize) -> (usize, usize) {
    let (mut lo, mut hi) = (a, a);
    for k in a..b {
        if v[k] < v[lo] {
            lo = k;
        }
        if v[k] > v[hi] {
            hi = k;
        }
    }
    (lo, hi)
}

/// The positive lobes of the curve `(amplitude, time)` as closed polygons through the
/// zero line: each starts and ends on `amplitude = 0` at the interpolated crossing.
fn positive_lobes(pts: &[(f64, f64)]) -> Vec<Vec<(f64, f64)>> {
    let mut lobes = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    let crossing = |(a0, t0): (f64, f64), (a1, t1): (f64, f64)| t0 + (t1 - t0) * a0 / (a0 - a1);
    for (k, &(a, t)) in pts.iter().enumerate() {
        if a > 0.0 {
            if cur.is_empty() {
                let tc = if k == 0 {
                    t
                } else {
                    crossing(pts[k - 1], (a, t))
                };
                cur.push((0.0, tc));
            }
            cur.push((a, t));
        } else if !cur.is_empty() {
            cur.push((0.0, crossing(pts[k - 1], (a, t))));
            lobes.push(std::mem::take(&mut cur));
        }
    }
    if let Some(&(_, t)) = cur.last() {
        cur.push((0.0, t));
        lobes.push(cur);
    }
    lobes
}

// ---------------------------------------------------------------------------------
// Wavefield snapshots
// ---------------------------------------------------------------------------------

/// Draws `raster` as a wavefield snapshot and writes it as a PNG image.
///
/// Values are coloured on a blue–white–red map symmetric about zero (negative blue,
/// zero white, positive red) that saturates at ± the [`FieldPlot::clip_percentile`]-th
/// percentile of `|value|` over the finite cells (the maximum when that percentile is
/// zero), with a colour bar on the right; NaN cells (outside the mesh) are grey. The
/// plot keeps the raster's aspect ratio (one metre is as long across as up), with
/// axes labelled in m (km, mm or µm for very large or small boxes). Sources are drawn
/// as yellow stars and receivers as green triangles. A line under the title gives the
/// clipping value.
///
/// Fails, creating no file, when `nx` or `ny` is zero, `values` does not hold
/// `nx * ny` numbers, a bound is not finite or the box is empty, a value is infinite,
/// every value is NaN, a marker is not finite, the percentile is not in `(0, 100]`,
/// or the image size is outside 160 × 120 to 16384 × 16384 pixels.
pub fn write_field_png(
    path: impl AsRef<Path>,
    raster: &Raster<'_>,
    opts: &FieldPlot,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let clip = check_raster(path, raster, opts)?;
    render(path, opts.width, opts.height, |root| {
        draw_field(path, root, raster, opts, clip)
    })
}

/// Checks the raster and options; returns the clipping value (positive).
fn check_raster(path: &Path, r: &Raster<'_>, opts: &FieldPlot) -> Result<f64, IoError> {
    let bad = |m: String| Err(IoError::invalid(path, m));
    check_size(path, opts.width, opts.height)?;
    if r.nx == 0 || r.ny == 0 {
        return bad(format!("the raster has {} x {} cells", r.nx, r.ny));
    }
    match r.nx.checked_mul(r.ny) {
        Some(n) if n == r.values.len() => {}
        _ => {
            return bad(format!(
                "{} values for a raster of {} x {} cells",
                r.values.len(),
                r.nx,
                r.ny
            ))
        }
    }
    for (name, v) in [("x0", r.x0), ("x1", r.x1), ("y0", r.y0), ("y1", r.y1)] {
        if !v.is_finite() {
            return bad(format!("the raster bound {name} = {v} is not finite"));
        }
    }
    if !(r.x1 - r.x0 > 0.0
        && r.y1 - r.y0 > 0.0
        && (r.x1 - r.x0).is_finite()
        && (r.y1 - r.y0).is_finite())
    {
        return bad(format!(
            "the raster box [{}, {}] x [{}, {}] is empty or inverted",
            r.x0, r.x1, r.y0, r.y1
        ));
    }
    if let Some(k) = r.values.iter().position(|v| v.is_infinite()) {
        return bad(format!(
            "value {k} (cell {}, {}) is {} (a solver failure?)",
            k % r.nx,
            k / r.nx,
            r.values[k]
        ));
    }
    let p = opts.clip_percentile;
    if !(p > 0.0 && p <= 100.0) {
        return bad(format!("the clip percentile {p} is not in (0, 100]"));
    }
    for (what, list) in [("source", &opts.sources), ("receiver", &opts.receivers)] {
        if let Some((i, m)) = list
            .iter()
            .enumerate()
            .find(|(_, m)| m.iter().any(|x| !x.is_finite()))
        {
            return bad(format!("{what} {i} at {m:?} is not finite"));
        }
    }
    let mut mags: Vec<f64> = r
        .values
        .iter()
        .filter(|v| !v.is_nan())
        .map(|v| v.abs())
        .collect();
    if mags.is_empty() {
        return bad("every value is NaN (no cell inside the mesh)".into());
    }
    let clip = percentile(&mut mags, p);
    let max = mags.iter().fold(0.0f64, |m, &x| m.max(x));
    Ok(if clip > 0.0 {
        clip
    } else if max > 0.0 {
        max
    } else {
        1.0
    })
}

/// The `p`-th percentile (nearest rank, `p` in `(0, 100]`) of `v` (non-empty, no NaN);
/// reorders `v`.
fn percentile(v: &mut [f64], p: f64) -> f64 {
    let rank = ((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    *v.select_nth_unstable_by(rank - 1, f64::total_cmp).1
}

/// The diverging colour map: `t` in `[-1, 1]` (clamped) from dark blue through white
/// to dark red.
fn diverging(t: f64) -> [u8; 3] {
    const STOPS: [(f64, [f64; 3]); 5] = [
        (-1.0, [10.0, 30.0, 110.0]),
        (-0.5, [50.0, 110.0, 220.0]),
        (0.0, [255.0, 255.0, 255.0]),
        (0.5, [225.0, 70.0, 50.0]),
        (1.0, [120.0, 10.0, 10.0]),
    ];
    let t = if t.is_nan() { 0.0 } else { t.clamp(-1.0, 1.0) };
    let k = STOPS
        .windows(2)
        .position(|w| t <= w[1].0)
        .unwrap_or(STOPS.len() - 2);
    let ((ta, ca), (tb, cb)) = (STOPS[k], STOPS[k + 1]);
    let f = (t - ta) / (tb - ta);
    std::array::from_fn(|c| (ca[c] + f * (cb[c] - ca[c])).round() as u8)
}

/// Draws the snapshot on `root`.
fn draw_field(
    path: &Path,
    root: &DrawingArea<Canvas<'_>, Shift>,
    r: &Raster<'_>,
    opts: &FieldPlot,
    clip: f64,
) -> Result<(), IoError> {
    let fail = |e: &dyn std::fmt::Display| draw_failed(path, e);
    let (w, h) = (opts.width as i32, opts.height as i32);
    let sz = Sizes::for_image(opts.width, opts.height);

    // Title and clipping note.
    let mut y = (0.6 * sz.title) as i32;
    if let Some(title) = &opts.title {
        centred_line(root, title, sz.title, y).map_err(|e| fail(&e))?;
        y += (1.45 * sz.title) as i32;
    }
    let note = if opts.clip_percentile >= 100.0 {
        format!("colours saturate at ±{} (the largest |value|)", short(clip))
    } else {
        format!(
            "colours saturate at ±{} (the {} percentile of |value|)",
            short(clip),
            ordinal(opts.clip_percentile)
        )
    };
    centred_line(root, &note, sz.note, y).map_err(|e| fail(&e))?;
    let top = y + (2.0 * sz.note) as i32;

    // Layout: [y labels | plot | gap | bar | bar labels], plot with equal aspect.
    let y_area = (4.2 * sz.label) as i32;
    let x_area = (3.2 * sz.label) as i32;
    let gap = (1.2 * sz.label) as i32;
    let bar_w = (1.3 * sz.label) as i32;
    let bar_labels = (5.2 * sz.label) as i32;
    let side = (1.0 * sz.label) as i32;
    let avail_w = w - 2 * side - y_area - gap - bar_w - bar_labels;
    let avail_h = h - top - x_area - side;
    let (lx, ly) = (r.x1 - r.x0, r.y1 - r.y0);
    let scale = (f64::from(avail_w.max(1)) / lx).min(f64::from(avail_h.max(1)) / ly);
    let pw = (lx * scale).round() as i32;
    let ph = (ly * scale).round() as i32;
    if pw < 8 || ph < 8 {
        return Err(IoError::invalid(
            path,
            format!(
                "a {lx} m x {ly} m box at equal aspect ratio does not fit a readable plot \
                 in {w} x {h} pixels"
            ),
        ));
    }
    let block_w = y_area + pw + gap + bar_w + bar_labels;
    let x_left = (w - block_w) / 2;
    let y_top = top + (avail_h - ph) / 2;

    // Lengths in a unit that keeps the labels short.
    let lmax = [r.x0, r.x1, r.y0, r.y1]
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let (lu, lf) = length_unit(lmax);
    let chart_area = root
        .clone()
        .shrink((x_left, y_top), (y_area + pw, ph + x_area));
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(0)
        .set_label_area_size(LabelAreaPosition::Left, y_area)
        .set_label_area_size(LabelAreaPosition::Bottom, x_area)
        .build_cartesian_2d(r.x0 * lf..r.x1 * lf, r.y0 * lf..r.y1 * lf)
        .map_err(|e| fail(&e))?;
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let (pw, ph) = ((xr.end - xr.start) as usize, (yr.end - yr.start) as usize);

    // The raster: each pixel shows the cell under its centre.
    let mut img = vec![0u8; pw * ph * 3];
    for py in 0..ph {
        let j = ((((ph - py) as f64 - 0.5) / ph as f64 * r.ny as f64) as usize).min(r.ny - 1);
        for px in 0..pw {
            let i = (((px as f64 + 0.5) / pw as f64 * r.nx as f64) as usize).min(r.nx - 1);
            let v = r.values[j * r.nx + i];
            let c = if v.is_nan() {
                OUTSIDE
            } else {
                diverging(v / clip)
            };
            img[(py * pw + px) * 3..][..3].copy_from_slice(&c);
        }
    }
    let bitmap =
        BitMapElement::with_owned_buffer((xr.start, yr.start), (pw as u32, ph as u32), img)
            .ok_or_else(|| fail(&"raster bitmap of the wrong size"))?;
    root.draw(&bitmap).map_err(|e| fail(&e))?;

    let x_span = lx * lf;
    let y_span = ly * lf;
    let x_fmt = move |v: &f64| tick_label(*v, x_span);
    let y_fmt = move |v: &f64| tick_label(*v, y_span);
    chart
        .configure_mesh()
        .disable_mesh()
        .set_all_tick_mark_size(sz.tick_mark())
        .x_labels(((pw as f64 / (4.5 * sz.tick)) as usize).clamp(2, 12))
        .y_labels(((ph as f64 / (2.5 * sz.tick)) as usize).clamp(2, 12))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(text(sz.tick, HPos::Center, VPos::Center))
        .axis_desc_style(text(sz.label, HPos::Center, VPos::Center))
        .x_desc(format!("x [{lu}]"))
        .y_desc(format!("y [{lu}]"))
        .draw()
        .map_err(|e| fail(&e))?;

    // Markers, in pixel offsets about their positions.
    let inside = |m: &[f64; 2]| {
        let tol = 1e-9 * lx.max(ly);
        m[0] >= r.x0 - tol && m[0] <= r.x1 + tol && m[1] >= r.y0 - tol && m[1] <= r.y1 + tol
    };
    let rs = (0.55 * sz.label).max(4.0);
    let tri: Vec<(i32, i32)> = [(0.0, -1.0), (0.866, 0.5), (-0.866, 0.5)]
        .iter()
        .map(|&(a, b)| ((a * rs).round() as i32, (b * rs).round() as i32))
        .collect();
    let star: Vec<(i32, i32)> = (0..10)
        .map(|k| {
            let rad = if k % 2 == 0 { 1.25 * rs } else { 0.5 * rs };
            let ang = std::f64::consts::PI * (k as f64 / 5.0 - 0.5);
            (
                (rad * ang.cos()).round() as i32,
                (rad * ang.sin()).round() as i32,
            )
        })
        .collect();
    let green = RGBColor(30, 170, 60);
    let gold = RGBColor(255, 210, 0);
    for (list, shape, fill) in [(&opts.receivers, &tri, green), (&opts.sources, &star, gold)] {
        for m in list.iter().filter(|m| inside(m)) {
            let mut outline = shape.clone();
            outline.push(shape[0]);
            let el = EmptyElement::at((m[0] * lf, m[1] * lf))
                + Polygon::new(shape.clone(), fill.filled())
                + PathElement::new(outline, BLACK.stroke_width(1));
            chart
                .draw_series(std::iter::once(el))
                .map_err(|e| fail(&e))?;
        }
    }
    // Frame.
    let frame = |x0: i32, y0: i32, x1: i32, y1: i32| {
        PathElement::new(
            vec![(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)],
            BLACK.stroke_width(1),
        )
    };
    root.draw(&frame(xr.start, yr.start, xr.end - 1, yr.end - 1))
        .map_err(|e| fail(&e))?;

    // Colour bar in engineering notation: ticks of v / 10^e, the factor on top.
    let mut e = if (1e-2..1e3).contains(&clip) {
        0
    } else {
        3 * (clip.log10() / 3.0).floor() as i32
    };
    if !(clip * 10f64.powi(-e)).is_normal() {
        e = 0; // subnormal or near-overflow values: keep the raw numbers
    }
    let f = 10f64.powi(-e);
    let bar_x = xr.start + pw as i32 + gap;
    let bar_area = root
        .clone()
        .shrink((bar_x, yr.start), (bar_w + bar_labels, ph as i32));
    let mut bar = ChartBuilder::on(&bar_area)
        .margin(0)
        .set_label_area_size(LabelAreaPosition::Right, bar_labels)
        .build_cartesian_2d(0.0..1.0, -clip * f..clip * f)
        .map_err(|e| fail(&e))?;
    let (bxr, byr) = bar.plotting_area().get_pixel_range();
    let (bw, bh) = (
        (bxr.end - bxr.start) as usize,
        (byr.end - byr.start) as usize,
    );
    let mut img = vec![0u8; bw * bh * 3];
    for py in 0..bh {
        let c = diverging(1.0 - 2.0 * (py as f64 + 0.5) / bh as f64);
        for px in 0..bw {
            img[(py * bw + px) * 3..][..3].copy_from_slice(&c);
        }
    }
    let bitmap =
        BitMapElement::with_owned_buffer((bxr.start, byr.start), (bw as u32, bh as u32), img)
            .ok_or_else(|| fail(&"colour bar bitmap of the wrong size"))?;
    root.draw(&bitmap).map_err(|e| fail(&e))?;
    let c_span = 2.0 * clip * f;
    let c_fmt = move |v: &f64| tick_label(*v, c_span);
    let mut mesh = bar.configure_mesh();
    mesh.disable_mesh()
        .disable_x_axis()
        .set_all_tick_mark_size(sz.tick_mark())
        .y_labels(((bh as f64 / (2.5 * sz.tick)) as usize).clamp(2, 12))
        .y_label_formatter(&c_fmt)
        .label_style(text(sz.tick, HPos::Center, VPos::Center));
    mesh.draw().map_err(|e| fail(&e))?;
    // The quantity along the bar, reading upwards like the y axis.
    if let Some(label) = &opts.value_label {
        root.draw_text(
            label,
            &text(sz.label, HPos::Center, VPos::Bottom).transform(FontTransform::Rotate270),
            (bxr.end + bar_labels, (byr.start + byr.end) / 2),
        )
        .map_err(|e| fail(&e))?;
    }
    root.draw(&frame(bxr.start, byr.start, bxr.end - 1, byr.end - 1))
        .map_err(|e| fail(&e))?;
    if e != 0 {
        root.draw_text(
            &times_ten_to(e),
            &text(sz.tick, HPos::Left, VPos::Bottom),
            (bxr.start, byr.start - (0.4 * sz.tick) as i32),
        )
        .map_err(|e| fail(&e))?;
    }
    Ok(())
}

/// `99` → `99th`, `99.5` → `99.5th`, `1` → `1st`.
fn ordinal(p: f64) -> String {
    let s = short(p);
    let suffix = if s.contains('.') {
        "th"
    } else {
        match (p as u64 % 10, p as u64 % 100) {
            (1, n) if n != 11 => "st",
            (2, n) if n != 12 => "nd",
            (3, n) if n != 13 => "rd",
            _ => "th",
        }
    };
    format!("{s}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_keep_labels_short() {
        assert_eq!(time_unit(2.0).0, "s");
        assert_eq!(time_unit(0.5).0, "ms");
        assert_eq!(time_unit(2e-4), ("µs", 1e6));
        assert_eq!(time_unit(5e-8).0, "ns");
        assert_eq!(length_unit(20_000.0).0, "km");
        assert_eq!(length_unit(3000.0).0, "m");
        assert_eq!(length_unit(0.02), ("mm", 1e3));
        assert_eq!(length_unit(5e-5).0, "µm");
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(150.0, 1000.0), "150");
        assert_eq!(tick_label(0.30000000000000004, 1.0), "0.3");
        assert_eq!(tick_label(-0.25, 2.0), "\u{2212}0.25");
        assert_eq!(tick_label(-1e-17, 2.0), "0");
        assert_eq!(times_ten_to(-6), "×10⁻⁶");
        assert_eq!(times_ten_to(3), "×10³");
        assert_eq!(ordinal(99.0), "99th");
        assert_eq!(ordinal(99.5), "99.5th");
        assert_eq!(ordinal(1.0), "1st");
        assert_eq!(ordinal(12.0), "12th");
        assert_eq!(short(1.234e-6), "1.23e-6");
        assert_eq!(short(0.5), "0.5");
    }

    #[test]
    fn percentile_by_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&mut v, 99.0), 99.0);
        assert_eq!(percentile(&mut v, 100.0), 100.0);
        assert_eq!(percentile(&mut v, 0.1), 1.0);
        let mut one = vec![3.0];
        assert_eq!(percentile(&mut one, 50.0), 3.0);
    }

    #[test]
    fn colour_map_is_blue_white_red() {
        assert_eq!(diverging(0.0), [255, 255, 255]);
        let [r, _, b] = diverging(0.7);
        assert!(r > b + 100);
        let [r, _, b] = diverging(-0.7);
        assert!(b > r + 100);
        assert_eq!(diverging(5.0), diverging(1.0));
        assert_eq!(diverging(-5.0), diverging(-1.0));
    }

    #[test]
    fn lobes_close_on_the_zero_line() {
        let pts = [(-1.0, 0.0), (1.0, 1.0), (1.0, 2.0), (-1.0, 3.0), (2.0, 4.0)];
        let lobes = positive_lobes(&pts);
        assert_eq!(lobes.len(), 2);
        assert_eq!(
            lobes[0],
            vec![(0.0, 0.5), (1.0, 1.0), (1.0, 2.0), (0.0, 2.5)]
        );
        assert_eq!(lobes[1].first(), Some(&(0.0, 3.0 + 1.0 / 3.0)));
        assert_eq!(lobes[1].last(), Some(&(0.0, 4.0)));
    }

    #[test]
    fn envelopes_only_for_long_traces() {
        assert!(envelope_indices(100, 600).is_none());
        let bins = envelope_indices(10_000, 100).unwrap();
        assert_eq!(bins.len(), 100);
        assert_eq!(bins[0], (0, 100));
        assert_eq!(bins[99], (9900, 10_000));
        assert_eq!(min_max_index(&[0.0, 3.0, -2.0, 1.0], 0, 4), (2, 1));
        assert_eq!(median_gap(&[0.0, 10.0, 20.0, 25.0]), 10.0);
        assert_eq!(median_gap(&[5.0, 5.0]), 1.0);
    }
}
