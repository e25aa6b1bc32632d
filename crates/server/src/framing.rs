//! Frontend messages framed by their declared length and checked against their kind's layout
//! before the protocol crate decodes them, as PostgreSQL's backend reads them: a message is
//! exactly the bytes its length field declares, strings end inside it with their NUL, counts
//! and lengths agree with what follows, and format codes are 0 or 1. What breaks that is a
//! protocol violation (08P01) that ends the connection with an ErrorResponse.
//!
//! Why here: the protocol crate (pgwire 0.42) decodes a message from the whole read buffer, so
//! a Query missing its NUL ran on into the next message, and bodies shorter than their counts
//! claim made it panic (`advance out of bounds`) and drop the connection with no answer.
//!
//! Must never: read past a message's declared end, or let a message the checks refused reach
//! the decoder.

/// PostgreSQL's limit on a startup packet (`MAX_STARTUP_PACKET_LENGTH`).
const MAX_STARTUP: usize = 10_000;
/// PostgreSQL's limit on a message that may carry data (`PQ_LARGE_MESSAGE_LIMIT`).
const MAX_LARGE: usize = (1 << 30) - 1;
/// PostgreSQL's limit on any other message (`PQ_SMALL_MESSAGE_LIMIT`).
const MAX_SMALL: usize = 10_000;

/// What the start of a read buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// Not all of the next message yet.
    Incomplete,
    /// A whole message of this many bytes (its kind byte and length field included).
    Complete(usize),
    /// A length no message may have.
    Invalid(String),
}

/// Where the first message in `buf` ends: a startup packet (no kind byte) while `startup`.
pub(crate) fn frame(buf: &[u8], startup: bool) -> Frame {
    let at = usize::from(!startup);
    let Some(field) = buf.get(at..at + 4) else {
        return Frame::Incomplete;
    };
    let len = i32::from_be_bytes([field[0], field[1], field[2], field[3]]);
    let max = match buf.first() {
        _ if startup => MAX_STARTUP,
        Some(b'Q' | b'P' | b'B' | b'd' | b'p' | b'F' | b'f') => MAX_LARGE,
        _ => MAX_SMALL,
    };
    let min = if startup { 8 } else { 4 };
    let Some(len) = usize::try_from(len)
        .ok()
        .filter(|l| (min..=max).contains(l))
    else {
        return Frame::Invalid(if startup {
            "invalid length of startup packet".into()
        } else {
            format!("invalid message length {len}")
        });
    };
    if buf.len() < at + len {
        Frame::Incomplete
    } else {
        Frame::Complete(at + len)
    }
}

/// Reads the parts of one message's body in order; each read fails past the body's end.
struct Body<'a>(&'a [u8]);

impl<'a> Body<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("insufficient data left in message".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn string(&mut self) -> Result<&'a [u8], String> {
        let end = (self.0.iter().position(|&b| b == 0))
            .ok_or_else(|| "invalid string in message".to_owned())?;
        let s = self.take(end)?;
        self.take(1)?;
        Ok(s)
    }

    fn int16(&mut self) -> Result<i16, String> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn int32(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A count, which may not be negative.
    fn count(&mut self) -> Result<usize, String> {
        usize::try_from(self.int16()?).map_err(|_| "invalid count in message".to_owned())
    }

    fn formats(&mut self) -> Result<usize, String> {
        let n = self.count()?;
        for _ in 0..n {
            let f = self.int16()?;
            if f != 0 && f != 1 {
                return Err(format!("unsupported format code: {f}"));
            }
        }
        Ok(n)
    }

    fn end(&self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err("invalid message format".into())
        }
    }
}

/// Checks that the text a message of `kind` carries (a statement, names) is UTF-8, the
/// encoding sessions use: the error (22021) names the first byte that is not, as PostgreSQL's.
/// Not a protocol violation: the message is refused and the session goes on.
pub(crate) fn check_encoding(kind: u8, body: &[u8]) -> Result<(), String> {
    let strings = match kind {
        b'Q' | b'P' | b'B' | b'E' => body,
        b'D' | b'C' => body.get(1..).unwrap_or_default(),
        _ => return Ok(()),
    };
    // The strings come first in each of these; what follows them is binary and not checked.
    let count = match kind {
        b'Q' | b'E' | b'D' | b'C' => 1,
        _ => 2,
    };
    let mut rest = strings;
    for _ in 0..count {
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        if let Err(e) = std::str::from_utf8(&rest[..end]) {
            let bad = rest[e.valid_up_to()];
            return Err(format!(
                "invalid byte sequence for encoding \"UTF8\": 0x{bad:02x}"
            ));
        }
        rest = rest.get(end + 1..).unwrap_or_default();
    }
    Ok(())
}

/// Checks the body of a message of `kind` (after startup) against its layout.
pub(crate) fn check(kind: u8, body: &[u8]) -> Result<(), String> {
    let mut b = Body(body);
    match kind {
        b'Q' | b'f' => {
            b.string()?;
        }
        b'P' => {
            b.string()?;
            b.string()?;
            let n = b.count()?;
            b.take(4 * n)?;
        }
        b'B' => {
            b.string()?;
            b.string()?;
            let formats = b.formats()?;
            let params = b.count()?;
            if formats > 1 && formats != params {
                return Err(format!(
                    "bind message has {formats} parameter formats but {params} parameters"
                ));
            }
            for _ in 0..params {
                match b.int32()? {
                    -1 => {}
                    len if len >= 0 => {
                        b.take(len as usize)?;
                    }
                    len => return Err(format!("invalid parameter length {len}")),
                }
            }
            b.formats()?;
        }
        b'D' | b'C' => {
            let what = b.take(1)?[0];
            if what != b'S' && what != b'P' {
                return Err(format!(
                    "invalid {} message subtype {what}",
                    if kind == b'D' { "DESCRIBE" } else { "CLOSE" }
                ));
            }
            b.string()?;
        }
        b'E' => {
            b.string()?;
            b.int32()?;
        }
        b'S' | b'H' | b'c' | b'X' => {}
        // Data and authentication answers are read by their own handlers.
        b'd' | b'p' => return Ok(()),
        other => return Err(format!("invalid frontend message type {other}")),
    }
    b.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn a_message_ends_where_its_length_says() {
        let mut two = message(b'Q', b"select 1\0");
        let first = two.len();
        two.extend(message(b'S', b""));
        assert_eq!(frame(&two, false), Frame::Complete(first));
        assert_eq!(frame(&two[..first - 1], false), Frame::Incomplete);
        assert_eq!(frame(&[b'Q', 0, 0], false), Frame::Incomplete);
        assert!(matches!(
            frame(&[b'Q', 0, 0, 0, 3], false),
            Frame::Invalid(_)
        ));
        assert!(matches!(
            frame(&[b'S', 0, 1, 0, 0], false),
            Frame::Invalid(_)
        ));
        assert!(matches!(
            frame(&[b'Q', 0xff, 0, 0, 0], false),
            Frame::Invalid(_)
        ));
        assert!(matches!(frame(&[0, 0, 0, 4], true), Frame::Invalid(_)));
        assert_eq!(frame(&[0, 0, 0, 8, 0, 3, 0], true), Frame::Incomplete);
    }

    #[test]
    fn bodies_are_checked_against_their_layout() {
        assert_eq!(check(b'Q', b"select 1\0"), Ok(()));
        // The NUL of a Query must end it: no string running into what follows.
        assert!(check(b'Q', b"select 1").is_err());
        assert!(check(b'Q', b"select 1\0Q").is_err());
        let bind = |formats: &[i16], params: &[i32]| {
            let mut b = b"\0\0".to_vec();
            b.extend((formats.len() as i16).to_be_bytes());
            formats.iter().for_each(|f| b.extend(f.to_be_bytes()));
            b.extend((params.len() as i16).to_be_bytes());
            for &len in params {
                b.extend(len.to_be_bytes());
                b.extend(std::iter::repeat_n(b'7', len.max(0) as usize));
            }
            b.extend(0i16.to_be_bytes());
            b
        };
        assert_eq!(check(b'B', &bind(&[0], &[2])), Ok(()));
        assert_eq!(check(b'B', &bind(&[1], &[-1, 4])), Ok(()));
        assert!(check(b'B', &bind(&[0, 0, 0, 0, 0], &[2])).is_err());
        assert!(check(b'B', &bind(&[7], &[2])).is_err());
        assert!(check(b'B', &bind(&[], &[-2])).is_err());
        let mut short = bind(&[], &[5]);
        short.truncate(short.len() - 4);
        assert!(check(b'B', &short).is_err());
        assert_eq!(check(b'E', b"\0\0\0\0\0"), Ok(()));
        assert!(check(b'E', b"\0\0\0").is_err());
        assert!(check(b'D', b"X\0").is_err());
        assert!(check(b'S', b"x").is_err());
        assert!(check(b'Z', b"").is_err());
        assert_eq!(check(b'P', b"\0select $1\0\0\x01\0\0\0\x17"), Ok(()));
        assert_eq!(check_encoding(b'Q', "select 'é'\0".as_bytes()), Ok(()));
        assert!(check_encoding(b'Q', b"select 'a\xff'\0").is_err());
        assert!(check_encoding(b'P', b"\0select '\xc3'\0\0\0").is_err());
        assert_eq!(
            check_encoding(b'B', b"\0\0\0\x01\0\x01\0\0\0\x01\xff\0\0"),
            Ok(())
        );
        assert!(check(b'P', b"\0select $1\0\0\x02\0\0\0\x17").is_err());
    }
}
