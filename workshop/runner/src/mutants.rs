//! Mutants: mistakes planted in a stage's reference solution, each of which a named check must catch. They
//! prove that the checks test what the chapters warn about, as `verify` proves that the starters fail.
//!
//! A stage lists its mutants in `workshop/NN-…/mutants`:
//!
//! ```text
//! ## retry without a pause
//! fails: retries_pause_then_give_up
//! <<<
//!                     std::thread::sleep(RETRY_PAUSE * 2u32.pow(attempt - 1));
//! ===
//! >>>
//! ```
//!
//! The text between `<<<` and `===` must occur exactly once in `solution/exercise.rs`; it is replaced by
//! the text between `===` and `>>>` (here: nothing). A mistake made of changes in several places has a
//! `<<<` … `>>>` block for each, one right after the other, applied in order. Lines starting with `#`
//! outside a mutant are comments.

/// One planted mistake.
#[derive(Debug, PartialEq, Eq)]
pub struct Mutant {
    /// What the mistake is.
    pub name: String,
    /// The check that must fail on it.
    pub fails: String,
    /// Each change: the text to find, and what replaces it.
    edits: Vec<(String, String)>,
}

/// The mutants of a `mutants` file.
pub fn parse(text: &str) -> Result<Vec<Mutant>, String> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if line.trim().is_empty() || (line.starts_with('#') && !line.starts_with("## ")) {
            continue;
        }
        let name = line
            .strip_prefix("## ")
            .ok_or_else(|| format!("line {}: expected `## <what the mistake is>`", n + 1))?
            .trim()
            .to_owned();
        let fails = lines
            .next()
            .and_then(|(_, l)| l.strip_prefix("fails:"))
            .map(|f| f.trim().to_owned())
            .filter(|f| !f.is_empty())
            .ok_or_else(|| format!("mutant `{name}`: `fails: <check>` must follow its name"))?;
        if lines.next().map(|(_, l)| l) != Some("<<<") {
            return Err(format!("mutant `{name}`: `<<<` must follow `fails:`"));
        }
        let mut edits = Vec::new();
        loop {
            let mut block = |end: &str| -> Result<String, String> {
                let mut taken = Vec::new();
                for (_, l) in lines.by_ref() {
                    if l == end {
                        return Ok(taken.join("\n"));
                    }
                    taken.push(l);
                }
                Err(format!("mutant `{name}`: no `{end}`"))
            };
            let find = block("===")?;
            let replace = block(">>>")?;
            if find.is_empty() {
                return Err(format!("mutant `{name}`: nothing to find"));
            }
            edits.push((find, replace));
            if lines.next_if(|(_, l)| *l == "<<<").is_none() {
                break;
            }
        }
        out.push(Mutant { name, fails, edits });
    }
    Ok(out)
}

/// The solution with the mistake planted; an error unless each text to find occurs exactly once (in the
/// solution as the changes before it left it).
pub fn apply(solution: &str, m: &Mutant) -> Result<String, String> {
    let mut planted = solution.to_owned();
    for (i, (find, replace)) in m.edits.iter().enumerate() {
        planted = match planted.matches(find.as_str()).count() {
            1 => planted.replacen(find.as_str(), replace, 1),
            n => {
                return Err(format!(
                    "mutant `{}`: the text of its change {} occurs {n} times in the solution, not once",
                    m.name,
                    i + 1
                ));
            }
        };
    }
    Ok(planted)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# comment\n\n## no pause\nfails: pauses\n<<<\n    sleep();\n    go();\n===\n    go();\n>>>\n\n## gone\nfails: other\n<<<\nx\n===\n>>>\n\n## two places\nfails: both\n<<<\na\n===\nb\n>>>\n<<<\nb b\n===\nc\n>>>\n";

    /// Mutants parse with their multi-line texts; an empty replacement removes the text.
    #[test]
    fn parses_and_applies() {
        let ms = parse(FILE).unwrap();
        assert_eq!(ms.len(), 3);
        assert_eq!(ms[0].name, "no pause");
        assert_eq!(ms[0].fails, "pauses");
        assert_eq!(
            apply("fn f() {\n    sleep();\n    go();\n}", &ms[0]).unwrap(),
            "fn f() {\n    go();\n}"
        );
        assert_eq!(apply("a x b", &ms[1]).unwrap(), "a  b");
        // The second change finds what the first one made.
        assert_eq!(ms[2].edits.len(), 2);
        assert_eq!(apply("[a b]", &ms[2]).unwrap(), "[c]");
    }

    /// A text found twice or not at all, a missing `fails:` or end marker: errors that say which mutant.
    #[test]
    fn refuses_what_is_ambiguous() {
        let ms = parse(FILE).unwrap();
        assert!(apply("x x", &ms[1]).unwrap_err().contains("2 times"));
        assert!(apply("y", &ms[1]).unwrap_err().contains("0 times"));
        assert!(
            apply("[a b a]", &ms[2])
                .unwrap_err()
                .contains("change 1 occurs 2 times")
        );
        assert!(apply("[a]", &ms[2]).unwrap_err().contains("change 2"));
        assert!(
            parse("## a\n<<<\nx\n===\n>>>")
                .unwrap_err()
                .contains("fails:")
        );
        assert!(
            parse("## a\nfails: c\n<<<\nx\n")
                .unwrap_err()
                .contains("===")
        );
        assert!(parse("stray").unwrap_err().contains("line 1"));
    }
}
