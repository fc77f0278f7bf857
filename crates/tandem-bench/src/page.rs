//! One page per run, `report.html`: the tables the run wrote (`results.md`, rendered), its charts inline,
//! the machine's facts and the command that made it — one file to open in a browser instead of a terminal
//! to read. The page holds everything (the charts are its own SVG, no file beside it is fetched).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// Writes `report.html` into `dir` from the run's `markdown` (what `results.md` holds), the `charts` it
/// drew, the `machine`'s facts and the `command` that ran; returns its path.
pub fn write(
    dir: &Path,
    markdown: &str,
    charts: &[PathBuf],
    machine: &[(String, String)],
    command: &str,
) -> anyhow::Result<PathBuf> {
    let mut html = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>tandem-bench: results</title>\n<style>\n\
         body { font-family: sans-serif; margin: 2em auto; max-width: 80em; padding: 0 1em; color: #222; }\n\
         table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }\n\
         th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }\n\
         th { background: #f3f3f3; }\n\
         td.num { text-align: right; font-variant-numeric: tabular-nums; }\n\
         .wide { overflow-x: auto; }\n\
         figure { margin: 1.5em 0; }\n\
         figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }\n\
         code { background: #f5f5f5; padding: 0 0.2em; }\n\
         nav a { margin-right: 1em; }\n\
         </style>\n</head>\n<body>\n",
    );
    let names: Vec<String> = charts
        .iter()
        .filter_map(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    html.push_str("<nav><a href=\"#tables\">tables</a>");
    for n in &names {
        let _ = write!(html, "<a href=\"#{}\">{}</a>", anchor(n), escape(n));
    }
    html.push_str("<a href=\"#machine\">machine</a></nav>\n<div id=\"tables\"></div>\n");
    html.push_str(&markdown_to_html(markdown));
    html.push_str("<h2>Charts</h2>\n");
    for (path, name) in charts.iter().zip(&names) {
        let svg =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let _ = write!(
            html,
            "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            anchor(name),
            svg.trim(),
            escape(name)
        );
    }
    html.push_str("<h2 id=\"machine\">The machine and the command</h2>\n<table>\n");
    for (k, v) in machine {
        let _ = writeln!(
            html,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(k),
            escape(v)
        );
    }
    let _ = write!(
        html,
        "</table>\n<p>Made by <code>{}</code>.</p>\n</body>\n</html>\n",
        escape(command)
    );
    let page = dir.join("report.html");
    std::fs::write(&page, html).with_context(|| format!("writing {}", page.display()))?;
    Ok(page)
}

/// `seed.svg` → `chart-seed`.
fn anchor(name: &str) -> String {
    let stem = name.strip_suffix(".svg").unwrap_or(name);
    format!(
        "chart-{}",
        stem.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A line of Markdown text as HTML: escaped, with `code` and **bold** spans.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
            continue;
        }
        for (j, piece) in escape(part).split("**").enumerate() {
            if j % 2 == 1 {
                let _ = write!(out, "<strong>{piece}</strong>");
            } else {
                out.push_str(piece);
            }
        }
    }
    out
}

/// The cells of a table row: `| a | b |` → `["a", "b"]`.
fn cells(row: &str) -> Vec<&str> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    row.split('|').map(str::trim).collect()
}

/// The Markdown the benchmark writes (headings, paragraphs, lists, tables) as HTML. Not a general
/// Markdown reader: what `results.md` uses, no more.
pub fn markdown_to_html(md: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    let mut paragraph: Vec<&str> = Vec::new();
    let flush = |paragraph: &mut Vec<&str>, out: &mut String| {
        if !paragraph.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", inline(&paragraph.join(" ")));
            paragraph.clear();
        }
    };
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() {
            flush(&mut paragraph, &mut out);
            i += 1;
        } else if let Some((level, text)) = ["### ", "## ", "# "]
            .iter()
            .find_map(|h| line.strip_prefix(h).map(|t| (h.len() - 1, t)))
        {
            flush(&mut paragraph, &mut out);
            let _ = writeln!(out, "<h{level}>{}</h{level}>", inline(text));
            i += 1;
        } else if line.starts_with('|') {
            flush(&mut paragraph, &mut out);
            let head = cells(line);
            let mut numeric = vec![false; head.len()];
            i += 1;
            if i < lines.len() && lines[i].starts_with("|") && lines[i].contains("--") {
                numeric = cells(lines[i]).iter().map(|c| c.ends_with(':')).collect();
                i += 1;
            }
            out.push_str("<div class=\"wide\"><table>\n<tr>");
            for h in &head {
                let _ = write!(out, "<th>{}</th>", inline(h));
            }
            out.push_str("</tr>\n");
            while i < lines.len() && lines[i].starts_with('|') {
                out.push_str("<tr>");
                for (c, text) in cells(lines[i]).iter().enumerate() {
                    let class = if numeric.get(c) == Some(&true) {
                        " class=\"num\""
                    } else {
                        ""
                    };
                    let _ = write!(out, "<td{class}>{}</td>", inline(text));
                }
                out.push_str("</tr>\n");
                i += 1;
            }
            out.push_str("</table></div>\n");
        } else if line.starts_with("- ") {
            flush(&mut paragraph, &mut out);
            out.push_str("<ul>\n");
            while i < lines.len() && lines[i].starts_with("- ") {
                let mut item = lines[i][2..].to_owned();
                i += 1;
                // A list item's continuation lines are indented.
                while i < lines.len() && lines[i].starts_with("  ") && !lines[i].trim().is_empty() {
                    item.push(' ');
                    item.push_str(lines[i].trim());
                    i += 1;
                }
                let _ = writeln!(out, "<li>{}</li>", inline(&item));
            }
            out.push_str("</ul>\n");
        } else {
            paragraph.push(line.trim());
            i += 1;
        }
    }
    flush(&mut paragraph, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Headings, paragraphs with code and bold, lists and tables (numbers right-aligned where the
    /// Markdown says so) come out as HTML; what could be markup in the text is escaped.
    #[test]
    fn the_results_markdown_reads_as_html() {
        let md = "# Results\n\nA run of `tandem-bench` on **2** cores <fast>.\n\n## seed (ops/s)\n\n\
                  | engine | rows |\n|---|--:|\n| sqlite | 1000 |\n\n- one\n  more\n- two\n";
        let html = markdown_to_html(md);
        assert!(html.contains("<h1>Results</h1>"), "{html}");
        assert!(html.contains("<p>A run of <code>tandem-bench</code> on <strong>2</strong> cores &lt;fast&gt;.</p>"), "{html}");
        assert!(html.contains("<h2>seed (ops/s)</h2>"), "{html}");
        assert!(
            html.contains("<tr><th>engine</th><th>rows</th></tr>"),
            "{html}"
        );
        assert!(
            html.contains("<tr><td>sqlite</td><td class=\"num\">1000</td></tr>"),
            "{html}"
        );
        assert!(html.contains("<li>one more</li>\n<li>two</li>"), "{html}");
    }

    /// The page holds the tables, every chart's SVG itself, the machine and the command.
    #[test]
    fn the_page_holds_everything() {
        let dir = std::env::temp_dir().join(format!("tandem-page-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = dir.join("seed.svg");
        std::fs::write(
            &chart,
            "<svg width=\"10\" height=\"10\"><text>a chart</text></svg>",
        )
        .unwrap();
        let page = write(
            &dir,
            "## seed\n\n| a |\n|---|\n| b |\n",
            std::slice::from_ref(&chart),
            &[("cpus".into(), "2".into())],
            "tandem-bench --db sqlite",
        )
        .unwrap();
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains("<h2>seed</h2>"));
        assert!(
            html.contains("<figure id=\"chart-seed\">\n<svg width=\"10\""),
            "{html}"
        );
        assert!(html.contains("<tr><th>cpus</th><td>2</td></tr>"));
        assert!(html.contains("<code>tandem-bench --db sqlite</code>"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
