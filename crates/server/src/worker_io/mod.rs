//! Sessions served by the worker that runs them: each connection is placed on one worker at
//! connect time (the one serving the fewest sessions), and moves to another between
//! statements outside a block when its own serves two more sessions than that one
//! (`task::Placement`); its socket is registered in that
//! worker's reactor (`reactor`), its protocol loop runs in steps on that worker (`task`), its
//! statements run as tasks of that worker, and its answers are written by that worker, corked
//! into one send per batch of requests (`stream`). No other thread is on a statement's path.
//! `negotiate` is the connection's first exchange (SSLRequest, TLS).
//!
//! Must never: block a worker (every socket operation is non-blocking; a session that waits for
//! its client holds no task, only its registration), or run a session's steps on two workers.

mod negotiate;
mod reactor;
mod stream;
mod task;

pub(crate) use negotiate::negotiate;
pub use reactor::WorkerIo;
pub(crate) use stream::{Conn, WorkerStream};
pub use task::Placement;
pub(crate) use task::SessionTask;
