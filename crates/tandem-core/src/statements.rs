//! What a connection keeps by SQL text: its prepared statements (tokio-postgres, mysql, mysql_async) and
//! what goes with them, in a map whose hash suits a few dozen of the connection's own statements.
//! [`Statements`] is that map with a bound, letting go of the statement used least recently: the same rule
//! on every server driver of both executors.

use std::collections::HashMap;

/// A connection's statements (or what it keeps of them) by SQL text.
pub type StatementMap<V> = HashMap<String, V, BuildWordHash>;

/// How many prepared statements a connection keeps; one more lets go of the one used least recently (a
/// batch call's last, shorter chunk is a statement of its own, so a long-lived connection meets many
/// shapes, while its hot statements must stay prepared).
pub const STATEMENTS_KEPT: usize = 64;

/// The statements one connection prepared (`S`: a driver's statement and what goes with it), by SQL text,
/// at most [`STATEMENTS_KEPT`]. One let go is handed back by [`Statements::keep`]: a driver that closes a
/// statement when it is dropped (tokio-postgres) needs nothing more; one whose statements must be closed
/// by the caller (mysql, mysql_async with their caches off) closes it.
pub struct Statements<S> {
    kept: StatementMap<Kept<S>>,
    /// Counts uses, to tell which statement was used least recently.
    clock: u64,
}

/// One kept statement and when it was last used.
struct Kept<S> {
    statement: S,
    used: u64,
}

impl<S> Default for Statements<S> {
    fn default() -> Self {
        Statements {
            kept: StatementMap::default(),
            clock: 0,
        }
    }
}

impl<S> Statements<S> {
    /// The statement prepared for `sql`, if it is kept (counted as used now).
    pub fn get(&mut self, sql: &str) -> Option<&mut S> {
        self.clock += 1;
        let kept = self.kept.get_mut(sql)?;
        kept.used = self.clock;
        Some(&mut kept.statement)
    }

    /// Keeps `statement`, prepared for `sql`; past [`STATEMENTS_KEPT`], the one used least recently is let
    /// go to make room and handed back.
    pub fn keep(&mut self, sql: &str, statement: S) -> Option<S> {
        let gone = match self.kept.len() >= STATEMENTS_KEPT {
            true => {
                let oldest = (self.kept.iter())
                    .min_by_key(|(_, k)| k.used)
                    .map(|(sql, _)| sql.clone());
                oldest
                    .and_then(|sql| self.kept.remove(&sql))
                    .map(|k| k.statement)
            }
            false => None,
        };
        self.clock += 1;
        let kept = Kept {
            statement,
            used: self.clock,
        };
        self.kept.insert(sql.to_owned(), kept);
        gone
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// The hash of the statement caches: their keys are a connection's own SQL texts, a few dozen, looked up
/// on every call; SipHash's defence against chosen keys buys nothing here, and the hash is most of what a
/// lookup costs. Eight bytes at a time (FxHash's step: rotate, xor, multiply): byte-wise FNV-1a over a
/// point read's 60-odd characters cost ~600 instructions of its ~23,000 (callgrind).
#[derive(Clone, Copy, Default)]
pub struct BuildWordHash;

/// The state of one [`BuildWordHash`] hash.
pub struct WordHash(u64);

impl std::hash::BuildHasher for BuildWordHash {
    type Hasher = WordHash;
    fn build_hasher(&self) -> WordHash {
        // Not zero: from zero, a zero word leaves the state at zero, so texts that differ only by
        // leading NUL words would collide.
        WordHash(0x243f_6a88_85a3_08d3)
    }
}

impl WordHash {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for WordHash {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("eight bytes")));
        }
        let mut last = [0u8; 8];
        let rest = words.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
    }
    fn write_u8(&mut self, b: u8) {
        self.add(u64::from(b));
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// The statement cache's keys are SQL texts that differ in a few characters, often at the end or only
    /// in their length (one batch INSERT per chunk size, placeholders `$1 … $n`): each gets a hash of its
    /// own, a text and the same text with a trailing zero byte differ (the length is in the hash), and a
    /// map keyed by them finds every one.
    #[test]
    fn similar_statements_hash_apart() {
        let mut texts: Vec<String> = (1..=64)
            .map(|rows| {
                let values = (0..rows)
                    .map(|r| format!("(${}, ${})", 2 * r + 1, 2 * r + 2))
                    .collect::<Vec<_>>();
                format!("INSERT INTO t (a, b) VALUES {}", values.join(", "))
            })
            .collect();
        texts.extend((0..16).map(|n| format!("SELECT a FROM t WHERE id = ${n}")));
        texts.extend(
            [
                "",
                "\0",
                "\0".repeat(8).as_str(),
                "a",
                "a\0",
                "abcdefgh",
                "abcdefgh\0",
            ]
            .map(String::from),
        );
        let hashes: std::collections::HashSet<u64> =
            texts.iter().map(|t| BuildWordHash.hash_one(t)).collect();
        assert_eq!(hashes.len(), texts.len());
        let map: HashMap<&str, usize, BuildWordHash> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_str(), i))
            .collect();
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(map.get(t.as_str()), Some(&i));
        }
    }

    /// Past its limit, the map lets go of the statement used least recently — not a hot one — and hands
    /// it back; a statement it still keeps is found again.
    #[test]
    fn statements_let_go_of_the_least_recently_used() {
        let mut kept = Statements::default();
        for i in 0..STATEMENTS_KEPT {
            assert_eq!(kept.keep(&format!("s{i}"), i), None);
        }
        // s0 is used all along; s1 is now the least recently used.
        for _ in 0..3 {
            assert_eq!(kept.get("s0").copied(), Some(0));
        }
        assert_eq!(kept.keep("new", 100), Some(1));
        assert_eq!(kept.keep("newer", 101), Some(2));
        assert_eq!(kept.len(), STATEMENTS_KEPT);
        assert!(kept.get("s1").is_none());
        assert_eq!(kept.get("s0").copied(), Some(0));
        assert_eq!(kept.get("new").copied(), Some(100));
    }
}
