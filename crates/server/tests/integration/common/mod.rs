//! A server for tests: a database (in memory unless given one) on an ephemeral loopback port,
//! with its own scheduler (two workers, unpinned: tests share the machine).

#![allow(dead_code)]

pub mod raw;

use std::sync::Arc;

use overtake_engine::{Database, Options};
use overtake_sched::{CallExecutor, SchedConfig, Scheduler, Shutdown};
use overtake_server::{Server, ServerConfig, WorkerIo};

pub struct TestServer {
    pub db: Arc<Database>,
    pub server: Option<Server>,
    pub scheduler: Option<Arc<Scheduler<CallExecutor>>>,
    pub port: u16,
}

impl TestServer {
    pub fn start() -> TestServer {
        Self::start_with(ServerConfig::default(), Options::default())
    }

    pub fn start_with(config: ServerConfig, options: Options) -> TestServer {
        Self::serve(config, Database::in_memory(options))
    }

    /// The scheduler's configuration as `overtake serve` runs it (two workers, unpinned).
    pub fn sched_config() -> SchedConfig {
        SchedConfig::default()
            .policy(overtake_sched::Policy::Quantum)
            .quantum(std::time::Duration::from_micros(200))
            .workers(2)
            .pin(false)
            .stack_size(overtake_server::TASK_STACK)
    }

    /// Serves `db` (in memory or kept in a directory).
    pub fn serve(config: ServerConfig, db: Database) -> TestServer {
        Self::serve_scheduled(config, db, &Self::sched_config())
    }

    /// Serves `db` with a scheduler configured as `sched`.
    pub fn serve_scheduled(
        mut config: ServerConfig,
        db: Database,
        sched: &SchedConfig,
    ) -> TestServer {
        config.listen = "127.0.0.1:0".parse().expect("address");
        let db = Arc::new(db);
        // As `overtake serve` runs: sessions served by the workers, unless on threads of their own.
        let (io, reactors) = match &config.session_threads {
            Some(_) => (None, Vec::new()),
            None => {
                let (io, reactors) = WorkerIo::new(sched.workers).expect("reactors");
                (Some(io), reactors)
            }
        };
        let options = overtake_sched::StartOptions::default().reactors(reactors);
        let scheduler = Arc::new(
            Scheduler::start_with(sched, Arc::new(CallExecutor), options).expect("scheduler"),
        );
        let server =
            Server::start(&config, Arc::clone(&db), Arc::clone(&scheduler), io).expect("server");
        let port = server.local_addr().port();
        TestServer {
            db,
            server: Some(server),
            scheduler: Some(scheduler),
            port,
        }
    }

    /// The database it serves.
    pub fn database(&self) -> Arc<Database> {
        Arc::clone(&self.db)
    }

    /// A connection string for tokio-postgres.
    pub fn dsn(&self, user: &str) -> String {
        format!("host=127.0.0.1 port={} user={user} dbname=test", self.port)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown();
        }
        if let Some(s) = self.scheduler.take().and_then(Arc::into_inner) {
            let _ = s.shutdown(Shutdown::Drain);
        }
    }
}

/// A fuzzer's seeds: `fixed`, and one more each run, printed (as `name`'s), taken from
/// `OVERTAKE_FUZZ_SEED` when set so that a failure can be repeated.
pub fn fuzz_seeds(name: &str, fixed: &[u64]) -> Vec<u64> {
    let extra = std::env::var("OVERTAKE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    eprintln!("{name}: seeds {fixed:?} and {extra} (OVERTAKE_FUZZ_SEED={extra} repeats it)");
    fixed.iter().copied().chain([extra]).collect()
}

/// A single-threaded runtime for a test's clients.
/// Returns once some transaction waits for a lock (a state, not a time).
pub async fn until_a_lock_wait(db: &Database) {
    while db.lock_waits().is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A client on `config`, its connection driven by the test's runtime.
pub async fn connect(config: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(config, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

/// Tables `a` (1,000 rows, each with 100 bytes of text) and `b` (100 rows): `FROM a, b` makes
/// 100,000 rows (about 11 MB of DataRows) from little data.
pub async fn tables(c: &tokio_postgres::Client) {
    c.batch_execute(
        "CREATE TABLE a (i int PRIMARY KEY, t text NOT NULL); \
         CREATE TABLE b (i int PRIMARY KEY)",
    )
    .await
    .expect("create");
    let text = "x".repeat(100);
    let a: String = (0..1_000).map(|i| format!("{i}\t{text}\n")).collect();
    let b: String = (0..100).map(|i| format!("{i}\n")).collect();
    for (table, data) in [("a", a), ("b", b)] {
        let sink = c
            .copy_in(&format!("COPY {table} FROM STDIN"))
            .await
            .expect("copy");
        futures::pin_mut!(sink);
        futures::SinkExt::send(&mut sink, bytes::Bytes::from(data))
            .await
            .expect("data");
        sink.finish().await.expect("finish");
    }
}
