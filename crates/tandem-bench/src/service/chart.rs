//! The service's chart (`service.svg`): a column per engine, three panels each — `/db`'s p99 latency and
//! requests per second by connections (closed loop), and the server's resident memory by requests in flight
//! (the open loop's `/wait`) — one line per variant, the legend beside the panels, the size from the content.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use plotters::prelude::*;

use super::server::Variant;
use crate::chart::text_width;
use crate::report::{Record, Results};

/// A colour per variant, in [`Variant::ALL`]'s order.
const COLOURS: [RGBColor; 7] = [
    RGBColor(255, 127, 14),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(31, 119, 180),
    RGBColor(140, 86, 75),
    RGBColor(44, 160, 44),
    RGBColor(110, 110, 110),
];

/// The legend's column: the longest variant name at 13 px after its line.
fn legend_width() -> u32 {
    let longest = Variant::ALL
        .iter()
        .map(|v| text_width(13.0, v.name()))
        .fold(0.0, f64::max);
    (42.0 + longest + 16.0).ceil() as u32
}

/// A panel: its title, the cells it draws, x and y of each.
struct Panel {
    title: &'static str,
    scenario: fn(&str) -> bool,
    x: fn(&Record) -> f64,
    y: fn(&Record) -> f64,
}

const PANELS: [Panel; 3] = [
    Panel {
        title: "/db: p99 latency (ms) by connections",
        scenario: |s| s == "service /db",
        x: |r| r.parallelism as f64,
        y: |r| r.detail("latency_p99_ms").unwrap_or(0.0),
    },
    Panel {
        title: "/db: requests/s by connections",
        scenario: |s| s == "service /db",
        x: |r| r.parallelism as f64,
        y: |r| r.detail("req_per_s").unwrap_or(0.0),
    },
    Panel {
        title: "open-loop /wait: server RSS (MiB) by requests in flight",
        scenario: |s| s.starts_with("service open /wait"),
        x: |r| r.detail("in_flight").unwrap_or(0.0),
        y: |r| r.detail("server_rss_mib").unwrap_or(0.0),
    },
];

/// Draws `service.svg` into `dir` when the run measured the service; the file written.
pub fn write(results: &Results, dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    let cells: Vec<&Record> = (results.records.iter())
        .filter(|r| r.scenario.starts_with("service"))
        .collect();
    let mut engines: Vec<&str> = Vec::new();
    for c in &cells {
        if !engines.contains(&c.db.as_str()) {
            engines.push(&c.db);
        }
    }
    if engines.is_empty() {
        return Ok(None);
    }
    let path = dir.join("service.svg");
    draw(&cells, &engines, &path).with_context(|| format!("drawing {}", path.display()))?;
    Ok(Some(path))
}

fn draw(cells: &[&Record], engines: &[&str], path: &Path) -> anyhow::Result<()> {
    const TITLE: &str = "The service under load: each variant in a process of its own";
    // Sizes from the content: a panel as wide as its widest caption, the whole as wide as the title.
    let caption_w = (PANELS.iter())
        .flat_map(|p| {
            (engines.iter()).map(move |e| text_width(12.0, &format!("{e} — {}", p.title)))
        })
        .fold(0.0, f64::max);
    let (panel_w, panel_h, legend_w, title_h) = (
        (caption_w + 30.0).max(400.0).ceil() as u32,
        300u32,
        legend_width(),
        40u32,
    );
    let width =
        (panel_w * engines.len() as u32 + legend_w).max(text_width(18.0, TITLE).ceil() as u32 + 40);
    let height = title_h + panel_h * PANELS.len() as u32;
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let titled = root.titled(TITLE, ("sans-serif", 18))?;
    let (body, legend) = titled.split_horizontally(panel_w * engines.len() as u32);
    let grid = body.split_evenly((PANELS.len(), engines.len()));
    for (row, panel) in PANELS.iter().enumerate() {
        for (col, engine) in engines.iter().enumerate() {
            let area = &grid[row * engines.len() + col];
            let lines: Vec<(usize, Vec<(f64, f64)>)> = (Variant::ALL.iter().enumerate())
                .map(|(i, v)| {
                    let mut points: Vec<(f64, f64)> = (cells.iter())
                        .filter(|r| {
                            r.db == *engine && r.variant == v.name() && (panel.scenario)(r.scenario)
                        })
                        .map(|r| ((panel.x)(r), (panel.y)(r)))
                        .filter(|(x, y)| *x > 0.0 && *y > 0.0 && y.is_finite())
                        .collect();
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    (i, points)
                })
                .filter(|(_, p)| !p.is_empty())
                .collect();
            let all = lines.iter().flat_map(|(_, p)| p.iter());
            let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, 0f64, f64::MAX, 0f64);
            for &(x, y) in all {
                (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
            }
            let caption = format!("{engine} — {}", panel.title);
            if lines.is_empty() {
                area.draw(&Text::new(
                    format!("{caption}: not measured"),
                    (10, 20),
                    ("sans-serif", 12),
                ))?;
                continue;
            }
            let mut builder = ChartBuilder::on(area);
            builder
                .caption(caption, ("sans-serif", 12))
                .margin(8)
                .x_label_area_size(28)
                .y_label_area_size(48);
            // Ticks at the loads measured (16, 256, 4,096 …): a log axis's own ticks fall on powers of
            // ten, which label none of them.
            let mut measured: Vec<f64> = (lines.iter())
                .flat_map(|(_, p)| p.iter().map(|&(x, _)| x))
                .collect();
            measured.sort_by(f64::total_cmp);
            // Requests in flight differ a little between variants (128, 129, 131 …): one label for loads
            // closer than 15 %, which would print over each other.
            measured.dedup_by(|next, kept| *next < *kept * 1.15);
            let x_range = ((x0 * 0.8)..(x1 * 1.25))
                .log_scale()
                .with_key_points(measured);
            macro_rules! plot {
                ($chart:expr) => {{
                    let mut chart = $chart;
                    chart
                        .configure_mesh()
                        .x_labels(6)
                        .y_labels(6)
                        .x_label_formatter(&|v| format!("{v:.0}"))
                        .y_label_formatter(&|v| {
                            if *v >= 10.0 {
                                format!("{v:.0}")
                            } else {
                                format!("{v:.1}")
                            }
                        })
                        .label_style(("sans-serif", 11))
                        .draw()?;
                    for (i, points) in &lines {
                        let c = COLOURS[*i];
                        chart.draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?;
                        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
                    }
                }};
            }
            // A log scale over less than a decade has hardly a tick to label: linear there, from zero.
            if y1 / y0 >= 10.0 {
                plot!(builder.build_cartesian_2d(x_range, ((y0 * 0.8)..(y1 * 1.25)).log_scale())?);
            } else {
                plot!(builder.build_cartesian_2d(x_range, 0.0..(y1 * 1.1))?);
            }
        }
    }
    for (i, v) in Variant::ALL.iter().enumerate() {
        let y = 60 + 24 * i as i32;
        legend.draw(&PathElement::new(
            vec![(10, y), (34, y)],
            COLOURS[i].stroke_width(3),
        ))?;
        legend.draw(&Text::new(v.name(), (42, y - 7), ("sans-serif", 13)))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Measured;
    use std::time::Duration;

    fn cell(scenario: &'static str, db: &str, variant: Variant, conns: u32, p99: f64) -> Record {
        let t = Duration::from_micros(100);
        Record {
            scenario,
            db: db.into(),
            variant: variant.name().into(),
            rows: 1,
            pool: 16,
            parallelism: conns,
            time: Measured {
                median: t,
                min: t,
                max: t,
            },
            extra: Some(1.0),
            details: vec![
                ("latency_p99_ms", p99),
                ("req_per_s", 10_000.0 / p99),
                ("in_flight", conns as f64 / 2.0),
                ("server_rss_mib", 10.0 + conns as f64 / 100.0),
            ],
        }
    }

    /// Every variant's name is in the legend and every engine's panels are drawn, and every text fits
    /// the chart's width.
    #[test]
    fn the_chart_names_every_variant_and_engine() {
        let mut records = Vec::new();
        for db in ["sqlite", "postgres"] {
            for v in Variant::ALL {
                for conns in [16, 256, 4_096] {
                    records.push(cell("service /db", db, v, conns, conns as f64 / 10.0));
                    records.push(cell("service open /wait?ms=500", db, v, conns, 500.0));
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("tandem-service-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let results = Results {
            records,
            machine: Vec::new(),
        };
        let path = write(&results, &dir).unwrap().expect("cells to draw");
        let svg = std::fs::read_to_string(&path).unwrap();
        for v in Variant::ALL {
            assert!(
                svg.contains(v.name()),
                "{} missing from the legend",
                v.name()
            );
        }
        for db in ["sqlite", "postgres"] {
            assert!(
                svg.contains(&format!("{db} — /db: p99 latency")),
                "{db}'s panels missing"
            );
        }
        assert!(!svg.contains("not measured"));
        // Each load measured labels the x axis: connections on the closed loops' panels, requests in
        // flight (half the connections here) on the open loop's.
        let texts: Vec<&str> = (svg.split("<text ").skip(1))
            .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim()))
            .collect();
        for load in ["16", "256", "4096", "8", "128", "2048"] {
            assert!(texts.contains(&load), "no x axis label {load}: {texts:?}");
        }
        let cut = crate::chart::overflowing_texts(&svg);
        assert!(cut.is_empty(), "texts cut at the edges: {cut:#?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
