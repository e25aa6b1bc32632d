//! A session's socket as its worker serves it: non-blocking reads and writes made by the
//! session's step, which waits for readiness (`reactor`) by returning `Pending`, never by
//! blocking the worker.
//!
//! Answers are corked: a write goes into the stream's buffer, and the buffer is sent when the
//! session next waits for its client (a read that finds nothing), when it holds
//! [`CORK_LIMIT`] bytes, and when the stream shuts down or is dropped. So the answers to
//! everything a client pipelined leave in one send, and a statement's answer (its rows,
//! CommandComplete, ReadyForQuery) leaves in one; as in PostgreSQL, whose output buffer is sent
//! when the backend waits for its client or it fills.
//!
//! Must never: block, or return `Pending` without a waker registered for the readiness that
//! ends it.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::reactor::{ReactorShared, Readiness};

/// Corked answers past this many bytes are sent before more are taken (and a client that does
/// not read holds the session here, not the server's memory).
pub(crate) const CORK_LIMIT: usize = 64 * 1024;

/// Sends left of a dropped stream's corked answers before it gives up on a client that does
/// not read.
const DROP_TRIES: usize = 8;

/// A session's socket on its worker.
pub struct WorkerStream {
    tcp: mio::net::TcpStream,
    token: usize,
    readiness: Arc<Readiness>,
    reactor: Arc<ReactorShared>,
    /// Corked answers, from `sent` on not sent yet.
    out: Vec<u8>,
    sent: usize,
}

impl WorkerStream {
    /// Serves `tcp` on the worker whose reactor is `reactor` (counted among its sessions until
    /// dropped).
    pub(crate) fn register(
        tcp: std::net::TcpStream,
        reactor: &Arc<ReactorShared>,
    ) -> io::Result<WorkerStream> {
        tcp.set_nonblocking(true)?;
        tcp.set_nodelay(true)?;
        let mut tcp = mio::net::TcpStream::from_std(tcp);
        let (token, readiness) = reactor.register(&mut tcp)?;
        reactor.sessions.fetch_add(1, Ordering::Relaxed);
        Ok(WorkerStream {
            tcp,
            token,
            readiness,
            reactor: Arc::clone(reactor),
            out: Vec::new(),
            sent: 0,
        })
    }

    /// Moves the socket to the worker whose reactor is `to`: its readiness is told there from
    /// now on (a socket registered edge-triggered is reported at once if it is ready, so
    /// nothing that came meanwhile is missed). On an error it stays where it was; if it cannot
    /// even go back, it is shut down, so that the session's next read fails and ends it rather
    /// than wait for readiness no reactor would tell.
    pub(crate) fn move_to(&mut self, to: &Arc<ReactorShared>) -> io::Result<()> {
        self.reactor.deregister(&mut self.tcp, self.token);
        let (token, readiness) = match to.register(&mut self.tcp) {
            Ok(r) => r,
            Err(e) => {
                match self.reactor.register(&mut self.tcp) {
                    Ok((token, readiness)) => (self.token, self.readiness) = (token, readiness),
                    Err(_) => {
                        let _ = self.tcp.shutdown(std::net::Shutdown::Both);
                    }
                }
                return Err(e);
            }
        };
        (self.token, self.readiness) = (token, readiness);
        to.sessions.fetch_add(1, Ordering::Relaxed);
        self.reactor.sessions.fetch_sub(1, Ordering::Relaxed);
        self.reactor = Arc::clone(to);
        Ok(())
    }

    /// The client's address.
    pub(crate) fn peer_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.tcp.peer_addr()
    }

    /// Sends corked answers until none are left (`Ready`) or the socket is full (`Pending`, with
    /// the waker registered for writability).
    fn send_corked(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.out.len() {
            // Registered before the attempt: readiness that comes after it wakes this waker.
            self.readiness.write.register(cx.waker());
            match self.tcp.write(&self.out[self.sent..]) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        self.out.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for WorkerStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // The client may be waiting for these before it sends more. A full socket does not
        // stop the read: its writability wakes this same step, which sends the rest then.
        if let Poll::Ready(Err(e)) = this.send_corked(cx) {
            return Poll::Ready(Err(e));
        }
        loop {
            this.readiness.read.register(cx.waker());
            match this.tcp.read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for WorkerStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.out.len() >= CORK_LIMIT {
            match this.send_corked(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                // Still full after what the socket took: the writer waits for room.
                Poll::Pending if this.out.len() - this.sent >= CORK_LIMIT => return Poll::Pending,
                Poll::Pending => {}
            }
        }
        this.out.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Corked: sent when the session waits for its client (see the module documentation).
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.send_corked(cx))?;
        Poll::Ready(this.tcp.shutdown(std::net::Shutdown::Write))
    }
}

impl Drop for WorkerStream {
    fn drop(&mut self) {
        // What is corked still goes (a FATAL error before the close), as far as the socket
        // takes it without waiting.
        for _ in 0..DROP_TRIES {
            if self.sent >= self.out.len() {
                break;
            }
            match self.tcp.write(&self.out[self.sent..]) {
                Ok(n) if n > 0 => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                _ => break,
            }
        }
        self.reactor.deregister(&mut self.tcp, self.token);
        self.reactor.sessions.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A session's connection: plain, or TLS over the same socket.
pub enum Conn {
    Plain(WorkerStream),
    Tls(Box<pgwire::tokio::tokio_rustls::server::TlsStream<WorkerStream>>),
}

impl Conn {
    /// The socket under the connection.
    pub(crate) fn stream(&mut self) -> &mut WorkerStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => s.get_mut().0,
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, data),
            Conn::Tls(s) => Pin::new(s).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
