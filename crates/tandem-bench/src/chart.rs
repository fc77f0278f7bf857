//! `results.svg`: one panel per scenario, a group of bars per cell (engine, rows, parallelism), one bar per
//! variant, rows per second on a shared scale per panel. Hand-written SVG: no plotting dependency to build.

use std::fmt::Write as _;

use crate::report::{Record, Results};

const COLORS: [(&str, &str); 7] = [
    ("tandem-blocking", "#1f77b4"),
    ("tandem-async", "#ff7f0e"),
    ("raw-driver", "#2ca02c"),
    ("raw-sqlx", "#9467bd"),
    ("bulk-limit", "#7f7f7f"),
    ("insert-select", "#7f7f7f"),
    ("", "#bcbd22"),
];

fn color(variant: &str) -> &'static str {
    COLORS
        .iter()
        .find(|(v, _)| *v == variant)
        .map_or(COLORS[6].1, |(_, c)| c)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart of the seed and e2e cells.
pub fn svg(results: &Results) -> String {
    let panels: Vec<(&str, Vec<Vec<&Record>>)> = ["seed", "e2e"]
        .into_iter()
        .map(|scenario| {
            let mut cells: Vec<Vec<&Record>> = Vec::new();
            for r in results.records.iter().filter(|r| r.scenario == scenario) {
                match cells.iter_mut().find(|c| {
                    let f = c[0];
                    f.db == r.db
                        && f.rows == r.rows
                        && f.pool == r.pool
                        && f.parallelism == r.parallelism
                }) {
                    Some(c) => c.push(r),
                    None => cells.push(vec![r]),
                }
            }
            (scenario, cells)
        })
        .filter(|(_, cells)| !cells.is_empty())
        .collect();
    let bar = 14.0;
    let gap = 18.0;
    let panel_h = 260.0;
    let left = 70.0;
    let width = panels
        .iter()
        .map(|(_, cells)| {
            cells
                .iter()
                .map(|c| c.len() as f64 * bar + gap)
                .sum::<f64>()
        })
        .fold(400.0, f64::max)
        + left
        + 20.0;
    let height = panels.len() as f64 * (panel_h + 80.0) + 60.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="10">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (p, (scenario, cells)) in panels.iter().enumerate() {
        let top = 30.0 + p as f64 * (panel_h + 80.0);
        let max = cells
            .iter()
            .flatten()
            .map(|r| r.rows_per_s())
            .fold(1.0, f64::max);
        let _ = writeln!(
            out,
            r#"<text x="{left}" y="{:.0}" font-size="13" font-weight="bold">{} — rows per second (median), higher is better</text>"#,
            top - 10.0,
            esc(scenario)
        );
        let _ = writeln!(
            out,
            r#"<line x1="{left}" y1="{:.0}" x2="{:.0}" y2="{:.0}" stroke="black"/>"#,
            top + panel_h,
            width - 10.0,
            top + panel_h
        );
        for tick in 0..=4 {
            let v = max * tick as f64 / 4.0;
            let y = top + panel_h - panel_h * tick as f64 / 4.0;
            let _ = writeln!(
                out,
                r#"<text x="{:.0}" y="{y:.0}" text-anchor="end">{:.0}k</text>"#,
                left - 4.0,
                v / 1000.0
            );
            let _ = writeln!(
                out,
                r##"<line x1="{left}" y1="{y:.0}" x2="{:.0}" y2="{y:.0}" stroke="#ddd"/>"##,
                width - 10.0
            );
        }
        let mut x = left + gap / 2.0;
        for cell in cells {
            let start = x;
            for r in cell {
                let h = panel_h * r.rows_per_s() / max;
                let _ = writeln!(
                    out,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{}: {:.0} rows/s</title></rect>"#,
                    top + panel_h - h,
                    bar - 2.0,
                    color(&r.variant),
                    esc(&r.variant),
                    r.rows_per_s()
                );
                x += bar;
            }
            let f = cell[0];
            let label = if f.parallelism > 0 {
                format!("{} {} p{}", f.db, f.rows, f.parallelism)
            } else {
                format!("{} {}", f.db, f.rows)
            };
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.0}" text-anchor="middle">{}</text>"#,
                (start + x) / 2.0,
                top + panel_h + 14.0,
                esc(&label)
            );
            x += gap;
        }
        let mut lx = left;
        let mut seen: Vec<&str> = Vec::new();
        for r in cells.iter().flatten() {
            if seen.contains(&r.variant.as_str()) {
                continue;
            }
            seen.push(&r.variant);
            let _ = writeln!(
                out,
                r#"<rect x="{lx:.0}" y="{:.0}" width="10" height="10" fill="{}"/><text x="{:.0}" y="{:.0}">{}</text>"#,
                top + panel_h + 26.0,
                color(&r.variant),
                lx + 14.0,
                top + panel_h + 35.0,
                esc(&r.variant)
            );
            lx += 14.0 + 7.0 * r.variant.len() as f64 + 16.0;
        }
    }
    out.push_str("</svg>\n");
    out
}
