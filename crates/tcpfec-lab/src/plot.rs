//! Figures: congestion window over time, one line per series, as SVG.

use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Draws `series` (label, points of (seconds, segments)) into an SVG file at `path`, with a
/// logarithmic window axis: windows span from 1 segment to thousands (NewReno's window is
/// inflated by every duplicate ACK during a long recovery), and a linear axis would flatten
/// every other curve.
pub fn cwnd_svg(
    path: &Path,
    title: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let axes = Axes {
        x_desc: "time [s]",
        y_desc: "congestion window [segments, log scale]",
        x_log: false,
        y_log: true,
    };
    line_chart(path, title, &axes, series)
}

/// Axis labels and scales of a chart.
pub struct Axes<'a> {
    /// Label of the horizontal axis.
    pub x_desc: &'a str,
    /// Label of the vertical axis.
    pub y_desc: &'a str,
    /// Logarithmic horizontal axis.
    pub x_log: bool,
    /// Logarithmic vertical axis.
    pub y_log: bool,
}

/// Draws one line per series (with point markers when a series has few points).
pub fn line_chart(
    path: &Path,
    title: &str,
    axes: &Axes<'_>,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), String> {
    chart(path, title, axes, series, false)
}

/// Draws each series as dots, one per point (a time-sequence plot: every packet a dot).
pub fn dot_chart(
    path: &Path,
    title: &str,
    axes: &Axes<'_>,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), String> {
    chart(path, title, axes, series, true)
}

fn chart(
    path: &Path,
    title: &str,
    axes: &Axes<'_>,
    series: &[(String, Vec<(f64, f64)>)],
    dots: bool,
) -> Result<(), String> {
    let all = || series.iter().flat_map(|(_, p)| p.iter().copied());
    let fold = |f: fn(f64, f64) -> f64, init: f64, pick: fn((f64, f64)) -> f64| {
        all().map(pick).filter(|v| v.is_finite()).fold(init, f)
    };
    let (x_min, x_max) = (
        fold(f64::min, f64::INFINITY, |p| p.0),
        fold(f64::max, f64::NEG_INFINITY, |p| p.0),
    );
    let (y_min, y_max) = (
        fold(f64::min, f64::INFINITY, |p| p.1),
        fold(f64::max, f64::NEG_INFINITY, |p| p.1),
    );
    if !x_min.is_finite() || !y_max.is_finite() {
        return Err(format!("{}: nothing to draw", path.display()));
    }
    let x_lo = if axes.x_log {
        x_min.max(1e-12)
    } else {
        x_min.min(0.0)
    };
    let x_hi = if x_max > x_lo { x_max } else { x_lo + 1.0 };
    let y_lo = if axes.y_log {
        (y_min * 0.8).max(1e-3)
    } else {
        0.0
    };
    let y_hi = if axes.y_log {
        (y_max * 1.25).max(y_lo * 2.0)
    } else {
        (y_max * 1.05).max(1e-9)
    };
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("drawing {}: {e}", path.display());
    root.fill(&WHITE).map_err(err)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart.map_err(err)?;
            chart
                .configure_mesh()
                .x_desc(axes.x_desc)
                .y_desc(axes.y_desc)
                .draw()
                .map_err(err)?;
            for (i, (label, pts)) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                if dots {
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 1, color.filled())))
                        .map_err(err)?
                        .label(label.as_str())
                        .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
                    continue;
                }
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                    .map_err(err)?
                    .label(label.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                if pts.len() <= 30 {
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(err)?;
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(err)?;
        }};
    }
    match (axes.x_log, axes.y_log) {
        (false, false) => draw!(builder.build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)),
        (false, true) => draw!(builder.build_cartesian_2d(x_lo..x_hi, (y_lo..y_hi).log_scale())),
        (true, false) => draw!(builder.build_cartesian_2d((x_lo..x_hi).log_scale(), y_lo..y_hi)),
        (true, true) => {
            draw!(builder.build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale()))
        }
    }
    root.present().map_err(err)?;
    Ok(())
}
