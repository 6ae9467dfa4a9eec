//! SVG line charts (plotters): one or more panels stacked vertically, each with any number of
//! series on linear or log axes. Measured series are lines with points; the seed's figures are
//! drawn as points only, so the two are told apart at a glance.

use std::path::Path;

use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;

use crate::StudyError;

/// One series.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// (x, y) points; non-positive values are dropped on log axes.
    pub points: Vec<(f64, f64)>,
    /// Points only (used for the seed's published figures).
    pub points_only: bool,
}

impl Series {
    /// A measured series.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { label: label.into(), points, points_only: false }
    }

    /// A published (seed) series.
    pub fn seed(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series { label: label.into(), points, points_only: true }
    }
}

/// One panel.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Log-scaled x axis.
    pub log_x: bool,
    /// Log-scaled y axis.
    pub log_y: bool,
    /// The series.
    pub series: Vec<Series>,
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

fn plot_err(e: impl std::fmt::Display) -> StudyError {
    StudyError::Plot(e.to_string())
}

macro_rules! draw_panel {
    ($area:expr, $chart:expr, $xr:expr, $yr:expr) => {{
        let c = $chart;
        let mut ctx = ChartBuilder::on($area)
            .caption(&c.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d($xr, $yr)
            .map_err(plot_err)?;
        ctx.configure_mesh().x_desc(&c.x_label).y_desc(&c.y_label).draw().map_err(plot_err)?;
        for (i, s) in c.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| {
                    x.is_finite() && y.is_finite() && (!c.log_x || *x > 0.0) && (!c.log_y || *y > 0.0)
                })
                .collect();
            if s.points_only {
                ctx.draw_series(pts.iter().map(|p| TriangleMarker::new(*p, 5, color.filled())))
                    .map_err(plot_err)?
                    .label(&s.label)
                    .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 5, color.filled()));
            } else {
                ctx.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(plot_err)?
                    .label(&s.label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                ctx.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled()))).map_err(plot_err)?;
            }
        }
        ctx.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
    }};
}

/// Writes the panels to an SVG file, stacked vertically.
pub fn write_svg(path: &Path, charts: &[Chart]) -> Result<(), StudyError> {
    let height = 480 * charts.len().max(1) as u32;
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let areas = root.split_evenly((charts.len().max(1), 1));
    for (area, c) in areas.iter().zip(charts) {
        let (x0, x1) = range(c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), c.log_x);
        let (y0, y1) = range(c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), c.log_y);
        match (c.log_x, c.log_y) {
            (true, true) => draw_panel!(area, c, (x0..x1).log_scale(), (y0..y1).log_scale()),
            (true, false) => draw_panel!(area, c, (x0..x1).log_scale(), y0..y1),
            (false, true) => draw_panel!(area, c, x0..x1, (y0..y1).log_scale()),
            (false, false) => draw_panel!(area, c, x0..x1, y0..y1),
        }
    }
    root.present().map_err(plot_err)
}
