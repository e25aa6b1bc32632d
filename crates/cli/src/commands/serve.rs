//! `overtake serve`: a database (kept in `--data-dir`, by default `overtake-data`, or in memory
//! with `--in-memory`) behind PostgreSQL's wire protocol, until SIGINT or SIGTERM (then
//! connections close, open transactions roll back, the workers drain, and a kept database's log
//! is flushed and closed).

use std::sync::Arc;
use std::time::Duration;

use overtake_engine::{Concurrency, Database, LockPolicy, Options};
use overtake_runtime::os::bpf_map::HintMap;
use overtake_sched::{CallExecutor, SchedConfig, Scheduler, Shutdown};
use overtake_server::{Server, ServerConfig};

use crate::commands::flags::CcArg;
use crate::commands::flags::{KeptArgs, OsSchedulerArg, PolicyArg, lock_policy_name};
use clap::Args;

/// `serve`: a server. Its database is kept, as a PostgreSQL server's is: in `--data-dir`,
/// by default `overtake-data` in the working directory, unless `--in-memory`.
#[derive(Debug, Args)]
#[command(mut_arg("data_dir", |a| a.help(format!(
    "Keep the database in this directory (created if needed): recovered from its checkpoint \
     and log when it holds one, and every commit logged [default: {DEFAULT_DATA_DIR}]"
))))]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: std::net::SocketAddr,
    /// `user:password` lines: clients authenticate with SCRAM-SHA-256. Without it, none.
    #[arg(long)]
    pub password_file: Option<std::path::PathBuf>,
    /// With `--password-file`: a user who is a superuser (may be given more than once). Only
    /// superusers may raise priority above `normal` (or grant that: `GRANT overtake_priority TO
    /// alice`) and change other roles' defaults.
    #[arg(long = "superuser", value_name = "USER", default_value = "postgres")]
    pub superusers: Vec<String>,
    /// TLS certificate chain (PEM): with `--tls-key`, clients may connect with TLS
    /// (`sslmode=require`).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// TLS private key (PEM), with `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Listen on an address other hosts can reach without `--password-file` (anyone could
    /// connect as anyone): refused unless given.
    #[arg(long)]
    pub allow_unauthenticated: bool,
    /// Scheduler workers (each pinned to a core).
    #[arg(long, default_value_t = default_workers())]
    pub workers: u16,
    /// How urgent statements get a worker that runs a less urgent one (and, under `quantum`,
    /// how statements of one level share a worker: a long query does not hold up the short
    /// statements of its own level until it ends).
    #[arg(long, value_enum, default_value_t = PolicyArg::Quantum)]
    pub policy: PolicyArg,
    /// Concurrency control: MVCC (READ COMMITTED writers take row locks), or two-phase locking
    /// for every transaction.
    #[arg(long, value_enum, default_value_t = CcArg::Mvcc)]
    pub concurrency: CcArg,
    /// The lock policy (row locks under MVCC, every lock under 2pl).
    #[arg(long, default_value = "pow", value_parser = lock_policy_name)]
    pub lock_policy: String,
    /// Network threads serving the protocol with `--session-threads` (otherwise each session is
    /// served by the worker that runs it, and one thread only accepts connections).
    #[arg(long, default_value_t = 2)]
    pub network_threads: u16,
    /// Most client connections at once (PostgreSQL's max_connections): one more is refused at
    /// startup with 53300, "sorry, too many clients already".
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_connections: u32,
    /// How many of --max-connections only superusers may take (PostgreSQL's
    /// superuser_reserved_connections): others are refused with 53300 past the rest.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub superuser_reserved_connections: u32,
    /// How long an idle worker spins for new work before it sleeps (µs), polling its sessions'
    /// sockets as it spins, and only while every other worker sleeps: spinning while others
    /// work would take a core from the clients that share them (0: never spin).
    #[arg(long, default_value_t = 40)]
    pub idle_spin_us: u64,
    /// Pin each worker to a core of its own.
    #[arg(long)]
    pub pin: bool,
    /// With the quantum policy: how long a statement runs before a waiting statement of its
    /// level may take its worker (µs).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub quantum_us: u64,
    /// Run each session's statements on its own OS thread, as PostgreSQL's backends run, and let
    /// the operating system schedule them: `eevdf` (a cgroup per task_tier/task_weight group,
    /// weighted; needs a writable CPU cgroup), `idle` (background sessions SCHED_IDLE), `fifo` or
    /// `rr` (time-sensitive sessions SCHED_FIFO / SCHED_RR 99; needs privilege). To compare with
    /// Overtake's own scheduling (the default: statements are tasks on the workers).
    #[arg(long, value_enum)]
    pub session_threads: Option<OsSchedulerArg>,
    /// With `--session-threads`: while a session waits for a lock, name the session holding it
    /// in overtake-ufs's hint map (pinned at PATH, by default where overtake-ufs pins it), so
    /// that the OS scheduler runs the holder as time-sensitive until the wait ends.
    #[arg(long, value_name = "PATH", num_args = 0..=1,
          default_missing_value = overtake_runtime::os::bpf_map::DEFAULT_HINTS_PIN)]
    pub ufs_hints: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub kept: KeptArgs,
    /// Keep nothing: the database lives in memory and is gone when the server stops.
    #[arg(long, conflicts_with_all = ["data_dir", "durability", "checkpoint_mib", "group_commit_us"])]
    pub in_memory: bool,
}

/// Where `serve` keeps its database unless told otherwise.
pub const DEFAULT_DATA_DIR: &str = "overtake-data";

fn default_workers() -> u16 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(u16::MAX as usize) as u16)
}

pub fn run(args: &ServeArgs) -> Result<(), String> {
    if !args.listen.ip().is_loopback()
        && args.password_file.is_none()
        && !args.allow_unauthenticated
    {
        return Err(format!(
            "refusing to listen on {} without authentication: anyone who can reach it could connect as any user; give --password-file, or --allow-unauthenticated to do it anyway",
            args.listen
        ));
    }
    let policy = LockPolicy::parse(&args.lock_policy, Duration::from_millis(1))
        .ok_or_else(|| format!("unknown lock policy {}", args.lock_policy))?;
    let mut options = Options::default();
    if let Some(pin) = &args.ufs_hints {
        if args.session_threads.is_none() {
            return Err(
                "--ufs-hints needs --session-threads: only sessions on their own OS threads are \
                 scheduled by the OS"
                    .into(),
            );
        }
        let map = HintMap::open_pinned(pin).map_err(|e| format!("--ufs-hints: {e}"))?;
        let hints = overtake_workload::hints::UfsHints(Arc::new(map));
        options = options.lock_observer(Arc::new(hints));
    }
    let options = options
        .row_lock_policy(policy)
        .concurrency(match args.concurrency {
            CcArg::Mvcc => Concurrency::Mvcc,
            CcArg::TwoPl => Concurrency::TwoPhaseLocking(policy),
        });
    let default_dir = std::path::PathBuf::from(DEFAULT_DATA_DIR);
    let kept = match (&args.kept.data_dir, args.in_memory) {
        (_, true) => None,
        (Some(dir), false) => Some(dir),
        (None, false) => Some(&default_dir),
    };
    let db = Arc::new(match kept {
        Some(dir) => {
            if dir.exists() && !dir.is_dir() {
                return Err(format!("--data-dir {}: not a directory", dir.display()));
            }
            let db = Database::open(dir, args.kept.options(options))
                .map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
            if let Some(r) = db.recovered().filter(|r| r.tables > 0) {
                eprintln!(
                    "overtake: recovered {} ({} checkpoint rows, {} logged transactions) in {:.2?}",
                    dir.display(),
                    r.checkpoint_rows,
                    r.transactions,
                    r.elapsed
                );
            }
            db
        }
        None => Database::in_memory(options),
    });
    let config = SchedConfig::default()
        .workers(usize::from(args.workers.max(1)))
        .policy(args.policy.policy())
        .quantum(Duration::from_micros(args.quantum_us))
        .idle_spin(Duration::from_micros(args.idle_spin_us))
        .idle_spin_alone(true)
        .pin(args.pin)
        .stack_size(overtake_server::TASK_STACK)
        // Network threads and clients share the cores: background statements yield them.
        .os_background(true);
    let session_threads = args.session_threads.map(|s| s.scheduling()).transpose()?;
    // Sessions are served by the workers (each polls its sessions' sockets), unless they run
    // on threads of their own.
    let (io, reactors) = match &session_threads {
        Some(_) => (None, Vec::new()),
        None => {
            let (io, reactors) = overtake_server::WorkerIo::new(config.workers)
                .map_err(|e| format!("cannot set up the workers' reactors: {e}"))?;
            (Some(io), reactors)
        }
    };
    let scheduler = Arc::new(
        Scheduler::start_with(
            &config,
            Arc::new(CallExecutor),
            overtake_sched::StartOptions::default().reactors(reactors),
        )
        .map_err(|e| e.to_string())?,
    );
    let server = Server::start(
        &ServerConfig {
            listen: args.listen,
            password_file: args.password_file.clone(),
            tls: args.tls_cert.clone().zip(args.tls_key.clone()),
            network_threads: usize::from(args.network_threads.max(1)),
            session_threads: session_threads.clone(),
            max_connections: args.max_connections as usize,
            superuser_reserved_connections: args.superuser_reserved_connections as usize,
            superusers: args.superusers.clone(),
        },
        Arc::clone(&db),
        Arc::clone(&scheduler),
        io,
    )
    .map_err(|e| format!("cannot serve on {}: {e}", args.listen))?;
    eprintln!(
        "overtake: serving on {} ({}, {}, {}); stop with Ctrl-C",
        server.local_addr(),
        match &session_threads {
            Some(os) => format!(
                "sessions on their own threads, scheduled by the OS: {}",
                os.name()
            ),
            None => format!(
                "{} workers, {} policy",
                args.workers,
                args.policy.policy().name()
            ),
        },
        args.concurrency_name(),
        match kept {
            Some(dir) => format!(
                "kept in {}, {} commits",
                dir.display(),
                args.kept.durability().engine().name()
            ),
            None => "in memory".into(),
        },
    );
    let watch = kept.is_some().then(|| LogWatch::start(Arc::downgrade(&db)));
    server.wait_for_signal().map_err(|e| e.to_string())?;
    eprintln!("overtake: shutting down");
    server.shutdown();
    drop(watch);
    if let Some(
        overtake_sched::OsScheduling::Weights(tree) | overtake_sched::OsScheduling::Ufs(tree),
    ) = &session_threads
    {
        tree.remove_empty();
    }
    Arc::into_inner(scheduler)
        .ok_or("the scheduler is still shared")?
        .shutdown(Shutdown::Drain)
        .map_err(|e| e.to_string())?;
    Ok(())
}

impl ServeArgs {
    fn concurrency_name(&self) -> &'static str {
        match self.concurrency {
            CcArg::Mvcc => "mvcc",
            CcArg::TwoPl => "2pl",
        }
    }
}

/// Tells the operator, once, if the log stops (a write it could not complete): from then on the
/// server refuses writes until it is restarted. Holds the database only while it looks, and is
/// stopped (joined) before the database is closed.
struct LogWatch {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LogWatch {
    fn start(db: std::sync::Weak<Database>) -> LogWatch {
        use std::sync::atomic::Ordering;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let watch = move || {
            while !stopped.load(Ordering::Acquire) {
                std::thread::park_timeout(Duration::from_millis(500));
                let Some(db) = db.upgrade() else { return };
                if let Some(why) = db.log_stopped() {
                    eprintln!(
                        "overtake: the log has stopped, so the server refuses every write until it is restarted (once the disk is fixed: recovery keeps every acknowledged commit): {why}"
                    );
                    return;
                }
            }
        };
        // Without the watcher the server still refuses writes and tells each client why.
        let thread = std::thread::Builder::new()
            .name("log-watch".into())
            .spawn(watch)
            .ok();
        LogWatch { stop, thread }
    }
}

impl Drop for LogWatch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}
