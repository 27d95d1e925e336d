//! Picking compactions: LevelDB's leveled policy, as pure functions of a version.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::comparator::InternalOrder;
use crate::key::user_key;
use crate::version::{FileMeta, NUM_LEVELS, Version, VersionEdit};

/// One compaction: its inputs and what it needs to know while running.
#[derive(Debug)]
pub struct Compaction {
    /// The level read from; output goes to `level + 1`.
    pub level: usize,
    /// Tables from `level` and from `level + 1`.
    pub inputs: [Vec<Arc<FileMeta>>; 2],
    /// Tables of `level + 2` overlapping the inputs.
    pub grandparents: Vec<Arc<FileMeta>>,
    /// The version the inputs come from (kept alive while the compaction runs).
    pub version: Arc<Version>,
    /// The edit to record: input deletions, outputs, compact pointer.
    pub edit: VersionEdit,
    /// Target size of an output table.
    pub max_output_file_size: u64,
}

fn total_size(files: &[Arc<FileMeta>]) -> u64 {
    files.iter().map(|f| f.size).sum()
}

/// Smallest and largest internal keys over `files`. Requires: `files` is not empty.
fn key_range(order: &InternalOrder, files: &[Arc<FileMeta>]) -> (Vec<u8>, Vec<u8>) {
    let mut lo = &files[0].smallest;
    let mut hi = &files[0].largest;
    for f in &files[1..] {
        if order.compare(&f.smallest, lo) == Ordering::Less {
            lo = &f.smallest;
        }
        if order.compare(&f.largest, hi) == Ordering::Greater {
            hi = &f.largest;
        }
    }
    (lo.clone(), hi.clone())
}

fn user_bounds(range: &(Vec<u8>, Vec<u8>)) -> (Option<&[u8]>, Option<&[u8]>) {
    (Some(user_key(&range.0)), Some(user_key(&range.1)))
}

impl Compaction {
    pub(crate) fn new(level: usize, version: Arc<Version>, max_file_size: u64) -> Self {
        Compaction {
            level,
            inputs: [Vec::new(), Vec::new()],
            grandparents: Vec::new(),
            version,
            edit: VersionEdit::default(),
            max_output_file_size: max_file_size,
        }
    }

    /// Grandparent bytes one output table may overlap before it is ended.
    pub(crate) fn max_grandparent_overlap(&self) -> u64 {
        10 * self.max_output_file_size
    }

    /// True if the compaction can move its one input table down a level unchanged.
    pub fn is_trivial_move(&self) -> bool {
        self.inputs[0].len() == 1
            && self.inputs[1].is_empty()
            && total_size(&self.grandparents) <= self.max_grandparent_overlap()
    }

    /// True if a manual compaction may move its inputs down a level unchanged: nothing in
    /// `level + 1` overlaps them, and every input is plain (`FileMeta::plain`), so merging
    /// would write the same entries (the in-place rewrite of the deepest level has no
    /// input at `level`, so it never moves). Level 0 moves only a single table (its tables may
    /// overlap one another). The grandparents are not weighed: above the last step of a
    /// `compact_range` the next step merges them anyway; at the last, a moved table may
    /// overlap much of the level below outside the range (a later automatic compaction
    /// of it is then larger than a merge's cut outputs would have made it).
    pub fn is_plain_move(&self) -> bool {
        !self.inputs[0].is_empty()
            && self.inputs[1].is_empty()
            && (self.level > 0 || self.inputs[0].len() == 1)
            && self.inputs[0].iter().all(|f| f.plain)
    }

    /// Adds the deletion of every input to the edit.
    pub fn add_input_deletions(&mut self) {
        for (which, files) in self.inputs.iter().enumerate() {
            for f in files {
                self.edit
                    .deleted_files
                    .insert((self.level + which, f.number));
            }
        }
    }

    /// Total bytes of the inputs.
    pub fn input_bytes(&self) -> u64 {
        total_size(&self.inputs[0]) + total_size(&self.inputs[1])
    }
}

/// The next compaction the version needs, if any: size-triggered first, then
/// seek-triggered.
pub fn pick_compaction(
    version: &Arc<Version>,
    compact_pointers: &[Vec<u8>; NUM_LEVELS],
    max_file_size: u64,
) -> Option<Compaction> {
    let seek_file = version
        .file_to_compact
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let mut c = if version.compaction_score >= 1.0 {
        let level = version.compaction_level;
        let mut c = Compaction::new(level, Arc::clone(version), max_file_size);
        // Start after the key where the last compaction of this level stopped.
        let pointer = &compact_pointers[level];
        let first = version.levels[level]
            .iter()
            .find(|f| {
                pointer.is_empty()
                    || version.order.compare(&f.largest, pointer) == Ordering::Greater
            })
            .or_else(|| version.levels[level].first())?;
        c.inputs[0].push(Arc::clone(first));
        c
    } else if let Some((level, f)) = seek_file {
        let mut c = Compaction::new(level, Arc::clone(version), max_file_size);
        c.inputs[0].push(f);
        c
    } else {
        return None;
    };
    if c.level == 0 {
        // Level-0 tables overlap: take every one that overlaps the chosen range.
        let range = key_range(&version.order, &c.inputs[0]);
        let (lo, hi) = user_bounds(&range);
        c.inputs[0] = version.overlapping_inputs(0, lo, hi);
    }
    setup_other_inputs(&mut c);
    Some(c)
}

/// A compaction of `level` over the user-key range (`None` = unbounded), or `None` if
/// nothing there overlaps it. Large ranges above level 0 are cut to about one
/// compaction's worth; the caller repeats until the range is done.
pub fn range_compaction(
    version: &Arc<Version>,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
    max_file_size: u64,
) -> Option<Compaction> {
    let mut inputs = version.overlapping_inputs(level, begin, end);
    if inputs.is_empty() {
        return None;
    }
    if level > 0 {
        let limit = 25 * max_file_size;
        let mut total = 0;
        for i in 0..inputs.len() {
            total += inputs[i].size;
            if total >= limit {
                inputs.truncate(i + 1);
                break;
            }
        }
    }
    let mut c = Compaction::new(level, Arc::clone(version), max_file_size);
    c.inputs[0] = inputs;
    setup_other_inputs(&mut c);
    Some(c)
}

/// A compaction of the tables of `level` over the user-key range back into `level`
/// itself, for a level with no data below it in the range (the deepest): every entry is
/// rewritten, so every blob ref there passes through `db/blob_gc.rs`'s rules (inlined
/// below the threshold, moved out of a file whose garbage reached the ratio). It is
/// expressed as a compaction of `level - 1` with no input from that level. `None` if
/// nothing overlaps the range, or for level 0.
pub fn in_place_compaction(
    version: &Arc<Version>,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
    max_file_size: u64,
) -> Option<Compaction> {
    if level == 0 {
        return None;
    }
    let mut inputs = version.overlapping_inputs(level, begin, end);
    if inputs.is_empty() {
        return None;
    }
    add_boundary_inputs(&version.order, &version.levels[level], &mut inputs);
    let mut c = Compaction::new(level - 1, Arc::clone(version), max_file_size);
    c.inputs[1] = inputs;
    if level + 1 < NUM_LEVELS {
        let range = key_range(&version.order, &c.inputs[1]);
        let (lo, hi) = user_bounds(&range);
        c.grandparents = version.overlapping_inputs(level + 1, lo, hi);
    }
    Some(c)
}

/// Adds to `inputs` every table of `level_files` that starts with the user key the inputs
/// end with (P3): a user key's versions can straddle two adjacent tables, and moving the
/// newer one down a level without the older one would let the older one shadow it.
fn add_boundary_inputs(
    order: &InternalOrder,
    level_files: &[Arc<FileMeta>],
    inputs: &mut Vec<Arc<FileMeta>>,
) {
    if inputs.is_empty() {
        return;
    }
    let mut largest = key_range(order, inputs).1;
    loop {
        let next = level_files
            .iter()
            .filter(|f| {
                order.compare(&f.smallest, &largest) == Ordering::Greater
                    && user_key(&f.smallest) == user_key(&largest)
            })
            .min_by(|a, b| order.compare(&a.smallest, &b.smallest));
        match next {
            Some(f) if !inputs.iter().any(|i| i.number == f.number) => {
                largest = f.largest.clone();
                inputs.push(Arc::clone(f));
            }
            _ => break,
        }
    }
}

/// Adds the overlapping tables of `level + 1` (P1), grows the `level` inputs when that
/// costs no more `level + 1` tables, and notes the grandparents and compact pointer.
fn setup_other_inputs(c: &mut Compaction) {
    let level = c.level;
    let v = Arc::clone(&c.version);
    let order = &v.order;
    add_boundary_inputs(order, &v.levels[level], &mut c.inputs[0]);
    let range = key_range(order, &c.inputs[0]);
    let (lo, hi) = user_bounds(&range);
    c.inputs[1] = v.overlapping_inputs(level + 1, lo, hi);
    add_boundary_inputs(order, &v.levels[level + 1], &mut c.inputs[1]);
    let mut all: Vec<Arc<FileMeta>> = c.inputs[0]
        .iter()
        .chain(c.inputs[1].iter())
        .cloned()
        .collect();
    let mut all_range = key_range(order, &all);

    if !c.inputs[1].is_empty() {
        let (alo, ahi) = user_bounds(&all_range);
        let mut expanded0 = v.overlapping_inputs(level, alo, ahi);
        add_boundary_inputs(order, &v.levels[level], &mut expanded0);
        let limit = 25 * c.max_output_file_size;
        if expanded0.len() > c.inputs[0].len()
            && total_size(&expanded0) + total_size(&c.inputs[1]) < limit
        {
            let new_range = key_range(order, &expanded0);
            let (nlo, nhi) = user_bounds(&new_range);
            let mut expanded1 = v.overlapping_inputs(level + 1, nlo, nhi);
            add_boundary_inputs(order, &v.levels[level + 1], &mut expanded1);
            if expanded1.len() == c.inputs[1].len() {
                c.inputs[0] = expanded0;
                c.inputs[1] = expanded1;
                all = c.inputs[0]
                    .iter()
                    .chain(c.inputs[1].iter())
                    .cloned()
                    .collect();
                all_range = key_range(order, &all);
            }
        }
    }
    if level + 2 < NUM_LEVELS {
        let (alo, ahi) = user_bounds(&all_range);
        c.grandparents = v.overlapping_inputs(level + 2, alo, ahi);
    }
    let level_range = key_range(order, &c.inputs[0]);
    c.edit.compact_pointers.push((level, level_range.1));
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::key::{ValueType, make_internal_key};

    pub(crate) fn f(number: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMeta> {
        Arc::new(FileMeta::new(
            number,
            size,
            make_internal_key(lo.as_bytes(), 10, ValueType::Value),
            make_internal_key(hi.as_bytes(), 10, ValueType::Value),
        ))
    }

    /// A compaction as the picker's cases print it.
    fn show(c: Option<Compaction>) -> String {
        use crate::version::cases::{numbers, show_key};
        let Some(c) = c else {
            return "none\n".into();
        };
        let mut out = format!(
            "L{} -> L{}\n  inputs: L{} [{}] L{} [{}]\n  grandparents: [{}]\n  trivial move: {}, plain move: {}\n",
            c.level,
            c.level + 1,
            c.level,
            numbers(&c.inputs[0]),
            c.level + 1,
            numbers(&c.inputs[1]),
            numbers(&c.grandparents),
            if c.is_trivial_move() { "yes" } else { "no" },
            if c.is_plain_move() { "yes" } else { "no" },
        );
        for (l, k) in &c.edit.compact_pointers {
            out.push_str(&format!("  compact pointer: L{l} {}\n", show_key(k)));
        }
        out
    }

    /// The cases in `src/compaction/testdata/`: a version defined as text, then what the
    /// picker chooses (`pick`, with compact pointers as input lines; `seek` charges a
    /// table; `range` and `in-place` with `level=`, `begin=`, `end=`). `REWRITE=1`
    /// rewrites the expected outputs.
    #[test]
    fn picks_from_testdata() {
        use crate::version::cases;
        const MAX_FILE: u64 = 2 << 20;
        datadriven::walk("src/compaction/testdata", |f| {
            let mut v: Option<Arc<Version>> = None;
            f.run(|tc| -> String {
                let arg = |name: &str| tc.args.get(name).and_then(|a| a.first()).cloned();
                let level: Option<usize> = arg("level").and_then(|l| l.parse().ok());
                let (begin, end) = (arg("begin"), arg("end"));
                let (b, e) = (
                    begin.as_deref().map(str::as_bytes),
                    end.as_deref().map(str::as_bytes),
                );
                if tc.directive == "define" {
                    return match cases::version(&tc.input) {
                        Ok(new) => {
                            let shown = cases::show_version(&new);
                            v = Some(new);
                            shown
                        }
                        Err(e) => format!("error: {e}\n"),
                    };
                }
                let Some(version) = &v else {
                    return "error: no version defined\n".into();
                };
                match tc.directive.as_str() {
                    "seek" => {
                        let words: Vec<&str> = tc.input.split_whitespace().collect();
                        let found = match words.as_slice() {
                            [l, n] => l
                                .strip_prefix('L')
                                .and_then(|l| l.parse::<usize>().ok())
                                .zip(n.parse::<u64>().ok())
                                .and_then(|(l, n)| {
                                    let f =
                                        version.levels.get(l)?.iter().find(|f| f.number == n)?;
                                    Some((l, Arc::clone(f)))
                                }),
                            _ => None,
                        };
                        match found {
                            Some((l, f)) => {
                                let shown = format!("table {} of L{l} charged\n", f.number);
                                *version.file_to_compact.lock().unwrap() = Some((l, f));
                                shown
                            }
                            None => "error: seek takes L<level> <number> of a table\n".into(),
                        }
                    }
                    "pick" => {
                        let mut pointers: [Vec<u8>; NUM_LEVELS] = Default::default();
                        match cases::edit(&tc.input) {
                            Ok(e) => {
                                for (l, k) in e.compact_pointers {
                                    pointers[l] = k;
                                }
                            }
                            Err(e) => return format!("error: {e}\n"),
                        }
                        show(pick_compaction(version, &pointers, MAX_FILE))
                    }
                    "range" => match level {
                        Some(l) => show(range_compaction(version, l, b, e, MAX_FILE)),
                        None => "error: range takes level=\n".into(),
                    },
                    "in-place" => match level {
                        Some(l) => show(in_place_compaction(version, l, b, e, MAX_FILE)),
                        None => "error: in-place takes level=\n".into(),
                    },
                    other => format!("unknown directive {other:?}\n"),
                }
            })
        });
    }

    pub(crate) fn version(levels: Vec<(usize, Arc<FileMeta>)>) -> Arc<Version> {
        let mut v = Version::default();
        for (l, file) in levels {
            v.levels[l].push(file);
        }
        v.finalize();
        Arc::new(v)
    }

    #[test]
    fn level0_compaction_takes_overlapping_tables_and_level1() {
        let v = version(vec![
            (0, f(1, "a", "c", 1000)),
            (0, f(2, "b", "e", 1000)),
            (0, f(3, "x", "z", 1000)),
            (0, f(4, "d", "f", 1000)),
            (1, f(5, "a", "b", 1000)),
            (1, f(6, "e", "g", 1000)),
            (1, f(7, "m", "n", 1000)),
        ]);
        assert!(v.compaction_score >= 1.0);
        assert_eq!(v.compaction_level, 0);
        let c = pick_compaction(&v, &Default::default(), 2 << 20).unwrap();
        let mut l0: Vec<u64> = c.inputs[0].iter().map(|f| f.number).collect();
        l0.sort();
        assert_eq!(l0, [1, 2, 4]);
        assert_eq!(
            c.inputs[1].iter().map(|f| f.number).collect::<Vec<_>>(),
            [5, 6]
        );
        assert!(!c.is_trivial_move());
    }

    #[test]
    fn compact_pointer_rotates_through_a_level() {
        let big = 6 << 20;
        let v = version(vec![
            (1, f(1, "a", "b", big)),
            (1, f(2, "c", "d", big)),
            (1, f(3, "e", "f", big)),
        ]);
        assert_eq!(v.compaction_level, 1);
        let mut pointers: [Vec<u8>; NUM_LEVELS] = Default::default();
        let c = pick_compaction(&v, &pointers, 2 << 20).unwrap();
        assert_eq!(c.inputs[0][0].number, 1);
        assert!(c.is_trivial_move());
        pointers[1] = c.edit.compact_pointers[0].1.clone();
        let c = pick_compaction(&v, &pointers, 2 << 20).unwrap();
        assert_eq!(c.inputs[0][0].number, 2);
    }

    #[test]
    fn boundary_tables_come_along() {
        // Table 1 ends with k#20, table 2 starts with k#10: an older version of the same
        // user key. Compacting table 1 alone would move k#20 below k#10.
        let t1 = Arc::new(FileMeta::new(
            1,
            100,
            make_internal_key(b"a", 30, ValueType::Value),
            make_internal_key(b"k", 20, ValueType::Value),
        ));
        let t2 = Arc::new(FileMeta::new(
            2,
            100,
            make_internal_key(b"k", 10, ValueType::Deletion),
            make_internal_key(b"p", 5, ValueType::Value),
        ));
        let t3 = Arc::new(FileMeta::new(
            3,
            100,
            make_internal_key(b"q", 5, ValueType::Value),
            make_internal_key(b"z", 5, ValueType::Value),
        ));
        let mut v = Version::default();
        v.levels[1] = vec![Arc::clone(&t1), Arc::clone(&t2), t3];
        v.finalize();
        let v = Arc::new(v);
        let c = range_compaction(&v, 1, Some(b"a"), Some(b"b"), 2 << 20).unwrap();
        let taken: Vec<u64> = c.inputs[0].iter().map(|f| f.number).collect();
        assert_eq!(taken, [1, 2]);
        assert!(!c.is_trivial_move());
    }

    fn plain(number: u64, lo: &str, hi: &str) -> Arc<FileMeta> {
        Arc::new(
            FileMeta::new(
                number,
                1000,
                make_internal_key(lo.as_bytes(), 10, ValueType::Value),
                make_internal_key(hi.as_bytes(), 10, ValueType::Value),
            )
            .with_plain(true),
        )
    }

    #[test]
    fn plain_moves_need_plain_inputs_and_nothing_below() {
        let range = |v: &Arc<Version>, level| range_compaction(v, level, None, None, 2 << 20);
        // Two plain tables of level 1, nothing of level 2 in their range: both move.
        let v = version(vec![
            (1, plain(1, "a", "c")),
            (1, plain(2, "d", "f")),
            (2, f(3, "x", "z", 1000)),
        ]);
        let c = range(&v, 1).unwrap();
        assert_eq!(c.inputs[0].len(), 2);
        assert!(c.is_plain_move());
        // One of them not plain: merged.
        let v = version(vec![(1, plain(1, "a", "c")), (1, f(2, "d", "f", 1000))]);
        assert!(!range(&v, 1).unwrap().is_plain_move());
        // A table of level 2 inside their range: merged.
        let v = version(vec![
            (1, plain(1, "a", "c")),
            (1, plain(2, "d", "f")),
            (2, plain(3, "c1", "c2")),
        ]);
        let c = range(&v, 1).unwrap();
        assert_eq!(c.inputs[1].len(), 1);
        assert!(!c.is_plain_move());
        // Level 0: a single plain table moves, two (which may overlap) do not.
        let v = version(vec![(0, plain(1, "a", "c"))]);
        assert!(range(&v, 0).unwrap().is_plain_move());
        let v = version(vec![(0, plain(1, "a", "c")), (0, plain(2, "x", "z"))]);
        assert!(!range(&v, 0).unwrap().is_plain_move());
        // The in-place rewrite of the deepest level never moves.
        let v = version(vec![(2, plain(1, "a", "c"))]);
        let c = in_place_compaction(&v, 2, None, None, 2 << 20).unwrap();
        assert!(!c.is_plain_move());
    }
}
