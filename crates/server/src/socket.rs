//! One client connection, from TLS negotiation to its close: the protocol crate's dispatch
//! (`process_message`) fed with messages this module reads itself, framed and checked by
//! `framing` before they are decoded. Otherwise as the protocol crate's own loop: the startup
//! must finish within a minute, Terminate and a cancel request's connection end it, and a
//! FATAL error ends it after its ErrorResponse.
//!
//! Must never: decode bytes beyond the message being read, or leave a protocol violation
//! unanswered.

use std::io;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use bytes::BytesMut;
use futures::SinkExt;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::{DecodeContext, PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{PgWireMessageServerCodec, process_error, process_message};
use std::future::Future;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio_util::codec::Framed;

use crate::framing::{self, Frame};

/// How long a client may take to log in (as the protocol crate allows).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// A protocol violation: FATAL 08P01, as PostgreSQL answers one.
fn violation(message: String) -> PgWireError {
    crate::wire::fatal(overtake_sql::sqlstate::PROTOCOL_VIOLATION, message)
}

/// The protocol crate's codec, for this server's statements.
pub(crate) type Codec = PgWireMessageServerCodec<crate::prepared::StatementRef>;

/// Serves a client whose connection `negotiate` sets up (SSLRequest, TLS: on a network thread's
/// socket or on a worker's), with `handlers`, until it leaves or is ended (`ending`: its
/// session was, for idling in a transaction or by `pg_terminate_backend`; noticed while it
/// waits for the client, so after a statement in flight). `between` is called with the socket
/// each time the session has answered everything it read and goes back to its client.
pub(crate) async fn serve<T>(
    negotiate: impl Future<Output = io::Result<Option<Framed<T, Codec>>>>,
    handlers: crate::Handlers,
    ending: std::sync::Arc<crate::backends::Ending>,
    mut between: impl FnMut(&mut T),
) -> io::Result<()>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        s = negotiate => s?,
    };
    let Some(mut socket) = negotiated else {
        return Ok(());
    };
    let startup = handlers.startup_handler();
    let simple = std::sync::Arc::clone(&handlers.connection);
    let extended = std::sync::Arc::clone(&handlers.connection);
    let copy = std::sync::Arc::clone(&handlers.connection);
    let cancel = handlers.cancel_handler();
    let errors = handlers.error_handler();
    // Bytes the negotiation read past its own are the start of the first message.
    let mut buf: BytesMut = std::mem::take(socket.read_buffer_mut());
    loop {
        let in_startup = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        if !in_startup && buf.is_empty() {
            between(socket.get_mut());
        }
        let read = read_message(&mut socket, &mut buf);
        let next = if in_startup {
            tokio::select! {
                _ = &mut startup_timeout => return Ok(()),
                m = read => m,
            }
        } else {
            // Biased, the end first: a session ended (pg_terminate_backend, shutdown) runs no
            // request its client sent after the end was asked for, as a PostgreSQL backend
            // that took its SIGTERM.
            tokio::select! {
                biased;
                _ = ending.asked() => {
                    // FATAL, then the close: no ReadyForQuery follows, as in PostgreSQL.
                    let (code, message) = ending.reason.get().copied().unwrap_or((
                        overtake_sql::sqlstate::ADMIN_SHUTDOWN,
                        "terminating connection due to administrator command",
                    ));
                    let e = ErrorInfo::new("FATAL".into(), code.into(), message.into());
                    socket.send(PgWireBackendMessage::ErrorResponse(e.into())).await?;
                    return socket.close().await;
                }
                m = read => m,
            }
        };
        let message = match next {
            Ok(Next::Message(m)) => m,
            Ok(Next::Refused(e, extended)) => {
                // The message is refused and the session goes on (in the extended protocol,
                // from the next Sync).
                process_error(&mut socket, e, extended).await?;
                continue;
            }
            Ok(Next::Gone) => return Ok(()),
            Err(e) => {
                // Answered, then closed: the stream cannot be read in step any more.
                return process_error(&mut socket, e, false).await;
            }
        };
        if matches!(message, PgWireFrontendMessage::Terminate(_)) {
            return Ok(());
        }
        let is_extended = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => message.is_extended_query(),
        };
        let is_cancel = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let handled = process_message(
            message,
            &mut socket,
            startup.clone(),
            simple.clone(),
            extended.clone(),
            copy.clone(),
            cancel.clone(),
        )
        .await;
        if let Err(mut e) = handled {
            errors.on_error(&socket, &mut e);
            let fatal = e.is_fatal();
            process_error(&mut socket, e, is_extended).await?;
            if fatal {
                return Ok(());
            }
        }
        if is_cancel {
            return Ok(());
        }
    }
}

/// What the client sent next.
enum Next {
    Message(PgWireFrontendMessage),
    /// A whole message refused with this (non-fatal) error; whether it was of the extended
    /// protocol.
    Refused(PgWireError, bool),
    /// The client has gone.
    Gone,
}

/// The next message on `socket`, read into `buf`. An error is a protocol violation.
async fn read_message<T: AsyncRead + Unpin + 'static>(
    socket: &mut Framed<T, Codec>,
    buf: &mut BytesMut,
) -> Result<Next, PgWireError> {
    let startup = matches!(socket.state(), PgWireConnectionState::AwaitingStartup);
    loop {
        match framing::frame(buf, startup) {
            Frame::Complete(len) => {
                let mut message = buf.split_to(len);
                if !startup {
                    let (kind, body) = (message[0], &message[5..]);
                    framing::check(kind, body).map_err(violation)?;
                    if let Err(why) = framing::check_encoding(kind, body) {
                        let error = PgWireError::UserError(Box::new(ErrorInfo::new(
                            "ERROR".into(),
                            overtake_sql::sqlstate::CHARACTER_NOT_IN_REPERTOIRE.into(),
                            why,
                        )));
                        return Ok(Next::Refused(error, kind != b'Q'));
                    }
                }
                let mut context = DecodeContext::new(socket.protocol_version());
                context.awaiting_frontend_ssl = false;
                context.awaiting_frontend_startup = startup;
                // The checks above leave the decoder nothing to trip on; should it panic all
                // the same, that is this connection's protocol violation, not a silent close.
                let decoded = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    PgWireFrontendMessage::decode(&mut message, &context)
                }))
                .map_err(|_| violation("invalid message format".into()))?;
                return match decoded? {
                    Some(m) => Ok(Next::Message(m)),
                    None => Err(violation("invalid message format".into())),
                };
            }
            Frame::Invalid(why) => return Err(violation(why)),
            Frame::Incomplete => {
                let read = socket.get_mut().read_buf(buf).await?;
                if read == 0 {
                    return Ok(Next::Gone);
                }
            }
        }
    }
}
