"""The CH-benCHmark's 22 queries on the same data in Overtake and PostgreSQL 15: equal answers.

Usage: ch_check.py QUERY_GO POSTGRESQL_DSN OVERTAKE_DSN

Both databases hold go-tpc's TPC-C and CH schemas (`tpcc prepare`, `ch prepare`). PostgreSQL's
rows are copied into Overtake's tables (COPY TO STDOUT there, COPY FROM STDIN here), so the two
answer over identical data; then each query, read from go-tpc's own source (QUERY_GO, its
ch/query.go in the Go module cache), runs on both. Rows are compared as multisets, and their
ORDER BY values in order: floating-point values to 1e-9 relative, everything else exactly and of
the same type. Both are analyzed first (ANALYZE), as after any bulk load. Prints each query's
time on both.
"""

import math
import re
import sys
import time

import psycopg

TABLES = ["warehouse", "district", "customer", "history", "new_order", "orders", "order_line",
          "stock", "item", "supplier", "nation", "region"]


def queries(path):
    """go-tpc keeps each query as a Go raw string constant `qN = `...``."""
    text = open(path, encoding="utf-8").read()
    found = {int(n): q.strip().rstrip(";") for n, q in re.findall(r"\bq(\d+)\s*=\s*`([^`]*)`", text)}
    if sorted(found) != list(range(1, 23)):
        sys.exit(f"expected q1..q22 in {path}, found {sorted(found)}")
    return [found[n] for n in range(1, 23)]


def copy_tables(pg, ot):
    with ot.cursor() as oc:
        oc.execute("TRUNCATE " + ", ".join(TABLES))
    for table in TABLES:
        with pg.cursor() as pc, ot.cursor() as oc:
            with pc.copy(f"COPY {table} TO STDOUT") as src, oc.copy(f"COPY {table} FROM STDIN") as dst:
                for block in src:
                    dst.write(block)
        counts = [c.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for c in (pg, ot)]
        if counts[0] != counts[1]:
            sys.exit(f"FAIL: {table}: {counts[1]} rows copied of {counts[0]}")
    print(f"ok: {len(TABLES)} tables copied from PostgreSQL")


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b and type(a) is type(b)


def same_row(a, b):
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))


def key(row):
    # Floats rounded so that two answers differing in the last bits sort alike.
    return tuple((0, "") if v is None else (1, repr(round(v, 6) if isinstance(v, float) else v))
                 for v in row)


def ordering(sql, columns, rows):
    """The values of the query's final ORDER BY in each row, in the rows' order: rows tied
    under it may come in any order. Each item of these queries' ORDER BY is an output column,
    by its name, as the expression the select list names `expr as name`, or as a call."""
    found = re.findall(r"order\s+by\s+((?:[^()]|\([^()]*\))*?)\s*(?:limit\s+\d+\s*)?$", sql,
                       re.I | re.S)
    if not found:
        return []
    at = []
    for item in re.split(r",(?![^()]*\))", found[-1]):
        expr = re.sub(r"\s+(asc|desc)$", "", item.strip(), flags=re.I)
        named = re.search(r"(?<![\w.])" + re.escape(expr) + r"\s+as\s+(\w+)", sql, re.I)
        call = re.fullmatch(r"(\w+)\(.*\)", expr)
        # An unnamed call is named after its function, as PostgreSQL names the column.
        name = named.group(1) if named else call.group(1) if call else expr.split(".")[-1]
        if name not in columns:
            sys.exit(f"ORDER BY {item!r} names no output column of {columns}")
        at.append(columns.index(name))
    return [tuple(row[i] for i in at) for row in rows]


def run(conn, sql):
    start = time.monotonic()
    cur = conn.execute(sql)
    rows = cur.fetchall()
    return rows, [d.name for d in cur.description], time.monotonic() - start


def main():
    path, pg_dsn, ot_dsn = sys.argv[1:4]
    with psycopg.connect(pg_dsn, autocommit=True) as pg, psycopg.connect(ot_dsn, autocommit=True) as ot:
        copy_tables(pg, ot)
        # As after any bulk load: both planners get their statistics.
        for c in (pg, ot):
            c.execute("ANALYZE")
        failed = 0
        totals = [0.0, 0.0]
        for n, sql in enumerate(queries(path), 1):
            want, want_cols, pg_s = run(pg, sql)
            got, got_cols, ot_s = run(ot, sql)
            totals[0] += pg_s
            totals[1] += ot_s
            problem = None
            if got_cols != want_cols:
                problem = f"columns {got_cols}, want {want_cols}"
            elif len(got) != len(want):
                problem = f"{len(got)} rows, want {len(want)}"
            elif not all(same_row(a, b) for a, b in zip(sorted(got, key=key), sorted(want, key=key))):
                problem = "different rows"
            elif not all(same_row(a, b) for a, b in zip(ordering(sql, got_cols, got),
                                                        ordering(sql, got_cols, want))):
                problem = "rows in another order"
            status = "ok" if problem is None else "FAIL"
            print(f"{status}: Q{n}: {len(got)} rows, Overtake {ot_s:.2f} s, PostgreSQL {pg_s:.2f} s"
                  + ("" if problem is None else f": {problem}"))
            if problem is not None:
                failed += 1
                for a, b in list(zip(got, want))[:5]:
                    if not same_row(a, b):
                        print(f"    got  {a}\n    want {b}")
        print(f"total: Overtake {totals[1]:.2f} s, PostgreSQL {totals[0]:.2f} s")
        if failed:
            sys.exit(f"FAIL: {failed} of 22 CH-benCHmark queries answered differently")
        print("ok: the 22 CH-benCHmark queries answer as on PostgreSQL 15")


main()
