//! Dates, timestamps and uuids in the binary format, as drivers that ask for it (asyncpg, pgx,
//! JDBC) send and read them: days and microseconds since 2000-01-01, 16 bytes, both ways.

use crate::common;

use std::error::Error;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_postgres::NoTls;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

/// A value the binary format carries as one big-endian integer of type `$int`, for the
/// PostgreSQL type `$pg`.
macro_rules! big_endian_value {
    ($(#[$doc:meta])* $name:ident($int:ty), $pg:expr) => {
        $(#[$doc])*
        #[derive(Debug, PartialEq)]
        struct $name($int);

        impl<'a> FromSql<'a> for $name {
            fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
                Ok($name(<$int>::from_be_bytes(raw.try_into()?)))
            }

            fn accepts(ty: &Type) -> bool {
                *ty == $pg
            }
        }

        impl ToSql for $name {
            fn to_sql(
                &self,
                _: &Type,
                out: &mut bytes::BytesMut,
            ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
                out.extend_from_slice(&self.0.to_be_bytes());
                Ok(IsNull::No)
            }

            fn accepts(ty: &Type) -> bool {
                *ty == $pg
            }

            to_sql_checked!();
        }
    };
}

big_endian_value!(
    /// A date as the binary format carries it: days since 2000-01-01.
    Days(i32),
    Type::DATE
);
big_endian_value!(
    /// A time of day as the binary format carries it: microseconds since midnight.
    Clock(i64),
    Type::TIME
);

big_endian_value!(
    /// A uuid as the binary format carries it: its 128 bits.
    Uuid(u128),
    Type::UUID
);

/// An interval as the binary format carries it: microseconds, days, months.
#[derive(Debug, PartialEq)]
struct Span(i64, i32, i32);

impl<'a> FromSql<'a> for Span {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Span(
            i64::from_be_bytes(raw[..8].try_into()?),
            i32::from_be_bytes(raw[8..12].try_into()?),
            i32::from_be_bytes(raw[12..16].try_into()?),
        ))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
}

impl ToSql for Span {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.0.to_be_bytes());
        out.extend_from_slice(&self.1.to_be_bytes());
        out.extend_from_slice(&self.2.to_be_bytes());
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }

    to_sql_checked!();
}

#[test]
fn times_of_day_round_trip_in_binary_and_past_a_day_are_refused() {
    let server = common::TestServer::start();
    common::runtime().block_on(async {
        let client = common::connect(&server.dsn("clock")).await;
        client
            .batch_execute("CREATE TABLE tv (id int PRIMARY KEY, at time)")
            .await
            .expect("create");
        // 12:34:56.789, and 24:00:00 (a day's end, which time holds).
        for (id, micros) in [(1, 45_296_789_000i64), (2, 86_400_000_000)] {
            client
                .execute("INSERT INTO tv VALUES ($1, $2)", &[&id, &Clock(micros)])
                .await
                .expect("insert");
        }
        let rows = client
            .query("SELECT at, CAST(at AS text) FROM tv ORDER BY id", &[])
            .await
            .expect("select");
        assert_eq!(rows[0].get::<_, Clock>(0), Clock(45_296_789_000));
        assert_eq!(rows[0].get::<_, String>(1), "12:34:56.789");
        assert_eq!(rows[1].get::<_, String>(1), "24:00:00");
        let e = client
            .execute("INSERT INTO tv VALUES (3, $1)", &[&Clock(86_400_000_001)])
            .await
            .expect_err("past a day");
        assert_eq!(e.code().map(|c| c.code()), Some("22008"));
    });
}

#[test]
fn dates_and_timestamps_round_trip_in_binary() {
    let server = common::TestServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&server.dsn("binary"), NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        client
            .batch_execute(
                "CREATE TABLE bv (id int PRIMARY KEY, day date, at timestamptz, local timestamp)",
            )
            .await
            .expect("create");
        // 2024-02-29 12:34:56.789 UTC; 2024-02-29 is day 8,825 after 2000-01-01.
        let at = UNIX_EPOCH + Duration::from_micros(1_709_210_096_789_000);
        client
            .execute(
                "INSERT INTO bv VALUES (1, $1, $2, $3)",
                &[&Days(8_825), &at, &at],
            )
            .await
            .expect("insert");
        let row = client
            .query_one(
                "SELECT day, at, local, CAST(day AS text), CAST(at AS text) FROM bv",
                &[],
            )
            .await
            .expect("select");
        assert_eq!(row.get::<_, Days>(0), Days(8_825));
        assert_eq!(row.get::<_, SystemTime>(1), at);
        assert_eq!(row.get::<_, SystemTime>(2), at);
        assert_eq!(row.get::<_, String>(3), "2024-02-29");
        assert_eq!(row.get::<_, String>(4), "2024-02-29 12:34:56.789+00");
        // An interval parameter moves a timestamp; one comes back as PostgreSQL sends it.
        let row = client
            .query_one(
                "SELECT CAST(local + $1 AS text), local - CAST('2024-02-28' AS timestamp) FROM bv",
                &[&Span(3_600_000_000, 1, 1)],
            )
            .await
            .expect("interval");
        assert_eq!(row.get::<_, String>(0), "2024-03-30 13:34:56.789");
        assert_eq!(row.get::<_, Span>(1), Span(45_296_789_000, 1, 0));
    });
}

#[test]
fn uuids_round_trip_in_binary_and_read_as_their_canonical_text() {
    let server = common::TestServer::start();
    common::runtime().block_on(async {
        let client = common::connect(&server.dsn("uuid")).await;
        client
            .batch_execute("CREATE TABLE uv (id uuid PRIMARY KEY, n int)")
            .await
            .expect("create");
        let bits = 0xa0ee_bc99_9c0b_4ef8_bb6d_6bb9_bd38_0a11_u128;
        client
            .execute("INSERT INTO uv VALUES ($1, 1)", &[&Uuid(bits)])
            .await
            .expect("insert");
        let row = client
            .query_one(
                "SELECT id, CAST(id AS text) FROM uv WHERE id = $1",
                &[&Uuid(bits)],
            )
            .await
            .expect("select");
        assert_eq!(row.get::<_, Uuid>(0), Uuid(bits));
        assert_eq!(
            row.get::<_, String>(1),
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        );
        // A new one is version 4, variant 10.
        let row = client
            .query_one("SELECT gen_random_uuid()", &[])
            .await
            .expect("generate");
        let Uuid(made) = row.get(0);
        assert_eq!((made >> 76) & 0xF, 4);
        assert_eq!((made >> 62) & 0b11, 0b10);
    });
}
