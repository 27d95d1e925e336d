//! The `null` engine: stores nothing and answers at once, so its row is the harness's own
//! cost per operation (key generation, value generation, the copy of each value read, the
//! timing and histogram), the floor under every other engine's figure. A get finds a
//! fixed 100-byte value for every key of the benchmark's 16 bytes (so `readmissing`'s
//! longer keys are missing, as they are everywhere); a seek finds the key it was given;
//! a scan visits `limit` copies of one entry.

use std::path::Path;

use anyhow::Result;

use crate::engine::{BatchOp, Engine, EngineKind, Settings, found};

/// Opens null engines.
#[derive(Debug)]
pub struct NullKind;

struct NullEngine {
    key: [u8; 16],
    value: [u8; 100],
}

impl EngineKind for NullKind {
    fn name(&self) -> &'static str {
        "null"
    }
    fn version(&self) -> String {
        "-".to_string()
    }
    fn open(&self, _dir: &Path, _settings: &Settings) -> Result<Box<dyn Engine>> {
        Ok(Box::new(NullEngine {
            key: [b'0'; 16],
            value: [b'v'; 100],
        }))
    }
    fn has_compaction(&self) -> bool {
        false
    }
}

impl Engine for NullEngine {
    fn put(&self, _key: &[u8], _value: &[u8], _sync: bool) -> Result<()> {
        Ok(())
    }
    fn get(&self, key: &[u8], visit: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(found(
            visit,
            (key.len() == self.key.len()).then_some(&self.value[..]),
        ))
    }
    fn delete(&self, _key: &[u8], _sync: bool) -> Result<()> {
        Ok(())
    }
    fn write_batch(&self, _ops: &[BatchOp], _sync: bool) -> Result<()> {
        Ok(())
    }
    fn scan(
        &self,
        _reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        for _ in 0..limit {
            visit(&self.key, &self.value);
        }
        Ok(limit)
    }
    fn seek(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(Some(key.to_vec()))
    }
    fn compact(&self) -> Result<()> {
        Ok(())
    }
    fn stats(&self) -> Option<String> {
        None
    }
    fn sstables(&self) -> Option<String> {
        None
    }
}
