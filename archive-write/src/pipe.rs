//! A bounded in-process pipe: a tarball member's producer writes into it on its own
//! thread, the wheel writer reads from it, and at most a few buffers wait in between.
//!
//! Owns: the hand-over and its memory bound. Does not own: what flows through it.

use std::io::{self, Read, Write};
use std::sync::mpsc;

const BUFFER_SIZE: usize = 1 << 20;
const N_BUFFERS: usize = 4;

pub fn pipe() -> (PipeWriter, PipeReader) {
    let (sender, receiver) = mpsc::sync_channel(N_BUFFERS);
    (PipeWriter { sender, buffer: Vec::with_capacity(BUFFER_SIZE) }, PipeReader { receiver, buffer: Vec::new(), at: 0 })
}

pub struct PipeWriter {
    sender: mpsc::SyncSender<Vec<u8>>,
    buffer: Vec<u8>,
}

impl PipeWriter {
    fn send(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.buffer, Vec::with_capacity(BUFFER_SIZE));
        self.sender
            .send(full)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the wheel writer stopped reading"))
    }
}

impl Write for PipeWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(BUFFER_SIZE - self.buffer.len());
        self.buffer.extend_from_slice(&data[..n]);
        if self.buffer.len() == BUFFER_SIZE {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        // Whatever is buffered goes out before the end of the stream; the producer flushes
        // explicitly, so this only matters if it forgot, and errors have nowhere to go.
        let _ = self.send();
    }
}

/// Reads until the writer is dropped. The producer's own result says whether the end was
/// the real end (the wheel writer joins it before trusting the data).
pub struct PipeReader {
    receiver: mpsc::Receiver<Vec<u8>>,
    buffer: Vec<u8>,
    at: usize,
}

impl Read for PipeReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.buffer.len() {
            match self.receiver.recv() {
                Ok(buffer) => {
                    self.buffer = buffer;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buffer.len() - self.at);
        out[..n].copy_from_slice(&self.buffer[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
