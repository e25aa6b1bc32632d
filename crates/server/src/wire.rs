//! Values on the wire: result columns described by type OID, rows encoded in text or binary
//! format as each column asks, parameters decoded from either, and errors as ErrorResponse
//! fields.

use bytes::{BufMut, BytesMut};
use overtake_sql::plan::OutputColumn;
use overtake_sql::values::binary;
use overtake_sql::{Datum, SqlError, SqlType, sqlstate};
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::data::DataRow;

/// The format of column `i` (text when the client named fewer formats than columns).
pub fn format_of(format: &Format, i: usize) -> FieldFormat {
    match format {
        Format::UnifiedText => FieldFormat::Text,
        Format::UnifiedBinary => FieldFormat::Binary,
        Format::Individual(codes) => match codes.get(i) {
            Some(1) => FieldFormat::Binary,
            _ => FieldFormat::Text,
        },
    }
}

/// The PostgreSQL type of a SQL type.
pub fn pg_type(ty: SqlType) -> Type {
    Type::from_oid(ty.oid()).unwrap_or(Type::TEXT)
}

/// Row descriptions of `columns`, in `format`.
pub fn fields(columns: &[OutputColumn], format: &Format) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            FieldInfo::new(
                c.name.clone(),
                None,
                None,
                pg_type(c.ty),
                format_of(format, i),
            )
        })
        .collect()
}

/// A data row of `values` (typed as `columns`), each column in its format.
pub fn data_row(values: &[Datum], columns: &[OutputColumn], format: &Format) -> DataRow {
    let mut buf = BytesMut::with_capacity(16 * values.len());
    for (i, v) in values.iter().enumerate() {
        binary::put_field(&mut buf, |buf| match format_of(format, i) {
            FieldFormat::Text => {
                let ty = columns.get(i).map_or(SqlType::Text, |c| c.ty);
                v.to_text_as(ty).map(|t| buf.put_slice(t.as_bytes()))
            }
            FieldFormat::Binary => {
                binary::encode(v, columns.get(i).map_or(SqlType::Text, |c| c.ty), buf)
            }
        });
    }
    DataRow::new(buf, values.len() as i16)
}

/// A parameter's value from its bytes in `binary` or text format.
pub fn decode_param(bytes: Option<&[u8]>, ty: SqlType, binary: bool) -> Result<Datum, SqlError> {
    match bytes {
        None => Ok(Datum::Null),
        Some(b) if binary => binary::decode(b, ty),
        Some(b) => Datum::parse(binary::utf8(b)?, ty),
    }
}

/// The ErrorResponse fields of `e`.
/// An error that ends the session (FATAL: the connection closes after it).
pub fn fatal(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".into(),
        code.into(),
        message,
    )))
}

pub fn error_info(e: &SqlError) -> ErrorInfo {
    // Errors that end the session are FATAL: the connection closes after them.
    let severity = match e.code {
        sqlstate::IDLE_IN_TRANSACTION_TIMEOUT | sqlstate::ADMIN_SHUTDOWN => "FATAL",
        _ => "ERROR",
    };
    let mut info = ErrorInfo::new(severity.to_owned(), e.code.to_owned(), e.message.clone());
    if let Some(about) = &e.about {
        info.detail = about.detail.clone();
        info.hint = about.hint.clone();
        if about.table.is_some() {
            // One schema, as PostgreSQL's default search path shows it.
            info.schema = Some("public".to_owned());
        }
        info.table = about.table.clone();
        info.column = about.column.clone();
        info.constraint = about.constraint.clone();
    }
    info
}

/// `e` as pgwire's error.
pub fn pg_error(e: &SqlError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}
