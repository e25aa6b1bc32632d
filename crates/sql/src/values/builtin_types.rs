//! The built-in types as `pg_type` lists them (the facts clients decode by: OIDs, names, array
//! types, lengths), `format_type`'s names and what `regtype` reads.

use crate::values::types::{LENGTH_MAX, SqlType, Typmod};

/// A built-in type's row in `pg_type`.
#[derive(Debug)]
pub struct BuiltinType {
    pub oid: u32,
    /// `typname`.
    pub name: &'static str,
    /// What `format_type` (and `regtype`'s output) calls it.
    pub format: &'static str,
    pub len: i16,
    pub by_value: bool,
    pub category: u8,
    /// Its array type's OID (0: none).
    pub array: u32,
    /// For an array type, its element type's OID.
    pub element: u32,
    pub align: u8,
    pub storage: u8,
    /// `typtype`: b (base), p (pseudo).
    pub kind: u8,
}

/// Every built-in type, by OID.
#[rustfmt::skip]
pub const BUILTIN_TYPES: &[BuiltinType] = &[
    BuiltinType { oid: 16, name: "bool", format: "boolean", len: 1, by_value: true, category: b'B', array: 1000, element: 0, align: b'c', storage: b'p', kind: b'b' },
    BuiltinType { oid: 17, name: "bytea", format: "bytea", len: -1, by_value: false, category: b'U', array: 1001, element: 0, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 18, name: "char", format: "\"char\"", len: 1, by_value: true, category: b'Z', array: 1002, element: 0, align: b'c', storage: b'p', kind: b'b' },
    BuiltinType { oid: 19, name: "name", format: "name", len: 64, by_value: false, category: b'S', array: 1003, element: 18, align: b'c', storage: b'p', kind: b'b' },
    BuiltinType { oid: 20, name: "int8", format: "bigint", len: 8, by_value: true, category: b'N', array: 1016, element: 0, align: b'd', storage: b'p', kind: b'b' },
    BuiltinType { oid: 21, name: "int2", format: "smallint", len: 2, by_value: true, category: b'N', array: 1005, element: 0, align: b's', storage: b'p', kind: b'b' },
    BuiltinType { oid: 22, name: "int2vector", format: "int2vector", len: -1, by_value: false, category: b'A', array: 1006, element: 21, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 23, name: "int4", format: "integer", len: 4, by_value: true, category: b'N', array: 1007, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 24, name: "regproc", format: "regproc", len: 4, by_value: true, category: b'N', array: 1008, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 25, name: "text", format: "text", len: -1, by_value: false, category: b'S', array: 1009, element: 0, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 26, name: "oid", format: "oid", len: 4, by_value: true, category: b'N', array: 1028, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 27, name: "tid", format: "tid", len: 6, by_value: false, category: b'U', array: 1010, element: 0, align: b's', storage: b'p', kind: b'b' },
    BuiltinType { oid: 28, name: "xid", format: "xid", len: 4, by_value: true, category: b'U', array: 1011, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 30, name: "oidvector", format: "oidvector", len: -1, by_value: false, category: b'A', array: 1013, element: 26, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 114, name: "json", format: "json", len: -1, by_value: false, category: b'U', array: 199, element: 0, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 194, name: "pg_node_tree", format: "pg_node_tree", len: -1, by_value: false, category: b'Z', array: 0, element: 0, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 199, name: "_json", format: "json[]", len: -1, by_value: false, category: b'A', array: 0, element: 114, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 700, name: "float4", format: "real", len: 4, by_value: true, category: b'N', array: 1021, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 701, name: "float8", format: "double precision", len: 8, by_value: true, category: b'N', array: 1022, element: 0, align: b'd', storage: b'p', kind: b'b' },
    BuiltinType { oid: 705, name: "unknown", format: "unknown", len: -2, by_value: false, category: b'X', array: 0, element: 0, align: b'c', storage: b'p', kind: b'p' },
    BuiltinType { oid: 1000, name: "_bool", format: "boolean[]", len: -1, by_value: false, category: b'A', array: 0, element: 16, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1001, name: "_bytea", format: "bytea[]", len: -1, by_value: false, category: b'A', array: 0, element: 17, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1002, name: "_char", format: "\"char\"[]", len: -1, by_value: false, category: b'A', array: 0, element: 18, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1003, name: "_name", format: "name[]", len: -1, by_value: false, category: b'A', array: 0, element: 19, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1005, name: "_int2", format: "smallint[]", len: -1, by_value: false, category: b'A', array: 0, element: 21, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1007, name: "_int4", format: "integer[]", len: -1, by_value: false, category: b'A', array: 0, element: 23, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1009, name: "_text", format: "text[]", len: -1, by_value: false, category: b'A', array: 0, element: 25, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1010, name: "_tid", format: "tid[]", len: -1, by_value: false, category: b'A', array: 0, element: 27, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1011, name: "_xid", format: "xid[]", len: -1, by_value: false, category: b'A', array: 0, element: 28, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1014, name: "_bpchar", format: "character[]", len: -1, by_value: false, category: b'A', array: 0, element: 1042, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1015, name: "_varchar", format: "character varying[]", len: -1, by_value: false, category: b'A', array: 0, element: 1043, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1016, name: "_int8", format: "bigint[]", len: -1, by_value: false, category: b'A', array: 0, element: 20, align: b'd', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1021, name: "_float4", format: "real[]", len: -1, by_value: false, category: b'A', array: 0, element: 700, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1022, name: "_float8", format: "double precision[]", len: -1, by_value: false, category: b'A', array: 0, element: 701, align: b'd', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1028, name: "_oid", format: "oid[]", len: -1, by_value: false, category: b'A', array: 0, element: 26, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1033, name: "aclitem", format: "aclitem", len: 12, by_value: false, category: b'U', array: 1034, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 1034, name: "_aclitem", format: "aclitem[]", len: -1, by_value: false, category: b'A', array: 0, element: 1033, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1042, name: "bpchar", format: "character", len: -1, by_value: false, category: b'S', array: 1014, element: 0, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1043, name: "varchar", format: "character varying", len: -1, by_value: false, category: b'S', array: 1015, element: 0, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1082, name: "date", format: "date", len: 4, by_value: true, category: b'D', array: 1182, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 1083, name: "time", format: "time without time zone", len: 8, by_value: true, category: b'D', array: 1183, element: 0, align: b'd', storage: b'p', kind: b'b' },
    BuiltinType { oid: 1114, name: "timestamp", format: "timestamp without time zone", len: 8, by_value: true, category: b'D', array: 1115, element: 0, align: b'd', storage: b'p', kind: b'b' },
    BuiltinType { oid: 1115, name: "_timestamp", format: "timestamp without time zone[]", len: -1, by_value: false, category: b'A', array: 0, element: 1114, align: b'd', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1182, name: "_date", format: "date[]", len: -1, by_value: false, category: b'A', array: 0, element: 1082, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1183, name: "_time", format: "time without time zone[]", len: -1, by_value: false, category: b'A', array: 0, element: 1083, align: b'd', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1184, name: "timestamptz", format: "timestamp with time zone", len: 8, by_value: true, category: b'D', array: 1185, element: 0, align: b'd', storage: b'p', kind: b'b' },
    BuiltinType { oid: 1185, name: "_timestamptz", format: "timestamp with time zone[]", len: -1, by_value: false, category: b'A', array: 0, element: 1184, align: b'd', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1186, name: "interval", format: "interval", len: 16, by_value: false, category: b'T', array: 1187, element: 0, align: b'd', storage: b'p', kind: b'b' },
    BuiltinType { oid: 1187, name: "_interval", format: "interval[]", len: -1, by_value: false, category: b'A', array: 0, element: 1186, align: b'd', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1231, name: "_numeric", format: "numeric[]", len: -1, by_value: false, category: b'A', array: 0, element: 1700, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 1266, name: "timetz", format: "time with time zone", len: 12, by_value: false, category: b'D', array: 1270, element: 0, align: b'd', storage: b'p', kind: b'b' },
    BuiltinType { oid: 1700, name: "numeric", format: "numeric", len: -1, by_value: false, category: b'N', array: 1231, element: 0, align: b'i', storage: b'm', kind: b'b' },
    BuiltinType { oid: 2205, name: "regclass", format: "regclass", len: 4, by_value: true, category: b'N', array: 2210, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 2206, name: "regtype", format: "regtype", len: 4, by_value: true, category: b'N', array: 2211, element: 0, align: b'i', storage: b'p', kind: b'b' },
    BuiltinType { oid: 2210, name: "_regclass", format: "regclass[]", len: -1, by_value: false, category: b'A', array: 0, element: 2205, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 2211, name: "_regtype", format: "regtype[]", len: -1, by_value: false, category: b'A', array: 0, element: 2206, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 2249, name: "record", format: "record", len: -1, by_value: false, category: b'P', array: 2287, element: 0, align: b'd', storage: b'x', kind: b'p' },
    BuiltinType { oid: 2277, name: "anyarray", format: "anyarray", len: -1, by_value: false, category: b'P', array: 0, element: 0, align: b'd', storage: b'x', kind: b'p' },
    BuiltinType { oid: 2278, name: "void", format: "void", len: 4, by_value: true, category: b'P', array: 0, element: 0, align: b'i', storage: b'p', kind: b'p' },
    BuiltinType { oid: 2950, name: "uuid", format: "uuid", len: 16, by_value: false, category: b'U', array: 2951, element: 0, align: b'c', storage: b'p', kind: b'b' },
    BuiltinType { oid: 2951, name: "_uuid", format: "uuid[]", len: -1, by_value: false, category: b'A', array: 0, element: 2950, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 3802, name: "jsonb", format: "jsonb", len: -1, by_value: false, category: b'U', array: 3807, element: 0, align: b'i', storage: b'x', kind: b'b' },
    BuiltinType { oid: 3807, name: "_jsonb", format: "jsonb[]", len: -1, by_value: false, category: b'A', array: 0, element: 3802, align: b'i', storage: b'x', kind: b'b' },
];

/// The built-in type of OID `oid`.
pub fn builtin(oid: u32) -> Option<&'static BuiltinType> {
    BUILTIN_TYPES
        .binary_search_by_key(&oid, |t| t.oid)
        .ok()
        .map(|i| &BUILTIN_TYPES[i])
}

/// The built-in type called `name` (its `typname`, or `format_type`'s name, or a name
/// PostgreSQL's grammar takes for it).
pub fn named(name: &str) -> Option<&'static BuiltinType> {
    let name = match name {
        "int" => "int4",
        "decimal" => "numeric",
        "float" => "float8",
        "character varying" => "varchar",
        "character" | "char" => "bpchar",
        "timestamp with time zone" => "timestamptz",
        "time with time zone" => "timetz",
        other => other,
    };
    BUILTIN_TYPES
        .iter()
        .find(|t| t.name == name || t.format == name)
}

/// `atttypmod` of a column of type `ty` (-1: none), as PostgreSQL encodes it.
pub fn typmod(ty: SqlType) -> i32 {
    match ty {
        SqlType::VarChar(n) if n < LENGTH_MAX => n as i32 + 4,
        SqlType::Char(n) => n as i32 + 4,
        SqlType::Numeric(Some(Typmod { precision, scale })) => {
            ((i32::from(precision) << 16) | (i32::from(scale) & 0xffff)) + 4
        }
        _ => -1,
    }
}

/// `format_type(oid, typmod)`: the type's SQL name with its modifier (NULL typmod: none).
pub fn format_type(oid: u32, typmod: Option<i32>) -> String {
    let Some(t) = builtin(oid) else {
        return "???".into();
    };
    let m = typmod.filter(|&m| m >= 4);
    match (t.name, m) {
        ("varchar" | "bpchar", Some(m)) => format!("{}({})", t.format, m - 4),
        ("numeric", Some(m)) => format!("numeric({},{})", (m - 4) >> 16, ((m - 4) & 0xffff) as i16),
        _ => t.format.to_owned(),
    }
}
