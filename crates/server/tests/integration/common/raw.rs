//! A client speaking the protocol by hand, to send messages no driver sends (together, or at
//! all).

use std::io::{Read, Write};
use std::net::TcpStream;

/// The startup packet of protocol 3.0 for `user` (and a database of that name).
pub fn startup(user: &str) -> Vec<u8> {
    startup_with(user, &[])
}

/// The startup packet of protocol 3.0 for `user`, with `parameters` besides.
pub fn startup_with(user: &str, parameters: &[(&str, &str)]) -> Vec<u8> {
    let mut params = format!("user\0{user}\0database\0{user}\0");
    for (name, value) in parameters {
        params.push_str(&format!("{name}\0{value}\0"));
    }
    params.push('\0');
    let mut packet = Vec::new();
    packet.extend_from_slice(&((8 + params.len()) as u32).to_be_bytes());
    packet.extend_from_slice(&196_608u32.to_be_bytes());
    packet.extend_from_slice(params.as_bytes());
    packet
}

/// A client speaking the protocol by hand, to send messages no driver sends together.
pub struct Raw(pub TcpStream);

impl Raw {
    pub fn connect(port: u16) -> Raw {
        Raw::open(port, &startup("raw")).0
    }

    /// Connects and sends `packet`: the connection, and the messages up to its first
    /// ReadyForQuery (or, if the server refuses it, up to its close).
    pub fn open(port: u16, packet: &[u8]) -> (Raw, (Vec<u8>, Vec<String>)) {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("tcp");
        s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .expect("timeout");
        s.write_all(packet).expect("startup");
        let mut raw = Raw(s);
        let messages = raw.until_ready();
        (raw, messages)
    }

    pub fn send(&mut self, kind: u8, body: &[u8]) {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        self.0.write_all(&m).expect("send");
    }

    /// Parse (unnamed), Bind (unnamed, no parameters), Execute: one statement, no Sync.
    pub fn execute(&mut self, sql: &str) {
        let mut parse = b"\0".to_vec();
        parse.extend_from_slice(sql.as_bytes());
        parse.extend_from_slice(&[0, 0, 0]);
        self.send(b'P', &parse);
        self.send(b'B', &[0, 0, 0, 0, 0, 0, 0, 0]);
        self.send(b'E', &[0, 0, 0, 0, 0]);
    }

    /// The messages up to ReadyForQuery (or the server's close): their kinds, and the SQLSTATE
    /// of any error.
    pub fn until_ready(&mut self) -> (Vec<u8>, Vec<String>) {
        self.messages(true)
    }

    /// The messages up to the server's close of the connection (unasked for: nothing is sent).
    pub fn until_closed(&mut self) -> (Vec<u8>, Vec<String>) {
        self.messages(false)
    }

    /// The messages up to ReadyForQuery (`to_ready`), or up to the connection's end.
    fn messages(&mut self, to_ready: bool) -> (Vec<u8>, Vec<String>) {
        let (mut kinds, mut codes) = (Vec::new(), Vec::new());
        loop {
            let mut head = [0u8; 5];
            if self.0.read(&mut head[..1]).expect("a message or the end") == 0 {
                return (kinds, codes);
            }
            self.0.read_exact(&mut head[1..]).expect("a message");
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4;
            let mut body = vec![0u8; len];
            self.0.read_exact(&mut body).expect("its body");
            kinds.push(head[0]);
            if head[0] == b'E' {
                let fields = body.split(|b| *b == 0);
                for f in fields {
                    if f.first() == Some(&b'C') {
                        codes.push(String::from_utf8_lossy(&f[1..]).into_owned());
                    }
                }
            }
            if to_ready && head[0] == b'Z' {
                return (kinds, codes);
            }
        }
    }

    pub fn query(&mut self, sql: &str) -> (Vec<u8>, Vec<String>) {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body);
        self.until_ready()
    }
}
