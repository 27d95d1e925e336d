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
        blob_punch_holes: std::env::var("HOLES").map_or(true, |s| s == "1"),
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
        let st = db.property("strata.stats").unwrap();
        let stalls: Vec<&str> = st.lines().filter(|l| l.contains("stall") || l.contains("moved") || l.contains("blob")).collect();
        let mut bytes = 0u64;
        for e in std::fs::read_dir(dir).unwrap() { bytes += std::os::unix::fs::MetadataExt::blocks(&e.unwrap().metadata().unwrap()) * 512; }
        let bf = db.property("strata.blob-files").unwrap();
        let (mut nf, mut tb, mut gb) = (0u64, 0u64, 0u64);
        let mut hist = [0u32; 11];
        for l in bf.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 11 && w[5] == "garbage" && w[1] == "refs" && w[5] == "garbage" {
                let b: u64 = w[4].parse().unwrap(); let g: u64 = w[10].parse().unwrap();
                nf += 1; tb += b; gb += g;
                hist[(g * 10 / b.max(1)) as usize] += 1;
            }
        }
        println!("  blob files {nf}, {} MB, known garbage {:.2}, by tenths {:?}", tb / 1_000_000, gb as f64 / tb.max(1) as f64, hist);
        let cs: Vec<&str> = st.lines().filter(|l| l.starts_with("compaction_bytes") || l.starts_with("compactions")).collect();
        println!("  {}", cs.join(" | "));
        let io = std::fs::read_to_string("/proc/self/io").unwrap();
        let wb: u64 = io.lines().find(|l| l.starts_with("write_bytes")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
        let fpl: Vec<&str> = st.lines().filter(|l| l.starts_with("files_per_level") || l.starts_with("compaction_seconds")).collect();
        println!("  disk writes so far {} MB; {}", wb / 1_000_000, fpl.join(" | "));
        
        println!("  space {:.2}x live ({} MB); {}", bytes as f64 / (n as f64 * 102400.0), bytes / 1_000_000, stalls.join(" | "));
    }
}
