//! Figures as SVG files (`--plot DIR`), drawn with `plotters`: latency distributions, throughput
//! bars, and curves over a sweep. A figure shows what the run measured and nothing else: every
//! point comes from a run's statistics, and a class with no values draws no line.
//!
//! Only writes files; it must never change what a run measures (figures are drawn after the runs).

use std::path::{Path, PathBuf};

use plotters::prelude::*;

/// One line of a latency figure: its name and its distribution, as (microseconds, fraction of
/// values at or below it) points, increasing.
pub struct Distribution {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One line of a sweep figure: its name and a value (or none) at each point of the sweep.
pub struct Curve {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

const SIZE: (u32, u32) = (900, 540);

/// A palette that stays apart on white, cycled by line.
fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    COLORS[i % COLORS.len()]
}

/// The directory figures go to, created if needed; a clear error if it cannot be.
pub fn prepare_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the plot directory {}: {e}", dir.display()))
}

fn failed(path: &Path, e: impl std::fmt::Display) -> String {
    format!("cannot draw {}: {e}", path.display())
}

/// Latency CDFs, one line each, on a logarithmic time axis. Returns the file written, or `None`
/// if no line has a value.
pub fn latency_cdf(
    dir: &Path,
    file: &str,
    title: &str,
    lines: &[Distribution],
) -> Result<Option<PathBuf>, String> {
    let values = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (lo, hi) = values
        .filter(|v| *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi == 0.0 {
        return Ok(None);
    }
    let path = dir.join(file);
    let root = SVGBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(&path, e))?;
    let (lo, hi) = (lo / 1.5, hi * 1.5);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
        .map_err(|e| failed(&path, e))?;
    chart
        .configure_mesh()
        .x_desc("latency (µs, log scale)")
        .y_desc("fraction of transactions at or below")
        .x_label_formatter(&|v| format_us(*v))
        .draw()
        .map_err(|e| failed(&path, e))?;
    for (i, line) in lines.iter().enumerate() {
        let c = color(i);
        let points = thinned(&line.points);
        if points.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))
            .map_err(|e| failed(&path, e))?
            .label(&line.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| failed(&path, e))?;
    root.present().map_err(|e| failed(&path, e))?;
    Ok(Some(dir.join(file)))
}

/// The points of a CDF worth drawing: those at least a pixel's worth (0.2% of a decade, or of the
/// fraction) from the last one kept, and the last. A histogram has a point per distinct value;
/// thousands of them would make a figure of hundreds of kilobytes that looks the same.
fn thinned(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, &(x, y)) in points.iter().enumerate() {
        if x <= 0.0 {
            continue;
        }
        let far = out.last().is_none_or(|&(lx, ly)| {
            (x.log10() - lx.log10()).abs() > 0.002 || (y - ly).abs() > 0.002
        });
        if far || i + 1 == points.len() {
            out.push((x, y));
        }
    }
    out
}

/// Bars, one per (name, value), with the value written above each.
pub fn bars(
    dir: &Path,
    file: &str,
    title: &str,
    y_desc: &str,
    values: &[(String, f64)],
) -> Result<Option<PathBuf>, String> {
    let top = values.iter().map(|v| v.1).fold(0.0f64, f64::max);
    if values.is_empty() || top <= 0.0 {
        return Ok(None);
    }
    let path = dir.join(file);
    let root = SVGBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(&path, e))?;
    let n = values.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n as f64, 0.0..top * 1.15)
        .map_err(|e| failed(&path, e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc(y_desc)
        .draw()
        .map_err(|e| failed(&path, e))?;
    chart
        .draw_series(values.iter().enumerate().map(|(i, (_, v))| {
            Rectangle::new(
                [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, *v)],
                color(i).filled(),
            )
        }))
        .map_err(|e| failed(&path, e))?;
    let label = ("sans-serif", 13).into_font().color(&BLACK);
    chart
        .draw_series(values.iter().enumerate().map(|(i, (name, v))| {
            Text::new(
                format!("{name}: {}", format_count(*v)),
                (i as f64 + 0.15, *v + top * 0.03),
                label.clone(),
            )
        }))
        .map_err(|e| failed(&path, e))?;
    root.present().map_err(|e| failed(&path, e))?;
    Ok(Some(dir.join(file)))
}

/// Curves over the points of a sweep (`labels`, evenly spaced), one per line; a logarithmic
/// value axis with `log_y`.
pub fn sweep(
    dir: &Path,
    file: &str,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    labels: &[String],
    curves: &[Curve],
    log_y: bool,
) -> Result<Option<PathBuf>, String> {
    let values = curves
        .iter()
        .flat_map(|c| c.values.iter().flatten().copied());
    let (lo, hi) = values
        .filter(|v| !log_y || *v > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if labels.is_empty() || !hi.is_finite() {
        return Ok(None);
    }
    let path = dir.join(file);
    let root = SVGBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(&path, e))?;
    let x_range = -0.3..(labels.len() as f64 - 0.7);
    let label_at = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 0.01 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70);
    // The two arms differ only in the value axis, whose type plotters makes the chart's type.
    let drawn = if log_y {
        let mut chart = builder
            .build_cartesian_2d(x_range, (lo / 1.5..hi * 1.5).log_scale())
            .map_err(|e| failed(&path, e))?;
        chart
            .configure_mesh()
            .x_labels(labels.len())
            .x_label_formatter(&label_at)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(|e| failed(&path, e))?;
        draw_curves(&mut chart, curves).map_err(|e| failed(&path, e))
    } else {
        let span = (hi - lo).max(hi.abs() * 0.1).max(1e-9);
        let mut chart = builder
            .build_cartesian_2d(x_range, (lo - span * 0.1).min(0.0)..hi + span * 0.1)
            .map_err(|e| failed(&path, e))?;
        chart
            .configure_mesh()
            .x_labels(labels.len())
            .x_label_formatter(&label_at)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(|e| failed(&path, e))?;
        draw_curves(&mut chart, curves).map_err(|e| failed(&path, e))
    };
    drawn?;
    root.present().map_err(|e| failed(&path, e))?;
    Ok(Some(dir.join(file)))
}

fn draw_curves<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    curves: &[Curve],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64>,
{
    for (i, curve) in curves.iter().enumerate() {
        let c = color(i);
        let points: Vec<(f64, f64)> = curve
            .values
            .iter()
            .enumerate()
            .filter_map(|(x, v)| v.map(|v| (x as f64, v)))
            .collect();
        if points.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?
            .label(&curve.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(
            points
                .into_iter()
                .map(move |p| Circle::new(p, 4, c.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

/// Microseconds as an axis label, with its unit (`50us`, `1.5ms`, `2s`).
fn format_us(v: f64) -> String {
    let (value, unit) = if v >= 1e6 {
        (v / 1e6, "s")
    } else if v >= 1e3 {
        (v / 1e3, "ms")
    } else {
        (v, "us")
    };
    let digits = format!("{value:.3}");
    let digits = digits.trim_end_matches('0').trim_end_matches('.');
    format!("{digits}{unit}")
}

/// A rate or count, rounded for a label.
fn format_count(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::{Curve, Distribution, bars, format_us, latency_cdf, sweep};

    #[test]
    fn figures_are_svg_files_and_empty_ones_are_not_written() {
        let dir = std::env::temp_dir().join(format!("overtake-plot-{}", std::process::id()));
        super::prepare_dir(&dir).expect("dir");
        let lines = [Distribution {
            name: "preempt high".into(),
            points: vec![(10.0, 0.5), (20.0, 0.99), (200.0, 1.0)],
        }];
        let cdf = latency_cdf(&dir, "cdf.svg", "latency", &lines).expect("drawn");
        let svg = std::fs::read_to_string(cdf.expect("written")).expect("read");
        assert!(svg.contains("<svg") && svg.contains("preempt high"));
        let none = latency_cdf(&dir, "none.svg", "t", &[]).expect("nothing to draw");
        assert!(none.is_none() && !dir.join("none.svg").exists());
        let b = bars(&dir, "b.svg", "t", "per s", &[("wait".into(), 3.0)]).expect("drawn");
        assert!(b.is_some());
        let labels = vec!["0.5".to_owned(), "0.9".to_owned()];
        let curves = [Curve {
            name: "wait".into(),
            values: vec![Some(100.0), None],
        }];
        let s = sweep(&dir, "s.svg", "t", ("load", "p99"), &labels, &curves, true);
        assert!(s.expect("drawn").is_some());
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_dense_cdf_is_thinned_but_keeps_its_ends() {
        let dense: Vec<(f64, f64)> = (1..=10_000)
            .map(|i| (100.0 + f64::from(i) * 0.001, f64::from(i) / 10_000.0))
            .collect();
        let thin = super::thinned(&dense);
        assert!(thin.len() < 1_000, "{}", thin.len());
        assert_eq!(thin.first(), dense.first());
        assert_eq!(thin.last(), dense.last());
    }

    #[test]
    fn axis_labels_carry_their_unit() {
        assert_eq!(format_us(50.0), "50us");
        assert_eq!(format_us(1500.0), "1.5ms");
        assert_eq!(format_us(2_000_000.0), "2s");
    }
}
