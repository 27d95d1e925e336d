//! Any bytes as a sequence of database operations, checked against a `BTreeMap`: puts,
//! deletes, batches, gets, scans both ways, compactions and reopens on a tiny memtable.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::env::MemEnv;
use strata::{Db, Options, WriteBatch};

fn options(env: &MemEnv) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 4 << 10,
        max_file_size: 4 << 10,
        block_size: 128,
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

fuzz_target!(|data: &[u8]| {
    let env = MemEnv::new();
    let dir = Path::new("/db");
    let mut db = Db::open(dir, options(&env)).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let key = |b: u8| vec![b'k', b % 64];
    let mut i = 0;
    while i + 2 < data.len() {
        let (op, a, b) = (data[i], data[i + 1], data[i + 2]);
        i += 3;
        match op % 8 {
            0 | 1 => {
                let v = vec![b; (a as usize) % 300];
                db.put(key(a), &v).unwrap();
                model.insert(key(a), v);
            }
            2 => {
                db.delete(key(a)).unwrap();
                model.remove(&key(a));
            }
            3 => {
                let mut batch = WriteBatch::new();
                for j in 0..(b % 8) {
                    let k = key(a.wrapping_add(j));
                    if j % 3 == 0 {
                        batch.delete(&k);
                        model.remove(&k);
                    } else {
                        batch.put(&k, [j; 20]);
                        model.insert(k, vec![j; 20]);
                    }
                }
                db.write(batch).unwrap();
            }
            4 => assert_eq!(db.get(key(a)).unwrap(), model.get(&key(a)).cloned()),
            5 => {
                let (x, y) = (a % 64, b % 64);
                let (lo, hi) = (key(x.min(y)), key(x.max(y)));
                let got: Vec<_> = if a % 2 == 0 {
                    db.range(lo.clone()..hi.clone()).map(|r| r.unwrap()).collect()
                } else {
                    let mut v: Vec<_> = db.range_rev(lo.clone()..hi.clone()).map(|r| r.unwrap()).collect();
                    v.reverse();
                    v
                };
                let want: Vec<_> = model.range(lo..hi).map(|(k, v)| (k.clone(), v.clone())).collect();
                assert_eq!(got, want);
            }
            6 => db.compact_range(None, None).unwrap(),
            _ => {
                drop(db);
                db = Db::open(dir, options(&env)).unwrap();
            }
        }
    }
    let all: BTreeMap<_, _> = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    assert_eq!(all, model);
});
