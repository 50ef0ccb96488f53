//! Figures: congestion window over time, one line per series, as SVG.

use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
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
    let x_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .fold(1.0f64, f64::max);
    let y_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(1.0f64, f64::max)
        * 1.05;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("drawing {}: {e}", path.display());
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, (1.0..y_max).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time [s]")
        .y_desc("congestion window [segments, log scale]")
        .draw()
        .map_err(err)?;
    for (i, (label, pts)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(err)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
