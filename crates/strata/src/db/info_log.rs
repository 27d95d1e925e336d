//! The database's human-readable `LOG`.

use std::path::Path;

use crate::env::Env;

/// Appends a line to the database's human-readable `LOG` (best effort).
pub(super) fn info_log(env: &dyn Env, dir: &Path, line: &str) {
    if let Ok(mut f) = env.new_appendable(&dir.join("LOG")) {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let _ = f.append(format!("{secs} {line}\n").as_bytes());
        let _ = f.flush();
    }
}
