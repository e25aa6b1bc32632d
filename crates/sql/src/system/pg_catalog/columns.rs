//! The columns of the `pg_catalog` relations, as PostgreSQL 15 declares them (types this crate
//! does not have, such as arrays, ACLs and expression trees, are shown as text).

use crate::values::types::ArrayElem;
use crate::values::types::SqlType::{self, *};

const INT2VECTOR: SqlType = Array(ArrayElem::Int2Vector);
const OIDVECTOR: SqlType = Array(ArrayElem::OidVector);
const INT2_ARRAY: SqlType = Array(ArrayElem::Int2);
const OID_ARRAY: SqlType = Array(ArrayElem::Oid);
const TEXT_ARRAY: SqlType = Array(ArrayElem::Text);

pub(super) const PG_NAMESPACE: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("nspname", Name),
    ("nspowner", Oid),
    ("nspacl", Text),
];

pub(super) const PG_CLASS: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("relname", Name),
    ("relnamespace", Oid),
    ("reltype", Oid),
    ("reloftype", Oid),
    ("relowner", Oid),
    ("relam", Oid),
    ("relfilenode", Oid),
    ("reltablespace", Oid),
    ("relpages", Int4),
    ("reltuples", Float8),
    ("relallvisible", Int4),
    ("reltoastrelid", Oid),
    ("relhasindex", Bool),
    ("relisshared", Bool),
    ("relpersistence", CharByte),
    ("relkind", CharByte),
    ("relnatts", Int2),
    ("relchecks", Int2),
    ("relhasrules", Bool),
    ("relhastriggers", Bool),
    ("relhassubclass", Bool),
    ("relrowsecurity", Bool),
    ("relforcerowsecurity", Bool),
    ("relispopulated", Bool),
    ("relreplident", CharByte),
    ("relispartition", Bool),
    ("relrewrite", Oid),
    ("relfrozenxid", Text),
    ("relminmxid", Text),
    ("relacl", Text),
    ("reloptions", TEXT_ARRAY),
    ("relpartbound", Text),
];

pub(super) const PG_ATTRIBUTE: &[(&str, SqlType)] = &[
    ("attrelid", Oid),
    ("attname", Name),
    ("atttypid", Oid),
    ("attstattarget", Int4),
    ("attlen", Int2),
    ("attnum", Int2),
    ("attndims", Int4),
    ("attcacheoff", Int4),
    ("atttypmod", Int4),
    ("attbyval", Bool),
    ("attalign", CharByte),
    ("attstorage", CharByte),
    ("attcompression", CharByte),
    ("attnotnull", Bool),
    ("atthasdef", Bool),
    ("atthasmissing", Bool),
    ("attidentity", CharByte),
    ("attgenerated", CharByte),
    ("attisdropped", Bool),
    ("attislocal", Bool),
    ("attinhcount", Int4),
    ("attcollation", Oid),
    ("attacl", Text),
    ("attoptions", Text),
    ("attfdwoptions", Text),
    ("attmissingval", Text),
];

pub(super) const PG_TYPE: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("typname", Name),
    ("typnamespace", Oid),
    ("typowner", Oid),
    ("typlen", Int2),
    ("typbyval", Bool),
    ("typtype", CharByte),
    ("typcategory", CharByte),
    ("typispreferred", Bool),
    ("typisdefined", Bool),
    ("typdelim", CharByte),
    ("typrelid", Oid),
    ("typsubscript", Text),
    ("typelem", Oid),
    ("typarray", Oid),
    ("typinput", Text),
    ("typoutput", Text),
    ("typreceive", Text),
    ("typsend", Text),
    ("typmodin", Text),
    ("typmodout", Text),
    ("typanalyze", Text),
    ("typalign", CharByte),
    ("typstorage", CharByte),
    ("typnotnull", Bool),
    ("typbasetype", Oid),
    ("typtypmod", Int4),
    ("typndims", Int4),
    ("typcollation", Oid),
    ("typdefaultbin", Text),
    ("typdefault", Text),
    ("typacl", Text),
];

pub(super) const PG_INDEX: &[(&str, SqlType)] = &[
    ("indexrelid", Oid),
    ("indrelid", Oid),
    ("indnatts", Int2),
    ("indnkeyatts", Int2),
    ("indisunique", Bool),
    ("indnullsnotdistinct", Bool),
    ("indisprimary", Bool),
    ("indisexclusion", Bool),
    ("indimmediate", Bool),
    ("indisclustered", Bool),
    ("indisvalid", Bool),
    ("indcheckxmin", Bool),
    ("indisready", Bool),
    ("indislive", Bool),
    ("indisreplident", Bool),
    ("indkey", INT2VECTOR),
    ("indcollation", OIDVECTOR),
    ("indclass", OIDVECTOR),
    ("indoption", INT2VECTOR),
    ("indexprs", Text),
    ("indpred", Text),
];

pub(super) const PG_CONSTRAINT: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("conname", Name),
    ("connamespace", Oid),
    ("contype", CharByte),
    ("condeferrable", Bool),
    ("condeferred", Bool),
    ("convalidated", Bool),
    ("conrelid", Oid),
    ("contypid", Oid),
    ("conindid", Oid),
    ("conparentid", Oid),
    ("confrelid", Oid),
    ("confupdtype", CharByte),
    ("confdeltype", CharByte),
    ("confmatchtype", CharByte),
    ("conislocal", Bool),
    ("coninhcount", Int4),
    ("connoinherit", Bool),
    ("conkey", INT2_ARRAY),
    ("confkey", INT2_ARRAY),
    ("conpfeqop", OID_ARRAY),
    ("conppeqop", OID_ARRAY),
    ("conffeqop", OID_ARRAY),
    ("confdelsetcols", INT2_ARRAY),
    ("conexclop", OID_ARRAY),
    ("conbin", Text),
];

pub(super) const PG_DATABASE: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("datname", Name),
    ("datdba", Oid),
    ("encoding", Int4),
    ("datlocprovider", CharByte),
    ("datistemplate", Bool),
    ("datallowconn", Bool),
    ("datconnlimit", Int4),
    ("datfrozenxid", Text),
    ("datminmxid", Text),
    ("dattablespace", Oid),
    ("datcollate", Text),
    ("datctype", Text),
    ("daticulocale", Text),
    ("datcollversion", Text),
    ("datacl", Text),
];

pub(super) const PG_ROLES: &[(&str, SqlType)] = &[
    ("rolname", Name),
    ("rolsuper", Bool),
    ("rolinherit", Bool),
    ("rolcreaterole", Bool),
    ("rolcreatedb", Bool),
    ("rolcanlogin", Bool),
    ("rolreplication", Bool),
    ("rolconnlimit", Int4),
    ("rolpassword", Text),
    ("rolvaliduntil", TimestampTz),
    ("rolbypassrls", Bool),
    ("rolconfig", Text),
    ("oid", Oid),
];

pub(super) const PG_USER: &[(&str, SqlType)] = &[
    ("usename", Name),
    ("usesysid", Oid),
    ("usecreatedb", Bool),
    ("usesuper", Bool),
    ("userepl", Bool),
    ("usebypassrls", Bool),
    ("passwd", Text),
    ("valuntil", TimestampTz),
    ("useconfig", Text),
];

pub(super) const PG_AM: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("amname", Name),
    ("amhandler", Text),
    ("amtype", CharByte),
];

pub(super) const PG_ATTRDEF: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("adrelid", Oid),
    ("adnum", Int2),
    ("adbin", Text),
];

pub(super) const PG_DESCRIPTION: &[(&str, SqlType)] = &[
    ("objoid", Oid),
    ("classoid", Oid),
    ("objsubid", Int4),
    ("description", Text),
];

pub(super) const PG_PROC: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("proname", Name),
    ("pronamespace", Oid),
    ("proowner", Oid),
    ("prolang", Oid),
    ("procost", Float8),
    ("prorows", Float8),
    ("provariadic", Oid),
    ("prosupport", Text),
    ("prokind", CharByte),
    ("prosecdef", Bool),
    ("proleakproof", Bool),
    ("proisstrict", Bool),
    ("proretset", Bool),
    ("provolatile", CharByte),
    ("proparallel", CharByte),
    ("pronargs", Int2),
    ("pronargdefaults", Int2),
    ("prorettype", Oid),
    ("proargtypes", OIDVECTOR),
    ("proallargtypes", Text),
    ("proargmodes", Text),
    ("proargnames", Text),
    ("proargdefaults", Text),
    ("protrftypes", Text),
    ("prosrc", Text),
    ("probin", Text),
    ("prosqlbody", Text),
    ("proconfig", Text),
    ("proacl", Text),
];

pub(super) const PG_INHERITS: &[(&str, SqlType)] = &[
    ("inhrelid", Oid),
    ("inhparent", Oid),
    ("inhseqno", Int4),
    ("inhdetachpending", Bool),
];

pub(super) const PG_TABLESPACE: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("spcname", Name),
    ("spcowner", Oid),
    ("spcacl", Text),
    ("spcoptions", Text),
];

pub(super) const PG_COLLATION: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("collname", Name),
    ("collnamespace", Oid),
    ("collowner", Oid),
    ("collprovider", CharByte),
    ("collisdeterministic", Bool),
    ("collencoding", Int4),
    ("collcollate", Text),
    ("collctype", Text),
    ("colliculocale", Text),
    ("collversion", Text),
];

pub(super) const PG_ENUM: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("enumtypid", Oid),
    ("enumsortorder", Float8),
    ("enumlabel", Name),
];

pub(super) const PG_RANGE: &[(&str, SqlType)] = &[
    ("rngtypid", Oid),
    ("rngsubtype", Oid),
    ("rngmultitypid", Oid),
    ("rngcollation", Oid),
    ("rngsubopc", Oid),
    ("rngcanonical", Text),
    ("rngsubdiff", Text),
];

pub(super) const PG_SEQUENCE: &[(&str, SqlType)] = &[
    ("seqrelid", Oid),
    ("seqtypid", Oid),
    ("seqstart", Int8),
    ("seqincrement", Int8),
    ("seqmax", Int8),
    ("seqmin", Int8),
    ("seqcache", Int8),
    ("seqcycle", Bool),
];

pub(super) const PG_POLICY: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("polname", Name),
    ("polrelid", Oid),
    ("polcmd", CharByte),
    ("polpermissive", Bool),
    ("polroles", OID_ARRAY),
    ("polqual", Text),
    ("polwithcheck", Text),
];

pub(super) const PG_STATISTIC_EXT: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("stxrelid", Oid),
    ("stxname", Name),
    ("stxnamespace", Oid),
    ("stxowner", Oid),
    ("stxstattarget", Int4),
    ("stxkeys", INT2VECTOR),
    ("stxkind", Array(ArrayElem::CharByte)),
    ("stxexprs", Text),
];

pub(super) const PG_PUBLICATION: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("pubname", Name),
    ("pubowner", Oid),
    ("puballtables", Bool),
    ("pubinsert", Bool),
    ("pubupdate", Bool),
    ("pubdelete", Bool),
    ("pubtruncate", Bool),
    ("pubviaroot", Bool),
];

pub(super) const PG_PUBLICATION_NAMESPACE: &[(&str, SqlType)] =
    &[("oid", Oid), ("pnpubid", Oid), ("pnnspid", Oid)];

pub(super) const PG_PUBLICATION_REL: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("prpubid", Oid),
    ("prrelid", Oid),
    ("prqual", Text),
    ("prattrs", INT2VECTOR),
];

pub(super) const PG_AUTH_MEMBERS: &[(&str, SqlType)] = &[
    ("roleid", Oid),
    ("member", Oid),
    ("grantor", Oid),
    ("admin_option", Bool),
];

pub(super) const PG_TRIGGER: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("tgrelid", Oid),
    ("tgparentid", Oid),
    ("tgname", Name),
    ("tgfoid", Oid),
    ("tgtype", Int2),
    ("tgenabled", CharByte),
    ("tgisinternal", Bool),
    ("tgconstrrelid", Oid),
    ("tgconstrindid", Oid),
    ("tgconstraint", Oid),
    ("tgdeferrable", Bool),
    ("tginitdeferred", Bool),
    ("tgnargs", Int2),
    ("tgattr", INT2VECTOR),
    ("tgargs", Text),
    ("tgqual", Text),
    ("tgoldtable", Name),
    ("tgnewtable", Name),
];

pub(super) const PG_REWRITE: &[(&str, SqlType)] = &[
    ("oid", Oid),
    ("rulename", Name),
    ("ev_class", Oid),
    ("ev_type", CharByte),
    ("ev_enabled", CharByte),
    ("is_instead", Bool),
    ("ev_qual", Text),
    ("ev_action", Text),
];

pub(super) const PG_FOREIGN_TABLE: &[(&str, SqlType)] =
    &[("ftrelid", Oid), ("ftserver", Oid), ("ftoptions", Text)];

pub(super) const PG_PARTITIONED_TABLE: &[(&str, SqlType)] = &[
    ("partrelid", Oid),
    ("partstrat", CharByte),
    ("partnatts", Int2),
    ("partdefid", Oid),
    ("partattrs", INT2VECTOR),
    ("partclass", OIDVECTOR),
    ("partcollation", OIDVECTOR),
    ("partexprs", Text),
];

pub(super) const PG_DEPEND: &[(&str, SqlType)] = &[
    ("classid", Oid),
    ("objid", Oid),
    ("objsubid", Int4),
    ("refclassid", Oid),
    ("refobjid", Oid),
    ("refobjsubid", Int4),
    ("deptype", CharByte),
];

pub(super) const PG_VIEWS: &[(&str, SqlType)] = &[
    ("schemaname", Name),
    ("viewname", Name),
    ("viewowner", Name),
    ("definition", Text),
];

pub(super) const PG_SETTINGS: &[(&str, SqlType)] = &[
    ("name", Text),
    ("setting", Text),
    ("unit", Text),
    ("category", Text),
    ("short_desc", Text),
    ("extra_desc", Text),
    ("context", Text),
    ("vartype", Text),
    ("source", Text),
    ("min_val", Text),
    ("max_val", Text),
    ("enumvals", TEXT_ARRAY),
    ("boot_val", Text),
    ("reset_val", Text),
    ("sourcefile", Text),
    ("sourceline", Int4),
    ("pending_restart", Bool),
];
