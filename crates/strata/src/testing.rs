//! Filesystems for testing what a database does when the storage misbehaves: `FaultEnv`
//! fails chosen calls (once or for good), `CrashEnv` keeps files in memory and tells what
//! a power cut or a process crash would leave of them. The engine's own reliability suites
//! are built on them; they are not part of the stable API.

pub use crate::env::crash::{CrashEnv, Damage, Event, Trace};
pub use crate::env::fault::{Call, Fault, FaultEnv};
