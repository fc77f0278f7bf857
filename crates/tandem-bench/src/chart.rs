//! Charts, drawn with plotters (SVG): one file per workload (`seed.svg`, `e2e.svg`), a column per engine,
//! a row per measure, one line per variant (colour) and partition count (marker) — or, for a run of one
//! data size (the main job's), one labelled bar per variant and partition count. Each chart is as wide as
//! its text needs (title, captions), its legend wrapped to that width:
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
use plotters::style::text_anchor::{HPos, Pos, VPos};

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
    let title =
        format!("{scenario}: tandem beside the raw drivers and the bulk limit, by data size");
    // The legend: every variant drawn, then every partition count drawn (when there is more than one).
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
    let mut items: Vec<Legend> = variants
        .iter()
        .map(|v| Legend::Line(v.to_string(), color(v).unwrap_or(BLACK)))
        .collect();
    let one_size = {
        let mut sizes: Vec<u64> = cells.iter().map(|c| c.rows).filter(|&r| r > 0).collect();
        sizes.sort_unstable();
        sizes.dedup();
        (sizes.len() == 1).then(|| sizes[0])
    };
    // Markers tell partition counts apart on lines; bars say theirs in their labels.
    if partitions.len() > 1 && one_size.is_none() {
        items.extend(partitions.iter().map(|&p| Legend::Marker(p)));
    }
    // Sizes from the content: each panel as wide as its widest caption, the whole at least as wide as the
    // title, the legend wrapped to that width.
    // A run of one size draws bars, whose captions also say the size.
    let suffix = one_size.map_or(String::new(), |rows| {
        format!(" — {} rows per op", format_si(rows as f64))
    });
    let caption_w = measures
        .iter()
        .flat_map(|(t, ..)| {
            let suffix = &suffix;
            engines
                .iter()
                .map(move |db| text_width(13.0, &format!("{db}: {t}{suffix}")))
        })
        .fold(0.0, f64::max);
    let panel_w = (caption_w + 40.0).max(420.0).ceil() as u32;
    let width =
        (panel_w * engines.len().max(1) as u32).max(text_width(20.0, &title).ceil() as u32 + 40);
    let rows = legend_rows(&items, width);
    let (row_h, legend_h) = (330, 26 * rows.len() as u32 + 16);
    let root = SVGBackend::new(path, (width, row_h * measures.len() as u32 + legend_h + 40))
        .into_drawing_area();
    root.fill(&WHITE)?;
    let titled = root.titled(&title, ("sans-serif", 20))?;
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
    for (r, row) in rows.iter().enumerate() {
        let y = 20 + 26 * r as i32;
        for (x, item) in row {
            match item {
                Legend::Line(v, c) => {
                    legend.draw(&PathElement::new(
                        vec![(*x, y), (*x + 24, y)],
                        c.stroke_width(3),
                    ))?;
                    legend.draw(&Text::new(v.clone(), (*x + 30, y - 6), ("sans-serif", 13)))?;
                }
                Legend::Marker(p) => {
                    legend.draw(&marker::<SVGBackend<'_>, (i32, i32)>(
                        *p,
                        (*x + 8, y),
                        BLACK,
                    ))?;
                    legend.draw(&Text::new(
                        Legend::Marker(*p).text(),
                        (*x + 20, y - 6),
                        ("sans-serif", 13),
                    ))?;
                }
            }
        }
    }
    root.present()?;
    Ok(())
}

/// An entry of a chart's legend: a variant's line in its colour, or a partition count's marker.
enum Legend {
    Line(String, RGBColor),
    Marker(u32),
}

impl Legend {
    fn text(&self) -> String {
        match self {
            Legend::Line(v, _) => v.clone(),
            Legend::Marker(1) => "1 partition".to_owned(),
            Legend::Marker(p) => format!("{p} partitions"),
        }
    }

    /// Its width: the line or marker, the text, a gap.
    fn width(&self) -> i32 {
        let lead = if matches!(self, Legend::Line(..)) {
            30.0
        } else {
            20.0
        };
        (lead + text_width(13.0, &self.text()) + 24.0).ceil() as i32
    }
}

/// The legend's entries in rows that fit `width`, each with its x.
fn legend_rows(items: &[Legend], width: u32) -> Vec<Vec<(i32, &Legend)>> {
    let mut rows: Vec<Vec<(i32, &Legend)>> = vec![Vec::new()];
    let mut x = 20;
    for item in items {
        let w = item.width();
        if x + w > width as i32 - 10 && x > 20 {
            rows.push(Vec::new());
            x = 20;
        }
        rows.last_mut().expect("one row at least").push((x, item));
        x += w;
    }
    rows
}

/// How wide `text` is drawn at plotters' font size `size` (the SVG says size ÷ 1.24), in pixels, erring
/// wide: 0.6 of the font size a character, more than a proportional sans-serif font's average (about
/// 0.5–0.55). SVG text is laid out by the viewer; this is what sizes a chart to fit its words.
pub(crate) fn text_width(size: f64, text: &str) -> f64 {
    0.6 * size / 1.24 * text.chars().count() as f64
}

/// Every text of an SVG written here that does not fit its width, by [`text_width`] (a test's check: the
/// charts' words must not be cut at the edges). Rotated texts (axis descriptions) are left out.
#[cfg(test)]
pub(crate) fn overflowing_texts(svg: &str) -> Vec<String> {
    let attr = |tag: &str, name: &str| -> Option<f64> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[at..].split('"').next()?.parse().ok()
    };
    let width = svg
        .find("<svg ")
        .and_then(|i| attr(&svg[i..svg[i..].find('>')? + i], "width"))
        .expect("an <svg> with a width");
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text ") {
        let tag_end = rest[i..].find('>').expect("a closed tag") + i;
        let tag = &rest[i..tag_end];
        let close = rest[tag_end..].find("</text>").expect("a closed text") + tag_end;
        let text = rest[tag_end + 1..close].trim().replace("&amp;", "&");
        rest = &rest[close..];
        if tag.contains("transform=") {
            continue;
        }
        let (Some(x), Some(size)) = (attr(tag, "x"), attr(tag, "font-size")) else {
            continue;
        };
        let w = 0.6 * size * text.chars().count() as f64;
        let (left, right) = if tag.contains("text-anchor=\"middle\"") {
            (x - w / 2.0, x + w / 2.0)
        } else if tag.contains("text-anchor=\"end\"") {
            (x - w, x)
        } else {
            (x, x + w)
        };
        if left < -0.5 || right > width + 0.5 {
            out.push(format!(
                "{text:?} spans {left:.0}..{right:.0} of 0..{width:.0}"
            ));
        }
    }
    out
}

/// One panel. Values at more than one data size are lines (both axes on a log scale where the values span
/// a decade or more); at a single data size, bars, one per line, each labelled with its variant and value.
/// A panel without data says so.
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
    if x_min == x_max {
        return bars(area, title, y_desc, lines, x_min);
    }
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
    // A log scale over less than a decade has no tick of its own to label: linear there.
    if log_y && y_max / y_min >= 10.0 {
        let y_range = (y_min / 1.5)..(y_max * 1.5);
        if x_log {
            plot!(builder.build_cartesian_2d(x_range.log_scale(), y_range.log_scale())?);
        } else {
            plot!(builder.build_cartesian_2d(x_range, y_range.log_scale())?);
        }
    } else {
        let top = if log_y { y_max } else { y_max.max(100.0) };
        let y_range = 0.0..(top * 1.1);
        if x_log {
            plot!(builder.build_cartesian_2d(x_range.log_scale(), y_range)?);
        } else {
            plot!(builder.build_cartesian_2d(x_range, y_range)?);
        }
    }
    Ok(())
}

/// A panel of one data size: a horizontal bar per line (variant × partitions) from zero to its value,
/// labelled with the variant, the partitions and the value, in the variant's colour.
fn bars(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    x_desc: &str,
    lines: &[Line],
    rows: f64,
) -> anyhow::Result<()> {
    let mut bars: Vec<(&Line, f64)> = lines
        .iter()
        .filter_map(|l| l.points.first().map(|p| (l, p.1)))
        .collect();
    bars.sort_by(|a, b| {
        (a.0.variant.as_str(), a.0.parallelism).cmp(&(b.0.variant.as_str(), b.0.parallelism))
    });
    let top = bars.iter().map(|b| b.1).fold(0.0, f64::max);
    let n = bars.len() as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{title} — {} rows per op", format_si(rows)),
            ("sans-serif", 13),
        )
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..top * 1.15, 0.0..n)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc(x_desc)
        .light_line_style(RGBColor(244, 244, 244))
        .x_label_formatter(&|v| format_si(*v))
        .draw()?;
    for (i, (l, v)) in bars.iter().enumerate() {
        let c = color(&l.variant).unwrap_or(BLACK);
        // Top row first: row i spans n-i-1 .. n-i; the bar fills the lower part, its label sits on it.
        let y = n - i as f64 - 1.0;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y + 0.1), (*v, y + 0.5)],
            c.mix(0.8).filled(),
        )))?;
        let on_the_bar = ("sans-serif", 12)
            .into_font()
            .color(&c)
            .pos(Pos::new(HPos::Left, VPos::Bottom));
        let who = if l.parallelism > 1 {
            format!("{} ×{}", l.variant, l.parallelism)
        } else {
            l.variant.clone()
        };
        chart.draw_series(std::iter::once(Text::new(
            format!("{who}: {}", format_si(*v)),
            (0.0, y + 0.55),
            on_the_bar,
        )))?;
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
    use crate::report::Measured;
    use std::time::Duration;

    /// The cells of a run: both workloads on three engines, every variant the charts draw, at `sizes`.
    fn run(sizes: &[u64]) -> Results {
        let mut records = Vec::new();
        for (scenario, limit, partitions) in [
            ("seed", "bulk-limit", vec![0]),
            ("e2e", "insert-select", vec![1, 4]),
        ] {
            for db in ["sqlite", "postgres", "mysql"] {
                for &rows in sizes {
                    for &p in &partitions {
                        for (i, variant) in [
                            "tandem-blocking",
                            "tandem-async",
                            "raw-driver",
                            "raw-sqlx",
                            limit,
                        ]
                        .into_iter()
                        .enumerate()
                        {
                            let t = Duration::from_micros(rows * (10 + i as u64) / (p as u64 + 1));
                            records.push(Record {
                                scenario,
                                db: db.into(),
                                variant: variant.into(),
                                rows,
                                pool: 10,
                                parallelism: p,
                                time: Measured {
                                    median: t,
                                    min: t,
                                    max: t,
                                },
                                extra: None,
                                details: Vec::new(),
                            });
                        }
                    }
                }
            }
        }
        Results {
            records,
            machine: Vec::new(),
        }
    }

    fn drawn(results: &Results, name: &str) -> Vec<(String, String)> {
        let dir = std::env::temp_dir().join(format!("tandem-chart-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let svgs = write(results, &dir)
            .unwrap()
            .into_iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        svgs
    }

    /// tandem-blocking's line as the SVG writes a series (the legend's sample is 3 px wide).
    const SERIES_LINE: &str = "stroke=\"#1F77B4\" stroke-width=\"2\"";

    /// A run of one data size (the main job's) draws labelled bars, a run over sizes draws lines; either
    /// way every text fits the chart (title, captions, legend: nothing cut at the edges).
    #[test]
    fn charts_fit_their_text_at_one_size_and_many() {
        let one = drawn(&run(&[10_000]), "one");
        let many = drawn(&run(&[1_000, 10_000, 100_000]), "many");
        assert_eq!(one.len(), 2, "seed.svg and e2e.svg");
        for (name, svg) in one.iter().chain(&many) {
            let cut = overflowing_texts(svg);
            assert!(cut.is_empty(), "{name}: texts cut at the edges: {cut:#?}");
            assert!(
                svg.contains("tandem-async"),
                "{name}: the legend names the variants"
            );
        }
        for (name, svg) in &one {
            assert!(
                svg.contains("10k rows per op"),
                "{name}: the one size is said"
            );
            assert!(
                svg.contains("tandem-blocking: ") || svg.contains("tandem-blocking ×1: "),
                "{name}: bars are labelled"
            );
            assert!(
                !svg.contains(SERIES_LINE),
                "{name}: no lines through a single point"
            );
        }
        let e2e = &one.iter().find(|(n, _)| n == "e2e.svg").unwrap().1;
        assert!(
            e2e.contains("tandem-async ×4: "),
            "partitions in the bar labels"
        );
        for (name, svg) in &many {
            assert!(svg.contains(SERIES_LINE), "{name}: lines over the sizes");
            assert!(
                svg.contains(">\n100k\n<") || svg.contains(">100k<"),
                "{name}: the size axis is labelled"
            );
        }
    }

    #[test]
    fn si_labels() {
        assert_eq!(format_si(1500.0), "1.5k");
        assert_eq!(format_si(2_000_000.0), "2M");
        assert_eq!(format_si(42.0), "42");
    }
}
