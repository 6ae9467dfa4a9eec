//! SVG line charts (plotters): one or more panels stacked vertically, each with any number of
//! series on linear or log axes, and its legend beside the plot, never over the data.
//!
//! Made to be read in print as well as on screen: every series has its own marker shape as
//! well as its colour — measured series are lines with filled or hollow circles, squares and
//! diamonds, the seed's published figures are triangles without lines — and log axes are
//! labelled `2^k` when the data sit on powers of two (sizes n = 2^0 … 2^k) and `1K`, `10K`,
//! `1M` otherwise.

use std::path::Path;

use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;

use crate::LabError;

/// One series.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// (x, y) points; non-positive values are dropped on log axes.
    pub points: Vec<(f64, f64)>,
    /// Points only (used for the seed's published figures).
    pub points_only: bool,
    /// A published (seed) series, drawn as triangles; ours are circles, squares and diamonds.
    pub published: bool,
}

impl Series {
    /// A measured series.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { label: label.into(), points, points_only: false, published: false }
    }

    /// A measured series drawn as points only (a categorical axis, whose neighbours are not
    /// joined by anything a line would show).
    pub fn points(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { label: label.into(), points, points_only: true, published: false }
    }

    /// A published (seed) series.
    pub fn seed(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { label: label.into(), points, points_only: true, published: true }
    }
}

/// One panel.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// X axis label (with its unit).
    pub x_label: String,
    /// Y axis label (with its unit).
    pub y_label: String,
    /// Log-scaled x axis.
    pub log_x: bool,
    /// Log-scaled y axis.
    pub log_y: bool,
    /// A categorical x axis: when not empty, x = 1, 2, … stand for these names, which label
    /// the axis instead of numbers.
    pub x_names: Vec<String>,
    /// The series.
    pub series: Vec<Series>,
}

/// Width of the plot, height of one panel, in pixels; the legend column is as wide as its
/// longest label needs (about 7 pixels a character at 13 px), within bounds.
const PLOT_WIDTH: u32 = 830;
const PANEL_HEIGHT: u32 = 480;
const LEGEND_MIN: u32 = 180;
const LEGEND_MAX: u32 = 520;

/// The legend column's width for these panels.
fn legend_width(charts: &[Chart]) -> u32 {
    let longest = charts.iter().flat_map(|c| c.series.iter()).map(|s| s.label.chars().count()).max();
    let need = 54 + 7 * longest.unwrap_or(0) as u32;
    need.clamp(LEGEND_MIN, LEGEND_MAX)
}

fn range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let v: Vec<f64> = values.filter(|v| v.is_finite() && (!log || *v > 0.0)).collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
        ((lo - pad).min(0.0), hi + pad)
    }
}

/// Are all these (positive) values powers of two?
fn powers_of_two(values: impl Iterator<Item = f64>) -> bool {
    let mut any = false;
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        any = true;
        if v.log2().fract() != 0.0 {
            return false;
        }
    }
    any
}

/// A tick label: `2^k` on a base-2 axis, otherwise at most three significant digits with a
/// K/M/G suffix (`1K`, `2.5M`), or a plain short number below one thousand.
pub fn tick(v: f64, pow2: bool) -> String {
    if pow2 && v > 0.0 && v.log2().fract().abs() < 1e-9 {
        return format!("2^{}", v.log2().round() as i64);
    }
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "K")
    } else {
        (v, "")
    };
    let mut s = if scaled.abs() >= 100.0 || scaled.fract() == 0.0 {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 10.0 {
        format!("{scaled:.1}")
    } else if scaled.abs() >= 0.01 || scaled == 0.0 {
        format!("{scaled:.2}")
    } else {
        format!("{scaled:.1e}")
    };
    if s.contains('.') && !s.contains('e') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{s}{suffix}")
}

/// The name of category `v` (x = 1 is the first name); empty between categories and beyond
/// them.
fn category(names: &[String], v: f64) -> String {
    if v.fract() != 0.0 || v < 1.0 {
        return String::new();
    }
    names.get(v as usize - 1).cloned().unwrap_or_default()
}

/// Do all these x values lie on whole numbers over a short span (trials, counts of runs), so
/// that the axis labels whole numbers only?
fn integer_axis(values: impl Iterator<Item = f64>) -> bool {
    let mut any = false;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        if v.fract() != 0.0 {
            return false;
        }
        any = true;
        lo = lo.min(v);
        hi = hi.max(v);
    }
    any && hi - lo <= 40.0
}

/// `label`, unless it repeats the label drawn just before on the same axis (a log axis draws
/// the decade it crosses twice): then nothing.
fn once(last: &std::cell::RefCell<String>, label: String) -> String {
    let mut last = last.borrow_mut();
    if !label.is_empty() && *last == label {
        return String::new();
    }
    if !label.is_empty() {
        last.clone_from(&label);
    }
    label
}

fn plot_err(e: impl std::fmt::Display) -> LabError {
    LabError::Plot(e.to_string())
}

/// How a series is drawn: its colour, marker shape and whether the marker is filled.
#[derive(Clone, Copy)]
struct Style {
    color: RGBAColor,
    shape: Shape,
    filled: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    Circle,
    Square,
    Diamond,
    Triangle,
}

/// The styles of a panel's series: measured ones cycle through circles, squares and diamonds,
/// filled then hollow; seed ones are triangles, filled then hollow.
fn styles(series: &[Series]) -> Vec<Style> {
    let (mut ours, mut seeds) = (0usize, 0usize);
    series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let color = Palette99::pick(i).to_rgba();
            if s.published {
                seeds += 1;
                Style { color, shape: Shape::Triangle, filled: (seeds - 1) % 2 == 0 }
            } else {
                let k = ours;
                ours += 1;
                let shape = [Shape::Circle, Shape::Square, Shape::Diamond][k % 3];
                Style { color, shape, filled: (k / 3) % 2 == 0 }
            }
        })
        .collect()
}

/// Runs `$body` with `$g` bound to a function from a point to the marker of `$style` there,
/// `$size` its radius in pixels (one arm per shape: each has its own element type).
macro_rules! with_glyph {
    ($style:expr, $size:expr, $g:ident => $body:expr) => {{
        let style: Style = $style;
        let st = if style.filled { style.color.filled() } else { style.color.stroke_width(2) };
        let (s, d): (i32, i32) = ($size, $size + 1);
        let closed = |pts: Vec<(i32, i32)>| [pts.clone(), vec![pts[0]]].concat();
        match (style.shape, style.filled) {
            (Shape::Circle, _) => {
                let $g = |at| EmptyElement::at(at) + Circle::new((0, 0), s, st);
                $body
            }
            (Shape::Square, _) => {
                let $g = |at| EmptyElement::at(at) + Rectangle::new([(-s, -s), (s, s)], st);
                $body
            }
            (Shape::Diamond, true) => {
                let $g = |at| EmptyElement::at(at) + Polygon::new(vec![(0, -d), (d, 0), (0, d), (-d, 0)], st);
                $body
            }
            (Shape::Diamond, false) => {
                let $g = |at| {
                    EmptyElement::at(at)
                        + PathElement::new(closed(vec![(0, -d), (d, 0), (0, d), (-d, 0)]), st)
                };
                $body
            }
            (Shape::Triangle, true) => {
                let $g = |at| EmptyElement::at(at) + Polygon::new(vec![(0, -d), (d, s), (-d, s)], st);
                $body
            }
            (Shape::Triangle, false) => {
                let $g =
                    |at| EmptyElement::at(at) + PathElement::new(closed(vec![(0, -d), (d, s), (-d, s)]), st);
                $body
            }
        }
    }};
}

/// The legend of a panel in its own column: one row per series, its sample and its label.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    series: &[Series],
    styles: &[Style],
) -> Result<(), LabError> {
    // Rows of 20 px, closer (and a smaller font) when the series would not fit in the panel.
    let n = series.len().max(1) as i32;
    let step = ((PANEL_HEIGHT as i32 - 60) / n).clamp(8, 20);
    let font = ("sans-serif", if step < 16 { 11 } else { 13 }).into_font().color(&BLACK);
    for (row, (s, style)) in series.iter().zip(styles).enumerate() {
        let y = 40 + step * row as i32;
        if !s.points_only {
            area.draw(&PathElement::new(vec![(6, y), (34, y)], style.color.stroke_width(2)))
                .map_err(plot_err)?;
        }
        with_glyph!(*style, 4, g => area.draw(&g((20, y))).map_err(plot_err)?);
        area.draw(&Text::new(s.label.clone(), (44, y - 7), font.clone())).map_err(plot_err)?;
    }
    Ok(())
}

macro_rules! draw_panel {
    ($area:expr, $chart:expr, $styles:expr, $xr:expr, $yr:expr, $pow2x:expr, $pow2y:expr) => {{
        let c = $chart;
        let (pow2x, pow2y) = ($pow2x, $pow2y);
        let mut ctx = ChartBuilder::on($area)
            .caption(&c.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d($xr, $yr)
            .map_err(plot_err)?;
        let names = &c.x_names;
        let int_x = !c.log_x && integer_axis(c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
        let last_x = std::cell::RefCell::new(String::new());
        let last_y = std::cell::RefCell::new(String::new());
        let fx = move |v: &f64| {
            let label = if !names.is_empty() {
                category(names, *v)
            } else if int_x && v.fract() != 0.0 {
                String::new()
            } else {
                tick(*v, pow2x)
            };
            once(&last_x, label)
        };
        let fy = move |v: &f64| once(&last_y, tick(*v, pow2y));
        let mut mesh = ctx.configure_mesh();
        if !c.x_names.is_empty() {
            mesh.x_labels(c.x_names.len() + 1);
        }
        mesh.x_desc(&c.x_label)
            .y_desc(&c.y_label)
            .x_label_formatter(&fx)
            .y_label_formatter(&fy)
            .draw()
            .map_err(plot_err)?;
        for (s, style) in c.series.iter().zip($styles) {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| {
                    x.is_finite() && y.is_finite() && (!c.log_x || *x > 0.0) && (!c.log_y || *y > 0.0)
                })
                .collect();
            if !s.points_only {
                ctx.draw_series(LineSeries::new(pts.clone(), style.color.stroke_width(2))).map_err(plot_err)?;
            }
            let size = if s.points_only { 5 } else { 4 };
            with_glyph!(*style, size, g => {
                ctx.draw_series(pts.iter().map(|p| g(*p))).map_err(plot_err)?;
            });
        }
    }};
}

/// The size of the picture of these panels.
fn size(charts: &[Chart]) -> (u32, u32) {
    (PLOT_WIDTH + legend_width(charts), PANEL_HEIGHT * charts.len().max(1) as u32)
}

/// Writes the panels to an SVG file, stacked vertically, each with its legend to its right.
pub fn write_svg(path: &Path, charts: &[Chart]) -> Result<(), LabError> {
    draw(SVGBackend::new(path, size(charts)), charts)
}

/// The panels as an SVG document (to embed in a page), laid out as [`write_svg`] does.
pub fn svg_string(charts: &[Chart]) -> Result<String, LabError> {
    let mut out = String::new();
    draw(SVGBackend::with_string(&mut out, size(charts)), charts)?;
    Ok(out)
}

fn draw(backend: SVGBackend<'_>, charts: &[Chart]) -> Result<(), LabError> {
    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let areas = root.split_evenly((charts.len().max(1), 1));
    for (area, c) in areas.iter().zip(charts) {
        let (plot_area, legend_area) = area.split_horizontally(PLOT_WIDTH);
        let styles = styles(&c.series);
        legend(&legend_area, &c.series, &styles)?;
        let xs = || c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let ys = || c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let (x0, x1) =
            if c.x_names.is_empty() { range(xs(), c.log_x) } else { (0.5, c.x_names.len() as f64 + 0.5) };
        let (y0, y1) = range(ys(), c.log_y);
        let (p2x, p2y) = (c.log_x && powers_of_two(xs()), c.log_y && powers_of_two(ys()));
        let bx = if p2x { 2.0 } else { 10.0 };
        let by = if p2y { 2.0 } else { 10.0 };
        let a = &plot_area;
        match (c.log_x, c.log_y) {
            (true, true) => {
                draw_panel!(
                    a,
                    c,
                    &styles,
                    (x0..x1).log_scale().base(bx),
                    (y0..y1).log_scale().base(by),
                    p2x,
                    p2y
                )
            }
            (true, false) => draw_panel!(a, c, &styles, (x0..x1).log_scale().base(bx), y0..y1, p2x, false),
            (false, true) => draw_panel!(a, c, &styles, x0..x1, (y0..y1).log_scale().base(by), false, p2y),
            (false, false) => draw_panel!(a, c, &styles, x0..x1, y0..y1, false, false),
        }
    }
    root.present().map_err(plot_err)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ticks_read_as_powers_of_two_or_with_si_suffixes() {
        assert_eq!(tick(1024.0, true), "2^10");
        assert_eq!(tick(1.0, true), "2^0");
        assert_eq!(tick(1_000_000.0, false), "1M");
        assert_eq!(tick(10_000.0, false), "10K");
        assert_eq!(tick(2_500_000.0, false), "2.5M");
        assert_eq!(tick(100.0, false), "100");
        assert_eq!(tick(0.5, false), "0.5");
        assert_eq!(tick(12.5, false), "12.5");
        assert_eq!(tick(0.0, false), "0");
        // Not a power of two on a base-2 axis (a light tick): the SI form.
        assert_eq!(tick(3000.0, true), "3K");
    }

    fn texts(svg: &str) -> Vec<(f64, String)> {
        // `<text x="…" y="…" …>label</text>`
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let x = t.split("x=\"").nth(1)?.split('"').next()?.parse().ok()?;
                let label = t.split('>').nth(1)?.split("</text").next()?.trim().to_string();
                Some((x, label))
            })
            .collect()
    }

    #[test]
    fn a_long_legend_fits_its_panel_and_its_column() {
        let path = std::env::temp_dir().join(format!("scalechain-plot-legend-{}.svg", std::process::id()));
        let long = "a label long enough to need a wider legend column";
        let series: Vec<Series> =
            (0..30).map(|i| Series::line(format!("{long} {i}"), vec![(1.0, f64::from(i) + 1.0)])).collect();
        let chart = Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x: false,
            log_y: false,
            x_names: Vec::new(),
            series,
        };
        assert_eq!(legend_width(std::slice::from_ref(&chart)), 54 + 7 * (long.len() as u32 + 3));
        write_svg(&path, &[chart]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let ys: Vec<f64> = svg
            .split("<text")
            .filter(|t| t.contains(long))
            .filter_map(|t| t.split("y=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(ys.len(), 30);
        assert!(ys.iter().all(|y| *y < f64::from(PANEL_HEIGHT)), "every row inside the panel: {ys:?}");
        assert!(ys.windows(2).all(|w| w[1] - w[0] >= 8.0), "rows do not overlap: {ys:?}");
    }

    #[test]
    fn legends_stand_beside_the_plot_and_series_differ_in_shape() {
        let path = std::env::temp_dir().join(format!("scalechain-plot-test-{}.svg", std::process::id()));
        let pow: Vec<(f64, f64)> =
            (0..=20).map(|k| (f64::from(1u32 << k), 1000.0 * f64::from(k + 1))).collect();
        let chart = Chart {
            title: "t".into(),
            x_label: "transactions (n)".into(),
            y_label: "transactions / s".into(),
            log_x: true,
            log_y: true,
            x_names: Vec::new(),
            series: vec![
                Series::line("ours a", pow.clone()),
                Series::line("ours b", pow.iter().map(|(x, y)| (*x, y * 2.0)).collect()),
                Series::seed("seed", pow.iter().map(|(x, y)| (*x, y / 2.0)).collect()),
            ],
        };
        write_svg(&path, &[chart]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let t = texts(&svg);
        for label in ["ours a", "ours b", "seed"] {
            let (x, _) = t.iter().find(|(_, l)| l == label).unwrap();
            assert!(*x > f64::from(PLOT_WIDTH), "legend label {label:?} at x = {x}, over the plot");
        }
        assert!(t.iter().any(|(_, l)| l == "2^10" || l == "2^8" || l == "2^12"), "{t:?}");
        assert!(t.iter().any(|(_, l)| l.ends_with('K')), "SI labels on the y axis: {t:?}");
        assert!(!t.iter().any(|(_, l)| l.ends_with(".0")), "no `1000000.0` labels: {t:?}");
        // Ours: circles and squares; the seed: triangles (polygons of three points).
        assert!(svg.contains("<circle"), "circles");
        assert!(svg.contains("<rect") && svg.matches("<rect").count() > 21, "squares");
        assert!(svg.contains("<polygon"), "triangles");
    }

    fn chart(x_names: Vec<String>, log_x: bool, series: Vec<Series>) -> Chart {
        Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x,
            log_y: false,
            x_names,
            series,
        }
    }

    fn labels(c: &Chart) -> Vec<String> {
        texts(&svg_string(std::slice::from_ref(c)).unwrap()).into_iter().map(|(_, l)| l).collect()
    }

    #[test]
    fn a_categorical_axis_reads_its_names_once_each_and_no_numbers() {
        let names: Vec<String> = ["decode", "txid", "sighash"].map(String::from).to_vec();
        let c = chart(
            names.clone(),
            false,
            vec![Series::points("ours", vec![(1.0, 500.0), (2.0, 700.0), (3.0, 900.0)])],
        );
        let l = labels(&c);
        for n in &names {
            assert_eq!(l.iter().filter(|x| *x == n).count(), 1, "{n} in {l:?}");
        }
        // (The y axis reads 0, 100, … 900.)
        assert!(
            !l.iter().any(|x| ["1", "2", "3", "0.5", "1.5"].contains(&x.as_str())),
            "no x numbers: {l:?}"
        );
        assert_eq!(category(&names, 2.0), "txid");
        assert_eq!(category(&names, 2.5), "");
        assert_eq!(category(&names, 4.0), "");
        assert_eq!(category(&names, 0.0), "");
    }

    #[test]
    fn trials_are_labelled_with_whole_numbers_and_a_crossed_decade_once() {
        let trials =
            chart(Vec::new(), false, vec![Series::line("t", vec![(1.0, 10.0), (2.0, 11.0), (3.0, 12.0)])]);
        let l = labels(&trials);
        assert!(l.iter().any(|x| x == "2"), "{l:?}");
        assert!(!l.iter().any(|x| x.contains('.') && x.parse::<f64>().is_ok()), "no fractional trial: {l:?}");
        assert!(integer_axis([1.0, 2.0, 3.0].into_iter()) && !integer_axis([1.0, 2.5].into_iter()));
        assert!(!integer_axis([0.0, 1000.0].into_iter()), "a long span keeps its numbers");
        // A log axis across 1,000 draws its decade twice; the label reads once.
        let log = chart(Vec::new(), true, vec![Series::line("l", vec![(100.0, 1.0), (4_000.0, 2.0)])]);
        let l = labels(&log);
        assert_eq!(l.iter().filter(|x| *x == "1K").count(), 1, "{l:?}");
        let last = std::cell::RefCell::new(String::new());
        assert_eq!(once(&last, "1K".into()), "1K");
        assert_eq!(once(&last, "1K".into()), "");
        assert_eq!(once(&last, "2K".into()), "2K");
    }
}
