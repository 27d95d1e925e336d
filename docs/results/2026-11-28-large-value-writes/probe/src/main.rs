use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).map_or(4000, |s| s.parse().unwrap());
    let wb: usize = args.get(2).map_or(4 << 20, |s| s.parse().unwrap());
    let mwb: usize = args.get(3).map_or(2, |s| s.parse().unwrap());
    let dir = std::path::Path::new("/tmp/probe-db");
    let _ = std::fs::remove_dir_all(dir);
    let opts = strata::Options {
        create_if_missing: true,
        write_buffer_size: wb,
        max_write_buffer_number: mwb,
        blob_threshold: 512,
        blob_gc_ratio: std::env::var("GC").map_or(0.25, |s| s.parse().unwrap()),
        block_cache: Some(strata::BlockCache::new(8 << 20)),
        ..Default::default()
    };
    let db = strata::Db::open(dir, opts).unwrap();
    let value: Vec<u8> = (0..102400u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let mut x: u64 = 12345;
    for pass in 0..3 {
        let t = Instant::now();
        for i in 0..n {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            let k = if pass == 0 { i } else { x % n };
            db.put(format!("{k:016}"), &value).unwrap();
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("pass {pass}: {us:.1} us/write");
        println!("{}", db.property("strata.stats").unwrap());
    }
}
