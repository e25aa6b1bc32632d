//! A database kept in a directory: its SQL tables come back after a restart exactly as they
//! were declared (types, NULL-ability, defaults, keys, indexes) with their rows, through the log
//! and through a checkpoint; dropped and replaced tables stay gone, and what a failed change
//! created is not left behind.

use crate::common;

use overtake_engine::{Database, Durability, Options};
use overtake_server::ServerConfig;
use tokio_postgres::NoTls;

struct Dir(std::path::PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open(dir: &Dir) -> Database {
    Database::open(
        &dir.0,
        Options::default()
            .durability(Durability::Sync)
            .checkpoint_after(None),
    )
    .expect("open")
}

/// Runs `f` with a client of a server over `db`; returns the database once the server has
/// stopped, and what `f` returned.
fn with_server<F, T>(db: Database, f: impl FnOnce(tokio_postgres::Client) -> F) -> (Database, T)
where
    F: std::future::Future<Output = T>,
{
    let server = common::TestServer::serve(ServerConfig::default(), db);
    let out = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            let (client, connection) = tokio_postgres::connect(&server.dsn("kept"), NoTls)
                .await
                .expect("connect");
            tokio::spawn(connection);
            f(client).await
        });
    let db = server.database();
    drop(server);
    let db = std::sync::Arc::into_inner(db).expect("the server let go of the database");
    (db, out)
}

async fn rows(client: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    client
        .simple_query(sql)
        .await
        .expect(sql)
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_owned())
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}

async fn sqlstate(client: &tokio_postgres::Client, sql: &str) -> String {
    let e = client.batch_execute(sql).await.expect_err(sql);
    e.code().expect("a SQLSTATE").code().to_owned()
}

const ACCOUNTS: &str = "SELECT * FROM accounts ORDER BY id";

/// What the tables hold when the first server stops.
async fn expected(client: &tokio_postgres::Client) -> Vec<Vec<String>> {
    vec![
        rows(client, ACCOUNTS).await,
        rows(client, "SELECT v FROM history ORDER BY v").await,
        rows(client, "SELECT k FROM emptied").await,
        rows(client, "SELECT v FROM keyless ORDER BY v").await,
    ]
}

#[test]
fn sql_tables_and_their_rows_survive_restarts_through_the_log_and_a_checkpoint() {
    let dir = Dir(std::env::temp_dir().join(format!("overtake-kept-sql-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let (db, before) = with_server(open(&dir), |c| async move {
        c.batch_execute(
            r#"CREATE TABLE accounts (id int PRIMARY KEY, name varchar(10) NOT NULL DEFAULT 'x' || 'y',
                   amount numeric(8,2), flag boolean DEFAULT true, at timestamp,
                   ratio double precision, "Odd ""Name""" text, exact numeric);
               INSERT INTO accounts VALUES (1, 'ann', 10.50, false, '2026-01-02 03:04:05', 0.25, 'q',
                   -12345678901234567890.123456789012345678901);
               INSERT INTO accounts (id, amount) VALUES (2, -3.25);
               CREATE INDEX accounts_name ON accounts (name);
               CREATE TABLE history (v int);
               INSERT INTO history VALUES (3), (1), (2);
               ALTER TABLE history ADD PRIMARY KEY (v);
               CREATE TABLE dropped (k int PRIMARY KEY);
               INSERT INTO dropped VALUES (1);
               DROP TABLE dropped;
               CREATE TABLE emptied (k int PRIMARY KEY);
               INSERT INTO emptied VALUES (1), (2);
               TRUNCATE emptied;
               INSERT INTO emptied VALUES (7);
               CREATE ROLE kept_role LOGIN PASSWORD 'p';
               CREATE TABLE keyless (v int);
               INSERT INTO keyless VALUES (5), (5);"#,
        )
        .await
        .expect("setup");
        // A change that fails leaves nothing behind.
        c.batch_execute("INSERT INTO keyless VALUES (6)")
            .await
            .expect("insert");
        assert_eq!(
            sqlstate(&c, "ALTER TABLE keyless ADD PRIMARY KEY (v)").await,
            "23505"
        );
        // A point read (run in its session's step) of commits it waits to see durable.
        assert_eq!(
            rows(&c, "SELECT name, amount FROM accounts WHERE id = 2").await,
            ["xy|-3.25"]
        );
        let before = expected(&c).await;
        assert_eq!(before[0][1], "2|xy|-3.25|t|NULL|NULL|NULL|NULL");
        assert!(
            before[0][0].ends_with("|-12345678901234567890.123456789012345678901"),
            "{}",
            before[0][0]
        );
        before
    });
    let engine_tables = |db: &Database| -> Vec<String> {
        let mut names: Vec<String> = db.tables().iter().map(|t| t.name().to_owned()).collect();
        names.sort();
        names
    };
    let live = engine_tables(&db);
    assert_eq!(
        live.len(),
        6,
        "the catalog, the roles and four tables: {live:?}"
    );
    drop(db);

    // From the log.
    let db = open(&dir);
    assert_eq!(engine_tables(&db), live, "no table came back");
    let roles = db.table("overtake_sql_roles").expect("the roles' table");
    let kept = overtake_sql::catalog::roles::committed(&db, &roles, "kept_role").expect("read");
    assert!(
        kept.is_some_and(|r| r.login && !r.superuser && r.password.is_some()),
        "a role and its verifier come back"
    );
    // What a crash between creating a table and describing it would leave.
    db.create_table(
        overtake_engine::TableSchema::builder("stray#40")
            .column("k", overtake_engine::ColumnType::Int64)
            .primary_key(&["k"])
            .build()
            .expect("schema"),
    )
    .expect("stray");
    let (db, ()) = with_server(db, |c| async move {
        assert_eq!(expected(&c).await, before);
        // Declared shapes came back: defaults, keys, indexes, NOT NULL.
        c.batch_execute("INSERT INTO accounts (id) VALUES (3)")
            .await
            .expect("defaults");
        assert_eq!(
            rows(&c, "SELECT name, flag FROM accounts WHERE id = 3").await,
            ["xy|t"]
        );
        assert_eq!(
            sqlstate(&c, "INSERT INTO accounts (id) VALUES (3)").await,
            "23505"
        );
        assert_eq!(
            sqlstate(&c, "INSERT INTO history VALUES (1)").await,
            "23505"
        );
        assert_eq!(
            sqlstate(&c, "INSERT INTO accounts (id, name) VALUES (4, NULL)").await,
            "23502"
        );
        let plan = rows(&c, "EXPLAIN SELECT v FROM history WHERE v = 1").await;
        assert!(plan[0].contains("history_pkey"), "{plan:?}");
        assert_eq!(
            sqlstate(&c, "CREATE INDEX accounts_name ON accounts (name)").await,
            "42P07"
        );
        assert_eq!(sqlstate(&c, "SELECT * FROM dropped").await, "42P01");
        // A table without a key names its rows by row ids that came back with them, and new
        // rows take ids after them (a repeated id would fail the insert as a duplicate).
        c.batch_execute("UPDATE keyless SET v = v + 1 WHERE v = 6; INSERT INTO keyless VALUES (8)")
            .await
            .expect("keyless update");
        assert_eq!(
            rows(&c, r#"SELECT "Odd ""Name""" FROM accounts WHERE id = 1"#).await,
            ["q"]
        );
        // New tables after a restart do not collide with the old ones' engine tables.
        c.batch_execute(
            "CREATE TABLE later (k int PRIMARY KEY); INSERT INTO later VALUES (1);
             TRUNCATE history; INSERT INTO history VALUES (9)",
        )
        .await
        .expect("new tables");
    });
    assert!(
        !engine_tables(&db).contains(&"stray#40".to_owned()),
        "opening the catalog drops engine tables nothing describes"
    );
    let done = db.checkpoint().expect("checkpoint");
    // Live rows only: accounts 3, history 1, emptied 1, keyless 4, later 1, the catalog's
    // row for each of those five tables, and the role's.
    assert_eq!(
        done.rows,
        10 + 5 + 1,
        "dropped and replaced tables hold no rows"
    );
    drop(db);

    // From the checkpoint.
    with_server(open(&dir), |c| async move {
        assert_eq!(rows(&c, "SELECT count(*) FROM accounts").await, ["3"]);
        assert_eq!(rows(&c, "SELECT v FROM history").await, ["9"]);
        assert_eq!(rows(&c, "SELECT k FROM later").await, ["1"]);
        assert_eq!(
            rows(&c, "SELECT v FROM keyless ORDER BY v").await,
            ["5", "5", "7", "8"]
        );
        c.batch_execute("DELETE FROM keyless WHERE v = 5; INSERT INTO keyless VALUES (9)")
            .await
            .expect("keyless delete");
        assert_eq!(
            rows(&c, "SELECT v FROM keyless ORDER BY v").await,
            ["7", "8", "9"]
        );
    });
}

/// The unique indexes and constraints each table declares.
async fn uniques(client: &tokio_postgres::Client) -> Vec<String> {
    rows(
        client,
        "SELECT c.relname, i.indisunique, pg_get_indexdef(i.indexrelid),
                (SELECT string_agg(conname, ',') FROM pg_constraint WHERE conindid = i.indexrelid)
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid ORDER BY c.relname",
    )
    .await
}

#[test]
fn unique_indexes_and_constraints_survive_restarts_and_keep_their_values_claimed() {
    let dir =
        Dir(std::env::temp_dir().join(format!("overtake-kept-unique-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let (db, before) = with_server(open(&dir), |c| async move {
        c.batch_execute(
            "CREATE TABLE users (id int PRIMARY KEY, email varchar(40) UNIQUE, nick varchar(20),
                 team int, UNIQUE (team, nick));
             INSERT INTO users VALUES (1, 'a@x', 'ann', 1), (2, 'b@x', 'bob', 1), (3, NULL, NULL, 2);
             CREATE UNIQUE INDEX users_nick ON users (nick);
             ALTER TABLE users ADD CONSTRAINT users_id_team UNIQUE (id, team);
             CREATE TABLE gone (k int PRIMARY KEY, v int UNIQUE);
             DROP TABLE gone;",
        )
        .await
        .expect("setup");
        uniques(&c).await
    });
    let names: Vec<String> = db.tables().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(
        names.len(),
        2 + 1 + 4,
        "the catalog, the roles, the table and one per unique index: {names:?}"
    );
    drop(db);

    let (db, ()) = with_server(open(&dir), |c| async move {
        assert_eq!(uniques(&c).await, before);
        for dup in [
            "INSERT INTO users VALUES (4, 'a@x', NULL, NULL)",
            "INSERT INTO users VALUES (4, NULL, 'bob', NULL)",
            "UPDATE users SET nick = 'ann', team = 1 WHERE id = 3",
        ] {
            assert_eq!(sqlstate(&c, dup).await, "23505", "{dup}");
        }
        // A row deleted before the restart gave its values back.
        c.batch_execute(
            "DELETE FROM users WHERE id = 2; INSERT INTO users VALUES (5, 'b@x', 'bob', 1);
             ALTER TABLE users DROP CONSTRAINT users_email_key; DROP INDEX users_nick;",
        )
        .await
        .expect("free values and drop two indexes");
    });
    db.checkpoint().expect("checkpoint");
    drop(db);

    with_server(open(&dir), |c| async move {
        let left: Vec<String> = uniques(&c)
            .await
            .into_iter()
            .map(|r| r.split('|').next().expect("a name").to_owned())
            .collect();
        assert_eq!(left, ["users_id_team", "users_pkey", "users_team_nick_key"]);
        c.batch_execute("INSERT INTO users VALUES (6, 'a@x', 'carl', 3)")
            .await
            .expect("a dropped constraint claims nothing");
        assert_eq!(
            sqlstate(&c, "INSERT INTO users VALUES (7, NULL, 'ann', 1)").await,
            "23505"
        );
    });
}

/// Every foreign key, as `pg_get_constraintdef` shows it.
async fn foreign_keys(client: &tokio_postgres::Client) -> Vec<String> {
    rows(
        client,
        "SELECT conrelid::regclass, conname, pg_get_constraintdef(oid) FROM pg_constraint
         WHERE contype = 'f' ORDER BY conname",
    )
    .await
}

#[test]
fn foreign_keys_survive_restarts_and_are_kept_after_them() {
    let dir = Dir(std::env::temp_dir().join(format!("overtake-kept-fk-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    // The referencing table is created first in name order: restoring must not need the
    // referenced one yet.
    let (db, before) = with_server(open(&dir), |c| async move {
        c.batch_execute(
            "CREATE TABLE b_parent (id int PRIMARY KEY, code text UNIQUE);
             CREATE TABLE a_child (id int PRIMARY KEY, p int REFERENCES b_parent ON DELETE CASCADE,
                 code text, CONSTRAINT by_code FOREIGN KEY (code) REFERENCES b_parent (code));
             CREATE TABLE tree (id int PRIMARY KEY, up int REFERENCES tree);
             INSERT INTO b_parent VALUES (1, 'x'), (2, 'y');
             INSERT INTO a_child VALUES (10, 1, 'x'), (11, 2, NULL);
             INSERT INTO tree VALUES (1, NULL), (2, 1);",
        )
        .await
        .expect("setup");
        foreign_keys(&c).await
    });
    assert_eq!(before.len(), 3, "{before:?}");
    drop(db);

    let (db, ()) = with_server(open(&dir), |c| async move {
        assert_eq!(foreign_keys(&c).await, before);
        for refused in [
            "INSERT INTO a_child VALUES (12, 3, NULL)",
            "INSERT INTO a_child VALUES (12, NULL, 'z')",
            "UPDATE b_parent SET code = 'w' WHERE id = 1",
            "INSERT INTO tree VALUES (3, 9)",
        ] {
            assert_eq!(sqlstate(&c, refused).await, "23503", "{refused}");
        }
        c.batch_execute("DELETE FROM b_parent WHERE id = 2")
            .await
            .expect("a cascade");
        assert_eq!(rows(&c, "SELECT id FROM a_child").await, ["10"]);
        c.batch_execute("ALTER TABLE a_child DROP CONSTRAINT by_code")
            .await
            .expect("drop one");
    });
    db.checkpoint().expect("checkpoint");
    drop(db);

    with_server(open(&dir), |c| async move {
        assert_eq!(foreign_keys(&c).await.len(), 2);
        c.batch_execute("INSERT INTO a_child VALUES (13, NULL, 'nowhere')")
            .await
            .expect("the dropped constraint checks nothing");
        assert_eq!(sqlstate(&c, "DELETE FROM tree WHERE id = 1").await, "23503");
    });
}
