//! `overtake_stat_classes`: where each priority level's transactions spent their time, as the
//! scheduler booked them, read over the wire. A transaction block's waits for its client and a
//! writer's wait for a row lock land in their own columns, under the level that waited.

use std::time::{Duration, Instant};

use crate::common;
use common::{connect, runtime};

/// One level's row: (committed, client_wait_us, lock_wait_us, every time column summed).
type Row = (i64, f64, f64, f64);

async fn class(client: &tokio_postgres::Client, priority: &str) -> Row {
    let row = client
        .query_one(
            "SELECT committed, client_wait_us, lock_wait_us, queued_us + running_us + \
             preempted_us + client_wait_us + lock_wait_us + log_wait_us + other_wait_us \
             FROM overtake_stat_classes WHERE priority = $1",
            &[&priority],
        )
        .await
        .expect("overtake_stat_classes");
    (row.get(0), row.get(1), row.get(2), row.get(3))
}

/// `priority`'s row once it has counted `committed` transactions (a worker books a
/// transaction after its answer is sent, so the client can see the answer first).
async fn once_booked(client: &tokio_postgres::Client, priority: &str, committed: i64) -> Row {
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        let row = class(client, priority).await;
        if row.0 >= committed {
            return row;
        }
        assert!(
            Instant::now() < give_up,
            "{priority}: never booked: {row:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[test]
fn a_blocks_client_waits_and_a_writers_lock_wait_are_booked_under_their_levels() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let holder = connect(&server.dsn("holder")).await;
        let before = class(&holder, "high").await;
        assert_eq!(before, (0, 0.0, 0.0, 0.0), "nothing has run yet");
        holder
            .batch_execute("CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)")
            .await
            .expect("create");
        holder
            .batch_execute("INSERT INTO c VALUES (1, 0)")
            .await
            .expect("insert");
        // An urgent block holds the row while it waits for its client; a writer of the same
        // row at the default level waits for it (an urgent writer would take the row instead).
        holder
            .batch_execute("SET priority = high")
            .await
            .expect("raise");
        holder.batch_execute("BEGIN").await.expect("begin");
        holder
            .batch_execute("UPDATE c SET v = v + 1 WHERE id = 1")
            .await
            .expect("hold the row");
        let waiter = connect(&server.dsn("waiter")).await;
        let waiting = tokio::spawn(async move {
            let r = waiter
                .batch_execute("UPDATE c SET v = v + 10 WHERE id = 1")
                .await;
            (waiter, r)
        });
        let db = server.database();
        common::until_a_lock_wait(&db).await;
        holder.batch_execute("COMMIT").await.expect("commit");
        let (waiter, result) = waiting.await.expect("joined");
        result.expect("the waiter's update went ahead after the commit");

        let high = once_booked(&waiter, "high", 1).await;
        assert!(high.1 > 0.0, "the block waited for its client: {high:?}");
        assert_eq!(high.2, 0.0, "nothing at this level waited for a lock");
        // CREATE, INSERT and the waiting UPDATE, at the default level.
        let normal = once_booked(&waiter, "normal", 3).await;
        assert!(normal.2 > 0.0, "the writer waited for the row: {normal:?}");
        assert!(
            normal.3 >= normal.2,
            "the lock wait is part of its time: {normal:?}"
        );
        let background = class(&waiter, "background").await;
        assert_eq!(background.0, 0, "nothing ran in the background");
    });
}
