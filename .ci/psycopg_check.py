"""A Python application against Overtake through psycopg 3 (Debian's python3-psycopg): server-side
parameters (the extended protocol), types both ways, a transaction retried on a serialization
failure (40001), and a session priority. Exits non-zero on the first mismatch."""

import datetime
import decimal
import sys

import psycopg
from psycopg import errors

DSN = sys.argv[1] if len(sys.argv) > 1 else "host=127.0.0.1 port=5433 user=app dbname=app"


def check(what, got, want):
    if got != want:
        sys.exit(f"psycopg check failed: {what}: got {got!r}, want {want!r}")
    print(f"ok: {what}")


with psycopg.connect(DSN, autocommit=True) as conn:
    conn.execute("drop table if exists py_accounts")
    conn.execute(
        "create table py_accounts (id bigint primary key, owner text not null,"
        " balance numeric(12,2), active boolean, rate double precision, opened timestamp)"
    )
    opened = datetime.datetime(2026, 11, 27, 12, 30, 15, 250000)
    with conn.cursor() as cur:
        cur.executemany(
            "insert into py_accounts values (%s, %s, %s, %s, %s, %s)",
            [
                (1, "ada", decimal.Decimal("100.50"), True, 0.25, opened),
                (2, "bob", decimal.Decimal("7.00"), False, None, opened),
                (3, "cy", None, None, 1.5, None),
            ],
        )
        cur.execute("select owner, balance, active, rate, opened from py_accounts where id = %s", (1,))
        check("a row read back by a parameter", cur.fetchone(),
              ("ada", decimal.Decimal("100.50"), True, 0.25, opened))
        cur.execute("select count(*) from py_accounts where balance > %s and active", (decimal.Decimal("50"),))
        check("a numeric parameter in a predicate", cur.fetchone()[0], 1)
        cur.execute("select id from py_accounts where balance is null or rate is null order by id")
        check("NULLs", [r[0] for r in cur.fetchall()], [2, 3])
        try:
            cur.execute("insert into py_accounts values (%s, %s, %s, %s, %s, %s)", (1, "dup", 0, True, 0, None))
            sys.exit("psycopg check failed: a duplicate key was accepted")
        except errors.UniqueViolation:
            print("ok: a duplicate key is a UniqueViolation (23505)")
        try:
            cur.execute("insert into py_accounts (id, owner) values (%s, %s)", (9, None))
            sys.exit("psycopg check failed: NULL accepted in a NOT NULL column")
        except errors.NotNullViolation:
            print("ok: NULL in a NOT NULL column is a NotNullViolation (23502)")

        # A numeric of any precision keeps every digit, sent as text and read back in binary.
        exact = decimal.Decimal("-12345678901234567890.123456789012345678901234567890")
        cur.execute("drop table if exists py_exact")
        cur.execute("create table py_exact (id int primary key, v numeric)")
        cur.execute("insert into py_exact values (%s, %s)", (1, exact))
        cur.execute("select v, v / 3 from py_exact", binary=True)
        check("a numeric of 50 digits, and a quotient of it", cur.fetchone(),
              (exact, decimal.Decimal("-4115226300411522630.041152263004115226300411522630")))

    conn.execute("set priority = 'high'")
    check("SET priority", conn.execute("show priority").fetchone()[0], "high")

# A lost-update race under REPEATABLE READ: the second writer fails with 40001 and its retry
# succeeds, as an application written for PostgreSQL expects.
a = psycopg.connect(DSN)
b = psycopg.connect(DSN)
for c in (a, b):
    c.execute("set transaction isolation level repeatable read")
a.execute("select balance from py_accounts where id = 2").fetchone()
b.execute("select balance from py_accounts where id = 2").fetchone()
a.execute("update py_accounts set balance = balance + 1 where id = 2")
a.commit()
retries = 0
while True:
    try:
        b.execute("update py_accounts set balance = balance + 10 where id = 2")
        b.commit()
        break
    except errors.SerializationFailure:
        b.rollback()
        retries += 1
        if retries > 3:
            sys.exit("psycopg check failed: the retry kept failing")
check("a serialization failure retried", retries, 1)
check("both updates kept", a.execute("select balance from py_accounts where id = 2").fetchone()[0],
      decimal.Decimal("18.00"))
a.close()
b.close()
# A server-side (named) cursor: DECLARE with a parameter, FETCH in batches, MOVE (scroll),
# CLOSE; the rows of a result larger than one batch arrive in order.
with psycopg.connect(DSN) as conn:
    conn.execute("create table py_many (id int primary key, v text)")
    conn.execute("insert into py_many select g, 'v' || g from generate_series(1, 1000) g")
    conn.commit()
    with conn.cursor(name="many") as cur:
        cur.itersize = 64
        cur.execute("select id, v from py_many where id > %s order by id", (10,))
        check("server cursor description", cur.description[1].name, "v")
        check("server cursor first row", cur.fetchone(), (11, "v11"))
        cur.scroll(9)
        check("server cursor after a move", cur.fetchmany(2), [(21, "v21"), (22, "v22")])
        check("server cursor the rest", [r[0] for r in cur], list(range(23, 1001)))
    conn.commit()
    # WITH HOLD: fetched after its transaction committed.
    with conn.cursor(name="held", withhold=True) as cur:
        cur.execute("select id from py_many where id <= 5 order by id")
        conn.commit()
        check("held cursor after commit", [r[0] for r in cur.fetchall()], [1, 2, 3, 4, 5])
# COPY both ways, in text and in binary, with psycopg's COPY API.
with psycopg.connect(DSN, autocommit=True) as conn:
    conn.execute("create table py_copy (id int primary key, t text, n numeric(10, 2), at timestamp)")
    when = datetime.datetime(2024, 5, 6, 7, 8, 9)
    with conn.cursor() as cur:
        with cur.copy("copy py_copy from stdin (format binary)") as cp:
            cp.set_types(["int4", "text", "numeric", "timestamp"])
            for i in range(500):
                cp.write_row((i, f"tab\there {i}" if i % 5 else None, decimal.Decimal(i) / 4, when))
        check("binary COPY FROM count", cur.rowcount, 500)
        with cur.copy("copy py_copy (id, t) from stdin") as cp:
            cp.write_row((500, "back\\slash\nnewline"))
        with cur.copy("copy (select * from py_copy where id in (1, 500) order by id) to stdout") as cp:
            got = list(cp.rows())
        check("text COPY TO", got, [("1", "tab\there 1", "0.25", "2024-05-06 07:08:09"),
                                    ("500", "back\\slash\nnewline", None, None)])
        with cur.copy("copy py_copy to stdout (format binary)") as cp:
            cp.set_types(["int4", "text", "numeric", "timestamp"])
            got = sorted(cp.rows(), key=lambda r: r[0])
        check("binary COPY TO rows", len(got), 501)
        check("binary COPY TO a row", got[10], (10, None, decimal.Decimal("2.50"), when))
print("psycopg: all checks passed")
