//! The comparison table of a reproduction: at every point of a figure, one series (a
//! scheme under evaluation, e.g. `auto`) against the best of the figure's other series.
//!
//! The ratio reads "how close to the best other scheme": value / best for metrics where
//! more is better, best / value where less is (completion times), so ≥ 1 means the
//! compared series is the best at that point.

use std::collections::HashMap;
use std::fmt::Write as _;

/// One point of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Figure id.
    pub figure: String,
    /// The point's x value.
    pub x: String,
    /// The compared series' mean.
    pub value: f64,
    /// The best other series.
    pub best: String,
    /// Its mean.
    pub best_value: f64,
    /// Compared to best, ≥ 1 when the compared series is the best.
    pub ratio: f64,
}

/// Whether smaller values of `metric` are better: completion times and delays.
pub fn lower_is_better(metric: &str) -> bool {
    metric.starts_with("completion_time") || metric.starts_with("delay_")
}

/// The comparison rows of one figure: `compared` against the best of `series` at each of
/// `xs`, from the figure's point means keyed by (series, x).
pub fn rows(
    figure: &str,
    metric: &str,
    compared: &str,
    series: &[String],
    xs: &[String],
    means: &HashMap<(String, String), f64>,
) -> Vec<Row> {
    let lower = lower_is_better(metric);
    let get = |s: &str, x: &str| means.get(&(s.to_string(), x.to_string())).copied();
    let mut out = Vec::new();
    for x in xs {
        let Some(value) = get(compared, x) else {
            continue;
        };
        let better = |a: f64, b: f64| if lower { a < b } else { a > b };
        let best = series
            .iter()
            .filter(|s| *s != compared)
            .filter_map(|s| get(s, x).filter(|v| v.is_finite()).map(|v| (s, v)))
            .fold(None::<(&String, f64)>, |acc, (s, v)| match acc {
                Some((_, bv)) if !better(v, bv) => acc,
                _ => Some((s, v)),
            });
        let Some((best, best_value)) = best else {
            continue;
        };
        let ratio = if lower {
            best_value / value
        } else {
            value / best_value
        };
        out.push(Row {
            figure: figure.to_string(),
            x: x.clone(),
            value,
            best: best.clone(),
            best_value,
            ratio: if ratio.is_nan() { 0.0 } else { ratio },
        });
    }
    out
}

/// How the compared scheme stands over all points: how many it wins, how many it keeps
/// within 0.95 and 0.8 of the best other scheme, and its worst point.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Points compared.
    pub points: usize,
    /// Points where the ratio is at least 1 (the compared scheme is best).
    pub best: usize,
    /// Points with a ratio of at least 0.95.
    pub within_95: usize,
    /// Points with a ratio of at least 0.8.
    pub within_80: usize,
    /// The point with the lowest ratio.
    pub worst: Row,
}

/// The [`Summary`] of `rows`; `None` if there are none.
pub fn summarize(rows: &[Row]) -> Option<Summary> {
    let at_least = |t: f64| rows.iter().filter(|r| r.ratio >= t).count();
    let worst = rows.iter().min_by(|a, b| a.ratio.total_cmp(&b.ratio))?;
    Some(Summary {
        points: rows.len(),
        best: at_least(1.0),
        within_95: at_least(0.95),
        within_80: at_least(0.8),
        worst: worst.clone(),
    })
}

/// Reads the rows back from the CSV [`section`] writes (`compare.csv`).
pub fn read_csv(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let c = crate::output::csv_cells(line);
        let num = |k: usize| -> Result<f64, String> {
            c.get(k)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("line {}: column {} is not a number", i + 1, k + 1))
        };
        let text = |k: usize| c.get(k).cloned().unwrap_or_default();
        rows.push(Row {
            figure: text(0),
            x: text(1),
            value: num(2)?,
            best: text(3),
            best_value: num(4)?,
            ratio: num(5)?,
        });
    }
    Ok(rows)
}

/// Markdown: a summary against the two thresholds, then every row; and the same rows as
/// CSV.
pub fn section(compared: &str, rows: &[Row]) -> (String, String) {
    let mut md = format!("## `{compared}` against the best other scheme\n\n");
    let mut csv = String::from("figure,x,value,best,best_value,ratio\n");
    let Some(s) = summarize(rows) else {
        md.push_str("No point was compared.\n\n");
        return (md, csv);
    };
    let n = s.points;
    let _ = writeln!(
        md,
        "{n} points. Ratio ≥ 1 (best): {}; ≥ 0.95: {} ({:.0} %); ≥ 0.8: {} ({:.0} %). \
         Lowest: {:.3} in `{}` at {} (best there: `{}`).\n",
        s.best,
        s.within_95,
        100.0 * s.within_95 as f64 / n as f64,
        s.within_80,
        100.0 * s.within_80 as f64 / n as f64,
        s.worst.ratio,
        s.worst.figure,
        s.worst.x,
        s.worst.best
    );
    md.push_str(
        "| figure | x | value | best other | its value | ratio |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {:.4} | {} | {:.4} | {:.3} |",
            r.figure, r.x, r.value, r.best, r.best_value, r.ratio
        );
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{}",
            r.figure,
            crate::output::csv_text(&r.x),
            r.value,
            r.best,
            r.best_value,
            r.ratio
        );
    }
    md.push('\n');
    (md, csv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn means(points: &[(&str, &str, f64)]) -> HashMap<(String, String), f64> {
        points
            .iter()
            .map(|(s, x, v)| ((s.to_string(), x.to_string()), *v))
            .collect()
    }

    #[test]
    fn ratios_read_the_right_way_for_both_kinds_of_metric() {
        let series: Vec<String> = ["auto", "bbr", "cubic"].map(String::from).to_vec();
        let xs = vec!["1%".to_string()];
        let m = means(&[
            ("auto", "1%", 40.0),
            ("bbr", "1%", 50.0),
            ("cubic", "1%", 10.0),
        ]);
        let r = rows("f", "goodput_mbps", "auto", &series, &xs, &m);
        assert_eq!((r[0].best.as_str(), r[0].ratio), ("bbr", 0.8));
        let r = rows("f", "completion_time_s", "auto", &series, &xs, &m);
        assert_eq!((r[0].best.as_str(), r[0].ratio), ("cubic", 0.25));
    }

    #[test]
    fn the_summary_counts_points_over_each_threshold() {
        let row = |ratio: f64| Row {
            figure: "f".into(),
            x: format!("{ratio}"),
            value: ratio,
            best: "b".into(),
            best_value: 1.0,
            ratio,
        };
        let (md, csv) = section("auto", &[row(1.2), row(0.96), row(0.9), row(0.5)]);
        assert!(
            md.contains("Ratio ≥ 1 (best): 1; ≥ 0.95: 2 (50 %); ≥ 0.8: 3 (75 %)"),
            "{md}"
        );
        assert!(md.contains("Lowest: 0.500"), "{md}");
        assert_eq!(csv.lines().count(), 5);
    }

    #[test]
    fn a_gilbert_elliott_point_is_one_quoted_cell() {
        let row = Row {
            figure: "f".into(),
            x: "0.005051,0.500000,0,1".into(),
            value: 1.0,
            best: "bbr".into(),
            best_value: 2.0,
            ratio: 0.5,
        };
        let (_, csv) = section("auto", std::slice::from_ref(&row));
        let line = csv.lines().nth(1).unwrap();
        assert_eq!(line, "f,\"0.005051,0.500000,0,1\",1,bbr,2,0.5");
        // And it reads back as the same row.
        assert_eq!(read_csv(&csv).unwrap(), vec![row]);
        assert!(read_csv("figure,x,value,best,best_value,ratio\nf,1%,x,bbr,2,0.5\n").is_err());
    }
}
