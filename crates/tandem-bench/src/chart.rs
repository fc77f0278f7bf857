//! Charts, drawn with plotters (SVG): one file per workload (`seed.svg`, `e2e.svg`), a column per engine,
//! a row per measure, one line per variant (colour) and partition count (marker):
//!
//! 1. ops/s by data size; both axes on a log scale when the values span a decade or more.
//! 2. tandem's throughput as a percentage of the raw driver's on the same engine (`seed`; the async executor
//!    against raw sqlx), by data size.
//! 3. tandem's throughput as a percentage of the engine's bulk limit (`bulk-limit` for `seed`,
//!    `INSERT … SELECT` for `e2e`): how far the repository path is from the floor.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::{Record, Results};

/// The variants drawn, with their colours.
const VARIANTS: [(&str, RGBColor); 6] = [
    ("tandem-blocking", RGBColor(31, 119, 180)),
    ("tandem-async", RGBColor(255, 127, 14)),
    ("raw-driver", RGBColor(44, 160, 44)),
    ("raw-sqlx", RGBColor(148, 103, 189)),
    ("bulk-limit", RGBColor(110, 110, 110)),
    ("insert-select", RGBColor(110, 110, 110)),
];

/// One line: its variant (colour), partitions (marker) and points (rows, value).
struct Line {
    variant: String,
    parallelism: u32,
    points: Vec<(f64, f64)>,
}

/// Writes one chart per workload that has cells into `dir`; returns the files written.
pub fn write(results: &Results, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (scenario, limit) in [("seed", "bulk-limit"), ("e2e", "insert-select")] {
        let cells: Vec<&Record> = results
            .records
            .iter()
            .filter(|r| r.scenario == scenario && color(&r.variant).is_some())
            .collect();
        if cells.is_empty() {
            continue;
        }
        let path = dir.join(format!("{scenario}.svg"));
        draw(results, scenario, limit, &cells, &path)
            .with_context(|| format!("drawing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

fn color(variant: &str) -> Option<RGBColor> {
    VARIANTS
        .iter()
        .find(|(v, _)| *v == variant)
        .map(|(_, c)| *c)
}

/// Groups `value(cell)` into lines (variant × partitions), points sorted by data size.
fn lines(cells: &[&Record], value: impl Fn(&Record) -> Option<f64>) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    // (A cell of 0 rows — the e2e run's fixed cost — has no place on a log scale of data sizes.)
    for r in cells.iter().filter(|r| r.rows > 0) {
        let Some(v) = value(r).filter(|v| v.is_finite() && *v > 0.0) else {
            continue;
        };
        let at = match out
            .iter()
            .position(|l| l.variant == r.variant && l.parallelism == r.parallelism)
        {
            Some(i) => i,
            None => {
                out.push(Line {
                    variant: r.variant.clone(),
                    parallelism: r.parallelism,
                    points: Vec::new(),
                });
                out.len() - 1
            }
        };
        out[at].points.push((r.rows as f64, v));
    }
    for l in &mut out {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// A chart: a column per engine, a row per measure (ops/s; % of the raw driver where there is one; % of
/// the bulk limit), and one legend for all (colour = variant, marker = partitions).
fn draw(
    results: &Results,
    scenario: &str,
    limit: &str,
    cells: &[&Record],
    path: &Path,
) -> anyhow::Result<()> {
    let mut engines: Vec<&str> = Vec::new();
    for c in cells {
        if !engines.contains(&c.db.as_str()) {
            engines.push(&c.db);
        }
    }
    let tandem = |db: &str| -> Vec<&Record> {
        cells
            .iter()
            .copied()
            .filter(|r| r.db == db && r.variant.starts_with("tandem-"))
            .collect()
    };
    // tandem's throughput over a baseline's: baseline time / tandem time, in %.
    let over = |db: &str, base: &dyn Fn(&Record) -> &'static str| {
        lines(&tandem(db), |r| {
            results
                .find(r, base(r))
                .map(|b| 100.0 * b.time.secs() / r.time.secs())
        })
    };
    type Measure<'a> = (
        String,
        &'static str,
        bool,
        Box<dyn Fn(&str) -> Vec<Line> + 'a>,
    );
    let mut measures: Vec<Measure<'_>> = vec![(
        "ops/s (one op = all rows), higher is better".into(),
        "ops/s",
        true,
        Box::new(|db: &str| {
            let of: Vec<&Record> = cells.iter().copied().filter(|r| r.db == db).collect();
            lines(&of, |r| Some(r.ops_per_s()))
        }),
    )];
    let raw = |r: &Record| {
        if r.variant == "tandem-async" {
            "raw-sqlx"
        } else {
            "raw-driver"
        }
    };
    if engines.iter().any(|db| !over(db, &raw).is_empty()) {
        measures.push((
            "tandem as % of the raw driver (async: of raw sqlx); 100% = no overhead".into(),
            "% of raw driver",
            false,
            Box::new(move |db: &str| over(db, &raw)),
        ));
    }
    let limit_name: &'static str = if limit == "bulk-limit" {
        "bulk-limit"
    } else {
        "insert-select"
    };
    measures.push((
        format!("tandem as % of the bulk limit ({limit}); 100% = at the floor"),
        "% of bulk limit",
        false,
        Box::new(move |db: &str| over(db, &|_| limit_name)),
    ));
    let (width, row_h, legend_h) = (460 * engines.len().max(1) as u32, 330, 70);
    let root = SVGBackend::new(path, (width, row_h * measures.len() as u32 + legend_h + 40))
        .into_drawing_area();
    root.fill(&WHITE)?;
    let titled = root.titled(
        &format!("{scenario}: tandem beside the raw drivers and the bulk limit, by data size"),
        ("sans-serif", 20),
    )?;
    let (body, legend) = titled.split_vertically(row_h * measures.len() as u32);
    let grid = body.split_evenly((measures.len(), engines.len()));
    for (m, (title, y_desc, log_y, make)) in measures.iter().enumerate() {
        for (e, db) in engines.iter().enumerate() {
            panel(
                &grid[m * engines.len() + e],
                &format!("{db}: {title}"),
                y_desc,
                &make(db),
                *log_y,
            )?;
        }
    }
    // The legend: every variant drawn, every partition count drawn.
    let mut variants: Vec<&str> = Vec::new();
    let mut partitions: Vec<u32> = Vec::new();
    for c in cells {
        if !variants.contains(&c.variant.as_str()) {
            variants.push(&c.variant);
        }
        if !partitions.contains(&c.parallelism) {
            partitions.push(c.parallelism);
        }
    }
    partitions.sort_unstable();
    let mut x = 20;
    for v in variants {
        let c = color(v).unwrap_or(BLACK);
        legend.draw(&PathElement::new(
            vec![(x, 20), (x + 24, 20)],
            c.stroke_width(3),
        ))?;
        legend.draw(&Text::new(v.to_owned(), (x + 30, 14), ("sans-serif", 13)))?;
        x += 40 + 8 * v.len() as i32;
    }
    if partitions.len() > 1 {
        let mut x = 20;
        for p in partitions {
            legend.draw(&marker::<SVGBackend<'_>, (i32, i32)>(p, (x + 8, 48), BLACK))?;
            legend.draw(&Text::new(
                format!("{p} partitions"),
                (x + 20, 42),
                ("sans-serif", 13),
            ))?;
            x += 120;
        }
    }
    root.present()?;
    Ok(())
}

/// One panel; `log_y` for throughput (ratios stay linear), both axes on a log scale where the values
/// span a decade or more. A panel without data says so.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    y_desc: &str,
    lines: &[Line],
    log_y: bool,
) -> anyhow::Result<()> {
    let all: Vec<(f64, f64)> = lines
        .iter()
        .flat_map(|l| l.points.iter().copied())
        .collect();
    if all.is_empty() {
        area.draw(&Text::new(
            format!("{title}: no cells"),
            (20, 30),
            ("sans-serif", 13),
        ))?;
        return Ok(());
    }
    let (x_min, x_max) = bounds(all.iter().map(|p| p.0));
    let (y_min, y_max) = bounds(all.iter().map(|p| p.1));
    let x_log = x_max / x_min >= 10.0;
    let x_range = (x_min / 1.3)..(x_max * 1.3);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, ("sans-serif", 13))
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(58);
    macro_rules! plot {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc("rows per op")
                .y_desc(y_desc)
                .light_line_style(RGBColor(244, 244, 244))
                .x_label_formatter(&|v| format_si(*v))
                .y_label_formatter(&|v| format_si(*v))
                .draw()?;
            for l in lines {
                let c = color(&l.variant).unwrap_or(BLACK);
                chart.draw_series(LineSeries::new(l.points.clone(), c.stroke_width(2)))?;
                let p = l.parallelism;
                chart.draw_series(l.points.iter().map(move |&at| marker(p, at, c)))?;
            }
        }};
    }
    if log_y {
        let y_range = (y_min / 1.5)..(y_max * 1.5);
        if x_log {
            plot!(builder.build_cartesian_2d(x_range.log_scale(), y_range.log_scale())?);
        } else {
            plot!(builder.build_cartesian_2d(x_range, y_range.log_scale())?);
        }
    } else {
        let y_range = 0.0..(y_max.max(100.0) * 1.1);
        if x_log {
            plot!(builder.build_cartesian_2d(x_range.log_scale(), y_range)?);
        } else {
            plot!(builder.build_cartesian_2d(x_range, y_range)?);
        }
    }
    Ok(())
}

/// A point's marker by partitions: one or none a circle, four a triangle, more a cross.
fn marker<DB: DrawingBackend, C: Clone + 'static>(
    partitions: u32,
    p: C,
    c: RGBColor,
) -> DynElement<'static, DB, C> {
    match partitions {
        0 | 1 => Circle::new(p, 4, c.filled()).into_dyn(),
        2..=4 => TriangleMarker::new(p, 6, c.filled()).into_dyn(),
        _ => Cross::new(p, 5, c.stroke_width(2)).into_dyn(),
    }
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// 1500 → "1.5k", 2000000 → "2M".
fn format_si(v: f64) -> String {
    let (scaled, unit) = match v.abs() {
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let text = format!("{scaled:.1}");
    format!("{}{unit}", text.trim_end_matches(".0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_labels() {
        assert_eq!(format_si(1500.0), "1.5k");
        assert_eq!(format_si(2_000_000.0), "2M");
        assert_eq!(format_si(42.0), "42");
    }
}
