//! Stage 8 — the reference solution.

use tandem_batch::essay::{Source, Target};
use tandem_batch::{ProcessError, Processed};

// ANCHOR: process
/// The processor.
pub fn process(s: Source) -> Result<Processed<Target>, ProcessError> {
    if s.value < 0 {
        return Ok(Processed::Skip);
    }
    let doubled = s
        .value
        .checked_mul(2)
        .ok_or_else(|| ProcessError::from(format!("{} * 2 overflows an INT", s.value)))?;
    Ok(Processed::Write(Target {
        id: 0,
        source_name: s.name.to_uppercase(),
        transformed_value: doubled,
    }))
}
// ANCHOR_END: process

// ANCHOR: split
/// `[lo, hi]` in `n` contiguous partitions.
pub fn split(lo: i64, hi: i64, n: usize) -> Vec<(i64, i64)> {
    if hi < lo {
        return Vec::new();
    }
    // In i128: `hi - lo + 1` overflows i64 for the widest ranges.
    let keys = i128::from(hi) - i128::from(lo) + 1;
    let n = (n.max(1) as i128).min(keys);
    (0..n)
        .map(|i| {
            let first = i128::from(lo) + keys * i / n;
            let last = i128::from(lo) + keys * (i + 1) / n - 1;
            (first as i64, last as i64)
        })
        .collect()
}
// ANCHOR_END: split
