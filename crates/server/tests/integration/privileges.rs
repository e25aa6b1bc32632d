//! Who may raise priority, over the wire: with authentication, only a superuser or a member of
//! `overtake_priority` runs above the default priority (by SET, SET LOCAL, the startup options
//! or a role default it sets), only a superuser grants that, and a role changes only its own
//! defaults unless it is a superuser.

use crate::common;

use tokio_postgres::{Client, NoTls};

fn code(e: &tokio_postgres::Error) -> Option<&str> {
    e.code().map(|c| c.code())
}

async fn show(c: &Client, what: &str) -> String {
    let messages = c.simple_query(&format!("SHOW {what}")).await.expect("show");
    messages
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        })
        .expect("a row")
}

/// A server that authenticates with `passwords` (a password file's text; the file is gone once
/// the server has read it) and `config`'s other settings, and a runtime for its clients.
fn authenticating(
    passwords: &str,
    config: overtake_server::ServerConfig,
) -> (common::TestServer, tokio::runtime::Runtime) {
    static FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = std::env::temp_dir().join(format!("overtake-privileges-{}-{n}", std::process::id()));
    std::fs::write(&file, passwords).expect("write the password file");
    let config = overtake_server::ServerConfig {
        password_file: Some(file.clone()),
        ..config
    };
    let server = common::TestServer::start_with(config, overtake_engine::Options::default());
    let _ = std::fs::remove_file(&file);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    (server, runtime)
}

/// Logs in to `server` as `user` with `password` and startup `options`.
fn login(
    server: &common::TestServer,
    user: &str,
    password: &str,
    options: &str,
) -> impl std::future::Future<Output = Result<Client, tokio_postgres::Error>> + use<> {
    let dsn = format!(
        "{} password={password} options='{options}'",
        server.dsn(user)
    );
    async move {
        let (client, connection) = tokio_postgres::connect(&dsn, NoTls).await?;
        tokio::spawn(connection);
        Ok(client)
    }
}

#[test]
fn raising_priority_takes_a_privilege_a_superuser_grants() {
    let (server, runtime) = authenticating("postgres:root\nalice:a\nbob:b\n", Default::default());
    runtime.block_on(async {
        let connect =
            |user: &str, password: &str, options: &str| login(&server, user, password, options);
        let root = connect("postgres", "root", "").await.expect("postgres");
        let alice = connect("alice", "a", "").await.expect("alice");
        assert_eq!(show(&root, "is_superuser").await, "on");
        assert_eq!(show(&alice, "is_superuser").await, "off");
        // Lowering is free; raising is not.
        alice
            .batch_execute("SET priority = 'background'")
            .await
            .expect("lower");
        for sql in [
            "SET priority = 'urgent'",
            "SET task_weight = 1000",
            "BEGIN; SET LOCAL priority = 'high'",
            "ALTER ROLE alice SET priority = 'high'",
            "SELECT set_config('priority', 'high', false)",
        ] {
            let e = alice.batch_execute(sql).await.expect_err(sql);
            assert_eq!(code(&e), Some("42501"), "{sql}");
            let _ = alice.batch_execute("ROLLBACK").await;
        }
        let Err(e) = connect("alice", "a", "-c priority=urgent").await else {
            panic!("a raised priority at startup is refused");
        };
        assert_eq!(code(&e), Some("42501"));
        // Another role's defaults are a superuser's to change.
        let e = alice
            .batch_execute("ALTER ROLE bob SET priority = 'background'")
            .await
            .expect_err("alice alters bob");
        assert_eq!(code(&e), Some("42501"));
        let e = alice
            .batch_execute("GRANT overtake_priority TO alice")
            .await
            .expect_err("alice grants herself");
        assert_eq!(code(&e), Some("42501"));
        // A superuser's grant and role default, then a revoke.
        root.batch_execute(
            "GRANT overtake_priority TO alice; ALTER ROLE bob SET priority = 'high'",
        )
        .await
        .expect("the superuser grants");
        alice
            .batch_execute("SET priority = 'urgent'")
            .await
            .expect("granted");
        assert_eq!(show(&alice, "priority").await, "urgent");
        alice
            .batch_execute("SELECT set_config('priority', 'high', false)")
            .await
            .expect("granted, through set_config");
        assert_eq!(show(&alice, "priority").await, "high");
        let bob = connect("bob", "b", "").await.expect("bob");
        assert_eq!(show(&bob, "priority").await, "high");
        root.batch_execute("REVOKE overtake_priority FROM alice")
            .await
            .expect("revoke");
        let e = alice
            .batch_execute("SET priority = 'high'")
            .await
            .expect_err("revoked");
        assert_eq!(code(&e), Some("42501"));
    });
}

/// Runs `sql`, which must fail with `expected`; returns the error's message.
async fn refused(c: &Client, sql: &str, expected: &str) -> String {
    let e = c.batch_execute(sql).await.expect_err(sql);
    assert_eq!(code(&e), Some(expected), "{sql}: {e}");
    e.as_db_error()
        .map(|d| d.message().to_owned())
        .unwrap_or_default()
}

/// Table privileges as PostgreSQL's: a table belongs to the role that created it; others may
/// do only what they were granted (or PUBLIC was), checked each time a statement runs; only the
/// owner or a superuser drops, alters, indexes and grants; grants commit and roll back with
/// their block.
#[test]
fn tables_belong_to_their_owner_and_grants_decide_the_rest() {
    let (server, runtime) = authenticating("postgres:root\nalice:a\nbob:b\n", Default::default());
    runtime.block_on(async {
        let connect = |user: &str, password: &str| login(&server, user, password, "");
        let root = connect("postgres", "root").await.expect("postgres");
        let alice = connect("alice", "a").await.expect("alice");
        let bob = connect("bob", "b").await.expect("bob");
        alice
            .batch_execute(
                "CREATE TABLE acl_t (k int PRIMARY KEY, v int); INSERT INTO acl_t VALUES (1, 1)",
            )
            .await
            .expect("alice creates her table");
        let denied = refused(&bob, "SELECT * FROM acl_t", "42501").await;
        assert_eq!(denied, "permission denied for table acl_t");
        for sql in [
            "INSERT INTO acl_t VALUES (2, 2)",
            "UPDATE acl_t SET v = 2",
            "DELETE FROM acl_t",
            "TRUNCATE acl_t",
            "SELECT * FROM acl_t FOR UPDATE",
            "GRANT SELECT ON acl_t TO bob",
            "EXPLAIN SELECT * FROM acl_t",
            // Wherever a query reads the table: derived tables, subqueries, set operations.
            "SELECT * FROM (SELECT * FROM acl_t) t",
            "SELECT (SELECT max(v) FROM acl_t)",
            "SELECT 1 WHERE EXISTS (SELECT 1 FROM acl_t)",
            "SELECT 1 WHERE 1 IN (SELECT k FROM acl_t)",
            "SELECT 1 UNION SELECT k FROM acl_t",
            "SELECT ARRAY(SELECT k FROM acl_t)",
        ] {
            refused(&bob, sql, "42501").await;
        }
        // A misspelt column is reported before the privilege, as PostgreSQL binds first.
        refused(&bob, "SELECT nope FROM acl_t", "42703").await;
        for sql in [
            "DROP TABLE acl_t",
            "CREATE INDEX acl_v ON acl_t (k)",
            "ALTER TABLE acl_t ADD PRIMARY KEY (k)",
            "ALTER TABLE acl_t ADD UNIQUE (v)",
            "ALTER TABLE acl_t DROP CONSTRAINT nope",
        ] {
            let message = refused(&bob, sql, "42501").await;
            assert_eq!(message, "must be owner of table acl_t", "{sql}");
        }
        let message = refused(&bob, "DROP INDEX acl_t_pkey", "42501").await;
        assert_eq!(message, "must be owner of index acl_t_pkey");
        // A prepared statement obeys the grants of the moment it runs.
        alice
            .batch_execute("GRANT SELECT, UPDATE ON acl_t, acl_t TO bob")
            .await
            .expect("grant");
        let select = bob
            .prepare("SELECT v FROM acl_t WHERE k = $1")
            .await
            .expect("prepare");
        assert_eq!(
            bob.query(&select, &[&1i32]).await.expect("granted").len(),
            1
        );
        bob.batch_execute("UPDATE acl_t SET v = v + 1 WHERE k = 1")
            .await
            .expect("UPDATE with SELECT");
        alice
            .batch_execute("REVOKE SELECT ON acl_t FROM bob")
            .await
            .expect("revoke");
        let e = bob.query(&select, &[&1i32]).await.expect_err("revoked");
        assert_eq!(code(&e), Some("42501"));
        // UPDATE alone updates, but reading a column takes SELECT.
        bob.batch_execute("UPDATE acl_t SET v = 5")
            .await
            .expect("UPDATE alone");
        refused(&bob, "UPDATE acl_t SET v = v + 1", "42501").await;
        refused(&bob, "UPDATE acl_t SET v = 5 WHERE k = 1", "42501").await;
        // PUBLIC is everyone; a grant rolled back never was.
        alice
            .batch_execute("BEGIN; GRANT INSERT ON acl_t TO PUBLIC; ROLLBACK")
            .await
            .expect("rolled back");
        refused(&bob, "INSERT INTO acl_t VALUES (3, 3)", "42501").await;
        alice
            .batch_execute("GRANT INSERT ON TABLE acl_t TO PUBLIC")
            .await
            .expect("to PUBLIC");
        bob.batch_execute("INSERT INTO acl_t VALUES (3, 3)")
            .await
            .expect("PUBLIC may insert");
        // ON CONFLICT with a target reads its columns (SELECT); DO UPDATE updates (UPDATE).
        bob.batch_execute("INSERT INTO acl_t VALUES (3, 3) ON CONFLICT DO NOTHING")
            .await
            .expect("no target: INSERT alone");
        for sql in [
            "INSERT INTO acl_t VALUES (3, 3) ON CONFLICT (k) DO NOTHING",
            "INSERT INTO acl_t VALUES (3, 3) ON CONFLICT (k) DO UPDATE SET v = 4",
        ] {
            refused(&bob, sql, "42501").await;
        }
        // Roles must exist; privileges must be a table's.
        refused(&alice, "GRANT SELECT ON acl_t TO nobody", "42704").await;
        let message = refused(&alice, "GRANT USAGE ON acl_t TO bob", "0LP01").await;
        assert_eq!(message, "invalid privilege type USAGE for table");
        // Ownership moves only by a superuser (or to oneself); the new owner may then drop.
        let message = refused(&alice, "ALTER TABLE acl_t OWNER TO bob", "42501").await;
        assert_eq!(message, "must be member of role \"bob\"");
        root.batch_execute("SELECT * FROM acl_t; ALTER TABLE acl_t OWNER TO bob")
            .await
            .expect("a superuser may do anything");
        refused(&alice, "SELECT * FROM acl_t", "42501").await;
        root.batch_execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO alice")
            .await
            .expect("every table");
        alice
            .batch_execute("SELECT * FROM acl_t")
            .await
            .expect("granted with every table");
        bob.batch_execute("CREATE INDEX acl_v ON acl_t (k); TRUNCATE acl_t; DROP TABLE acl_t")
            .await
            .expect("the new owner");
    });
}

/// The last `superuser_reserved_connections` places are a superuser's, as PostgreSQL keeps
/// them: a role that is not one is refused with 53300 when only they are left.
#[test]
fn the_last_connection_places_are_kept_for_superusers() {
    let (server, runtime) = authenticating(
        "postgres:root\nalice:a\n",
        overtake_server::ServerConfig {
            max_connections: 3,
            superuser_reserved_connections: 1,
            ..Default::default()
        },
    );
    runtime.block_on(async {
        let connect = |user: &str, password: &str| login(&server, user, password, "");
        let _first = connect("alice", "a").await.expect("first");
        let _second = connect("alice", "a").await.expect("second");
        let Err(e) = connect("alice", "a").await else {
            panic!("the reserved place was given to a role that is not a superuser");
        };
        assert_eq!(code(&e), Some("53300"));
        let message = e.as_db_error().map(|d| d.message().to_owned());
        assert_eq!(
            message.as_deref(),
            Some(
                "remaining connection slots are reserved for non-replication superuser connections"
            )
        );
        let root = connect("postgres", "root")
            .await
            .expect("a superuser's place");
        root.batch_execute("SELECT 1").await.expect("served");
        let Err(e) = connect("postgres", "root").await else {
            panic!("past max_connections");
        };
        assert_eq!(code(&e), Some("53300"));
    });
}

/// Roles kept in the database, as PostgreSQL's: a superuser creates, changes and drops them
/// (in the block's transaction), a role changes only its own password, a role that owns a table
/// cannot be dropped, and logins check the kept SCRAM verifier.
#[test]
fn roles_are_created_altered_and_dropped_as_postgresql_does() {
    let (server, runtime) = authenticating("postgres:root\nalice:a\n", Default::default());
    runtime.block_on(async {
        let connect = |user: &str, password: &str| login(&server, user, password, "");
        let root = connect("postgres", "root").await.expect("postgres");
        let alice = connect("alice", "a").await.expect("alice");
        // A role created in a block that rolls back never was.
        root.batch_execute("BEGIN; CREATE ROLE carol LOGIN PASSWORD 'c'; ROLLBACK")
            .await
            .expect("rolled back");
        let Err(e) = connect("carol", "c").await else {
            panic!("a role created in a rolled-back block logged in");
        };
        assert_eq!(code(&e), Some("28P01"));
        root.batch_execute(
            "CREATE ROLE carol WITH LOGIN PASSWORD 'c'; CREATE USER dave WITH PASSWORD 'd';
             CREATE ROLE readers",
        )
        .await
        .expect("created");
        refused(&root, "CREATE ROLE carol", "42710").await;
        let carol = connect("carol", "c").await.expect("carol logs in");
        assert!(connect("carol", "wrong").await.is_err());
        connect("dave", "d").await.expect("a user may log in");
        let Err(e) = connect("readers", "r").await else {
            panic!("a role without LOGIN logged in");
        };
        assert_eq!(code(&e), Some("28000"));
        // Only a superuser makes roles; a role changes its own password and nothing else.
        refused(&alice, "CREATE ROLE eve", "42501").await;
        let message = refused(&alice, "ALTER ROLE alice SUPERUSER", "42501").await;
        assert_eq!(
            message,
            "must be superuser to alter superuser roles or change superuser attribute"
        );
        refused(&alice, "ALTER ROLE alice NOLOGIN", "42501").await;
        refused(&alice, "ALTER ROLE carol PASSWORD 'x'", "42501").await;
        refused(&alice, "DROP ROLE carol", "42501").await;
        alice
            .batch_execute("ALTER ROLE alice WITH PASSWORD 'a2'")
            .await
            .expect("her own password");
        assert!(connect("alice", "a").await.is_err());
        connect("alice", "a2").await.expect("the new password");
        // A new role can be granted to; one that owns a table cannot be dropped.
        carol
            .batch_execute("CREATE TABLE carols (k int PRIMARY KEY)")
            .await
            .expect("carol's table");
        carol
            .batch_execute("GRANT SELECT ON carols TO dave")
            .await
            .expect("granted to a created role");
        refused(&root, "DROP ROLE carol", "2BP01").await;
        refused(&root, "DROP ROLE dave", "2BP01").await;
        refused(&root, "DROP ROLE ghost", "42704").await;
        refused(&root, "DROP ROLE postgres", "55006").await;
        root.batch_execute("DROP TABLE carols; DROP ROLE IF EXISTS carol, dave, ghost")
            .await
            .expect("dropped");
        assert!(connect("carol", "c").await.is_err());
        // A superuser made by SQL is one at its next login.
        root.batch_execute("ALTER ROLE alice SUPERUSER")
            .await
            .expect("superuser");
        let alice = connect("alice", "a2").await.expect("alice");
        assert_eq!(show(&alice, "is_superuser").await, "on");
    });
}

/// The session's process id (`pg_backend_pid()`).
async fn pid(c: &Client) -> i32 {
    c.query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0)
}

/// Who may signal whom, as PostgreSQL's `pg_cancel_backend`/`pg_terminate_backend`: a
/// superuser anyone, another role only its own role's sessions and never a superuser's.
#[test]
fn a_role_signals_only_its_own_sessions() {
    let (server, runtime) = authenticating("postgres:root\nalice:a\nbob:b\n", Default::default());
    runtime.block_on(async {
        let connect = |user: &str, password: &str| login(&server, user, password, "");
        let root = connect("postgres", "root").await.expect("postgres");
        let alice = connect("alice", "a").await.expect("alice");
        let alice2 = connect("alice", "a").await.expect("alice again");
        let bob = connect("bob", "b").await.expect("bob");
        let (root_pid, alice2_pid, bob_pid) =
            (pid(&root).await, pid(&alice2).await, pid(&bob).await);
        let message = refused(
            &alice,
            &format!("SELECT pg_cancel_backend({root_pid})"),
            "42501",
        )
        .await;
        assert_eq!(message, "must be a superuser to cancel superuser query");
        refused(
            &alice,
            &format!("SELECT pg_terminate_backend({bob_pid})"),
            "42501",
        )
        .await;
        let own: bool = alice
            .query_one(&format!("SELECT pg_cancel_backend({alice2_pid})"), &[])
            .await
            .expect("her own session")
            .get(0);
        assert!(own);
        let any: bool = root
            .query_one(&format!("SELECT pg_cancel_backend({bob_pid})"), &[])
            .await
            .expect("a superuser's")
            .get(0);
        assert!(any);
    });
}
