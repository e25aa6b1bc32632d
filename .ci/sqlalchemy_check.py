"""SQLAlchemy 2 Core against `overtake serve`, unchanged, over psycopg 3: connecting (its first
queries read the catalogs), create_all with a serial key, writes and reads, a nested transaction,
and reflection (inspect, autoload), each answer asserted as PostgreSQL 15 gives it."""
import sys
from decimal import Decimal

from sqlalchemy import Column, Integer, MetaData, Numeric, String, Table, create_engine, inspect, select

engine = create_engine(sys.argv[1])
metadata = MetaData()
users = Table(
    "sa_users",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(50), nullable=False),
    Column("score", Numeric(10, 2)),
)
metadata.drop_all(engine)
metadata.create_all(engine)
with engine.begin() as c:
    c.execute(users.insert(), [{"name": "a", "score": 1.5}, {"name": "b", "score": None}])
    rows = c.execute(select(users).order_by(users.c.id)).all()
    assert rows == [(1, "a", Decimal("1.50")), (2, "b", None)], rows
    # A nested transaction (SAVEPOINT) rolled back takes its row with it.
    nested = c.begin_nested()
    c.execute(users.insert(), {"name": "c"})
    nested.rollback()
    assert c.execute(select(users.c.id).order_by(users.c.id)).scalars().all() == [1, 2]
print("ok: SQLAlchemy create_all, writes, reads, begin_nested")

insp = inspect(engine)
assert "sa_users" in insp.get_table_names()
columns = {c["name"]: c for c in insp.get_columns("sa_users")}
assert list(columns) == ["id", "name", "score"], list(columns)
assert columns["id"]["default"] == "nextval('sa_users_id_seq'::regclass)", columns["id"]
assert columns["id"]["autoincrement"] is True and columns["id"]["nullable"] is False
assert str(columns["name"]["type"]) == "VARCHAR(50)" and columns["name"]["nullable"] is False
assert str(columns["score"]["type"]) == "NUMERIC(10, 2)" and columns["score"]["nullable"] is True
pk = insp.get_pk_constraint("sa_users")
assert pk["constrained_columns"] == ["id"] and pk["name"] == "sa_users_pkey", pk
assert insp.get_indexes("sa_users") == []
assert insp.get_foreign_keys("sa_users") == []
assert insp.get_unique_constraints("sa_users") == []
reflected = Table("sa_users", MetaData(), autoload_with=engine)
assert reflected.c.keys() == ["id", "name", "score"]
print("ok: SQLAlchemy reflection (columns, primary key, indexes, autoload)")
