//! Overtake's server: PostgreSQL's frontend/backend protocol (v3, through `pgwire`) over the SQL
//! layer, so that psql, pgbench and drivers connect unchanged.
//!
//! Each session has settings — `priority` first (`SET priority = 'high'`, `SET LOCAL` for one
//! transaction, `ALTER ROLE ... SET` for a role's default, `PGOPTIONS='-c priority=high'` at
//! connect) — and each of its statements runs as a task of the scheduler at that priority.
//! Each session is served by one worker (`worker_io`), which reads its requests, runs its
//! statements and writes its answers.
//!
//! Parts: `settings` (names, values, defaults), `session` (PostgreSQL's session state machine
//! and what each statement does for a session), `txn` (statements as tasks; a transaction block
//! as one task that parks between statements), `wire` (values, rows and errors on the wire),
//! `connection` (a connection's state its handlers share), `handler` (pgwire's handlers:
//! simple queries, COPY, startup), `prepared` (a statement between Parse and its Executes) and
//! `extended` (the extended query protocol), `auth` (SCRAM passwords), `worker_io` (sessions on
//! their workers: reactors, sockets, steps), `socket` (a connection's protocol loop).

#![forbid(unsafe_code)]

mod auth;
mod backends;
mod connection;
mod extended;
mod framing;
mod handler;
mod prepared;
pub mod privileges;
mod roles;
mod runner;
pub mod session;
pub mod settings;
mod socket;
mod statement_settings;
mod tls;
mod txn;
mod wire;
mod worker_io;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pgwire::api::auth::StartupHandler;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{ConnectionManager, PgWireServerHandlers, RandomPidSecretKeyGenerator};
use pgwire::messages::PgWireFrontendMessage;
use tokio::net::TcpListener;
use tokio::sync::watch;

use overtake_engine::Database;
use overtake_sched::{CallExecutor, Scheduler};
use overtake_sql::Catalog;

use crate::connection::Connection;
use crate::session::Shared;
pub use crate::worker_io::WorkerIo;

/// How long the accept loop waits after a failed accept (out of file descriptors) before it
/// tries again.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);

/// Stack of each network thread.
const NETWORK_STACK: usize = 64 << 20;

/// The task stack a scheduler serving SQL needs (`SchedConfig::stack_size`): evaluating a
/// statement's expressions recurses as deep as they nest (bounded: `overtake_sql::depth`), with large
/// frames in a debug build. Address space only: pages are touched as deep as a statement goes.
pub const TASK_STACK: usize = 32 << 20;

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address to listen on (`127.0.0.1:5433` by default; port 0 picks a free one).
    pub listen: SocketAddr,
    /// `user:password` lines: SCRAM-SHA-256 authentication. Without it, no authentication.
    pub password_file: Option<PathBuf>,
    /// Network threads serving the protocol when sessions are not served by the workers (with
    /// `session_threads`, or when no [`WorkerIo`] is given to [`Server::start`]).
    pub network_threads: usize,
    /// Run each session's statements on its own OS thread, placed by the operating system's
    /// scheduler as said here, instead of on the scheduler's workers (`None`, the default).
    pub session_threads: Option<overtake_sched::OsScheduling>,
    /// Most client connections at once (PostgreSQL's `max_connections`, 100 by default): one
    /// more is refused at startup with 53300.
    pub max_connections: usize,
    /// How many of those only superusers may take (PostgreSQL's
    /// `superuser_reserved_connections`, 3 by default; less than `max_connections`).
    pub superuser_reserved_connections: usize,
    /// TLS: the certificate chain and private key (PEM files). Without, SSLRequest is answered
    /// `N` and connections are in plain text.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// With a password file: the users who are superusers (`postgres` by default), who may
    /// raise priority, grant that to others (`GRANT overtake_priority TO ...`) and change other
    /// roles' defaults. Without one every session counts as a superuser.
    pub superusers: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 5433)),
            password_file: None,
            network_threads: 2,
            session_threads: None,
            max_connections: 100,
            superuser_reserved_connections: 3,
            tls: None,
            superusers: vec!["postgres".into()],
        }
    }
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    shared: Arc<Shared>,
    network: Vec<std::thread::JoinHandle<()>>,
    /// The workers' reactors, when sessions are served on the workers.
    io: Option<Arc<WorkerIo>>,
}

/// How long a shutdown waits for the sessions served on workers to end.
const SESSIONS_END: std::time::Duration = std::time::Duration::from_secs(10);

/// What a network thread needs to serve a connection.
struct Serving {
    tls: Option<pgwire::tokio::TlsAcceptor>,
    shared: Arc<Shared>,
    manager: Arc<ConnectionManager>,
    pids: Arc<RandomPidSecretKeyGenerator>,
    cancel: Arc<DefaultCancelHandler>,
    /// Logins against the kept roles, when the server authenticates.
    auth: Option<Arc<auth::RoleAuth>>,
}

impl Serving {
    fn handlers(&self, home: Option<session::Home>) -> Handlers {
        let connection = Arc::new(Connection::new(
            Arc::clone(&self.shared),
            Arc::clone(&self.manager),
            Arc::clone(&self.pids),
            home,
        ));
        let scram = self.auth.as_ref().map(|p| {
            let mut scram = ScramAuth::new(Arc::clone(p) as Arc<dyn pgwire::api::auth::AuthSource>);
            scram.set_iterations(auth::ITERATIONS);
            // The server's one generator: each connection's handler would otherwise start its
            // own, and every authenticated session would get the same process id.
            let pids = Arc::clone(&self.pids) as Arc<dyn pgwire::api::PidSecretKeyGenerator>;
            SASLAuthStartupHandler::new(Arc::new(handler::server_parameters()))
                .with_pid_secret_key_generator(pids)
                .with_scram(scram)
                .with_connection_manager(Arc::clone(&self.manager))
        });
        Handlers {
            startup: Arc::new(Startup {
                connection: Arc::clone(&connection),
                scram,
            }),
            connection,
            cancel: Arc::clone(&self.cancel),
        }
    }
}

/// A connection's handlers, as pgwire asks for them.
pub(crate) struct Handlers {
    connection: Arc<Connection>,
    startup: Arc<Startup>,
    cancel: Arc<DefaultCancelHandler>,
}

/// Startup: SCRAM when a password file is given, else none.
pub(crate) struct Startup {
    connection: Arc<Connection>,
    scram: Option<SASLAuthStartupHandler<pgwire::api::auth::DefaultServerParameterProvider>>,
}

#[async_trait::async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> pgwire::error::PgWireResult<()>
    where
        C: pgwire::api::ClientInfo
            + futures::Sink<pgwire::messages::PgWireBackendMessage>
            + Unpin
            + Send
            + Sync,
        C::Error: std::fmt::Debug,
        pgwire::error::PgWireError:
            From<<C as futures::Sink<pgwire::messages::PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(startup) = &message {
            // PostgreSQL's answers past max_connections and in the places reserved for
            // superusers, at startup, before authentication.
            let user = startup.parameters.get("user").map_or("", String::as_str);
            if let Err(refusal) = self.connection.admit(user) {
                return Err(wire::fatal(
                    overtake_sql::sqlstate::TOO_MANY_CONNECTIONS,
                    match refusal {
                        session::Refusal::Full => "sorry, too many clients already",
                        session::Refusal::Reserved => {
                            "remaining connection slots are reserved for non-replication superuser connections"
                        }
                    }
                    .into(),
                ));
            }
            // Options the user may not set refuse the connection before authentication (they
            // would after it in PostgreSQL; either way nothing is served).
            let parameters = &startup.parameters;
            let user = parameters.get("user").map_or("", String::as_str);
            (self.connection.check_options(user, parameters.iter()))
                .map_err(|e| wire::fatal(e.code, e.message))?;
        }
        match &self.scram {
            Some(scram) => {
                let result = scram.on_startup(client, message).await;
                if result.is_err() {
                    // A failed login is answered late (auth_delay), asynchronously: the network
                    // thread serves others meanwhile.
                    tokio::time::sleep(auth::FAILED_LOGIN_DELAY).await;
                }
                result
            }
            None => self.connection.on_startup(client, message).await,
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.connection)
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::clone(&self.connection)
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::clone(&self.startup)
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        Arc::clone(&self.connection)
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        Arc::clone(&self.cancel)
    }
}

impl Server {
    /// Starts serving `db` (whose statements run on `scheduler`); returns once listening.
    ///
    /// With `io` (the reactors given to `scheduler`'s workers, see [`WorkerIo`]) each session
    /// is served by one worker, which reads its requests, runs its statements and writes its
    /// answers; one network thread accepts connections and keeps the sessions' timers.
    /// Without it (and with `session_threads`, which runs statements on threads of their own),
    /// network threads serve the connections (round robin, each with its own single-threaded
    /// async runtime) and hand each statement to where it runs.
    pub fn start(
        config: &ServerConfig,
        db: Arc<Database>,
        scheduler: Arc<Scheduler<CallExecutor>>,
        io: Option<WorkerIo>,
    ) -> io::Result<Server> {
        if config.superuser_reserved_connections >= config.max_connections {
            return Err(io::Error::other(format!(
                "superuser_reserved_connections ({}) must be less than max_connections ({})",
                config.superuser_reserved_connections, config.max_connections
            )));
        }
        let passwords = match &config.password_file {
            Some(path) => Some(Arc::new(
                auth::PasswordFile::read(path).map_err(io::Error::other)?,
            )),
            None => None,
        };
        // The tables a database kept in a directory had (before anyone can connect).
        let catalog =
            Arc::new(Catalog::open(db).map_err(|e| {
                io::Error::other(format!("opening the SQL catalog: {}", e.message))
            })?);
        if let Some(p) = &passwords {
            p.bootstrap(&catalog, &config.superusers)
                .map_err(io::Error::other)?;
        }
        let listener = std::net::TcpListener::bind(config.listen)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            catalog: Arc::clone(&catalog),
            scheduler,
            roles: Mutex::new(HashMap::new()),
            privileges: privileges::Privileges::new(passwords.is_some(), Arc::clone(&catalog)),
            session_threads: config.session_threads.clone(),
            backends: Arc::default(),
            connections: session::Connections::new(
                config.max_connections,
                config.superuser_reserved_connections,
            ),
        });
        let manager = Arc::new(ConnectionManager::new());
        let tls = match &config.tls {
            Some((cert, key)) => Some(tls::acceptor(cert, key).map_err(io::Error::other)?),
            None => None,
        };
        let serving = Arc::new(Serving {
            tls,
            shared: Arc::clone(&shared),
            cancel: Arc::new(DefaultCancelHandler::new(Arc::clone(&manager))),
            manager,
            pids: Arc::new(RandomPidSecretKeyGenerator::default()),
            auth: passwords.map(|_| Arc::new(auth::RoleAuth { catalog })),
        });
        let (stop, stopped) = watch::channel(false);
        let (network, io) = match (io, &config.session_threads) {
            (Some(io), None) => {
                let io = Arc::new(io);
                let thread = serve_on_workers(listener, &serving, &io, stopped)?;
                (vec![thread], Some(io))
            }
            _ => (
                serve_on_network_threads(listener, &serving, config.network_threads, stopped)?,
                None,
            ),
        };
        Ok(Server {
            addr,
            stop,
            shared,
            network,
            io,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many sessions each worker serves now (empty when sessions run on threads of their
    /// own or on network threads).
    pub fn sessions_per_worker(&self) -> Vec<usize> {
        self.io
            .as_ref()
            .map_or_else(Vec::new, |io| io.sessions_per_worker())
    }

    /// The catalog its sessions share.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.shared.catalog
    }

    /// Blocks until SIGINT or SIGTERM.
    pub fn wait_for_signal(&self) -> io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r,
                _ = term.recv() => Ok(()),
            }
        })
    }

    /// Stops accepting, closes every connection (an open transaction rolls back), and returns
    /// when the network threads are gone.
    pub fn shutdown(mut self) {
        self.stop_network();
    }

    fn stop_network(&mut self) {
        let _ = self.stop.send(true);
        for t in self.network.drain(..) {
            let _ = t.join();
        }
        // Sessions on workers end as their steps see the stop (a statement in flight is
        // cancelled, an open transaction rolls back).
        if let Some(io) = self.io.take() {
            let give_up = std::time::Instant::now() + SESSIONS_END;
            while io.sessions() > 0 && std::time::Instant::now() < give_up {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_network();
    }
}

/// The next connection, or `None` once the server stops.
async fn accept_next(
    listener: &TcpListener,
    stopped: &mut watch::Receiver<bool>,
) -> Option<std::net::TcpStream> {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.changed() => return None,
        };
        let Ok((socket, _)) = accepted else {
            // Out of file descriptors (EMFILE, ENFILE) or memory: the error repeats at once
            // until some close, so wait a little.
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            continue;
        };
        if let Ok(socket) = socket.into_std() {
            return Some(socket);
        }
    }
}

/// Accepts connections on one network thread (which also keeps the sessions' timers) and
/// places each session on a worker, which serves it from then on.
fn serve_on_workers(
    listener: std::net::TcpListener,
    serving: &Arc<Serving>,
    io: &Arc<WorkerIo>,
    stopped: watch::Receiver<bool>,
) -> io::Result<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let serving = Arc::clone(serving);
    let io = Arc::clone(io);
    std::thread::Builder::new()
        .name("overtake-net".into())
        .spawn(move || {
            // Accepting is on every new client's path (raised as the workers' network
            // threads were).
            let _ = overtake_runtime::os::thread::set_raised();
            let handle = runtime.handle().clone();
            runtime.block_on(async move {
                let mut accepting = stopped.clone();
                let Ok(listener) = TcpListener::from_std(listener) else {
                    return;
                };
                let mut next = 0;
                while let Some(socket) = accept_next(&listener, &mut accepting).await {
                    let worker = io.place(next);
                    next += 1;
                    let Ok(stream) =
                        worker_io::WorkerStream::register(socket, &io.reactors[worker])
                    else {
                        continue;
                    };
                    let place = Arc::new(worker_io::Placement::on(worker, &io.reactors));
                    let handlers = serving.handlers(Some(Arc::clone(&place)));
                    let ending = Arc::clone(&handlers.connection.ending);
                    let tls = serving.tls.clone();
                    let mut stopped = stopped.clone();
                    let (connection, moving) =
                        (Arc::clone(&handlers.connection), Arc::clone(&place));
                    let between = move |conn: &mut worker_io::Conn| {
                        if connection.between_statements() {
                            moving.rebalance(conn.stream());
                        }
                    };
                    let session = async move {
                        let negotiate = worker_io::negotiate(stream, tls);
                        tokio::select! {
                            _ = socket::serve(negotiate, handlers, ending, between) => {}
                            _ = stopped.changed() => {}
                        }
                    };
                    worker_io::SessionTask::start(
                        Box::pin(session),
                        place,
                        &serving.shared.scheduler,
                        handle.clone(),
                        &io.live,
                    );
                }
            });
        })
}

/// Serves connections on `threads` network threads, each with its own async runtime; the
/// first also accepts, handing sockets out in turn.
fn serve_on_network_threads(
    listener: std::net::TcpListener,
    serving: &Arc<Serving>,
    threads: usize,
    stopped: watch::Receiver<bool>,
) -> io::Result<Vec<std::thread::JoinHandle<()>>> {
    let threads = threads.max(1);
    let mut inboxes = Vec::with_capacity(threads);
    let mut receivers = Vec::with_capacity(threads);
    for _ in 0..threads {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<std::net::TcpStream>();
        inboxes.push(tx);
        receivers.push(rx);
    }
    let mut network = Vec::with_capacity(threads);
    let mut listener = Some(listener);
    for (i, mut rx) in receivers.into_iter().enumerate() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let serving = Arc::clone(serving);
        let mut stopped = stopped.clone();
        let accept = listener.take().map(|l| (l, inboxes.clone()));
        let thread = std::thread::Builder::new()
            .name(format!("overtake-net-{i}"))
            // Parsing and binding recurse along a statement's expressions; the parser's frames
            // are large (kilobytes each in a debug build). Address space only: the pages are
            // touched as deep as a statement goes (see `overtake_sql::depth`).
            .stack_size(NETWORK_STACK)
            .spawn(move || {
                // Clients wait for this thread at every statement, and on a machine whose
                // workers are busy with background queries it would otherwise wait its turn for
                // a core behind them. It sleeps in epoll when idle, so running it first costs
                // little.
                let _ = overtake_runtime::os::thread::set_raised();
                runtime.block_on(async move {
                    if let Some((listener, inboxes)) = accept {
                        let mut stopped = stopped.clone();
                        tokio::spawn(async move {
                            let Ok(listener) = TcpListener::from_std(listener) else {
                                return;
                            };
                            let mut next = 0;
                            while let Some(socket) = accept_next(&listener, &mut stopped).await {
                                let _ = inboxes[next % inboxes.len()].send(socket);
                                next += 1;
                            }
                        });
                    }
                    loop {
                        let socket = tokio::select! {
                            s = rx.recv() => s,
                            _ = stopped.changed() => None,
                        };
                        let Some(socket) = socket else { break };
                        let Ok(socket) = tokio::net::TcpStream::from_std(socket) else {
                            continue;
                        };
                        let _ = socket.set_nodelay(true);
                        let handlers = serving.handlers(None);
                        let ending = Arc::clone(&handlers.connection.ending);
                        let tls = serving.tls.clone();
                        let mut stopped = stopped.clone();
                        tokio::spawn(async move {
                            let negotiate = pgwire::tokio::server::negotiate_tls(socket, tls);
                            tokio::select! {
                                _ = socket::serve(negotiate, handlers, ending, |_| {}) => {}
                                _ = stopped.changed() => {}
                            }
                        });
                    }
                });
                // Dropping the runtime here ends every connection it served.
            })?;
        network.push(thread);
    }
    Ok(network)
}

// The README's examples (the engine alone, and a program on the scheduler) are compiled and run
// as tests of this crate, the lowest that depends on every crate they use.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
