//! [`Builder`]: applies version edits to a base version to make the next one.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::{BlobFileMeta, FileMeta, NUM_LEVELS, Separation, Version, VersionEdit};
use crate::error::{Error, Result};

/// Accumulates edits on top of a base version.
#[derive(Debug)]
pub struct Builder {
    base: Arc<Version>,
    deleted: [HashSet<u64>; NUM_LEVELS],
    added: [Vec<Arc<FileMeta>>; NUM_LEVELS],
    blob_files: BTreeMap<u64, BlobFileMeta>,
    separation: Separation,
}

impl Builder {
    /// Starts from `base`.
    pub fn new(base: Arc<Version>) -> Self {
        Builder {
            blob_files: base.blob_files.clone(),
            separation: base.separation,
            base,
            deleted: Default::default(),
            added: Default::default(),
        }
    }

    /// Applies one edit's file changes and compact pointers.
    pub fn apply(&mut self, edit: &VersionEdit, compact_pointers: &mut [Vec<u8>; NUM_LEVELS]) {
        for (level, key) in &edit.compact_pointers {
            compact_pointers[*level] = key.clone();
        }
        for &(level, number) in &edit.deleted_files {
            self.deleted[level].insert(number);
            self.added[level].retain(|f| f.number != number);
        }
        if let Some(s) = edit.separation {
            self.separation = s;
        }
        for &(number, refs, bytes) in &edit.new_blob_files {
            let f = self.blob_files.entry(number).or_default();
            f.refs += refs;
            f.bytes += bytes;
        }
        for &(number, refs, bytes) in &edit.blob_garbage {
            if let Some(f) = self.blob_files.get_mut(&number) {
                f.garbage_refs += refs;
                f.garbage_bytes += bytes;
                if f.garbage_refs >= f.refs {
                    self.blob_files.remove(&number); // dead: no table refers to it
                }
            }
        }
        for (level, f) in &edit.new_files {
            self.deleted[*level].remove(&f.number);
            self.added[*level].push(Arc::new(
                FileMeta::new(f.number, f.size, f.smallest.clone(), f.largest.clone())
                    .with_blob_bytes(f.blob_bytes)
                    .with_plain(f.plain),
            ));
        }
    }

    /// The resulting version. Checks V1: deeper levels must not overlap (a manifest that
    /// says otherwise is corrupt).
    pub fn build(self) -> Result<Version> {
        let mut v = Version {
            blob_files: self.blob_files,
            separation: self.separation,
            order: self.base.order.clone(),
            ..Version::default()
        };
        let order = v.order.clone();
        for level in 0..NUM_LEVELS {
            let mut files: Vec<Arc<FileMeta>> = self.base.levels[level]
                .iter()
                .chain(self.added[level].iter())
                .filter(|f| !self.deleted[level].contains(&f.number))
                .cloned()
                .collect();
            files.sort_by(|a, b| {
                order
                    .compare(&a.smallest, &b.smallest)
                    .then(a.number.cmp(&b.number))
            });
            if level > 0 {
                for pair in files.windows(2) {
                    if order.compare(&pair[0].largest, &pair[1].smallest) != Ordering::Less {
                        return Err(Error::corruption(
                            "MANIFEST",
                            0,
                            format!(
                                "tables {} and {} overlap in level {level}",
                                pair[0].number, pair[1].number
                            ),
                        ));
                    }
                }
            }
            v.levels[level] = files;
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueType, make_internal_key};
    use crate::version::FileMetaData;

    /// The cases in `src/version/testdata/`: a version defined as text, edits applied to
    /// it one after another (each `apply` builds on the last result), the resulting
    /// version or the error printed. `REWRITE=1` rewrites the expected outputs.
    #[test]
    fn edits_from_testdata() {
        use crate::version::cases;
        datadriven::walk("src/version/testdata", |f| {
            let mut base: Option<Arc<Version>> = None;
            let mut pointers: [Vec<u8>; NUM_LEVELS] = Default::default();
            f.run(|tc| -> String {
                match tc.directive.as_str() {
                    "define" => match cases::version(&tc.input) {
                        Ok(v) => {
                            let shown = cases::show_version(&v);
                            base = Some(v);
                            pointers = Default::default();
                            shown
                        }
                        Err(e) => format!("error: {e}\n"),
                    },
                    "apply" => {
                        let Some(b) = base.clone() else {
                            return "error: no version defined\n".into();
                        };
                        let edit = match cases::edit(&tc.input) {
                            Ok(e) => e,
                            Err(e) => return format!("error: {e}\n"),
                        };
                        let mut builder = Builder::new(b);
                        builder.apply(&edit, &mut pointers);
                        match builder.build() {
                            Ok(mut v) => {
                                v.finalize();
                                let mut shown = cases::show_version(&v);
                                for (l, p) in pointers.iter().enumerate() {
                                    if !p.is_empty() {
                                        shown.push_str(&format!(
                                            "pointer L{l} {}\n",
                                            cases::show_key(p)
                                        ));
                                    }
                                }
                                base = Some(Arc::new(v));
                                shown
                            }
                            Err(e) => format!("error: {e}\n"),
                        }
                    }
                    other => format!("unknown directive {other:?}\n"),
                }
            })
        });
    }

    fn meta(number: u64, lo: &str, hi: &str) -> FileMetaData {
        FileMetaData {
            number,
            size: 1000,
            smallest: make_internal_key(lo.as_bytes(), 1, ValueType::Value),
            largest: make_internal_key(hi.as_bytes(), 1, ValueType::Value),
            blob_bytes: 0,
            plain: false,
        }
    }

    #[test]
    fn adds_deletes_and_sorts() {
        let mut pointers: [Vec<u8>; NUM_LEVELS] = Default::default();
        let mut b = Builder::new(Arc::new(Version::default()));
        let mut e = VersionEdit::default();
        e.new_files.push((1, meta(7, "m", "p")));
        e.new_files.push((1, meta(5, "a", "c")));
        e.new_files.push((0, meta(9, "a", "z")));
        e.compact_pointers.push((1, b"x".to_vec()));
        b.apply(&e, &mut pointers);
        let v = Arc::new(b.build().unwrap());
        assert_eq!(
            v.levels[1].iter().map(|f| f.number).collect::<Vec<_>>(),
            [5, 7]
        );
        assert_eq!(pointers[1], b"x");
        let mut b = Builder::new(Arc::clone(&v));
        let mut e = VersionEdit::default();
        e.deleted_files.insert((1, 5));
        e.new_files.push((2, meta(5, "a", "c"))); // a trivial move
        b.apply(&e, &mut pointers);
        let v2 = b.build().unwrap();
        assert_eq!(v2.levels[1].len(), 1);
        assert_eq!(v2.levels[2][0].number, 5);
        assert_eq!(v2.levels[0][0].number, 9);
    }

    #[test]
    fn overlapping_deeper_level_is_corruption() {
        let mut pointers: [Vec<u8>; NUM_LEVELS] = Default::default();
        let mut b = Builder::new(Arc::new(Version::default()));
        let mut e = VersionEdit::default();
        e.new_files.push((1, meta(1, "a", "m")));
        e.new_files.push((1, meta(2, "k", "z")));
        b.apply(&e, &mut pointers);
        assert!(b.build().unwrap_err().is_corruption());
    }
}
