"""SQLAlchemy 2 Core against `overtake serve`, unchanged, over psycopg 3: connecting (its first
queries read the catalogs), create_all with a serial key and a foreign key, writes and reads, a
nested transaction, a refused reference and a cascade, and reflection (inspect, autoload), each
answer asserted as PostgreSQL 15 gives it."""
import sys
from decimal import Decimal

from sqlalchemy import (
    Column,
    ForeignKey,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    create_engine,
    exc,
    inspect,
    select,
)

engine = create_engine(sys.argv[1])
metadata = MetaData()
users = Table(
    "sa_users",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(50), nullable=False),
    Column("score", Numeric(10, 2)),
)
posts = Table(
    "sa_posts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("user_id", Integer, ForeignKey("sa_users.id", ondelete="CASCADE"), nullable=False),
    Column("title", String(80)),
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
with engine.begin() as c:
    c.execute(posts.insert(), [{"user_id": 1, "title": "x"}, {"user_id": 1, "title": "y"}])
try:
    with engine.begin() as c:
        c.execute(posts.insert(), {"user_id": 99, "title": "z"})
    raise AssertionError("a post of no user was kept")
except exc.IntegrityError as e:
    assert e.orig.sqlstate == "23503", e.orig.sqlstate
    assert e.orig.diag.constraint_name == "sa_posts_user_id_fkey", e.orig.diag.constraint_name
with engine.begin() as c:
    c.execute(users.delete().where(users.c.id == 1))
    assert c.execute(select(posts.c.id)).all() == []
print("ok: SQLAlchemy create_all, writes, reads, begin_nested, foreign keys")

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
fks = insp.get_foreign_keys("sa_posts")
assert [(f["name"], f["constrained_columns"], f["referred_table"], f["referred_columns"], f["options"])
        for f in fks] == [("sa_posts_user_id_fkey", ["user_id"], "sa_users", ["id"], {"ondelete": "CASCADE"})], fks
assert insp.get_unique_constraints("sa_users") == []
reflected = Table("sa_posts", MetaData(), autoload_with=engine)
assert reflected.c.keys() == ["id", "user_id", "title"]
assert [fk.target_fullname for fk in reflected.c.user_id.foreign_keys] == ["sa_users.id"]
print("ok: SQLAlchemy reflection (columns, primary key, indexes, foreign keys, autoload)")
