//! Who may raise priority, over the wire: with authentication, only a superuser or a member of
//! `overtake_priority` runs above the default priority (by SET, SET LOCAL, the startup options
//! or a role default it sets), only a superuser grants that, and a role changes only its own
//! defaults unless it is a superuser.

mod common;

use tokio_postgres::{Client, NoTls};

#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

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

#[test]
fn raising_priority_takes_a_privilege_a_superuser_grants() {
    let dir = std::env::temp_dir().join(format!("overtake-privileges-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("passwords");
    std::fs::write(&file, "postgres:root\nalice:a\nbob:b\n").expect("write");
    let config = overtake_server::ServerConfig {
        password_file: Some(file),
        ..Default::default()
    };
    let server = common::TestServer::start_with(config, overtake_engine::Options::default());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let connect = |user: &str, password: &str, options: &str| {
            let dsn = format!(
                "{} password={password} options='{options}'",
                server.dsn(user)
            );
            async move {
                let (client, connection) = tokio_postgres::connect(&dsn, NoTls).await?;
                tokio::spawn(connection);
                Ok::<Client, tokio_postgres::Error>(client)
            }
        };
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
    let _ = std::fs::remove_dir_all(&dir);
}
