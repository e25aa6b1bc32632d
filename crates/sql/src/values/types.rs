//! SQL types: what a column or expression holds, its PostgreSQL name and type OID (clients decode
//! by OID), and how the engine stores it.
//!
//! The engine stores integers, decimals, strings and timestamps; a boolean is stored as a 32-bit
//! 0/1 and a double as a 64-bit integer whose order is the double's (so either may be a key).

use overtake_engine::ColumnType;
use sqlparser::ast::{self, DataType, ExactNumberInfo};

use crate::error::{Result, SqlError, sqlstate};

/// Longest `text` value outside a key (bytes): what a row holds (all its values together may
/// take no more).
pub const TEXT_MAX: u16 = u16::MAX;
/// Longest `varchar(n)` and `char(n)` a column may declare (PostgreSQL's).
pub const LENGTH_MAX: u32 = 10_485_760;
/// Longest `text` value in a key: what the engine's key length allows for one column.
pub const TEXT_KEY_MAX: u16 = 126;
/// Most significant digits a `numeric` column declared without a precision holds (computations
/// may have more).
pub const NUMERIC_STORED_DIGITS: u16 = 1000;
/// Most significant digits such a column holds in a key: what keeps it a few dozen bytes.
pub const NUMERIC_KEY_DIGITS: u16 = 100;
/// Largest precision the engine's 64-bit fixed-point decimals hold; wider `numeric(p, s)`
/// columns are stored as the engine's variable-length numerics.
const FIXED_POINT_PRECISION: u16 = overtake_engine::MAX_DECIMAL_PRECISION as u16;

/// An engine string length of `n` bytes, as far as a row's offsets reach.
fn bytes(n: u32) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// A `numeric(precision, scale)` declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Typmod {
    /// Digits, 1 to 1,000.
    pub precision: u16,
    /// Digits after the point, -1,000 to 1,000 (a negative scale rounds before the point).
    pub scale: i16,
}

/// A SQL type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SqlType {
    /// `boolean`.
    Bool,
    /// `smallint` (`int2`), stored as 32 bits.
    Int2,
    /// `integer` (`int`, `int4`).
    Int4,
    /// `bigint` (`int8`).
    Int8,
    /// `numeric`: of any precision, or `numeric(p, s)`.
    Numeric(Option<Typmod>),
    /// `double precision` (`float8`, `real`, `float`).
    Float8,
    /// `text`, or a literal or parameter whose type is not known yet.
    Text,
    /// `varchar(n)`: at most `n` characters.
    VarChar(u32),
    /// `char(n)`: `n` characters, shown padded with spaces to `n` (`Char(LENGTH_MAX)` is
    /// `bpchar` of no length, never padded). Its values are held without trailing spaces.
    Char(u32),
    /// `timestamp` (without time zone), microseconds.
    Timestamp,
    /// `timestamp with time zone`: an instant, microseconds since the epoch in UTC.
    TimestampTz,
    /// `date`, days.
    Date,
    /// `time` (without time zone): microseconds since midnight, 24:00:00 included.
    Time,
    /// `interval`: months, days and microseconds (in expressions; not a column's type).
    Interval,
    /// `oid`: an object id, an unsigned 32-bit integer.
    Oid,
    /// `name`: an identifier in the system catalogs (text of at most 63 bytes).
    Name,
    /// `"char"`: one byte of text (the system catalogs' kind codes, such as `relkind`).
    CharByte,
    /// `uuid`: 128 bits, held as their canonical text (`a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`),
    /// which orders as the bits do.
    Uuid,
    /// `bytea`: bytes, held as their hex text (`\x0a1b`; see `values::bytea`), which orders
    /// as the bytes do.
    Bytea,
    /// `json`: a JSON document held as the text it was given (see `values::json`).
    Json,
    /// `jsonb`: a JSON document held as its canonical text (see `values::json`).
    Jsonb,
    /// `regclass`: a relation's object id, written as its name (see `bind`'s casts).
    RegClass,
    /// `regtype`: a type's object id, written as its name.
    RegType,
    /// `regnamespace`: a schema's object id, written as its name.
    RegNamespace,
    /// `tid`: where a row is kept, written `(block,offset)` (a table's `ctid`; see
    /// `values::tid`).
    Tid,
    /// A one-dimensional array of values of one type (`integer[]`, `text[]`, ...).
    Array(ArrayElem),
}

/// The types an array's elements may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArrayElem {
    Bool,
    Int2,
    Int4,
    Int8,
    Float8,
    Numeric,
    Text,
    VarChar,
    Char,
    Name,
    CharByte,
    Oid,
    Date,
    Time,
    Timestamp,
    TimestampTz,
    Interval,
    /// `int2vector` and `oidvector`: arrays of smallints and object ids the system catalogs
    /// hold, written space-separated without braces (`1 2`).
    Int2Vector,
    OidVector,
}

impl ArrayElem {
    /// Every element type, for lookups by OID.
    const ALL: [ArrayElem; 19] = [
        ArrayElem::Int2Vector,
        ArrayElem::OidVector,
        ArrayElem::Bool,
        ArrayElem::Int2,
        ArrayElem::Int4,
        ArrayElem::Int8,
        ArrayElem::Float8,
        ArrayElem::Numeric,
        ArrayElem::Text,
        ArrayElem::VarChar,
        ArrayElem::Char,
        ArrayElem::Name,
        ArrayElem::CharByte,
        ArrayElem::Oid,
        ArrayElem::Date,
        ArrayElem::Time,
        ArrayElem::Timestamp,
        ArrayElem::TimestampTz,
        ArrayElem::Interval,
    ];

    /// The elements' type.
    pub fn ty(self) -> SqlType {
        match self {
            ArrayElem::Bool => SqlType::Bool,
            ArrayElem::Int2 => SqlType::Int2,
            ArrayElem::Int4 => SqlType::Int4,
            ArrayElem::Int8 => SqlType::Int8,
            ArrayElem::Float8 => SqlType::Float8,
            ArrayElem::Numeric => SqlType::Numeric(None),
            ArrayElem::Text => SqlType::Text,
            ArrayElem::VarChar => SqlType::VarChar(LENGTH_MAX),
            ArrayElem::Char => SqlType::Char(LENGTH_MAX),
            ArrayElem::Name => SqlType::Name,
            ArrayElem::CharByte => SqlType::CharByte,
            ArrayElem::Oid => SqlType::Oid,
            ArrayElem::Date => SqlType::Date,
            ArrayElem::Time => SqlType::Time,
            ArrayElem::Timestamp => SqlType::Timestamp,
            ArrayElem::TimestampTz => SqlType::TimestampTz,
            ArrayElem::Interval => SqlType::Interval,
            ArrayElem::Int2Vector => SqlType::Int2,
            ArrayElem::OidVector => SqlType::Oid,
        }
    }

    /// Whether its arrays are written space-separated (`int2vector`, `oidvector`).
    pub fn is_vector(self) -> bool {
        matches!(self, ArrayElem::Int2Vector | ArrayElem::OidVector)
    }

    /// The array element type of values of `ty`, if arrays of it exist here.
    pub fn of(ty: SqlType) -> Option<ArrayElem> {
        Some(match ty {
            SqlType::Bool => ArrayElem::Bool,
            SqlType::Int2 => ArrayElem::Int2,
            SqlType::Int4 => ArrayElem::Int4,
            SqlType::Int8 => ArrayElem::Int8,
            SqlType::Float8 => ArrayElem::Float8,
            SqlType::Numeric(_) => ArrayElem::Numeric,
            SqlType::Text => ArrayElem::Text,
            SqlType::VarChar(_) => ArrayElem::VarChar,
            SqlType::Char(_) => ArrayElem::Char,
            SqlType::Name => ArrayElem::Name,
            SqlType::CharByte => ArrayElem::CharByte,
            SqlType::Oid | SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace => {
                ArrayElem::Oid
            }
            SqlType::Date => ArrayElem::Date,
            SqlType::Time => ArrayElem::Time,
            SqlType::Timestamp => ArrayElem::Timestamp,
            SqlType::TimestampTz => ArrayElem::TimestampTz,
            SqlType::Interval => ArrayElem::Interval,
            SqlType::Uuid
            | SqlType::Bytea
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::Tid
            | SqlType::Array(_) => {
                return None;
            }
        })
    }

    /// The array type's OID (PostgreSQL's `typarray` of the element type).
    pub fn array_oid(self) -> u32 {
        match self {
            ArrayElem::Bool => 1000,
            ArrayElem::Int2 => 1005,
            ArrayElem::Int4 => 1007,
            ArrayElem::Int8 => 1016,
            ArrayElem::Float8 => 1022,
            ArrayElem::Numeric => 1231,
            ArrayElem::Text => 1009,
            ArrayElem::VarChar => 1015,
            ArrayElem::Char => 1014,
            ArrayElem::Name => 1003,
            ArrayElem::CharByte => 1002,
            ArrayElem::Oid => 1028,
            ArrayElem::Date => 1182,
            ArrayElem::Time => 1183,
            ArrayElem::Timestamp => 1115,
            ArrayElem::TimestampTz => 1185,
            ArrayElem::Interval => 1187,
            ArrayElem::Int2Vector => 22,
            ArrayElem::OidVector => 30,
        }
    }
}

/// Longest `name` (bytes), PostgreSQL's NAMEDATALEN - 1.
pub const NAME_MAX: usize = 63;

impl SqlType {
    /// `s`, a value of this type, as a client sees it: a `char(n)` padded with spaces to `n`
    /// characters (PostgreSQL stores it padded; the value is held without them).
    pub fn shown<'a>(self, s: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            SqlType::Char(n) if n < LENGTH_MAX => {
                let missing = (n as usize).saturating_sub(s.chars().count());
                if missing == 0 {
                    s.into()
                } else {
                    // Not `format!`'s width: it pads a character at a time.
                    let mut padded = String::with_capacity(s.len() + missing);
                    padded.push_str(s);
                    padded.extend(std::iter::repeat_n(' ', missing));
                    padded.into()
                }
            }
            _ => s.into(),
        }
    }

    /// The type's name as PostgreSQL prints it.
    pub fn name(self) -> String {
        match self {
            SqlType::Bool => "boolean".into(),
            SqlType::Int2 => "smallint".into(),
            SqlType::Int4 => "integer".into(),
            SqlType::Int8 => "bigint".into(),
            SqlType::Numeric(None) => "numeric".into(),
            SqlType::Numeric(Some(Typmod { precision, scale })) => {
                format!("numeric({precision},{scale})")
            }
            SqlType::Float8 => "double precision".into(),
            SqlType::Text => "text".into(),
            SqlType::VarChar(n) => format!("character varying({n})"),
            SqlType::Char(n) => format!("character({n})"),
            SqlType::Timestamp => "timestamp without time zone".into(),
            SqlType::TimestampTz => "timestamp with time zone".into(),
            SqlType::Date => "date".into(),
            SqlType::Time => "time without time zone".into(),
            SqlType::Interval => "interval".into(),
            SqlType::Uuid => "uuid".into(),
            SqlType::Tid => "tid".into(),
            SqlType::Bytea => "bytea".into(),
            SqlType::Json => "json".into(),
            SqlType::Jsonb => "jsonb".into(),
            SqlType::Oid => "oid".into(),
            SqlType::Name => "name".into(),
            SqlType::CharByte => "\"char\"".into(),
            SqlType::RegClass => "regclass".into(),
            SqlType::RegType => "regtype".into(),
            SqlType::RegNamespace => "regnamespace".into(),
            SqlType::Array(ArrayElem::Int2Vector) => "int2vector".into(),
            SqlType::Array(ArrayElem::OidVector) => "oidvector".into(),
            SqlType::Array(e) => format!("{}[]", e.ty().name()),
        }
    }

    /// PostgreSQL's type OID.
    pub fn oid(self) -> u32 {
        match self {
            SqlType::Bool => 16,
            SqlType::Int8 => 20,
            SqlType::Int2 => 21,
            SqlType::Int4 => 23,
            SqlType::Text => 25,
            SqlType::Float8 => 701,
            SqlType::Char(_) => 1042,
            SqlType::VarChar(_) => 1043,
            SqlType::Timestamp => 1114,
            SqlType::TimestampTz => 1184,
            SqlType::Date => 1082,
            SqlType::Time => 1083,
            SqlType::Interval => 1186,
            SqlType::Uuid => 2950,
            SqlType::Tid => 27,
            SqlType::Bytea => 17,
            SqlType::Json => 114,
            SqlType::Jsonb => 3802,
            SqlType::Numeric { .. } => 1700,
            SqlType::Oid => 26,
            SqlType::Name => 19,
            SqlType::CharByte => 18,
            SqlType::RegClass => 2205,
            SqlType::RegType => 2206,
            SqlType::RegNamespace => 4089,
            SqlType::Array(e) => e.array_oid(),
        }
    }

    /// The type with OID `oid` (a parameter type a client declared), if this crate has it.
    pub fn from_oid(oid: u32) -> Option<SqlType> {
        Some(match oid {
            16 => SqlType::Bool,
            20 => SqlType::Int8,
            21 => SqlType::Int2,
            23 => SqlType::Int4,
            25 | 705 => SqlType::Text,
            700 | 701 => SqlType::Float8,
            1042 => SqlType::Char(LENGTH_MAX),
            1043 => SqlType::VarChar(LENGTH_MAX),
            1114 => SqlType::Timestamp,
            1184 => SqlType::TimestampTz,
            1082 => SqlType::Date,
            1083 => SqlType::Time,
            1186 => SqlType::Interval,
            2950 => SqlType::Uuid,
            27 => SqlType::Tid,
            17 => SqlType::Bytea,
            114 => SqlType::Json,
            3802 => SqlType::Jsonb,
            1700 => SqlType::Numeric(None),
            26 => SqlType::Oid,
            19 => SqlType::Name,
            18 => SqlType::CharByte,
            2205 => SqlType::RegClass,
            2206 => SqlType::RegType,
            4089 => SqlType::RegNamespace,
            oid => {
                return ArrayElem::ALL
                    .into_iter()
                    .find(|e| e.array_oid() == oid)
                    .map(SqlType::Array);
            }
        })
    }

    /// The range of an integer type, and the name its overflow error gives it.
    pub fn integer_range(self) -> Option<(i64, i64, &'static str)> {
        Some(match self {
            SqlType::Int2 => (i64::from(i16::MIN), i64::from(i16::MAX), "smallint"),
            SqlType::Int4 => (i64::from(i32::MIN), i64::from(i32::MAX), "integer"),
            SqlType::Int8 => (i64::MIN, i64::MAX, "bigint"),
            SqlType::Oid | SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace => {
                (0, i64::from(u32::MAX), "OID")
            }
            _ => return None,
        })
    }

    /// Whether values are strings.
    pub fn is_string(self) -> bool {
        matches!(
            self,
            SqlType::Text
                | SqlType::VarChar(_)
                | SqlType::Char(_)
                | SqlType::Name
                | SqlType::CharByte
        )
    }

    /// Whether values are object ids (`oid` and the `reg*` types that write one as a name).
    pub fn is_oid(self) -> bool {
        matches!(
            self,
            SqlType::Oid | SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace
        )
    }

    /// Whether a value of this type converts to `to` without being asked to (PostgreSQL's
    /// implicit and assignment casts: what `ALTER COLUMN ... TYPE` applies without `USING`):
    /// numbers among themselves, anything to a string type, strings among themselves, dates
    /// and times among themselves, json and jsonb, object ids and integers, and arrays whose
    /// elements do.
    pub fn assignable_to(self, to: SqlType) -> bool {
        use SqlType::*;
        let time = |t: SqlType| matches!(t, Date | Timestamp | TimestampTz);
        match (self, to) {
            (a, b) if a == b => true,
            (_, Text | VarChar(_) | Char(_) | Name) => true,
            (a, b) if a.is_numeric() && b.is_numeric() => true,
            (a, b) if time(a) && time(b) => true,
            (Timestamp | TimestampTz, Time) => true,
            (Json | Jsonb, Json | Jsonb) => true,
            (Int2 | Int4 | Int8, Oid) | (Oid, Int4 | Int8) => true,
            (Array(a), Array(b)) => a.ty().assignable_to(b.ty()),
            _ => false,
        }
    }

    /// Whether values are numbers.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            SqlType::Int2
                | SqlType::Int4
                | SqlType::Int8
                | SqlType::Numeric { .. }
                | SqlType::Float8
        )
    }

    /// How the engine stores a column of this type; `in_key` if the column is part of a key
    /// (which bounds a text column's length).
    pub fn column_type(self, in_key: bool) -> ColumnType {
        match self {
            SqlType::Bool | SqlType::Int2 | SqlType::Int4 => ColumnType::Int32,
            SqlType::Int8 | SqlType::Float8 => ColumnType::Int64,
            SqlType::Oid | SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace => {
                ColumnType::Int64
            }
            SqlType::Name => ColumnType::VarChar(NAME_MAX as u16),
            SqlType::CharByte => ColumnType::VarChar(1),
            SqlType::Numeric(Some(Typmod { precision, scale }))
                if precision <= FIXED_POINT_PRECISION
                    && (0..=precision as i16).contains(&scale) =>
            {
                ColumnType::Decimal {
                    precision: precision as u8,
                    scale: scale as u8,
                }
            }
            SqlType::Numeric(Some(Typmod { precision, .. })) => ColumnType::Numeric(precision),
            SqlType::Numeric(None) if in_key => ColumnType::Numeric(NUMERIC_KEY_DIGITS),
            SqlType::Numeric(None) => ColumnType::Numeric(NUMERIC_STORED_DIGITS),
            SqlType::Text if in_key => ColumnType::VarChar(TEXT_KEY_MAX),
            SqlType::Text => ColumnType::VarChar(TEXT_MAX),
            // A key holds `n` bytes of a varchar(n), at most what it holds of a text (a key's
            // width is bounded); elsewhere a value of `n` characters of up to four bytes each,
            // as far as a row holds.
            SqlType::VarChar(n) if in_key => ColumnType::VarChar(bytes(n).min(TEXT_KEY_MAX)),
            SqlType::VarChar(n) => ColumnType::VarChar(bytes(n.saturating_mul(4))),
            // Fixed width: `n` bytes (a char(n) of multibyte characters is refused past them).
            SqlType::Char(n) => ColumnType::Char(bytes(n)),
            SqlType::Timestamp | SqlType::TimestampTz => ColumnType::Timestamp,
            SqlType::Date => ColumnType::Int32,
            SqlType::Time => ColumnType::Int64,
            SqlType::Uuid => ColumnType::VarChar(36),
            SqlType::Tid => ColumnType::Int64,
            // Two hex digits a byte after `\x`.
            SqlType::Bytea if in_key => ColumnType::VarChar(TEXT_KEY_MAX),
            SqlType::Bytea => ColumnType::VarChar(TEXT_MAX),
            SqlType::Json | SqlType::Jsonb if in_key => ColumnType::VarChar(TEXT_KEY_MAX),
            SqlType::Json | SqlType::Jsonb => ColumnType::VarChar(TEXT_MAX),
            // Refused as a column's type before a table is built (see `ddl`).
            SqlType::Interval => ColumnType::VarChar(TEXT_KEY_MAX),
            // Kept as its text (`{1,2,3}`); no key holds one (see `ddl`).
            SqlType::Array(_) => ColumnType::VarChar(TEXT_MAX),
        }
    }

    /// The type a column declared as `ty` has.
    pub fn from_ast(ty: &DataType) -> Result<SqlType> {
        let length = |n: Option<u64>, default: u32, name: &str| -> Result<u32> {
            match n {
                None => Ok(default),
                Some(n) if (1..=u64::from(LENGTH_MAX)).contains(&n) => Ok(n as u32),
                Some(0) => Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("length for type {name} must be at least 1"),
                )),
                Some(_) => Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("length for type {name} cannot exceed {LENGTH_MAX}"),
                )),
            }
        };
        let char_length = |len: &Option<sqlparser::ast::CharacterLength>, default, name| {
            length(
                match len {
                    Some(sqlparser::ast::CharacterLength::IntegerLength { length, .. }) => {
                        Some(*length)
                    }
                    Some(sqlparser::ast::CharacterLength::Max) | None => None,
                },
                default,
                name,
            )
        };
        Ok(match ty {
            DataType::Bool | DataType::Boolean => SqlType::Bool,
            DataType::SmallInt(_) | DataType::Int2(_) => SqlType::Int2,
            DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => SqlType::Int4,
            DataType::BigInt(_) | DataType::Int8(_) => SqlType::Int8,
            DataType::Numeric(info) | DataType::Decimal(info) | DataType::Dec(info) => {
                let (precision, scale) = match info {
                    ExactNumberInfo::None => return Ok(SqlType::Numeric(None)),
                    ExactNumberInfo::Precision(p) => (*p, 0),
                    ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
                };
                let max = u64::from(crate::values::numeric::MAX_PRECISION);
                if !(1..=max).contains(&precision) {
                    return Err(SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!("NUMERIC precision {precision} must be between 1 and {max}"),
                    ));
                }
                let limit = crate::values::numeric::MAX_TYPMOD_SCALE;
                if !(-limit..=limit).contains(&scale) {
                    return Err(SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!("NUMERIC scale {scale} must be between -{limit} and {limit}"),
                    ));
                }
                SqlType::Numeric(Some(Typmod {
                    precision: precision as u16,
                    scale: scale as i16,
                }))
            }
            DataType::DoublePrecision
            | DataType::Double(_)
            | DataType::Float8
            | DataType::Float4
            | DataType::Float(_)
            | DataType::Real => SqlType::Float8,
            DataType::Text | DataType::String(_) => SqlType::Text,
            DataType::Varchar(len) | DataType::CharacterVarying(len) => {
                SqlType::VarChar(char_length(len, LENGTH_MAX, "varchar")?)
            }
            DataType::Char(len) | DataType::Character(len) => {
                SqlType::Char(char_length(len, 1, "char")?)
            }
            DataType::Timestamp(_, ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz) => {
                SqlType::TimestampTz
            }
            DataType::Timestamp(..) | DataType::Datetime(_) => SqlType::Timestamp,
            DataType::Date => SqlType::Date,
            DataType::Time(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
                SqlType::Time
            }
            DataType::Interval { .. } => SqlType::Interval,
            DataType::Uuid => SqlType::Uuid,
            DataType::Bytea => SqlType::Bytea,
            DataType::JSON => SqlType::Json,
            DataType::JSONB => SqlType::Jsonb,
            DataType::Regclass => SqlType::RegClass,
            DataType::Array(
                ast::ArrayElemTypeDef::SquareBracket(elem, _)
                | ast::ArrayElemTypeDef::Qualified(elem, _),
            ) => {
                let elem = SqlType::from_ast(elem)?;
                SqlType::Array(
                    ArrayElem::of(elem).ok_or_else(|| {
                        SqlError::unsupported(format!("an array of {}", elem.name()))
                    })?,
                )
            }
            DataType::Custom(name, modifiers) if modifiers.is_empty() => {
                let last = name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(|i| i.value.as_str());
                match last.map(str::to_ascii_lowercase).as_deref() {
                    Some("oid") => SqlType::Oid,
                    Some("name") => SqlType::Name,
                    Some("char") => SqlType::CharByte,
                    Some("regclass") => SqlType::RegClass,
                    Some("regtype") => SqlType::RegType,
                    Some("regnamespace") => SqlType::RegNamespace,
                    Some("int2") => SqlType::Int2,
                    Some("int4") => SqlType::Int4,
                    Some("int8") => SqlType::Int8,
                    Some("float4" | "float8") => SqlType::Float8,
                    Some("bool") => SqlType::Bool,
                    Some("text") => SqlType::Text,
                    Some("varchar") => SqlType::VarChar(LENGTH_MAX),
                    Some("timestamptz") => SqlType::TimestampTz,
                    Some("uuid") => SqlType::Uuid,
                    Some("tid") => SqlType::Tid,
                    Some("bytea") => SqlType::Bytea,
                    Some("json") => SqlType::Json,
                    Some("jsonb") => SqlType::Jsonb,
                    Some("int2vector") => SqlType::Array(ArrayElem::Int2),
                    Some("oidvector") => SqlType::Array(ArrayElem::Oid),
                    _ => return Err(SqlError::unsupported(format!("type {ty}"))),
                }
            }
            other => return Err(SqlError::unsupported(format!("type {other}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{ArrayElem, SqlType};

    #[test]
    fn assignment_conversions_are_postgresqls() {
        use SqlType::*;
        for (from, to) in [
            (Int4, Int8),
            (Int8, Int2),
            (Numeric(None), Int4),
            (Bool, Text),
            (Uuid, VarChar(40)),
            (Text, VarChar(3)),
            (Date, TimestampTz),
            (Timestamp, Date),
            (Json, Jsonb),
            (Array(ArrayElem::Int4), Array(ArrayElem::Int8)),
        ] {
            assert!(from.assignable_to(to), "{from:?} to {to:?}");
        }
        for (from, to) in [
            (Text, Int4),
            (Int4, Bool),
            (Bool, Int4),
            (Text, Date),
            (Int4, Date),
            (Text, Uuid),
            (Array(ArrayElem::Text), Array(ArrayElem::Int4)),
        ] {
            assert!(!from.assignable_to(to), "{from:?} to {to:?}");
        }
    }
}
