//! Builds keyed on what the learner's files say, not on when they were last written.
//!
//! cargo rebuilds a crate when a source file is newer than its last build. A file put back with `mv`, from
//! `just reset`'s `.bak`, or by an editor that keeps times, can hold other code than the last build while
//! being older than it: cargo would test the code that is no longer there. So before each build the runner
//! compares every stage's source files with what it saw last time (a hash of each, kept in the target
//! directory) and gives a file whose content changed the current time, which cargo cannot miss.
//!
//! Two checkouts of the workshop that share a target directory (`CARGO_TARGET_DIR`) share their builds
//! too: cargo names a workspace crate's artifacts by its path inside the workspace, not by where the
//! checkout is. So the record sits in the target directory cargo uses, and names each file by that same
//! inside path: what one checkout built is what the other's files are compared with. Without that, a
//! checkout whose files are older than the other's last build would run that build's code.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The hash of a file's content (std's SipHash with fixed keys: the same bytes give the same number from
/// one run of the runner to the next).
fn content_hash(bytes: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// The `.rs` files under `dir`, at any depth.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The sources a stage's build reads that a learner may change: `src/` and `solution/` of every stage
/// under `workshop` (a check with `--mine` builds the earlier stages too).
pub fn stage_sources(workshop: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(workshop) else {
        return files;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let numbered = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.get(..2))
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        if numbered {
            rust_files(&dir.join("src"), &mut files);
            rust_files(&dir.join("solution"), &mut files);
        }
    }
    files.sort();
    files
}

/// Where the record is kept: in the target directory cargo builds into (`CARGO_TARGET_DIR`, relative to
/// the workspace `root` when relative, or `root/target`).
pub fn record_path(root: &Path) -> PathBuf {
    record_in(root, std::env::var_os("CARGO_TARGET_DIR").as_deref())
}

fn record_in(root: &Path, target_dir: Option<&std::ffi::OsStr>) -> PathBuf {
    let target = target_dir
        .filter(|t| !t.is_empty())
        .map_or_else(|| root.join("target"), |t| root.join(t));
    target.join("workshop-sources")
}

/// Gives each of `files` whose content differs from what `record` holds for it the current time, then
/// records every file's content, each under its path inside `root`. A file the record has never seen is
/// given the current time too: the target directory may hold a build of other code under that path (made
/// by cargo alone, or before the record was kept here), and nothing vouches for it. Returns the files
/// touched.
pub fn touch_changed(files: &[PathBuf], root: &Path, record: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(record).unwrap_or_default();
    let mut seen: BTreeMap<String, u64> = text
        .lines()
        .filter_map(|l| {
            let (hash, path) = l.split_once(' ')?;
            Some((path.to_owned(), u64::from_str_radix(hash, 16).ok()?))
        })
        .collect();
    let mut touched = Vec::new();
    for file in files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let hash = content_hash(&bytes);
        let key = file
            .strip_prefix(root)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        if seen.get(&key) != Some(&hash)
            && std::fs::File::options()
                .write(true)
                .open(file)
                .and_then(|f| f.set_modified(SystemTime::now()))
                .is_ok()
        {
            touched.push(file.clone());
        }
        seen.insert(key, hash);
    }
    let lines: String = seen
        .iter()
        .map(|(path, hash)| format!("{hash:016x} {path}\n"))
        .collect();
    if let Some(dir) = record.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(record, lines);
    touched
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A file put back with older code and an older time is given the current time, so that cargo rebuilds
    /// it; a file whose content did not change keeps its time.
    #[test]
    fn a_restored_file_gets_a_new_time() {
        let dir = std::env::temp_dir().join(format!("workshop-fresh-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (file, other, record) = (
            dir.join("exercise.rs"),
            dir.join("other.rs"),
            dir.join("record"),
        );
        let old = SystemTime::now() - Duration::from_secs(3_600);
        let set_time = |p: &Path, t: SystemTime| {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(t)
                .unwrap()
        };
        let time = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
        std::fs::write(&file, "fn mine() {}").unwrap();
        std::fs::write(&other, "fn given() {}").unwrap();
        let files = [file.clone(), other.clone()];
        assert_eq!(
            touch_changed(&files, &dir, &record),
            files,
            "first sight: nothing vouches for an earlier build"
        );

        // `mv exercise.rs.bak exercise.rs`: other code, an hour older than the last build.
        std::fs::write(&file, "fn restored() {}").unwrap();
        set_time(&file, old);
        set_time(&other, old);
        assert_eq!(
            touch_changed(&files, &dir, &record),
            std::slice::from_ref(&file)
        );
        assert!(
            time(&file) > old + Duration::from_secs(3_000),
            "given the current time"
        );
        assert_eq!(time(&other), old, "unchanged content keeps its time");

        // Nothing changed since: nothing touched.
        set_time(&file, old);
        assert!(touch_changed(&files, &dir, &record).is_empty());
        assert_eq!(time(&file), old);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Two checkouts sharing one target directory share one record, keyed by the path inside each: after
    /// checkout B built other code, checkout A's file — older than B's build — is given the current time;
    /// the same content in both is left alone.
    #[test]
    fn a_checkout_behind_another_ones_build_gets_a_new_time() {
        let dir = std::env::temp_dir().join(format!("workshop-fresh-two-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (a, b) = (dir.join("a"), dir.join("b"));
        let record = dir.join("target/workshop-sources");
        let old = SystemTime::now() - Duration::from_secs(3_600);
        for root in [&a, &b] {
            std::fs::create_dir_all(root.join("workshop/04/src")).unwrap();
            std::fs::write(root.join("workshop/04/src/given.rs"), "fn given() {}").unwrap();
        }
        let exercise = |root: &Path| root.join("workshop/04/src/exercise.rs");
        std::fs::write(exercise(&a), "fn starter() { todo!() }").unwrap();
        std::fs::write(exercise(&b), "fn mutant() {}").unwrap();
        let files = |root: &Path| vec![exercise(root), root.join("workshop/04/src/given.rs")];
        assert_eq!(
            touch_changed(&files(&b), &b, &record).len(),
            2,
            "first sight"
        );
        for f in files(&a) {
            std::fs::File::options()
                .write(true)
                .open(&f)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        assert_eq!(touch_changed(&files(&a), &a, &record), vec![exercise(&a)]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The record follows `CARGO_TARGET_DIR`, relative to the workspace when it is relative.
    #[test]
    fn the_record_sits_in_cargo_s_target_directory() {
        let root = Path::new("/w");
        let at = |t: Option<&str>| record_in(root, t.map(std::ffi::OsStr::new));
        assert_eq!(
            at(Some("/var/tmp/t")),
            Path::new("/var/tmp/t/workshop-sources")
        );
        assert_eq!(at(Some("t2")), Path::new("/w/t2/workshop-sources"));
        assert_eq!(at(Some("")), Path::new("/w/target/workshop-sources"));
        assert_eq!(at(None), Path::new("/w/target/workshop-sources"));
    }
}
