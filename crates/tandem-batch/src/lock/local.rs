//! SQLite's run locks: an exclusive lock on a file beside the database, released by the operating system
//! when the file is closed or the process dies; in memory, a process-wide registry (the database lives and
//! dies with the process).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;

use tandem_core::ConnectOptions;
use tandem_sql::Dialect;

use super::{already_running, job_key};
use crate::job::{BatchJob, JobError};

static IN_MEMORY: Mutex<Option<HashSet<(u64, u64)>>> = Mutex::new(None);

/// A SQLite job's lock; released when dropped.
#[derive(Debug)]
pub(crate) enum LocalLock {
    /// The locked file (unlocked when closed).
    File(#[allow(dead_code)] std::fs::File),
    /// The registry entry of an in-memory database: (pool, job key).
    Memory(u64, u64),
}

impl Drop for LocalLock {
    fn drop(&mut self) {
        if let LocalLock::Memory(pool, key) = self {
            let mut held = IN_MEMORY.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(set) = held.as_mut() {
                set.remove(&(*pool, *key));
            }
        }
    }
}

/// Takes a SQLite job's lock; `Ok(None)` for server engines, whose lock is taken on a connection.
pub(crate) fn local_lock<S, T>(
    options: &ConnectOptions,
    pool_id: u64,
    job: &BatchJob<S, T>,
) -> Result<Option<LocalLock>, JobError> {
    if options.dialect != Dialect::Sqlite {
        return Ok(None);
    }
    let key = job_key(job);
    let Some(db_path) = &options.path else {
        let mut held = IN_MEMORY.lock().unwrap_or_else(|e| e.into_inner());
        if !held.get_or_insert_with(HashSet::new).insert((pool_id, key)) {
            return Err(already_running(job));
        }
        return Ok(Some(LocalLock::Memory(pool_id, key)));
    };
    let path = PathBuf::from(format!("{db_path}.batch-{key:016x}.lock"));
    let io = |source| JobError::LockFile {
        path: path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(LocalLock::File(file))),
        Err(std::fs::TryLockError::WouldBlock) => Err(already_running(job)),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::tests::job;

    /// A file lock excludes a second holder, in the same process too, until the first is dropped.
    #[test]
    fn file_lock_excludes_until_dropped() {
        let dir = std::env::temp_dir().join(format!("tandem-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("jobs.db");
        let options = ConnectOptions::parse(&format!("sqlite://{}", db.display())).unwrap();
        let first = local_lock(&options, 1, &job("a")).unwrap();
        assert!(matches!(first, Some(LocalLock::File(_))));
        assert!(matches!(
            local_lock(&options, 2, &job("a")),
            Err(JobError::AlreadyRunning { .. })
        ));
        // Another job on the same file is not blocked.
        let other = local_lock(&options, 1, &job("b")).unwrap();
        drop(first);
        assert!(local_lock(&options, 2, &job("a")).unwrap().is_some());
        drop(other);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// In memory, the registry is per pool: the same job on another pool is another database.
    #[test]
    fn memory_lock_is_per_pool() {
        let options = ConnectOptions::parse("sqlite::memory:").unwrap();
        let first = local_lock(&options, 7, &job("m")).unwrap();
        assert!(matches!(
            local_lock(&options, 7, &job("m")),
            Err(JobError::AlreadyRunning { .. })
        ));
        let other_pool = local_lock(&options, 8, &job("m")).unwrap();
        drop(first);
        assert!(local_lock(&options, 7, &job("m")).unwrap().is_some());
        drop(other_pool);
    }
}
