//! [`Repository`]: the repository method set of bluetape4k-exposed (the Kotlin library tandem rebuilds) for
//! one entity, over a [`crate::Database`] or inside a [`crate::Transaction`]. Every method builds its plan in `tandem-core`
//! and runs it here; the async repository runs the very same plans. `find_by_id`, the call made most often,
//! runs its plan's one statement straight into the entity (see `tandem_core::repo::find_by_id_statement`).

use tandem_core::Result;
use tandem_core::repo::{self, BatchOptions, BatchResult, CursorPage, Find, Page};
use tandem_sql::Rendered;
use tandem_sql::typed::{ColumnList, Entity, UpdateQuery};

use crate::Executor;
use crate::executor::Repository;
use crate::stream::RowStream;

type Table<E> = <E as Entity>::Table;
type Key<E> = <E as Entity>::Key;

impl<'a, E: Entity, X: Executor> Repository<'a, E, X> {
    fn stream(&self, r: Rendered) -> Result<RowStream<'a, E>> {
        self.exec.stream_rendered(r)
    }

    /// The row with this key, if any.
    pub fn find_by_id(&self, id: Key<E>) -> Result<Option<E>> {
        // The plan `repo::find_by_id`'s one statement, its row decoded as it comes (see
        // `repo::find_by_id_statement`).
        let r = repo::find_by_id_statement::<E>(self.exec.dialect(), id)?;
        let mut found = None;
        self.exec.run_statement(&r, &mut |cells| {
            found = Some(E::from_cells(cells)?);
            Ok(false)
        })?;
        Ok(found)
    }

    /// The row with this key, or `Error::NotFound`.
    pub fn get(&self, id: Key<E>) -> Result<E> {
        self.exec.run(repo::get::<E>(self.exec.dialect(), id)?)
    }

    /// The rows `find` selects, streamed: read from the driver as the iterator is consumed.
    pub fn find_all(&self, find: Find<Table<E>>) -> Result<RowStream<'a, E>> {
        self.stream(repo::find_all::<E>(self.exec.dialect(), find)?)
    }

    /// The rows matching `find`'s filter, streamed (`find_all` under the name bluetape4k-exposed's
    /// repositories also give it).
    pub fn find_by(&self, find: Find<Table<E>>) -> Result<RowStream<'a, E>> {
        self.find_all(find)
    }

    /// Page `page` (zero-based) of `size` rows, with the total.
    pub fn find_page(&self, page: u64, size: u64, find: Find<Table<E>>) -> Result<Page<E>> {
        self.exec
            .run(repo::find_page::<E>(self.exec.dialect(), page, size, find)?)
    }

    /// Up to `size` rows after key `after`, in key order (keyset paging).
    pub fn find_cursor_page(
        &self,
        after: Option<Key<E>>,
        size: u64,
        find: Find<Table<E>>,
    ) -> Result<CursorPage<E, Key<E>>> {
        self.exec.run(repo::find_cursor_page::<E>(
            self.exec.dialect(),
            after,
            size,
            find,
        )?)
    }

    /// All rows.
    pub fn count(&self) -> Result<u64> {
        self.count_by(Find::all())
    }

    /// Rows matching the filter.
    pub fn count_by(&self, find: Find<Table<E>>) -> Result<u64> {
        self.exec.run(repo::count::<E>(self.exec.dialect(), find)?)
    }

    /// Whether a row has this key.
    pub fn exists_by_id(&self, id: Key<E>) -> Result<bool> {
        self.exec
            .run(repo::exists_by_id::<E>(self.exec.dialect(), id)?)
    }

    /// Whether any row matches.
    pub fn exists_by(&self, find: Find<Table<E>>) -> Result<bool> {
        self.exec.run(repo::exists::<E>(self.exec.dialect(), find)?)
    }

    /// Inserts one row; returns its key.
    pub fn insert(&self, entity: &E) -> Result<Key<E>> {
        self.exec
            .run(repo::insert::<E>(self.exec.dialect(), entity)?)
    }

    /// Inserts rows in one transaction; returns their keys in order.
    pub fn insert_all(&self, entities: &[E]) -> Result<Vec<Key<E>>> {
        self.exec
            .run(repo::insert_all::<E>(self.exec.dialect(), entities)?)
    }

    /// Inserts rows in chunks, as the options say. Where the call needs nothing of a statement but its
    /// count, the rows' text and bytes are bound where they are, not copied (SQLite; see
    /// [`repo::borrowed_batch_insert`]); the statements are the plan's either way.
    pub fn batch_insert(&self, entities: &[E], opts: &BatchOptions) -> Result<BatchResult<Key<E>>> {
        let dialect = self.exec.dialect();
        if dialect == tandem_sql::Dialect::Sqlite
            && let Some(mut batch) = repo::borrowed_batch_insert::<E>(dialect, entities, opts)?
        {
            let affected = self.exec.run_borrowed(&mut batch)?;
            return Ok(batch.finish(affected));
        }
        self.exec
            .run(repo::batch_insert::<E>(dialect, entities, opts)?)
    }

    /// Inserts rows, updating the existing row where the `target` columns collide.
    pub fn batch_upsert<C: ColumnList<Table<E>>>(&self, entities: &[E], target: C) -> Result<u64> {
        self.exec.run(repo::batch_upsert::<E>(
            self.exec.dialect(),
            entities,
            target.names(),
            Some(1_000),
        )?)
    }

    /// Writes the entity's columns to the row with its key; returns rows affected.
    pub fn update_by_id(&self, entity: &E) -> Result<u64> {
        self.exec
            .run(repo::update_by_id::<E>(self.exec.dialect(), entity)?)
    }

    /// Runs the UPDATE `build` makes from `UPDATE table` (its SET and filter); returns rows affected.
    pub fn update_all(
        &self,
        build: impl FnOnce(UpdateQuery<Table<E>>) -> UpdateQuery<Table<E>>,
    ) -> Result<u64> {
        self.exec
            .run(repo::update_all::<E>(self.exec.dialect(), build)?)
    }

    /// Deletes the row with this key; returns rows deleted.
    pub fn delete_by_id(&self, id: Key<E>) -> Result<u64> {
        self.exec
            .run(repo::delete_by_id::<E>(self.exec.dialect(), id)?)
    }

    /// Deletes every row.
    pub fn delete_all(&self) -> Result<u64> {
        self.delete_by(Find::all())
    }

    /// Deletes the rows matching the filter.
    pub fn delete_by(&self, find: Find<Table<E>>) -> Result<u64> {
        self.exec.run(repo::delete::<E>(self.exec.dialect(), find)?)
    }

    /// Deletes the rows with these keys.
    pub fn delete_all_by_ids(&self, ids: &[Key<E>]) -> Result<u64> {
        self.exec
            .run(repo::delete_all_by_ids::<E>(self.exec.dialect(), ids)?)
    }
}
