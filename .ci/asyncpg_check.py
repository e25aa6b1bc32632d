"""asyncpg, unchanged, against a server: it speaks the binary format for every value and
prepares every statement. Parameters and results of each type, executemany, transactions with
savepoints, error codes and a pool. (Arrays other than text[] are left out: asyncpg reads their
codecs with a catalog query Overtake cannot bind yet, README limitations.)

Usage: asyncpg_check.py DSN
"""

import asyncio
import datetime
import decimal
import io
import sys
import uuid

import asyncpg


def ok(what, got, want):
    if got != want:
        sys.exit(f"FAIL: {what}: got {got!r}, want {want!r}")
    print(f"ok: {what}")


async def main(dsn):
    c = await asyncpg.connect(dsn)
    await c.execute("DROP TABLE IF EXISTS apg_event")
    await c.execute(
        """CREATE TABLE apg_event (id bigserial PRIMARY KEY, kind varchar(20) NOT NULL, at timestamptz,
           day date, amount numeric(12,3), ratio double precision, small smallint,
           ok boolean, ref uuid, tags text[], code char(4))"""
    )
    row = (
        "deploy",
        datetime.datetime(2026, 12, 2, 10, 30, 15, 123456, tzinfo=datetime.timezone.utc),
        datetime.date(2026, 12, 2),
        decimal.Decimal("1234.567"),
        0.25,
        7,
        True,
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        ["a", "b"],
        "ab",
    )
    new_id = await c.fetchval(
        "INSERT INTO apg_event (kind, at, day, amount, ratio, small, ok, ref, tags, code)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        *row,
    )
    ok("RETURNING a bigserial", new_id, 1)
    got = await c.fetchrow(
        "SELECT kind, at, day, amount, ratio, small, ok, ref, tags, code FROM apg_event WHERE id = $1",
        new_id,
    )
    expected = row[:9] + ("ab  ",)
    for name, value, want in zip(got.keys(), got.values(), expected):
        ok(f"{name} through the binary format", value, want)

    # No column holds an interval here (README): one as a parameter and a result.
    ok(
        "an interval both ways",
        await c.fetchval("SELECT $1::interval + interval '1 hour'", datetime.timedelta(days=1, seconds=5)),
        datetime.timedelta(days=1, seconds=3605),
    )
    await c.executemany(
        "INSERT INTO apg_event (kind, amount) VALUES ($1, $2)",
        [(f"k{i}", decimal.Decimal(i)) for i in range(50)],
    )
    ok("executemany", await c.fetchval("SELECT count(*) FROM apg_event"), 51)
    ok(
        "= ANY of an array parameter",
        await c.fetch("SELECT kind FROM apg_event WHERE kind = ANY($1::text[]) ORDER BY kind", ["k1", "k3", "x"]),
        [("k1",), ("k3",)],
    )
    ok("an aggregate", await c.fetchval("SELECT sum(amount) FROM apg_event WHERE kind LIKE 'k%'"),
       decimal.Decimal("1225.000"))

    async with c.transaction():
        await c.execute("INSERT INTO apg_event (kind) VALUES ('outer')")
        try:
            async with c.transaction():  # a savepoint
                await c.execute("INSERT INTO apg_event (kind) VALUES ('inner')")
                await c.execute("INSERT INTO apg_event (kind) VALUES (NULL)")
        except asyncpg.NotNullViolationError as e:
            ok("a not-null violation: 23502", e.sqlstate, "23502")
    ok(
        "the savepoint rolled back, the transaction kept",
        await c.fetch("SELECT kind FROM apg_event WHERE kind IN ('outer', 'inner')"),
        [("outer",)],
    )
    try:
        await c.execute("SELECT 1/0")
    except asyncpg.DivisionByZeroError as e:
        ok("division by zero: 22012", e.sqlstate, "22012")

    pool = await asyncpg.create_pool(dsn, min_size=2, max_size=4)

    async def bump():
        async with pool.acquire() as p:
            await p.execute("UPDATE apg_event SET small = small + 1 WHERE id = 1")

    await asyncio.gather(*(bump() for _ in range(30)))
    ok("30 concurrent increments through a pool", await pool.fetchval("SELECT small FROM apg_event WHERE id = 1"), 37)
    await pool.close()

    # Binary COPY both ways: copy_records_to_table and copy_from_query.
    records = [
        (i, "bulk", row[1], row[2], decimal.Decimal(i) / 8, i / 2, i % 100, i % 2 == 0, None, ["x"], None)
        for i in range(1000, 3000)
    ]
    status = await c.copy_records_to_table(
        "apg_event",
        records=records,
        columns=["id", "kind", "at", "day", "amount", "ratio", "small", "ok", "ref", "tags", "code"],
    )
    ok("copy_records_to_table", status, "COPY 2000")
    ok("the copied rows", await c.fetchval("SELECT sum(amount) FROM apg_event WHERE kind = 'bulk'"),
       sum(r[4] for r in records))
    out = io.BytesIO()
    status = await c.copy_from_query(
        "SELECT id, kind FROM apg_event WHERE kind IN ('deploy', 'bulk') AND id < 1003 ORDER BY id", output=out, format="csv"
    )
    ok("copy_from_query in csv", (status, out.getvalue()), ("COPY 4", b"1,deploy\n1000,bulk\n1001,bulk\n1002,bulk\n"))
    await c.execute("DROP TABLE apg_event")
    await c.close()
    print("asyncpg: all checks passed")


asyncio.run(main(sys.argv[1]))
