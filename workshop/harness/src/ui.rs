//! Compile checks: small programs written against a stage's crate that must compile, or must fail to
//! compile *because of a type* — the guarantees a typed DSL makes, checked the way the compiler checks them.
//!
//! trybuild does this for tandem itself by comparing the compiler's exact words with a stored file. A
//! learner's words differ (their trait names, their macro's line numbers), so this checks the error's *code*
//! instead: a mismatched type or an unmet trait bound passes, an unresolved name (a missing item, a typo in
//! the case) does not.
//!
//! The cases are built as the binaries of one throw-away package under the target directory, with the
//! stage's crate as a path dependency and the same features as the running check, in a target directory of
//! its own (the running `cargo test` holds the main one).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a case must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Compile without errors, and run to the end without panicking (so that it can also check what the
    /// code computes).
    Compiles,
    /// Fail with a type error: a mismatched type (E0308), an unmet trait bound (E0277) or a type that does
    /// not match an associated type (E0271).
    TypeError,
    /// Fail because a name it uses is not there (E0412, E0425, E0433): for a macro that must refuse a
    /// name that is not declared (a table's key that is not one of its columns). Pair it with a case that
    /// compiles, so that a typo in the case itself cannot pass for the refusal.
    NameError,
}

/// The error codes that mean "no such name".
const NAME_ERRORS: [&str; 3] = ["E0412", "E0425", "E0433"];

/// The error codes that mean "the types refused it".
const TYPE_ERRORS: [&str; 3] = ["E0308", "E0277", "E0271"];

/// One program: a name (also the binary's), what it must do, and its source.
#[derive(Clone, Debug)]
pub struct Case {
    /// The case's name, a valid Rust identifier.
    pub name: &'static str,
    /// What must happen.
    pub expect: Expect,
    /// The whole program (`fn main` included).
    pub source: String,
}

impl Case {
    /// A case that must compile and run.
    pub fn compiles(name: &'static str, source: impl Into<String>) -> Case {
        Case {
            name,
            expect: Expect::Compiles,
            source: source.into(),
        }
    }

    /// A case that must fail to compile because a name it uses is not declared.
    pub fn name_error(name: &'static str, source: impl Into<String>) -> Case {
        Case {
            name,
            expect: Expect::NameError,
            source: source.into(),
        }
    }

    /// A case that must fail to compile with a type error.
    pub fn type_error(name: &'static str, source: impl Into<String>) -> Case {
        Case {
            name,
            expect: Expect::TypeError,
            source: source.into(),
        }
    }
}

/// The crate under test, as the package that depends on it must name it.
#[derive(Clone, Debug)]
pub struct Crate {
    /// Its package name (`workshop-02-expressions`).
    pub package: &'static str,
    /// Its directory (`env!("CARGO_MANIFEST_DIR")` of the stage).
    pub dir: &'static str,
    /// The features the running check was built with (`solution`, `reference`).
    pub features: Vec<&'static str>,
    /// Earlier stages the cases name too (their package names; each lives beside this one, in the folder
    /// named after it without `workshop-`). Their features follow from this crate's.
    pub earlier: Vec<&'static str>,
}

/// The running check's own stage as a [`Crate`], with the features it was built with:
/// `this_stage!("workshop-03-dialects", "workshop-01-tables", "workshop-02-expressions")` — the stage's
/// package, then the earlier stages its compile cases name.
#[macro_export]
macro_rules! this_stage {
    ($package:literal $(, $earlier:literal)* $(,)?) => {
        $crate::ui::Crate {
            package: $package,
            dir: env!("CARGO_MANIFEST_DIR"),
            features: [
                ("solution", cfg!(feature = "solution")),
                ("reference", cfg!(feature = "reference")),
            ]
            .into_iter()
            .filter_map(|(name, on)| on.then_some(name))
            .collect(),
            earlier: vec![$($earlier),*],
        }
    };
}

/// The target directory the running test binary was built into (`<target>/debug/deps/check-…`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
}

/// The first error code rustc gave for each binary, and its first error message.
type Errors = BTreeMap<String, Vec<(Option<String>, String)>>;

/// Builds every case and panics, naming each case that did not do what it must, with the compiler's words.
pub fn check(krate: &Crate, cases: &[Case]) {
    // One stage's checks share one throw-away package: two of them building it at once would rewrite each
    // other's manifest.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let root = target_dir().join("workshop-ui");
    let project = root.join(krate.package);
    std::fs::create_dir_all(project.join("cases")).expect("create the compile-check project");
    let mut manifest = format!(
        "[package]\nname = \"ui-{pkg}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\n{pkg} = {{ path = {dir:?}, default-features = false, features = {features:?} }}\n\n\
         # A workspace of its own: this package lives under the main workspace's target directory.\n[workspace]\n",
        pkg = krate.package,
        dir = krate.dir,
        features = krate.features,
    );
    let deps_end = manifest
        .find("\n\n# A workspace")
        .expect("the manifest's dependencies");
    let earlier: String = krate
        .earlier
        .iter()
        .map(|pkg| {
            let dir = format!("{}/../{}", krate.dir, pkg.trim_start_matches("workshop-"));
            format!("\n{pkg} = {{ path = {dir:?}, default-features = false }}")
        })
        .collect();
    manifest.insert_str(deps_end, &earlier);
    for case in cases {
        manifest.push_str(&format!(
            "\n[[bin]]\nname = \"{0}\"\npath = \"cases/{0}.rs\"\n",
            case.name
        ));
        write_if_changed(
            &project.join(format!("cases/{}.rs", case.name)),
            &case.source,
        );
    }
    write_if_changed(&project.join("Cargo.toml"), &manifest);

    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&project)
        .args([
            "build",
            "--bins",
            "--keep-going",
            "--offline",
            "--message-format=json",
        ])
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .output()
        .expect("run cargo for the compile checks");
    let errors = errors_by_target(&String::from_utf8_lossy(&output.stdout));

    let mut wrong = Vec::new();
    for case in cases {
        let found = errors.get(case.name).map(Vec::as_slice).unwrap_or(&[]);
        let first = found.first();
        let ok = match case.expect {
            Expect::Compiles if found.is_empty() => {
                let bin = root.join("target/debug").join(case.name);
                match Command::new(&bin).output() {
                    Ok(out) if out.status.success() => true,
                    Ok(out) => {
                        wrong.push(format!(
                            "{}: compiles, but running it fails:\n{}\n    the case:\n{}",
                            case.name,
                            indent(String::from_utf8_lossy(&out.stderr).trim()),
                            indent(case.source.trim())
                        ));
                        continue;
                    }
                    Err(e) => panic!("cannot run {}: {e}", bin.display()),
                }
            }
            Expect::Compiles => false,
            Expect::TypeError => {
                matches!(first, Some((Some(code), _)) if TYPE_ERRORS.contains(&code.as_str()))
            }
            Expect::NameError => {
                matches!(first, Some((Some(code), _)) if NAME_ERRORS.contains(&code.as_str()))
            }
        };
        if ok {
            continue;
        }
        let what = match (case.expect, first) {
            (Expect::Compiles, Some((_, msg))) => {
                format!("must compile, but the compiler says:\n{}", indent(msg))
            }
            (Expect::TypeError, None) => {
                "must be refused by the types, but it compiles: nothing in the types stops it yet"
                    .to_owned()
            }
            (Expect::TypeError, Some((code, msg))) => format!(
                "must fail with a type error (E0308 / E0277 / E0271), but the compiler's first error is {}:\n{}",
                code.as_deref().unwrap_or("without a code"),
                indent(msg)
            ),
            (Expect::NameError, None) => {
                "must be refused, but it compiles: the name it uses is not checked".to_owned()
            }
            (Expect::NameError, Some((code, msg))) => format!(
                "must fail because a name is not declared (E0412 / E0425 / E0433), but the compiler's first \
                 error is {}:\n{}",
                code.as_deref().unwrap_or("without a code"),
                indent(msg)
            ),
            (Expect::Compiles, None) => unreachable!("a case that compiled is ok"),
        };
        wrong.push(format!(
            "{}: {what}\n    the case:\n{}",
            case.name,
            indent(case.source.trim())
        ));
    }
    if errors.is_empty() && !output.status.success() {
        panic!(
            "the compile checks did not build at all:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    if !wrong.is_empty() {
        panic!(
            "{} of {} compile checks do not hold:\n{}",
            wrong.len(),
            cases.len(),
            wrong.join("\n")
        );
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("      {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rewrites a file only when its content changes, so cargo rebuilds only what changed.
fn write_if_changed(path: &Path, content: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(content) {
        std::fs::write(path, content).expect("write a compile-check file");
    }
}

/// cargo's JSON messages, grouped by the binary they are about: each error's code and rendered text.
fn errors_by_target(stdout: &str) -> Errors {
    let mut out = Errors::new();
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-message" || msg["message"]["level"] != "error" {
            continue;
        }
        let target = msg["target"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let code = msg["message"]["code"]["code"].as_str().map(str::to_owned);
        let text = msg["message"]["rendered"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        // "aborting due to N previous errors" carries no code and says nothing new.
        if code.is_none() && text.contains("aborting due to") {
            continue;
        }
        out.entry(target).or_default().push((code, text));
    }
    out
}
