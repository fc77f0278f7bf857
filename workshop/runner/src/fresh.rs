//! Builds keyed on what the learner's files say, not on when they were last written.
//!
//! cargo rebuilds a crate when a source file is newer than its last build. A file put back with `mv`, from
//! `just reset`'s `.bak`, or by an editor that keeps times, can hold other code than the last build while
//! being older than it: cargo would test the code that is no longer there. So before each build the runner
//! compares every stage's source files with what it last had built (a hash of each, kept in the target
//! directory) and gives a file whose content changed the current time, which cargo cannot miss.
//!
//! Two checkouts of the workshop that share a target directory (`CARGO_TARGET_DIR`) share their builds
//! too: cargo names a workspace crate's artifacts by its path inside the workspace, not by where the
//! checkout is. So the record sits in the target directory cargo uses, and names each file by that same
//! inside path: what one checkout built is what the other's files are compared with.
//!
//! The record vouches for builds, not for what the runner saw: after each build it notes every output cargo
//! used for a stage (its path, its time, the hash of the stage's sources it was built from). A stage whose
//! noted output changed since — built by plain cargo, by another checkout's build that the runner did not
//! follow — has all its files given the current time before the build; and an output cargo reused without
//! rebuilding it that the record cannot vouch for (never noted, or noted for other code) is caught after the
//! build: its stage's files get the current time and the check runs again, on a build of the code there.

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

/// [`stage_sources`] of the stages a check of stage `number` may build: that one and those before it (a
/// later stage's files are left alone, their times too).
pub fn stage_sources_upto(workshop: &Path, number: &str) -> Vec<PathBuf> {
    let mut files = stage_sources(workshop);
    files.retain(|f| {
        f.strip_prefix(workshop)
            .ok()
            .and_then(|inside| inside.to_str())
            .and_then(|inside| inside.get(..2))
            .is_some_and(|n| n <= number)
    });
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

/// One output cargo's build used (`--message-format=json`'s `compiler-artifact`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    /// The directory of the package's `Cargo.toml`.
    pub package_dir: PathBuf,
    /// The output's file (its first), in the target directory.
    pub file: PathBuf,
    /// Whether cargo reused it as it was, without compiling.
    pub fresh: bool,
}

/// What the runner knows of the builds in a target directory (see the module's documentation).
#[derive(Debug, Default)]
pub struct Record {
    /// Each stage source file's content hash, as of the last build of its stage the runner followed, by
    /// path inside the workspace.
    sources: BTreeMap<String, u64>,
    /// Each output the runner saw used: its stage (inside path), its time, and the hash of the stage's
    /// sources it was built from.
    outputs: BTreeMap<PathBuf, (String, u128, u64)>,
}

/// The stage a path inside the workspace belongs to: `workshop/04-blocking/src/x.rs` → `workshop/04-blocking`.
fn stage_of(inside: &str) -> Option<&str> {
    let mut parts = inside.splitn(3, '/');
    let (top, stage) = (parts.next()?, parts.next()?);
    let numbered = stage
        .get(..2)
        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
    (top == "workshop" && numbered).then(|| &inside[..top.len() + 1 + stage.len()])
}

/// A file's time, in nanoseconds since the epoch (0 when it cannot be read).
fn mtime(path: &Path) -> u128 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// Gives a file the current time, so that cargo rebuilds what reads it.
fn touch(file: &Path) -> bool {
    std::fs::File::options()
        .write(true)
        .open(file)
        .and_then(|f| f.set_modified(SystemTime::now()))
        .is_ok()
}

/// The stage sources as they are now: the hash of each, by path inside the workspace.
#[derive(Debug)]
pub struct Current {
    root: PathBuf,
    hashes: BTreeMap<String, (PathBuf, u64)>,
}

impl Current {
    /// Reads `files` (under `root`).
    pub fn read(files: &[PathBuf], root: &Path) -> Current {
        let hashes = files
            .iter()
            .filter_map(|file| {
                let bytes = std::fs::read(file).ok()?;
                let key = file.strip_prefix(root).unwrap_or(file);
                Some((
                    key.to_string_lossy().into_owned(),
                    (file.clone(), content_hash(&bytes)),
                ))
            })
            .collect();
        Current {
            root: root.to_owned(),
            hashes,
        }
    }

    /// One hash of all of a stage's sources.
    fn stage_hash(&self, stage: &str) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        for (key, (_, hash)) in &self.hashes {
            if stage_of(key) == Some(stage) {
                (key, hash).hash(&mut h);
            }
        }
        h.finish()
    }

    /// The stage of an output's package, when it is one of the workshop's stages.
    fn stage_of_package(&self, a: &Artifact) -> Option<String> {
        let inside = a.package_dir.strip_prefix(&self.root).ok()?;
        let inside = inside.to_string_lossy();
        (stage_of(&format!("{inside}/")) == Some(inside.as_ref())).then(|| inside.into_owned())
    }

    /// Gives every file of `stages` the current time; returns those touched.
    pub fn touch_stages(&self, stages: &[String]) -> Vec<PathBuf> {
        self.hashes
            .iter()
            .filter(|(key, _)| stage_of(key).is_some_and(|s| stages.iter().any(|t| t == s)))
            .filter(|(_, (file, _))| touch(file))
            .map(|(_, (file, _))| file.clone())
            .collect()
    }
}

impl Record {
    /// The record at `path` (empty when there is none yet).
    pub fn load(path: &Path) -> Record {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut record = Record::default();
        for line in text.lines() {
            let mut words = line.splitn(5, ' ');
            match (words.next(), words.next(), words.next()) {
                (Some("src"), Some(hash), Some(path)) => {
                    if let Ok(hash) = u64::from_str_radix(hash, 16) {
                        record.sources.insert(path.to_owned(), hash);
                    }
                }
                (Some("out"), Some(stage), Some(time)) => {
                    let (Some(hash), Some(file)) = (words.next(), words.next()) else {
                        continue;
                    };
                    if let (Ok(time), Ok(hash)) = (time.parse(), u64::from_str_radix(hash, 16)) {
                        record
                            .outputs
                            .insert(PathBuf::from(file), (stage.to_owned(), time, hash));
                    }
                }
                _ => {}
            }
        }
        record
    }

    /// Writes the record to `path`.
    pub fn save(&self, path: &Path) {
        let mut text = String::new();
        for (file, hash) in &self.sources {
            text.push_str(&format!("src {hash:016x} {file}\n"));
        }
        for (file, (stage, time, hash)) in &self.outputs {
            text.push_str(&format!(
                "out {stage} {time} {hash:016x} {}\n",
                file.display()
            ));
        }
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(path, text);
    }

    /// Before a build: gives the current time to each file whose content differs from what its stage was
    /// last built from here (or that the record has never seen), and to every file of a stage one of whose
    /// noted outputs changed since (another build made it). Returns the files touched.
    pub fn prepare(&self, now: &Current) -> Vec<PathBuf> {
        let rebuilt: Vec<&str> = self
            .outputs
            .iter()
            .filter(|(file, (_, time, _))| mtime(file) != *time)
            .map(|(_, (stage, _, _))| stage.as_str())
            .collect();
        now.hashes
            .iter()
            .filter(|(key, (_, hash))| {
                self.sources.get(*key) != Some(hash)
                    || stage_of(key).is_some_and(|s| rebuilt.contains(&s))
            })
            .filter(|(_, (file, _))| touch(file))
            .map(|(_, (file, _))| file.clone())
            .collect()
    }

    /// After a build that used `artifacts`: the stages of which cargo reused an output the record cannot
    /// vouch for (never noted, changed since, or built from other code). When there are none — or when
    /// `anyway`, for a build that follows a rebuild of those stages — notes the stages built and their
    /// outputs, and returns no stage.
    pub fn settle(&mut self, now: &Current, artifacts: &[Artifact], anyway: bool) -> Vec<String> {
        let mut unvouched: Vec<String> = Vec::new();
        let mut used = Vec::new();
        for a in artifacts {
            let Some(stage) = now.stage_of_package(a) else {
                continue;
            };
            let noted = (stage.clone(), mtime(&a.file), now.stage_hash(&stage));
            if a.fresh && self.outputs.get(&a.file) != Some(&noted) && !unvouched.contains(&stage) {
                unvouched.push(stage.clone());
            }
            used.push((a.file.clone(), noted));
        }
        if !unvouched.is_empty() && !anyway {
            return unvouched;
        }
        // Only the stages this build used: another stage's files may differ from its last build.
        for (key, (_, hash)) in &now.hashes {
            if used
                .iter()
                .any(|(_, (stage, _, _))| stage_of(key) == Some(stage.as_str()))
            {
                self.sources.insert(key.clone(), *hash);
            }
        }
        // An output of a stage built here that this build did not use, and that changed since it was
        // noted (another feature set, built by plain cargo or the reference's checks), is forgotten:
        // [`Record::prepare`] gave its stage's files the current time, so cargo builds it again before it
        // is used; kept, it would make every later check rebuild the stage. If cargo reused it anyway, it
        // is unvouched then, as one never noted.
        let built_here: Vec<&str> = used.iter().map(|(_, (s, _, _))| s.as_str()).collect();
        let used_files: Vec<&PathBuf> = used.iter().map(|(file, _)| file).collect();
        self.outputs.retain(|file, (stage, time, _)| {
            !built_here.contains(&stage.as_str())
                || used_files.contains(&file)
                || mtime(file) == *time
        });
        self.outputs.extend(used);
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A workspace with one stage (`workshop/04-x`: an exercise and a given file) and a target directory.
    struct Scene {
        dir: PathBuf,
        root: PathBuf,
    }

    impl Scene {
        fn new(name: &str) -> Scene {
            let dir =
                std::env::temp_dir().join(format!("workshop-fresh-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let root = dir.join("a");
            std::fs::create_dir_all(root.join("workshop/04-x/src")).unwrap();
            std::fs::create_dir_all(dir.join("target")).unwrap();
            std::fs::write(root.join("workshop/04-x/src/given.rs"), "fn given() {}").unwrap();
            Scene { dir, root }
        }
        fn exercise(&self) -> PathBuf {
            self.root.join("workshop/04-x/src/exercise.rs")
        }
        fn given(&self) -> PathBuf {
            self.root.join("workshop/04-x/src/given.rs")
        }
        fn now(&self) -> Current {
            Current::read(&stage_sources(&self.root.join("workshop")), &self.root)
        }
        /// cargo built (or, `fresh`, reused) the output `name` of the stage.
        fn build(&self, name: &str, fresh: bool) -> Artifact {
            let file = self.dir.join("target").join(name);
            if !fresh {
                std::fs::write(&file, format!("{:?}", SystemTime::now())).unwrap();
            }
            Artifact {
                package_dir: self.root.join("workshop/04-x"),
                file,
                fresh,
            }
        }
    }

    impl Drop for Scene {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn set_time(p: &Path, t: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap()
    }

    fn time(p: &Path) -> SystemTime {
        std::fs::metadata(p).unwrap().modified().unwrap()
    }

    /// A file put back with older code and an older time is given the current time, so that cargo rebuilds
    /// it; a file whose content did not change keeps its time; after a build of what is there, nothing is.
    #[test]
    fn a_restored_file_gets_a_new_time() {
        let s = Scene::new("restored");
        let mut record = Record::default();
        std::fs::write(s.exercise(), "fn mine() {}").unwrap();
        assert_eq!(
            record.prepare(&s.now()).len(),
            2,
            "first sight: nothing vouches for an earlier build"
        );
        assert!(
            record
                .settle(&s.now(), &[s.build("lib", false)], false)
                .is_empty()
        );

        // `mv exercise.rs.bak exercise.rs`: other code, an hour older than the last build.
        let old = SystemTime::now() - Duration::from_secs(3_600);
        std::fs::write(s.exercise(), "fn restored() {}").unwrap();
        set_time(&s.exercise(), old);
        set_time(&s.given(), old);
        assert_eq!(record.prepare(&s.now()), vec![s.exercise()]);
        assert!(
            time(&s.exercise()) > old + Duration::from_secs(3_000),
            "given the current time"
        );
        assert_eq!(time(&s.given()), old, "unchanged content keeps its time");
        assert!(
            record
                .settle(&s.now(), &[s.build("lib", false)], false)
                .is_empty()
        );

        set_time(&s.exercise(), old);
        assert!(
            record.prepare(&s.now()).is_empty(),
            "built as it is: nothing to touch"
        );
        assert_eq!(time(&s.exercise()), old);
        assert!(
            record
                .settle(&s.now(), &[s.build("lib", true)], false)
                .is_empty()
        );

        let path = s.dir.join("target/workshop-sources");
        record.save(&path);
        let again = Record::load(&path);
        assert_eq!(
            (again.sources, again.outputs),
            (record.sources, record.outputs)
        );
    }

    /// An output the record noted that was built again since by something the runner did not follow (plain
    /// cargo, another checkout's verification building a mutant there) vouches for nothing: every file of
    /// its stage gets the current time, although each matches what the runner last had built.
    #[test]
    fn a_build_the_runner_did_not_follow_is_not_trusted() {
        let s = Scene::new("unfollowed");
        let mut record = Record::default();
        std::fs::write(s.exercise(), "fn starter() { todo!() }").unwrap();
        record.prepare(&s.now());
        assert!(
            record
                .settle(&s.now(), &[s.build("lib", false)], false)
                .is_empty()
        );
        let old = SystemTime::now() - Duration::from_secs(3_600);
        set_time(&s.exercise(), old);
        set_time(&s.given(), old);
        assert!(record.prepare(&s.now()).is_empty());

        std::thread::sleep(Duration::from_millis(5));
        s.build("lib", false);
        let mut touched = record.prepare(&s.now());
        touched.sort();
        assert_eq!(touched, vec![s.exercise(), s.given()]);
    }

    /// An output of another feature set, built again by something the runner did not follow, makes one
    /// check rebuild its stage — not every check after it (the runner's checks do not use it, so nothing
    /// would note it again).
    #[test]
    fn another_feature_set_s_build_costs_one_rebuild_not_every_one() {
        let s = Scene::new("variant");
        let mut record = Record::default();
        std::fs::write(s.exercise(), "fn starter() { todo!() }").unwrap();
        record.prepare(&s.now());
        assert!(
            record
                .settle(
                    &s.now(),
                    &[s.build("lib", false), s.build("solution", false)],
                    false
                )
                .is_empty()
        );
        assert!(record.prepare(&s.now()).is_empty());

        // `cargo test --features solution`: its output is new, the runner's own is as noted.
        std::thread::sleep(Duration::from_millis(5));
        s.build("solution", false);
        assert_eq!(
            record.prepare(&s.now()).len(),
            2,
            "the stage is built again once"
        );
        assert!(
            record
                .settle(&s.now(), &[s.build("lib", false)], false)
                .is_empty()
        );
        assert!(
            record.prepare(&s.now()).is_empty(),
            "the next check builds nothing"
        );
        // The other feature set, reused as it is by a later build, is not vouched for.
        assert_eq!(
            record.settle(&s.now(), &[s.build("solution", true)], false),
            vec!["workshop/04-x".to_owned()]
        );
    }

    /// An output cargo reused that the record cannot vouch for — one never noted (another feature set), or
    /// one noted for other code than the stage holds now — is caught after the build: the stage is
    /// returned (the caller touches it and builds again), and nothing is noted until a build is vouched for.
    #[test]
    fn a_reused_output_of_other_code_is_caught_after_the_build() {
        let s = Scene::new("reused");
        let mut record = Record::default();
        std::fs::write(s.exercise(), "fn a() {}").unwrap();
        record.prepare(&s.now());
        assert!(
            record
                .settle(&s.now(), &[s.build("one", false)], false)
                .is_empty()
        );
        assert_eq!(
            record.settle(&s.now(), &[s.build("other", true)], false),
            vec!["workshop/04-x".to_owned()],
            "an output never noted"
        );

        // The other output is built from other code; the first is still code `a`'s.
        std::fs::write(s.exercise(), "fn b() {}").unwrap();
        record.prepare(&s.now());
        assert!(
            record
                .settle(&s.now(), &[s.build("other", false)], false)
                .is_empty()
        );
        assert!(
            record.prepare(&s.now()).is_empty(),
            "b is what the record says was built"
        );
        assert_eq!(
            record.settle(&s.now(), &[s.build("one", true)], false),
            vec!["workshop/04-x".to_owned()],
            "noted for code a"
        );
        assert_eq!(s.now().touch_stages(&["workshop/04-x".to_owned()]).len(), 2);
        assert!(
            record
                .settle(&s.now(), &[s.build("one", false)], false)
                .is_empty()
        );
        assert!(
            record
                .settle(&s.now(), &[s.build("one", true)], false)
                .is_empty()
        );
    }

    /// Two checkouts sharing one target directory share one record, keyed by the path inside each: after
    /// checkout B built other code, checkout A's file — older than B's build — is given the current time;
    /// the same content in both is left alone.
    #[test]
    fn a_checkout_behind_another_ones_build_gets_a_new_time() {
        let a = Scene::new("two");
        let b_root = a.dir.join("b");
        std::fs::create_dir_all(b_root.join("workshop/04-x/src")).unwrap();
        std::fs::write(b_root.join("workshop/04-x/src/given.rs"), "fn given() {}").unwrap();
        std::fs::write(a.exercise(), "fn starter() { todo!() }").unwrap();
        std::fs::write(
            b_root.join("workshop/04-x/src/exercise.rs"),
            "fn mutant() {}",
        )
        .unwrap();
        let b_now = Current::read(&stage_sources(&b_root.join("workshop")), &b_root);
        let mut record = Record::default();
        assert_eq!(record.prepare(&b_now).len(), 2, "first sight");
        let built = Artifact {
            package_dir: b_root.join("workshop/04-x"),
            ..a.build("lib", false)
        };
        assert!(record.settle(&b_now, &[built], false).is_empty());
        let old = SystemTime::now() - Duration::from_secs(3_600);
        set_time(&a.exercise(), old);
        set_time(&a.given(), old);
        assert_eq!(record.prepare(&a.now()), vec![a.exercise()]);
    }

    /// Paths map to their stage; other workspace paths have none.
    #[test]
    fn files_belong_to_their_stage() {
        assert_eq!(
            stage_of("workshop/04-blocking/src/x.rs"),
            Some("workshop/04-blocking")
        );
        assert_eq!(stage_of("workshop/runner/src/main.rs"), None);
        assert_eq!(stage_of("crates/tandem-sql/src/lib.rs"), None);
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
