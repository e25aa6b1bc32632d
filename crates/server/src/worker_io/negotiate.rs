//! The start of a connection served on a worker: PostgreSQL's SSLRequest (answered `S` and
//! followed by the TLS handshake when the server has a certificate, else `N`) and
//! GSSENCRequest (always `N`), before the startup message. What the protocol crate does for
//! its own sockets, done over a [`WorkerStream`].

use std::io;

use bytes::{Buf, BytesMut};
use pgwire::api::{ClientInfo, DefaultClient, PgWireConnectionState};
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::server::PgWireMessageServerCodec;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Framed, FramedParts};

use super::stream::{Conn, WorkerStream};

/// The request codes of SSLRequest and GSSENCRequest (PostgreSQL's protocol, "Message Formats").
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// The connection ready for its startup message, or `None` if the client left first.
pub(crate) async fn negotiate<S>(
    mut stream: WorkerStream,
    tls: Option<TlsAcceptor>,
) -> io::Result<Option<Framed<Conn, PgWireMessageServerCodec<S>>>> {
    let addr = stream.peer_addr()?;
    let mut buf = BytesMut::with_capacity(1024);
    loop {
        // Every first message (SSLRequest, GSSENCRequest, StartupMessage, CancelRequest) has
        // at least these eight bytes: length and code.
        while buf.len() < 8 {
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(None);
            }
        }
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let code = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
        match (len, code) {
            (8, SSL_REQUEST) => {
                buf.advance(8);
                let Some(acceptor) = &tls else {
                    stream.write_all(b"N").await?;
                    continue;
                };
                if !buf.is_empty() {
                    // PostgreSQL: "received unencrypted data after SSL request".
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "unencrypted data after the SSL request",
                    ));
                }
                stream.write_all(b"S").await?;
                let tls = acceptor.accept(stream).await?;
                let mut client = DefaultClient::new(addr, true);
                client.sni_server_name = tls.get_ref().1.server_name().map(str::to_owned);
                return Ok(Some(framed(Conn::Tls(Box::new(tls)), client, buf)));
            }
            (8, GSSENC_REQUEST) => {
                buf.advance(8);
                stream.write_all(b"N").await?;
            }
            // The startup message (or a cancel request): its bytes are the first read.
            _ => {
                let client = DefaultClient::new(addr, false);
                return Ok(Some(framed(Conn::Plain(stream), client, buf)));
            }
        }
    }
}

fn framed<S>(
    conn: Conn,
    client: DefaultClient<S>,
    read: BytesMut,
) -> Framed<Conn, PgWireMessageServerCodec<S>> {
    let mut parts = FramedParts::new(conn, PgWireMessageServerCodec::new(client));
    parts.read_buf = read;
    let mut framed = Framed::from_parts(parts);
    framed.set_state(PgWireConnectionState::AwaitingStartup);
    framed
}
