//! A stream whose writes may stall at most a set time: a client that
//! stops reading its responses fills the socket's buffers, the server's write waits, and
//! after [`super::http::WRITE_STALL_TIMEOUT`] without progress the write fails with
//! `TimedOut`, which closes the connection and frees its slot. Reads are passed through
//! untouched (the header-read timeout bounds a client that stops sending).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `S` whose pending writes fail after `limit` without progress.
pub struct StallGuard<S> {
    inner: S,
    limit: Duration,
    /// Set when a write first returned `Pending`; cleared by any progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> StallGuard<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            stalled: None,
        }
    }

    /// What a write that returned `poll` becomes: progress clears the stall clock; a
    /// pending write starts it (once) and fails when it runs out.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let limit = self.limit;
        let clock = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match clock.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, p)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, p)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, p)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A write into a pipe nobody reads fails at the limit; one that is read goes through.
    #[tokio::test(start_paused = true)]
    async fn a_write_nobody_reads_fails_at_the_limit() {
        let (a, _b) = tokio::io::duplex(64);
        let mut g = StallGuard::new(a, Duration::from_secs(5));
        let e = g.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);

        let (a, mut b) = tokio::io::duplex(64);
        let mut g = StallGuard::new(a, Duration::from_secs(5));
        let reader = tokio::spawn(async move {
            let mut sink = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut b, &mut sink)
                .await
                .map(|_| sink.len())
        });
        g.write_all(&[0u8; 1024]).await.unwrap();
        drop(g);
        assert_eq!(reader.await.unwrap().unwrap(), 1024);
    }
}
