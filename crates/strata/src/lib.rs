#![deny(unsafe_code)]
pub mod checksum;
pub mod coding;
pub mod env;
mod error;
pub mod log;
pub use error::{Corruption, Error, Result};
