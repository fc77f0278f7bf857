//! [`Repository`]: the same repository method set as the blocking side, with the same names and options,
//! async: every method builds its plan in `tandem-core` (the very plans the blocking repository runs) and
//! awaits it here; `find_all` and `find_by` return streams. `find_by_id`, the call made most often, runs
//! its plan's one statement and decodes the first row (see `tandem_core::repo::find_by_id_statement`).

use tandem_core::Result;
use tandem_core::repo::{self, BatchOptions, BatchResult, CursorPage, Find, Page};
use tandem_sql::Rendered;
use tandem_sql::typed::{ColumnList, Entity, UpdateQuery};

use crate::Executor;
use crate::executor::Repository;
use crate::executor::sealed::DecodeFirst;
use crate::stream::RowStream;

type Table<E> = <E as Entity>::Table;
type Key<E> = <E as Entity>::Key;

impl<'a, E: Entity, X: Executor> Repository<'a, E, X> {
    async fn stream(&self, r: Rendered) -> Result<RowStream<E>> {
        self.exec.stream_rendered(r).await
    }

    /// The row with this key, if any.
    pub async fn find_by_id(&self, id: Key<E>) -> Result<Option<E>> {
        // The plan `repo::find_by_id`'s one statement, its first row decoded (see
        // `repo::find_by_id_statement`).
        let r = repo::find_by_id_statement::<E>(self.exec.dialect(), id)?;
        let mut first = DecodeFirst(None);
        self.exec.run_key_read(r, &mut first).await?;
        Ok(first.0)
    }

    /// The row with this key, or `Error::NotFound`.
    pub async fn get(&self, id: Key<E>) -> Result<E> {
        self.exec
            .run(repo::get::<E>(self.exec.dialect(), id)?)
            .await
    }

    /// The rows `find` selects, streamed: read from the driver as the iterator is consumed.
    pub async fn find_all(&self, find: Find<Table<E>>) -> Result<RowStream<E>> {
        self.stream(repo::find_all::<E>(self.exec.dialect(), find)?)
            .await
    }

    /// The rows matching `find`'s filter, streamed (`find_all` under the name bluetape4k-exposed's
    /// repositories also give it).
    pub async fn find_by(&self, find: Find<Table<E>>) -> Result<RowStream<E>> {
        self.find_all(find).await
    }

    /// Page `page` (zero-based) of `size` rows, with the total.
    pub async fn find_page(&self, page: u64, size: u64, find: Find<Table<E>>) -> Result<Page<E>> {
        self.exec
            .run(repo::find_page::<E>(self.exec.dialect(), page, size, find)?)
            .await
    }

    /// Up to `size` rows after key `after`, in key order (keyset paging).
    pub async fn find_cursor_page(
        &self,
        after: Option<Key<E>>,
        size: u64,
        find: Find<Table<E>>,
    ) -> Result<CursorPage<E, Key<E>>> {
        self.exec
            .run(repo::find_cursor_page::<E>(
                self.exec.dialect(),
                after,
                size,
                find,
            )?)
            .await
    }

    /// All rows.
    pub async fn count(&self) -> Result<u64> {
        self.count_by(Find::all()).await
    }

    /// Rows matching the filter.
    pub async fn count_by(&self, find: Find<Table<E>>) -> Result<u64> {
        self.exec
            .run(repo::count::<E>(self.exec.dialect(), find)?)
            .await
    }

    /// Whether a row has this key.
    pub async fn exists_by_id(&self, id: Key<E>) -> Result<bool> {
        self.exec
            .run(repo::exists_by_id::<E>(self.exec.dialect(), id)?)
            .await
    }

    /// Whether any row matches.
    pub async fn exists_by(&self, find: Find<Table<E>>) -> Result<bool> {
        self.exec
            .run(repo::exists::<E>(self.exec.dialect(), find)?)
            .await
    }

    /// Inserts one row; returns its key.
    pub async fn insert(&self, entity: &E) -> Result<Key<E>> {
        self.exec
            .run(repo::insert::<E>(self.exec.dialect(), entity)?)
            .await
    }

    /// Inserts rows in one transaction; returns their keys in order.
    pub async fn insert_all(&self, entities: &[E]) -> Result<Vec<Key<E>>> {
        self.exec
            .run(repo::insert_all::<E>(self.exec.dialect(), entities)?)
            .await
    }

    /// Inserts rows in chunks, as the options say.
    pub async fn batch_insert(
        &self,
        entities: &[E],
        opts: &BatchOptions,
    ) -> Result<BatchResult<Key<E>>> {
        self.exec
            .run(repo::batch_insert::<E>(
                self.exec.dialect(),
                entities,
                opts,
            )?)
            .await
    }

    /// Inserts rows, updating the existing row where the `target` columns collide.
    pub async fn batch_upsert<C: ColumnList<Table<E>>>(
        &self,
        entities: &[E],
        target: C,
    ) -> Result<u64> {
        self.exec
            .run(repo::batch_upsert::<E>(
                self.exec.dialect(),
                entities,
                target.names(),
                Some(1_000),
            )?)
            .await
    }

    /// Writes the entity's columns to the row with its key; returns rows affected.
    pub async fn update_by_id(&self, entity: &E) -> Result<u64> {
        self.exec
            .run(repo::update_by_id::<E>(self.exec.dialect(), entity)?)
            .await
    }

    /// Runs the UPDATE `build` makes from `UPDATE table` (its SET and filter); returns rows affected.
    pub async fn update_all(
        &self,
        build: impl FnOnce(UpdateQuery<Table<E>>) -> UpdateQuery<Table<E>>,
    ) -> Result<u64> {
        self.exec
            .run(repo::update_all::<E>(self.exec.dialect(), build)?)
            .await
    }

    /// Deletes the row with this key; returns rows deleted.
    pub async fn delete_by_id(&self, id: Key<E>) -> Result<u64> {
        self.exec
            .run(repo::delete_by_id::<E>(self.exec.dialect(), id)?)
            .await
    }

    /// Deletes every row.
    pub async fn delete_all(&self) -> Result<u64> {
        self.delete_by(Find::all()).await
    }

    /// Deletes the rows matching the filter.
    pub async fn delete_by(&self, find: Find<Table<E>>) -> Result<u64> {
        self.exec
            .run(repo::delete::<E>(self.exec.dialect(), find)?)
            .await
    }

    /// Deletes the rows with these keys.
    pub async fn delete_all_by_ids(&self, ids: &[Key<E>]) -> Result<u64> {
        self.exec
            .run(repo::delete_all_by_ids::<E>(self.exec.dialect(), ids)?)
            .await
    }
}
