//! RESP, the Redis protocol: requests in (arrays of bulk strings, or inline commands), and
//! replies out in RESP2 or RESP3.

/// Limits on what a request may be; past them the request is a protocol error and the
/// connection is closed (the server and its data are untouched).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes one request may take, all arguments together.
    pub max_request: usize,
    /// Arguments one request may have.
    pub max_args: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request: 512 << 20,
            max_args: 1 << 20,
        }
    }
}

/// A parsed request (its arguments) and the bytes it took.
pub type Parsed = (Vec<Vec<u8>>, usize);

/// A request that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

/// What parsing the front of a buffer found.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// A whole request: its arguments and the bytes it took.
    Request(Vec<Vec<u8>>, usize),
    /// The request is not all there: nothing can come of parsing again before the buffer
    /// holds at least this many bytes (a bulk string's announced end, or one more byte).
    Need(usize),
}

/// Parses one request from the front of `buf`: `Ok(Some((args, used)))`, or `Ok(None)` if
/// more bytes are needed.
///
/// # Errors
/// A malformed or oversized request.
pub fn parse(buf: &[u8], limits: &Limits) -> Result<Option<Parsed>, ProtocolError> {
    Ok(match parse_step(buf, limits)? {
        Step::Request(args, used) => Some((args, used)),
        Step::Need(_) => None,
    })
}

/// Parses one request from the front of `buf`, copying its arguments only once it is all
/// there; an incomplete one says how many bytes it needs, so that a reader waiting for a
/// large argument does not parse again (and copy again) on every read: a 256 MiB argument
/// arriving in 64 KiB reads would otherwise cost thousands of passes over it.
///
/// # Errors
/// A malformed or oversized request.
pub fn parse_step(buf: &[u8], limits: &Limits) -> Result<Step, ProtocolError> {
    let more = Step::Need(buf.len() + 1);
    if buf.is_empty() {
        return Ok(more);
    }
    if buf[0] != b'*' {
        return Ok(match parse_inline(buf, limits)? {
            Some((args, used)) => Step::Request(args, used),
            None => more,
        });
    }
    let Some((n, mut at)) = line_int(buf, 1, "multibulk")? else {
        return Ok(more);
    };
    if n < 0 {
        return Ok(Step::Request(Vec::new(), at)); // a null array: nothing to do
    }
    // (Redis's texts for the protocol's errors, which clients and its tests match.)
    if n as u64 > limits.max_args as u64 {
        return Err(ProtocolError("invalid multibulk length".into()));
    }
    let n = n as usize;
    // Where each argument lies; copied once the request is whole.
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(n.min(1024));
    let mut total = 0usize;
    for _ in 0..n {
        let Some(&first) = buf.get(at) else {
            return Ok(more);
        };
        if first != b'$' {
            return Err(ProtocolError(format!(
                "expected '$', got '{}'",
                (first as char).escape_default()
            )));
        }
        let Some((len, start)) = line_int(buf, at + 1, "bulk")? else {
            return Ok(more);
        };
        if len < 0 || len as u64 > limits.max_request as u64 {
            return Err(ProtocolError("invalid bulk length".into()));
        }
        let len = len as usize;
        total += len;
        if total > limits.max_request {
            return Err(ProtocolError(format!(
                "request larger than {} bytes",
                limits.max_request
            )));
        }
        if buf.len() < start + len + 2 {
            return Ok(Step::Need(start + len + 2));
        }
        if &buf[start + len..start + len + 2] != b"\r\n" {
            return Err(ProtocolError("bulk string not followed by CRLF".into()));
        }
        spans.push((start, len));
        at = start + len + 2;
    }
    let args = spans
        .into_iter()
        .map(|(start, len)| buf[start..start + len].to_vec())
        .collect();
    Ok(Step::Request(args, at))
}

/// The integer on the line starting at `from` (after a type byte), and where the next line
/// starts; `what` ("multibulk", "bulk") names the length in errors.
fn line_int(buf: &[u8], from: usize, what: &str) -> Result<Option<(i64, usize)>, ProtocolError> {
    let Some(end) = buf[from.min(buf.len())..].iter().position(|&b| b == b'\r') else {
        if buf.len() - from.min(buf.len()) > 32 {
            let short = if what == "bulk" { "bulk" } else { "mbulk" };
            return Err(ProtocolError(format!("too big {short} count string")));
        }
        return Ok(None);
    };
    let end = from + end;
    if buf.len() < end + 2 {
        return Ok(None);
    }
    if buf[end + 1] != b'\n' {
        return Err(ProtocolError("expected CRLF".into()));
    }
    let s = std::str::from_utf8(&buf[from..end])
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| ProtocolError(format!("invalid {what} length")))?;
    Ok(Some((s, end + 2)))
}

/// An inline command: words separated by spaces, ended by a newline (redis-cli's and
/// telnet's form).
fn parse_inline(buf: &[u8], limits: &Limits) -> Result<Option<Parsed>, ProtocolError> {
    // Redis's 64 KiB for an inline line, or less where the client is held to less (one
    // that has not authenticated).
    let cap = limits.max_request.min(64 << 10);
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > cap {
            return Err(ProtocolError("too big inline request".into()));
        }
        return Ok(None);
    };
    if nl > cap {
        return Err(ProtocolError("too big inline request".into()));
    }
    let line = &buf[..nl];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let args =
        split_inline(line).ok_or_else(|| ProtocolError("unbalanced quotes in request".into()))?;
    if args.len() > limits.max_args {
        return Err(ProtocolError("invalid multibulk length".into()));
    }
    Ok(Some((args, nl + 1)))
}

/// An inline line's words, as redis-cli writes them: separated by blanks; a word in double
/// quotes may hold blanks and the escapes `\n \r \t \b \a \\ \" \xHH`, one in single quotes
/// blanks and `\'`. None if a quote is not closed, or a closing quote is not followed by a
/// blank or the end (Redis's `sdssplitargs`).
fn split_inline(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && blank(line[i]) {
            i += 1;
        }
        if i == line.len() {
            return Some(args);
        }
        let mut word = Vec::new();
        let (mut dq, mut sq) = (false, false);
        loop {
            let c = line.get(i).copied();
            if dq {
                match c {
                    None => return None,
                    Some(b'\\') if i + 3 < line.len() && line[i + 1] == b'x' => {
                        match (hex(line[i + 2]), hex(line[i + 3])) {
                            (Some(h), Some(l)) => {
                                word.push(h * 16 + l);
                                i += 3;
                            }
                            _ => word.push(b'\\'),
                        }
                    }
                    Some(b'\\') if i + 1 < line.len() => {
                        i += 1;
                        word.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if line.get(i + 1).is_some_and(|&n| !blank(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => word.push(other),
                }
            } else if sq {
                match c {
                    None => return None,
                    Some(b'\\') if line.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        word.push(b'\'');
                    }
                    Some(b'\'') => {
                        if line.get(i + 1).is_some_and(|&n| !blank(n)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => word.push(other),
                }
            } else {
                match c {
                    None => break,
                    Some(b) if blank(b) => break,
                    Some(b'"') => dq = true,
                    Some(b'\'') => sq = true,
                    Some(other) => word.push(other),
                }
            }
            i += 1;
        }
        args.push(word);
    }
}

/// Where a reply too large to hold goes while it is written: to the client's connection.
/// `sink(bytes, wait)` sends what the connection takes now (`wait` false) or all of it
/// (`wait` true), and returns how many bytes went, or None once the connection failed.
pub type Sink = Box<dyn FnMut(&[u8], bool) -> Option<usize> + Send>;

/// A reply being written, in RESP2 or RESP3.
pub struct Out {
    pub buf: Vec<u8>,
    pub resp3: bool,
    /// Where `spill` writes what has gathered (none: everything stays in `buf`).
    pub sink: Option<Sink>,
    /// The sink failed: the connection is gone.
    pub failed: bool,
    /// Error replies written (INFO commandstats counts a call failed when its reply is
    /// one, even after a spill took the reply's first byte out of `buf`).
    pub errors: u64,
    /// Whether the client is still connected (a blocked command asks while it waits).
    pub alive: Option<Box<dyn Fn() -> bool + Send>>,
    /// `spill` offers the sink what has gathered again once `buf` is this long.
    next_offer: usize,
    /// The connection's client id (CLIENT UNBLOCK names a blocked client by it).
    pub client_id: u64,
    /// Bytes the sink has taken from `buf` so far.
    pub drained: u64,
}

/// `spill` writes out what has gathered once it passes this many bytes, as far as the
/// connection takes it without waiting.
pub const SPILL_BYTES: usize = 1 << 20;

/// `spill` waits for the connection once this much has gathered. Below it a client that
/// reads slowly holds up nobody (a command spills with the transaction lock held: waiting
/// on the client then would hold up every EXEC, and the commands queued behind it); above
/// it, the server's memory is the bound.
pub const SPILL_WAIT_BYTES: usize = 64 << 20;

impl Out {
    /// A reply buffer with no sink.
    pub fn new(resp3: bool) -> Out {
        Out {
            buf: Vec::new(),
            resp3,
            sink: None,
            failed: false,
            errors: 0,
            alive: None,
            next_offer: SPILL_BYTES,
            client_id: 0,
            drained: 0,
        }
    }

    /// Writes out what has gathered if it passed `SPILL_BYTES` and there is a sink: a long
    /// reply (or a long pipeline's replies) goes out in pieces instead of being held whole.
    pub fn spill(&mut self) {
        let wait = self.buf.len() >= SPILL_WAIT_BYTES;
        if self.buf.len() < self.next_offer.max(SPILL_BYTES) && !wait || self.failed {
            return;
        }
        if let Some(sink) = self.sink.as_mut() {
            match sink(&self.buf, wait) {
                Some(n) => {
                    self.buf.drain(..n);
                    self.drained += n as u64;
                }
                None => {
                    self.failed = true;
                    self.drained += self.buf.len() as u64;
                    self.buf.clear();
                }
            }
            // (Offered again once another SPILL_BYTES have gathered.)
            self.next_offer = self.buf.len() + SPILL_BYTES;
        }
    }

    /// Writes out whatever has gathered, now (before a command blocks: the replies of the
    /// requests before it go out meanwhile, as Redis sends them).
    pub fn flush_now(&mut self) {
        if self.buf.is_empty() || self.failed {
            return;
        }
        if let Some(sink) = self.sink.as_mut() {
            if sink(&self.buf, true).is_none() {
                self.failed = true;
            }
            self.drained += self.buf.len() as u64;
            self.buf.clear();
            self.next_offer = SPILL_BYTES;
        }
    }

    /// Whether the client is still there (true when there is no way to tell).
    pub fn client_alive(&self) -> bool {
        !self.failed && self.alive.as_ref().is_none_or(|f| f())
    }

    pub fn simple(&mut self, s: &str) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn error(&mut self, s: &str) {
        self.errors += 1;
        self.buf.push(b'-');
        // An error line may not hold a line break.
        for b in s.bytes() {
            self.buf
                .push(if b == b'\r' || b == b'\n' { b' ' } else { b });
        }
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn int(&mut self, n: i64) {
        self.buf.extend_from_slice(format!(":{n}\r\n").as_bytes());
    }

    pub fn bulk(&mut self, b: &[u8]) {
        self.buf
            .extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
        self.buf.extend_from_slice(b);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A floating-point number: a RESP3 double, or its text as a bulk string (RESP2).
    pub fn double(&mut self, text: &str) {
        if self.resp3 {
            self.buf
                .extend_from_slice(format!(",{text}\r\n").as_bytes());
        } else {
            self.bulk(text.as_bytes());
        }
    }

    pub fn null(&mut self) {
        self.buf
            .extend_from_slice(if self.resp3 { b"_\r\n" } else { b"$-1\r\n" });
    }

    /// A null array (RESP2 `*-1`: what Redis answers for "no elements" where an array
    /// was asked for, e.g. LPOP key count on a missing key, a timed-out BLPOP).
    pub fn null_array(&mut self) {
        self.buf
            .extend_from_slice(if self.resp3 { b"_\r\n" } else { b"*-1\r\n" });
    }

    /// A push of `n` elements (RESP3's `>`: pub/sub messages), or an array (RESP2).
    pub fn push(&mut self, n: usize) {
        let head = if self.resp3 { '>' } else { '*' };
        self.buf
            .extend_from_slice(format!("{head}{n}\r\n").as_bytes());
    }

    pub fn array(&mut self, n: usize) {
        self.buf.extend_from_slice(format!("*{n}\r\n").as_bytes());
    }

    /// A map of `n` pairs (RESP3), or a flat array of 2n (RESP2).
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.buf.extend_from_slice(format!("%{n}\r\n").as_bytes());
        } else {
            self.array(2 * n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incomplete_request_says_how_much_it_needs() {
        let l = Limits::default();
        let req = b"*2\r\n$3\r\nSET\r\n$10\r\n0123456789\r\n";
        // The big argument's length is known once its header is in: its end is the need.
        assert_eq!(parse_step(&req[..17], &l).unwrap(), Step::Need(18));
        assert_eq!(parse_step(&req[..18], &l).unwrap(), Step::Need(req.len()));
        assert_eq!(parse_step(&req[..25], &l).unwrap(), Step::Need(req.len()));
        // Inside a header: one more byte.
        assert_eq!(parse_step(&req[..3], &l).unwrap(), Step::Need(4));
        assert!(matches!(
            parse_step(req, &l).unwrap(),
            Step::Request(args, n) if args.len() == 2 && n == req.len()
        ));
    }

    #[test]
    fn requests_parse_whole_or_ask_for_more() {
        let l = Limits::default();
        let req = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n";
        let (args, used) = parse(req, &l).unwrap().unwrap();
        assert_eq!(args, vec![b"GET".to_vec(), b"k".to_vec()]);
        let (args, _) = parse(&req[used..], &l).unwrap().unwrap();
        assert_eq!(args, vec![b"PING".to_vec()]);
        for cut in 0..used {
            assert_eq!(parse(&req[..cut], &l).unwrap(), None, "cut at {cut}");
        }
        let (args, used) = parse(b"set a  b\r\nrest", &l).unwrap().unwrap();
        assert_eq!(args.len(), 3);
        assert_eq!(used, 10);
    }

    #[test]
    fn bad_and_oversized_requests_are_errors() {
        let l = Limits {
            max_request: 10,
            max_args: 3,
        };
        assert!(parse(b"*2\r\n:3\r\n", &l).is_err());
        assert!(parse(b"*1\r\n$20\r\n", &l).is_err());
        assert!(parse(b"*9\r\n", &l).is_err());
        assert!(parse(b"*1\r\n$x\r\n", &l).is_err());
        assert!(parse(b"*1\r\n$2\r\nabcd", &l).is_err());
        assert!(parse(b"*1\r\n$-1\r\n", &l).is_err());
        assert!(parse(&[b'*'; 100], &l).is_err());
    }
}
