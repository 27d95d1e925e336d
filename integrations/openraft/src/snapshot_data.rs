//! [`SnapshotArchive`]: openraft's snapshot data for a Strata node, a stream that is
//! never whole in memory. openraft reads it in chunks to send it (seeking to each
//! chunk's offset) and writes the chunks it receives into it (seeking back when a chunk
//! is sent again).
//!
//! - Outgoing: the archive of a kept snapshot's checkpoint (`archive::ArchiveReader`),
//!   read from its files.
//! - Incoming: an archive being received, appended to a file in the state machine's
//!   directory, which goes when the stream is dropped (installed, abandoned for another
//!   snapshot, or failed). A chunk sent again after a lost answer lies before what was written; the
//!   same snapshot reads as the same bytes at every offset (SA1), so the bytes already
//!   written are skipped rather than written twice. A jump past what was written is an
//!   error.
//! - Memory: bytes in memory (tests, and state machines that are not Strata's).
//!
//! The file calls are the engine's filesystem's, made in place (a chunk, 3 MiB by
//! default, at a time): they block their task as briefly as the other storage calls.

use std::io::{self, SeekFrom};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use std::sync::Arc;

use strata::env::{Env, WritableFile};
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

use crate::archive::ArchiveReader;

/// A snapshot's bytes as openraft streams them (see the module documentation).
pub struct SnapshotArchive {
    inner: Inner,
    /// The stream position.
    pos: u64,
}

enum Inner {
    Outgoing(ArchiveReader),
    Incoming {
        env: Arc<dyn Env>,
        path: PathBuf,
        file: Box<dyn WritableFile>,
        /// Bytes in the file.
        written: u64,
    },
    Memory(io::Cursor<Vec<u8>>),
}

impl std::fmt::Debug for SnapshotArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.inner {
            Inner::Outgoing(r) => format!("outgoing, {} bytes", r.len()),
            Inner::Incoming { path, written, .. } => {
                format!("incoming into {}, {written} bytes", path.display())
            }
            Inner::Memory(c) => format!("in memory, {} bytes", c.get_ref().len()),
        };
        write!(f, "SnapshotArchive({kind}, at {})", self.pos)
    }
}

fn io_error(e: strata::Error) -> io::Error {
    io::Error::other(e)
}

impl SnapshotArchive {
    /// A snapshot to send, read from `reader`.
    pub(crate) fn outgoing(reader: ArchiveReader) -> Self {
        SnapshotArchive {
            inner: Inner::Outgoing(reader),
            pos: 0,
        }
    }

    /// A snapshot being received into the new file `path` of `env`.
    pub(crate) fn incoming(env: Arc<dyn Env>, path: PathBuf) -> strata::Result<Self> {
        let file = env.new_writable(&path)?;
        Ok(SnapshotArchive {
            inner: Inner::Incoming {
                env,
                path,
                file,
                written: 0,
            },
            pos: 0,
        })
    }

    /// A snapshot held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        SnapshotArchive {
            inner: Inner::Memory(io::Cursor::new(bytes)),
            pos: 0,
        }
    }

    /// The bytes of a snapshot held in memory; `None` for one in files.
    pub fn into_bytes(mut self) -> Option<Vec<u8>> {
        match &mut self.inner {
            Inner::Memory(c) => Some(std::mem::take(c.get_mut())),
            _ => None,
        }
    }

    /// The file an incoming snapshot was written to, flushed; `None` for another kind.
    pub(crate) fn finish_incoming(&mut self) -> strata::Result<Option<&Path>> {
        match &mut self.inner {
            Inner::Incoming { path, file, .. } => {
                file.flush()?;
                Ok(Some(path))
            }
            _ => Ok(None),
        }
    }
}

impl Drop for SnapshotArchive {
    fn drop(&mut self) {
        if let Inner::Incoming { env, path, .. } = &self.inner
            && env.exists(path)
        {
            // Best effort: an open removes what is left (SD4).
            let _ = env.remove_file(path);
        }
    }
}

impl io::Read for SnapshotArchive {
    /// Reads up to `buf.len()` bytes at the position.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &mut self.inner {
            Inner::Outgoing(r) => r.read_at(self.pos, buf).map_err(io_error)?,
            Inner::Memory(c) => io::Read::read(c, buf)?,
            Inner::Incoming { path, .. } => {
                return Err(io::Error::other(format!(
                    "{}: a snapshot being received is written, not read",
                    path.display()
                )));
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl io::Write for SnapshotArchive {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            Inner::Incoming { file, written, .. } => {
                // A chunk sent again: the bytes already written are the same (SA1).
                let skip = written.saturating_sub(self.pos).min(buf.len() as u64) as usize;
                file.append(&buf[skip..]).map_err(io_error)?;
                *written += (buf.len() - skip) as u64;
            }
            Inner::Memory(c) => io::Write::write_all(c, buf)?,
            Inner::Outgoing(_) => {
                return Err(io::Error::other(
                    "a snapshot being sent is read, not written",
                ));
            }
        }
        self.pos += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Incoming { file, .. } => file.flush().map_err(io_error),
            _ => Ok(()),
        }
    }
}

impl io::Seek for SnapshotArchive {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let len = match &self.inner {
            Inner::Outgoing(r) => r.len(),
            Inner::Incoming { written, .. } => *written,
            Inner::Memory(c) => c.get_ref().len() as u64,
        };
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        match &mut self.inner {
            Inner::Incoming { written, .. } if target > *written => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a seek to {target} past the {written} bytes received"),
                ));
            }
            Inner::Memory(c) => {
                c.set_position(target);
            }
            _ => {}
        }
        self.pos = target;
        Ok(target)
    }
}

impl AsyncRead for SnapshotArchive {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let n = io::Read::read(this, buf.initialize_unfilled())?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for SnapshotArchive {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(io::Write::write(self.get_mut(), buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(io::Write::flush(self.get_mut()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

impl AsyncSeek for SnapshotArchive {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        io::Seek::seek(self.get_mut(), position).map(|_| ())
    }

    fn poll_complete(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Poll::Ready(Ok(self.pos))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use strata::env::MemEnv;
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn a_chunk_sent_again_is_written_once() {
        let env = Arc::new(MemEnv::new());
        let path = PathBuf::from("/incoming");
        let mut s = SnapshotArchive::incoming(env.clone(), path.clone()).unwrap();
        s.write_all(b"abcdef").await.unwrap();
        // The answer to the chunk at 3 was lost: it comes again, then the next.
        s.seek(SeekFrom::Start(3)).await.unwrap();
        s.write_all(b"def").await.unwrap();
        s.write_all(b"gh").await.unwrap();
        assert!(s.seek(SeekFrom::Start(20)).await.is_err());
        assert_eq!(s.finish_incoming().unwrap(), Some(path.as_path()));
        let mut got = vec![0u8; 16];
        let n = env.new_sequential(&path).unwrap().read(&mut got).unwrap();
        assert_eq!(&got[..n], b"abcdefgh");
        drop(s);
        assert!(!env.exists(&path), "the received file outlived its stream");
    }

    #[tokio::test]
    async fn memory_reads_what_was_written() {
        let mut s = SnapshotArchive::from_bytes(Vec::new());
        s.write_all(b"hello").await.unwrap();
        assert_eq!(s.seek(SeekFrom::End(0)).await.unwrap(), 5);
        s.seek(SeekFrom::Start(1)).await.unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).await.unwrap();
        assert_eq!(got, "ello");
        assert_eq!(s.into_bytes().unwrap(), b"hello");
    }
}
