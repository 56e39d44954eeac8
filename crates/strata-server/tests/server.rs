//! strata-server run as a process and spoken to over TCP, with a minimal RESP client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    Null,
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(Some(s.as_bytes().to_vec()))
}

struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Client {
    fn connect(port: u16) -> Client {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => {
                    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                    return Client {
                        r: BufReader::new(s.try_clone().unwrap()),
                        w: s,
                    };
                }
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("cannot connect: {e}"),
            }
        }
    }

    fn send(&mut self, args: &[&[u8]]) {
        self.w.write_all(&encode(args)).unwrap();
    }

    fn read(&mut self) -> Reply {
        self.try_read().unwrap()
    }

    /// The next reply, or an error once the connection is gone (a killed server) or what
    /// came is no reply.
    fn try_read(&mut self) -> std::io::Result<Reply> {
        let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        let mut line = String::new();
        self.r.read_line(&mut line)?;
        if !line.ends_with("\r\n") {
            return Err(bad(format!("line {line:?}")));
        }
        let (t, rest) = line.split_at(1);
        let rest = rest.trim_end();
        let int = |s: &str| s.parse::<i64>().map_err(|_| bad(format!("line {line:?}")));
        Ok(match t {
            "+" => Reply::Simple(rest.into()),
            "-" => Reply::Error(rest.into()),
            ":" => Reply::Int(int(rest)?),
            "_" => Reply::Null,
            "$" => {
                let n = int(rest)?;
                if n < 0 {
                    return Ok(Reply::Bulk(None));
                }
                let mut b = vec![0; n as usize + 2];
                self.r.read_exact(&mut b)?;
                b.truncate(n as usize);
                Reply::Bulk(Some(b))
            }
            // (A RESP3 push, as pub/sub messages come, reads as an array.)
            "*" | ">" => {
                let n = int(rest)?;
                if n < 0 {
                    // RESP2's null array.
                    return Ok(Reply::Null);
                }
                Reply::Array((0..n).map(|_| self.try_read()).collect::<Result<_, _>>()?)
            }
            "%" => {
                let n = int(rest)?;
                let mut pairs = Vec::new();
                for _ in 0..n {
                    pairs.push((self.try_read()?, self.try_read()?));
                }
                Reply::Map(pairs)
            }
            _ => return Err(bad(format!("unexpected reply line {line:?}"))),
        })
    }

    fn cmd(&mut self, args: &[&str]) -> Reply {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.send(&a);
        self.read()
    }

    /// Whether the server closed the connection.
    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0) | Err(_))
    }
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

struct Server {
    child: Child,
    port: u16,
    /// What the server wrote to stderr.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    /// Starts a server on a port the system chooses (`--port 0`) and reads the port from its
    /// "serving ... on ADDR" line. (A port found free beforehand could be taken by another
    /// test's server in between: this test's server would fail to bind and its client would
    /// talk to the other one.)
    fn start(dir: &std::path::Path, extra: &[&str]) -> Server {
        Self::start_with_env(dir, extra, &[])
    }

    fn start_with_env(dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata-server"))
            .arg("--dir")
            .arg(dir)
            .args(["--port", "0"])
            .args(extra)
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("strata-server exited before serving")
                .unwrap();
            if let Some(addr) = line.strip_prefix("strata-server: serving ") {
                let port = addr.rsplit(':').next().unwrap();
                break port.parse().unwrap_or_else(|_| panic!("{line}"));
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for l in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(l);
            }
        });
        Server { child, port, log }
    }

    fn client(&self) -> Client {
        Client::connect(self.port)
    }

    /// Fails if the server reported a panic.
    fn assert_no_panic(&self) {
        let log = self.log.lock().unwrap();
        assert!(
            !log.iter().any(|l| l.contains("panicked")),
            "the server panicked:\n{}",
            log.join("\n")
        );
    }

    fn signal(&mut self, sig: &str) -> std::process::ExitStatus {
        Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("strata-server-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

#[test]
fn string_commands_and_their_errors() {
    let dir = temp_dir("strings");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    assert_eq!(c.cmd(&["ping", "hi"]), bulk("hi"));
    assert_eq!(c.cmd(&["ECHO", "x y"]), bulk("x y"));
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    assert!(matches!(c.cmd(&["SELECT", "1"]), Reply::Error(e) if e.contains("out of range")));
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "v1"]), ok());
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v1"));
    assert_eq!(c.cmd(&["SET", "k", "v2", "NX"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "v2", "XX", "GET"]), bulk("v1"));
    assert_eq!(c.cmd(&["SET", "new", "v", "XX"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["GET", "new"]), Reply::Bulk(None));
    assert!(
        matches!(c.cmd(&["SET", "k", "v", "NX", "XX"]), Reply::Error(e) if e.contains("syntax"))
    );
    assert!(
        matches!(c.cmd(&["SET", "k", "v", "EX", "0"]), Reply::Error(e) if e.contains("invalid expire time"))
    );
    assert!(
        matches!(c.cmd(&["SET", "k", "v", "EX", "1", "KEEPTTL"]), Reply::Error(e) if e.contains("syntax"))
    );
    assert_eq!(c.cmd(&["SETNX", "k", "x"]), Reply::Int(0));
    assert_eq!(c.cmd(&["SETNX", "k2", "x"]), Reply::Int(1));
    assert_eq!(c.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]), ok());
    assert_eq!(
        c.cmd(&["MGET", "a", "nope", "c"]),
        Reply::Array(vec![bulk("1"), Reply::Bulk(None), bulk("3")])
    );
    assert!(
        matches!(c.cmd(&["MSET", "a", "1", "b"]), Reply::Error(e) if e.contains("wrong number"))
    );
    assert_eq!(c.cmd(&["EXISTS", "a", "b", "nope", "a"]), Reply::Int(3));
    assert_eq!(c.cmd(&["DEL", "a", "nope"]), Reply::Int(1));
    assert_eq!(c.cmd(&["INCR", "n"]), Reply::Int(1));
    assert_eq!(c.cmd(&["INCRBY", "n", "41"]), Reply::Int(42));
    assert_eq!(c.cmd(&["DECR", "n"]), Reply::Int(41));
    assert_eq!(c.cmd(&["DECRBY", "n", "50"]), Reply::Int(-9));
    assert!(matches!(c.cmd(&["INCR", "k"]), Reply::Error(e) if e.contains("not an integer")));
    assert!(
        matches!(c.cmd(&["INCRBY", "n", "x"]), Reply::Error(e) if e.contains("not an integer"))
    );
    c.cmd(&["SET", "big", &i64::MAX.to_string()]);
    assert!(matches!(c.cmd(&["INCR", "big"]), Reply::Error(e) if e.contains("overflow")));
    assert_eq!(c.cmd(&["APPEND", "ap", "ab"]), Reply::Int(2));
    assert_eq!(c.cmd(&["APPEND", "ap", "cde"]), Reply::Int(5));
    assert_eq!(c.cmd(&["STRLEN", "ap"]), Reply::Int(5));
    assert_eq!(c.cmd(&["STRLEN", "none"]), Reply::Int(0));
    assert!(
        matches!(c.cmd(&["GET"]), Reply::Error(e) if e.contains("wrong number of arguments for 'get'"))
    );
    assert!(
        matches!(c.cmd(&["FROB", "x"]), Reply::Error(e) if e.contains("unknown command 'FROB'"))
    );
    assert!(matches!(c.cmd(&["FLUSHDB"]), Reply::Error(e) if e.contains("disabled")));
    // The connection lives on after errors.
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(7));
    assert!(
        matches!(c.cmd(&["INFO"]), Reply::Bulk(Some(b)) if String::from_utf8_lossy(&b).contains("db0:keys=7"))
    );
    assert_eq!(c.cmd(&["QUIT"]), ok());
    assert!(c.closed());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn keys_scan_pipelining_and_resp3() {
    let dir = temp_dir("scan");
    let s = Server::start(&dir, &["--keys-limit", "500", "--enable-flushdb"]);
    let mut c = s.client();
    // 1000 SETs in one write: 1000 replies, in order.
    let mut burst = Vec::new();
    for i in 0..1000 {
        let k = format!("user:{i:04}");
        burst.extend(encode(&[b"SET", k.as_bytes(), b"x"]));
    }
    c.w.write_all(&burst).unwrap();
    for _ in 0..1000 {
        assert_eq!(c.read(), ok());
    }
    c.cmd(&["SET", "other", "y"]);
    assert!(matches!(c.cmd(&["KEYS", "*"]), Reply::Error(e) if e.contains("SCAN")));
    assert_eq!(
        c.cmd(&["KEYS", "user:09[0-4]?"]),
        Reply::Array((900..950).map(|i| bulk(&format!("user:{i:04}"))).collect())
    );
    // SCAN visits every matching key once, whatever COUNT says.
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    loop {
        let Reply::Array(r) = c.cmd(&["SCAN", &cursor, "MATCH", "user:*", "COUNT", "77"]) else {
            panic!()
        };
        let Reply::Bulk(Some(next)) = &r[0] else {
            panic!()
        };
        let Reply::Array(keys) = &r[1] else { panic!() };
        seen.extend(keys.iter().cloned());
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);
    assert!(matches!(c.cmd(&["SCAN", "12345678"]), Reply::Error(_)));
    // RESP3: HELLO's map, and nulls as `_`.
    let Reply::Map(m) = c.cmd(&["HELLO", "3"]) else {
        panic!()
    };
    assert!(m.contains(&(bulk("proto"), Reply::Int(3))));
    assert_eq!(c.cmd(&["GET", "missing"]), Reply::Null);
    assert_eq!(c.cmd(&["FLUSHDB"]), ok());
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(0));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn auth_is_required_when_a_password_is_set() {
    let dir = temp_dir("auth");
    let s = Server::start(&dir, &["--requirepass", "sekrit"]);
    let mut c = s.client();
    assert!(matches!(c.cmd(&["GET", "k"]), Reply::Error(e) if e.starts_with("NOAUTH")));
    assert!(matches!(c.cmd(&["AUTH", "wrong"]), Reply::Error(e) if e.starts_with("WRONGPASS")));
    assert_eq!(c.cmd(&["AUTH", "sekrit"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    let mut c2 = s.client();
    let hello = c2.cmd(&["HELLO", "2", "AUTH", "default", "sekrit"]);
    assert!(matches!(hello, Reply::Array(_)), "{hello:?}");
    assert_eq!(c2.cmd(&["GET", "k"]), bulk("v"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn malformed_or_oversized_requests_close_only_their_connection() {
    let dir = temp_dir("bad");
    let s = Server::start(&dir, &["--max-request-bytes", "1000"]);
    let mut good = s.client();
    assert_eq!(good.cmd(&["SET", "k", "v"]), ok());
    for bad in [&b"*1\r\n$x\r\n"[..], b"*2\r\n:1\r\n", b"*1\r\n$5000\r\n"] {
        let mut c = s.client();
        c.w.write_all(bad).unwrap();
        assert!(matches!(c.read(), Reply::Error(e) if e.contains("Protocol error")));
        assert!(c.closed());
    }
    let mut big = s.client();
    let v = vec![b'x'; 2000];
    big.send(&[b"SET", b"big", &v]);
    assert!(matches!(big.read(), Reply::Error(e) if e.contains("Protocol error")));
    assert_eq!(good.cmd(&["GET", "k"]), bulk("v"));
    assert_eq!(good.cmd(&["GET", "big"]), Reply::Bulk(None));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sigterm_closes_cleanly_and_kill_9_loses_no_acknowledged_write() {
    let dir = temp_dir("kill");
    let mut s = Server::start(&dir, &["--sync", "always"]);
    let mut c = s.client();
    for i in 0..200 {
        assert_eq!(c.cmd(&["SET", &format!("t{i}"), "v"]), ok());
    }
    assert!(s.signal("-TERM").success(), "SIGTERM exits 0");
    // Writes from four clients; each remembers what was acknowledged; kill -9 mid-stream.
    let mut s = Server::start(&dir, &["--sync", "always"]);
    let port = s.port;
    let writers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
                let mut acked = 0u64;
                for i in 0.. {
                    let k = format!("w{t}:{i}");
                    c.send(&[b"SET", k.as_bytes(), b"value"]);
                    let mut line = String::new();
                    match c.r.read_line(&mut line) {
                        Ok(n) if n > 0 && line == "+OK\r\n" => acked = i + 1,
                        _ => break,
                    }
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    s.signal("-KILL");
    let acked: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(acked.iter().all(|&a| a > 10), "{acked:?}");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    for i in 0..200 {
        assert_eq!(c.cmd(&["GET", &format!("t{i}")]), bulk("v"));
    }
    for (t, &n) in acked.iter().enumerate() {
        for i in 0..n {
            assert_eq!(
                c.cmd(&["EXISTS", &format!("w{t}:{i}")]),
                Reply::Int(1),
                "w{t}:{i} of {n}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn hashes_sorted_sets_and_wrong_types() {
    let dir = temp_dir("types");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    assert_eq!(
        c.cmd(&["HSET", "user:1", "name", "ann", "age", "30"]),
        Reply::Int(2)
    );
    assert_eq!(
        c.cmd(&["HSET", "user:1", "age", "31", "city", "oslo"]),
        Reply::Int(1)
    );
    assert_eq!(c.cmd(&["HGET", "user:1", "age"]), bulk("31"));
    assert_eq!(c.cmd(&["HGET", "user:1", "nope"]), Reply::Bulk(None));
    assert_eq!(
        c.cmd(&["HMGET", "user:1", "name", "x", "city"]),
        Reply::Array(vec![bulk("ann"), Reply::Bulk(None), bulk("oslo")])
    );
    assert_eq!(
        c.cmd(&["HGETALL", "user:1"]),
        Reply::Array(vec![
            bulk("age"),
            bulk("31"),
            bulk("city"),
            bulk("oslo"),
            bulk("name"),
            bulk("ann")
        ])
    );
    assert_eq!(c.cmd(&["HLEN", "user:1"]), Reply::Int(3));
    assert_eq!(
        c.cmd(&["HDEL", "user:1", "city", "city", "nope"]),
        Reply::Int(1)
    );
    assert_eq!(c.cmd(&["HLEN", "user:1"]), Reply::Int(2));
    assert_eq!(c.cmd(&["TYPE", "user:1"]), Reply::Simple("hash".into()));
    assert_eq!(c.cmd(&["HGETALL", "none"]), Reply::Array(vec![]));
    assert!(
        matches!(c.cmd(&["HSET", "user:1", "odd"]), Reply::Error(e) if e.contains("wrong number"))
    );

    assert_eq!(
        c.cmd(&["ZADD", "idx", "3", "c", "1", "a", "2", "b", "-1.5", "neg"]),
        Reply::Int(4)
    );
    assert_eq!(c.cmd(&["ZADD", "idx", "10", "a"]), Reply::Int(0)); // moved, not added
    assert_eq!(c.cmd(&["ZCARD", "idx"]), Reply::Int(4));
    assert_eq!(c.cmd(&["ZSCORE", "idx", "a"]), bulk("10"));
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "idx", "-inf", "+inf"]),
        Reply::Array(vec![bulk("neg"), bulk("b"), bulk("c"), bulk("a")])
    );
    assert_eq!(
        c.cmd(&[
            "ZRANGEBYSCORE",
            "idx",
            "(2",
            "10",
            "WITHSCORES",
            "LIMIT",
            "0",
            "1"
        ]),
        Reply::Array(vec![bulk("c"), bulk("3")])
    );
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "idx", "0", "(10", "LIMIT", "1", "5"]),
        Reply::Array(vec![bulk("c")])
    );
    assert!(matches!(c.cmd(&["ZADD", "idx", "x", "m"]), Reply::Error(e) if e.contains("float")));
    assert_eq!(c.cmd(&["ZREM", "idx", "b", "zz"]), Reply::Int(1));
    assert_eq!(c.cmd(&["ZCARD", "idx"]), Reply::Int(3));

    // Wrong types: errors, and the connection goes on.
    c.cmd(&["SET", "str", "v"]);
    for (args, wrong) in [
        (vec!["HGET", "str", "f"], true),
        (vec!["HSET", "idx", "f", "v"], true),
        (vec!["ZADD", "user:1", "1", "m"], true),
        (vec!["GET", "user:1"], true),
        (vec!["INCR", "idx"], true),
        (vec!["APPEND", "user:1", "x"], true),
        (vec!["STRLEN", "idx"], true),
        (vec!["ZRANGEBYSCORE", "str", "0", "1"], true),
    ] {
        let r = c.cmd(&args);
        assert_eq!(
            matches!(&r, Reply::Error(e) if e.starts_with("WRONGTYPE")),
            wrong,
            "{args:?}: {r:?}"
        );
    }
    assert_eq!(
        c.cmd(&["EXISTS", "user:1", "idx", "str", "none"]),
        Reply::Int(3)
    );
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(3));
    let Reply::Array(r) = c.cmd(&["SCAN", "0", "COUNT", "100"]) else {
        panic!()
    };
    assert_eq!(
        r[1],
        Reply::Array(vec![bulk("idx"), bulk("str"), bulk("user:1")])
    );
    // SET replaces any type; DEL removes every element.
    assert_eq!(c.cmd(&["SET", "user:1", "flat"]), ok());
    assert_eq!(c.cmd(&["TYPE", "user:1"]), Reply::Simple("string".into()));
    assert_eq!(c.cmd(&["HGETALL", "user:1"]), Reply::Error(types_wrong()));
    assert_eq!(c.cmd(&["DEL", "idx", "user:1"]), Reply::Int(2));
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "idx", "-inf", "+inf"]),
        Reply::Array(vec![])
    );
    assert_eq!(c.cmd(&["ZADD", "idx", "5", "again"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["ZRANGEBYSCORE", "idx", "-inf", "+inf"]),
        Reply::Array(vec![bulk("again")])
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn types_wrong() -> String {
    "WRONGTYPE Operation against a key holding the wrong kind of value".into()
}

/// redis-py's default pipeline (MULTI, SET, INCR, EXEC) runs the block once, as one
/// (it once ran SET and INCR while the client saw an error, and a retry incremented
/// twice). SCAN's TYPE filters; its COUNT is clamped.
#[test]
fn multi_applies_once_and_scan_filters_by_type() {
    let dir = temp_dir("multi-scan");
    let s = Server::start(&dir, &["--keys-limit", "3"]);
    let mut c = s.client();
    assert_eq!(c.cmd(&["SET", "n", "1"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "x", "y"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["INCR", "n"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![ok(), Reply::Int(2)]));
    assert_eq!(c.cmd(&["GET", "n"]), bulk("2"));
    assert_eq!(c.cmd(&["GET", "x"]), bulk("y"));
    assert_eq!(c.cmd(&["DEL", "x"]), Reply::Int(1));
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["DISCARD"]), ok());
    assert!(matches!(c.cmd(&["EXEC"]), Reply::Error(e) if e.contains("without MULTI")));

    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), Reply::Int(1));
    assert_eq!(c.cmd(&["ZADD", "z", "1", "m"]), Reply::Int(1));
    let scan = |c: &mut Client, t: &str| match c.cmd(&["SCAN", "0", "TYPE", t, "COUNT", "1000"]) {
        Reply::Array(parts) => match &parts[1] {
            Reply::Array(keys) => keys.clone(),
            r => panic!("{r:?}"),
        },
        r => panic!("{r:?}"),
    };
    // COUNT 1000 is clamped to --keys-limit 3: the three keys in one call.
    assert_eq!(scan(&mut c, "hash"), vec![bulk("h")]);
    assert_eq!(scan(&mut c, "zset"), vec![bulk("z")]);
    assert_eq!(scan(&mut c, "string"), vec![bulk("n")]);
    std::fs::remove_dir_all(&dir).ok();
}

/// A server that cannot listen leaves no database behind; one asked to listen beyond this
/// machine without a password refuses unless told; the password may come from a file or the
/// environment, and a wrong one costs time.
#[test]
fn binding_protection_and_passwords() {
    let dir = temp_dir("bind");
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let run = |args: &[&str], env: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata-server"));
        c.arg("--dir").arg(&dir).args(args);
        if let Some(p) = env {
            c.env("STRATA_SERVER_PASSWORD", p);
        }
        c.output().unwrap()
    };
    let o = run(&["--port", &port], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !dir.exists(),
        "a server that could not listen created the database"
    );
    let o = run(&["--port", "0", "--bind", "0.0.0.0"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("without a password"));
    assert!(!dir.exists());
    drop(held);

    let pw = dir.with_extension("pw");
    std::fs::write(&pw, "from-a-file\n").unwrap();
    let s = Server::start(&dir, &["--requirepass-file", pw.to_str().unwrap()]);
    let mut c = s.client();
    let t = Instant::now();
    assert!(
        matches!(c.cmd(&["AUTH", "from-a-fil"]), Reply::Error(e) if e.starts_with("WRONGPASS"))
    );
    assert!(
        t.elapsed() >= Duration::from_millis(150),
        "a failed AUTH is slowed"
    );
    assert_eq!(c.cmd(&["AUTH", "from-a-file"]), ok());
    drop(c);
    drop(s);
    std::fs::remove_file(&pw).ok();
    std::fs::remove_dir_all(&dir).ok();
}

/// Before AUTH a client may send small requests only: a large one is a protocol error that
/// closes its connection, without the server buffering it.
#[test]
fn an_unauthenticated_client_may_send_small_requests_only() {
    let dir = temp_dir("unauth");
    let s = Server::start(&dir, &["--requirepass", "pw"]);
    let mut c = s.client();
    let big = vec![b'x'; 64 << 10];
    c.send(&[b"AUTH", &big]);
    match c.read() {
        Reply::Error(e) => assert!(e.contains("Protocol error"), "{e}"),
        r => panic!("{r:?}"),
    }
    let mut c = s.client();
    assert_eq!(c.cmd(&["AUTH", "pw"]), ok());
    // Once authenticated, the configured limit applies.
    let v = String::from_utf8(vec![b'v'; 64 << 10]).unwrap();
    assert_eq!(c.cmd(&["SET", "k", &v]), ok());
    std::fs::remove_dir_all(&dir).ok();
}

/// Large replies stream: HGETALL of a 3 MB hash and ZRANGEBYSCORE over a large range
/// arrive whole and in order, written out in pieces.
#[test]
fn large_replies_stream() {
    let dir = temp_dir("bigreply");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    for i in 0..100 {
        let f = format!("field{i:03}");
        assert_eq!(c.cmd(&["HSET", "h", &f, "some value"]), Reply::Int(1));
        assert_eq!(c.cmd(&["ZADD", "z", &i.to_string(), &f]), Reply::Int(1));
    }
    // HGETALL streams (its count is known first): the limit does not apply, and a reply of
    // 3 MB goes out in pieces, whole and in order.
    match c.cmd(&["HGETALL", "h"]) {
        Reply::Array(a) => assert_eq!(a.len(), 200),
        r => panic!("{r:?}"),
    }
    let v = "x".repeat(1000);
    for i in 0..3000 {
        let f = format!("f{i:05}");
        assert_eq!(c.cmd(&["HSET", "big", &f, &v]), Reply::Int(1));
    }
    match c.cmd(&["HGETALL", "big"]) {
        Reply::Array(a) => {
            assert_eq!(a.len(), 6000);
            assert_eq!(a[0], bulk("f00000"));
            assert_eq!(a[5998], bulk("f02999"));
            assert_eq!(a[5999], bulk(&v));
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    match c.cmd(&["ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"]) {
        Reply::Array(a) => {
            assert_eq!(a.len(), 200);
            assert_eq!((&a[0], &a[1]), (&bulk("field000"), &bulk("0")));
        }
        r => panic!("{r:?}"),
    }
    for i in 0..4000 {
        let m = format!("{i:05}{}", "m".repeat(500));
        assert_eq!(c.cmd(&["ZADD", "zbig", &i.to_string(), &m]), Reply::Int(1));
    }
    match c.cmd(&["ZRANGEBYSCORE", "zbig", "(10", "+inf"]) {
        Reply::Array(a) => {
            assert_eq!(a.len(), 3989);
            assert_eq!(a[0], bulk(&format!("00011{}", "m".repeat(500))));
        }
        r => panic!("{r:?}"),
    }
    match c.cmd(&["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "0", "5"]) {
        Reply::Array(a) => assert_eq!(a.len(), 5),
        r => panic!("{r:?}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// DBSIZE is a kept count, not a scan: after random commands from several clients at once
/// over a few keys (every command that creates or removes one), it equals the scan's count
/// (`DEBUG COUNTKEYS`), and again after a restart (counted at start).
#[test]
fn dbsize_is_kept_exactly() {
    let dir = temp_dir("dbsize");
    let mut s = Server::start(&dir, &[]);
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let port = s.port;
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (t << 32);
                let mut next = || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for _ in 0..1500 {
                    let k = format!("k{}", next() % 40);
                    let k2 = format!("k{}", next() % 40);
                    let f = format!("f{}", next() % 3);
                    let cmd: Vec<String> = match next() % 12 {
                        0 => vec!["SET".into(), k, "v".into()],
                        1 => vec!["SETNX".into(), k, "v".into()],
                        2 => vec![
                            "MSET".into(),
                            k.clone(),
                            "a".into(),
                            k2,
                            "b".into(),
                            k,
                            "c".into(),
                        ],
                        3 => vec!["DEL".into(), k, k2],
                        4 => vec!["INCR".into(), k],
                        5 => vec!["APPEND".into(), k, "x".into()],
                        6 => vec!["HSET".into(), k, f, "1".into()],
                        7 => vec!["HDEL".into(), k, f],
                        8 => vec!["ZADD".into(), k, "1".into(), f],
                        9 => vec!["ZREM".into(), k, f],
                        10 => vec!["SET".into(), k, "w".into(), "NX".into()],
                        _ => vec!["SET".into(), k, "w".into(), "XX".into(), "GET".into()],
                    };
                    let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
                    let _ = c.cmd(&args); // WRONGTYPE and "not an integer" are fine
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = s.client();
    let counted = c.cmd(&["DEBUG", "COUNTKEYS"]);
    assert!(matches!(counted, Reply::Int(n) if n > 0), "{counted:?}");
    assert_eq!(c.cmd(&["DBSIZE"]), counted);
    drop(c);
    s.signal("-TERM");
    let s = Server::start(&dir, &[]);
    assert_eq!(s.client().cmd(&["DBSIZE"]), counted);
    std::fs::remove_dir_all(&dir).ok();
}

/// The password from the environment; a long pipeline's replies (written out in pieces as
/// they pass 1 MiB) all arrive, in order.
#[test]
fn password_from_the_environment_and_long_pipelines() {
    let dir = temp_dir("envpw");
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .arg("--dir")
        .arg(&dir)
        .args(["--port", "0"])
        .env("STRATA_SERVER_PASSWORD", "from-env")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port: u16 = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(addr) = line.strip_prefix("strata-server: serving ") {
            break addr.rsplit(':').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    let mut c = Client::connect(port);
    assert!(matches!(c.cmd(&["GET", "k"]), Reply::Error(e) if e.starts_with("NOAUTH")));
    assert_eq!(c.cmd(&["AUTH", "from-env"]), ok());
    let v = "v".repeat(10_000);
    assert_eq!(c.cmd(&["SET", "big", &v]), ok());
    let mut all = Vec::new();
    for _ in 0..500 {
        all.extend_from_slice(&encode(&[b"GET", b"big"]));
    }
    c.w.write_all(&all).unwrap(); // 5 MB of replies
    for i in 0..500 {
        assert_eq!(c.read(), bulk(&v), "reply {i}");
    }
    let _ = child.kill();
    let _ = child.wait();
    std::fs::remove_dir_all(&dir).ok();
}

/// A client whose thread cannot be started is turned away with an error, and the server goes
/// on serving the clients it has (a refused spawn once ended the process). Spawn failure is
/// injected: after one client thread, starting another fails.
#[test]
fn a_refused_thread_turns_one_client_away() {
    let dir = temp_dir("spawn");
    let s = Server::start_with_env(&dir, &[], &[("STRATA_SERVER_TEST_THREADS", "1")]);
    let mut first = s.client();
    assert_eq!(first.cmd(&["SET", "k", "v"]), ok());
    let mut second = s.client();
    match second.read() {
        Reply::Error(e) => assert!(e.contains("cannot take more clients"), "{e}"),
        r => panic!("{r:?}"),
    }
    assert_eq!(first.cmd(&["GET", "k"]), bulk("v"), "the server goes on");
    std::fs::remove_dir_all(&dir).ok();
}

/// The small lies the server once told: CLIENT's names and ids, CLIENT LIST as redis-py
/// parses it, AUTH with a user name, an unimplemented subcommand answered OK, integers not
/// in Redis's canonical form, a member scored -0 left out of a range from 0, inline
/// requests before AUTH longer than the unauthenticated limit.
#[test]
fn client_auth_integers_and_zero_scores_answer_as_redis() {
    let dir = temp_dir("small-lies");
    let s = Server::start(&dir, &[]);
    let mut a = s.client();
    let mut b = s.client();
    let (Reply::Int(ia), Reply::Int(ib)) = (a.cmd(&["CLIENT", "ID"]), b.cmd(&["CLIENT", "ID"]))
    else {
        panic!("CLIENT ID is an integer")
    };
    assert_ne!(ia, ib, "each connection has its own id");
    assert_eq!(a.cmd(&["CLIENT", "GETNAME"]), Reply::Bulk(None));
    assert_eq!(a.cmd(&["CLIENT", "SETNAME", "worker-1"]), ok());
    assert_eq!(a.cmd(&["CLIENT", "GETNAME"]), bulk("worker-1"));
    assert!(matches!(
        a.cmd(&["CLIENT", "SETNAME", "has space"]),
        Reply::Error(_)
    ));
    let Reply::Bulk(Some(list)) = b.cmd(&["CLIENT", "LIST"]) else {
        panic!("CLIENT LIST is a bulk string")
    };
    let list = String::from_utf8(list).unwrap();
    let lines: Vec<&str> = list.lines().collect();
    assert!(lines.len() >= 2, "{list}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("id={ia} ")) && l.contains(" name=worker-1 ")),
        "{list}"
    );
    // Every field as `name=value`, as redis-py's parser expects.
    for l in &lines {
        assert!(l.split(' ').all(|f| f.contains('=')), "{l}");
    }
    let Reply::Bulk(Some(info)) = a.cmd(&["CLIENT", "INFO"]) else {
        panic!()
    };
    assert!(String::from_utf8(info)
        .unwrap()
        .starts_with(&format!("id={ia} ")));
    for sub in [
        &["CLIENT", "TRACKING", "on"][..],
        &["CLIENT", "KILL", "1.2.3.4:5"],
        &["CLIENT", "PAUSE", "10"],
    ] {
        assert!(
            matches!(a.cmd(sub), Reply::Error(e) if e.contains("does not implement")),
            "{sub:?}"
        );
    }
    // INCR and its kin take integers only in canonical form.
    assert_eq!(a.cmd(&["SET", "n", "01"]), ok());
    assert!(matches!(a.cmd(&["INCR", "n"]), Reply::Error(e) if e.contains("not an integer")));
    assert_eq!(a.cmd(&["SET", "n", "-0"]), ok());
    assert!(matches!(a.cmd(&["INCR", "n"]), Reply::Error(_)));
    assert_eq!(a.cmd(&["SET", "n", "41"]), ok());
    assert_eq!(a.cmd(&["INCR", "n"]), Reply::Int(42));
    assert!(matches!(a.cmd(&["INCRBY", "n", "+1"]), Reply::Error(_)));
    assert_eq!(a.cmd(&["INCRBY", "n", "-2"]), Reply::Int(40));
    // A member scored -0 is in [0, 1].
    assert_eq!(
        a.cmd(&["ZADD", "zn", "-0", "neg-zero", "1", "one", "2", "two"]),
        Reply::Int(3)
    );
    assert_eq!(
        a.cmd(&["ZRANGEBYSCORE", "zn", "0", "1"]),
        Reply::Array(vec![bulk("neg-zero"), bulk("one")])
    );
    assert_eq!(
        a.cmd(&["ZRANGEBYSCORE", "zn", "-0", "(1"]),
        Reply::Array(vec![bulk("neg-zero")])
    );
    assert_eq!(
        a.cmd(&["ZRANGEBYSCORE", "zn", "(0", "2"]),
        Reply::Array(vec![bulk("one"), bulk("two")])
    );
    drop((a, b));
    drop(s);
    // AUTH names the default user, or fails as a wrong password does.
    let s = Server::start(&dir, &["--requirepass", "pw"]);
    let mut c = s.client();
    assert!(matches!(c.cmd(&["AUTH", "bob", "pw"]), Reply::Error(e) if e.starts_with("WRONGPASS")));
    assert!(matches!(
        c.cmd(&["HELLO", "2", "AUTH", "bob", "pw"]),
        Reply::Error(e) if e.starts_with("WRONGPASS")
    ));
    assert_eq!(c.cmd(&["AUTH", "default", "pw"]), ok());
    // An inline request before AUTH is held to the unauthenticated limit (16 KiB).
    let mut u = s.client();
    let mut line = b"AUTH ".to_vec();
    line.extend(std::iter::repeat_n(b'x', 32 << 10));
    line.extend_from_slice(b"\r\n");
    u.w.write_all(&line).unwrap();
    assert!(matches!(u.read(), Reply::Error(e) if e.contains("Protocol error")));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn command_config_and_function_answer_as_redis_does() {
    let dir = temp_dir("admin");
    let s = Server::start(&dir, &["--max-request-bytes", "4000000"]);
    let mut c = s.client();
    // Every command COMMAND lists is served: sent bare, none is "unknown".
    let Reply::Array(names) = c.cmd(&["COMMAND", "LIST"]) else {
        panic!("COMMAND LIST")
    };
    assert!(names.len() > 40);
    assert_eq!(c.cmd(&["COMMAND", "COUNT"]), Reply::Int(names.len() as i64));
    for n in &names {
        let Reply::Bulk(Some(n)) = n else {
            panic!("{n:?}")
        };
        let n = String::from_utf8(n.clone()).unwrap();
        if n == "quit" {
            continue;
        }
        let mut probe = s.client();
        let r = probe.cmd(&[&n]);
        assert!(
            !matches!(&r, Reply::Error(e) if e.contains("unknown command")),
            "{n}: {r:?}"
        );
    }
    // COMMAND INFO: name, arity, flags, first/last key, step (and four lists).
    let Reply::Array(info) = c.cmd(&["COMMAND", "INFO", "get", "nosuchcommand"]) else {
        panic!("COMMAND INFO")
    };
    let Reply::Array(get) = &info[0] else {
        panic!("{info:?}")
    };
    assert_eq!(get.len(), 10);
    assert_eq!(get[0], bulk("get"));
    assert_eq!(get[1], Reply::Int(2));
    assert_eq!(&get[3..6], &[Reply::Int(1), Reply::Int(1), Reply::Int(1)]);
    assert_eq!(info[1], Reply::Bulk(None));
    // CONFIG GET by name and pattern, with the aliases Redis 7 keeps.
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hash-max-ziplist-entries"]),
        Reply::Array(vec![bulk("hash-max-ziplist-entries"), bulk("128")])
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hash-max-ziplist-entries", "16"]),
        ok()
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hash-max-listpack-entries"]),
        Reply::Array(vec![bulk("hash-max-listpack-entries"), bulk("16")])
    );
    let Reply::Array(pairs) = c.cmd(&["CONFIG", "GET", "zset-*"]) else {
        panic!()
    };
    assert_eq!(pairs.len(), 8);
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "appendfsync"]),
        Reply::Array(vec![bulk("appendfsync"), bulk("everysec")])
    );
    assert_eq!(c.cmd(&["CONFIG", "GET", "nosuch"]), Reply::Array(vec![]));
    // Refusals: unknown, fixed at start, bad values; all or nothing.
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    err(c.cmd(&["CONFIG", "SET", "nosuch", "1"]), "Unknown option");
    err(c.cmd(&["CONFIG", "SET", "maxclients", "5"]), "at start");
    err(
        c.cmd(&["CONFIG", "SET", "list-compress-depth", "x"]),
        "integer",
    );
    err(
        c.cmd(&["CONFIG", "SET", "appendonly", "maybe"]),
        "'yes' or 'no'",
    );
    err(
        c.cmd(&[
            "CONFIG",
            "SET",
            "set-max-intset-entries",
            "7",
            "nosuch",
            "1",
        ]),
        "Unknown option",
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "set-max-intset-entries"]),
        Reply::Array(vec![bulk("set-max-intset-entries"), bulk("512")])
    );
    // The request limit follows proto-max-bulk-len, within [1 MiB, --max-request-bytes].
    let v = "x".repeat(1_500_000);
    assert_eq!(c.cmd(&["SET", "k", &v]), ok());
    assert_eq!(c.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "1mb"]), ok());
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "proto-max-bulk-len"]),
        Reply::Array(vec![bulk("proto-max-bulk-len"), bulk("1048576")])
    );
    // (Only the header: the server answers it and closes, so the rest of the value would
    // meet a closed socket.)
    let mut big = s.client();
    big.w
        .write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1500000\r\n")
        .unwrap();
    err(big.read(), "invalid bulk length");
    err(
        c.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "1kb"]),
        "between 1048576 and 4000000",
    );
    err(
        c.cmd(&["CONFIG", "SET", "client-query-buffer-limit", "10gb"]),
        "between",
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "4000000"]),
        ok()
    );
    assert_eq!(s.client().cmd(&["SET", "k", &v]), ok());
    assert_eq!(c.cmd(&["CONFIG", "RESETSTAT"]), ok());
    let Reply::Bulk(Some(stats)) = c.cmd(&["INFO", "commandstats"]) else {
        panic!()
    };
    assert!(
        !String::from_utf8_lossy(&stats).contains("cmdstat_set"),
        "RESETSTAT clears the counts"
    );
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH"]), ok());
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH", "ASYNC"]), ok());
    assert_eq!(c.cmd(&["FUNCTION", "LIST"]), Reply::Array(vec![]));
    err(c.cmd(&["FUNCTION", "LOAD", "x"]), "does not run functions");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn protocol_errors_use_redis_texts_and_inline_quotes_work() {
    let dir = temp_dir("protocol");
    let s = Server::start(&dir, &[]);
    for (bad, text) in [
        (&b"*3000000000\r\n"[..], "invalid multibulk length"),
        (
            b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
            "expected '$', got 'f'",
        ),
        (
            b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n",
            "invalid bulk length",
        ),
        (
            b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n",
            "invalid bulk length",
        ),
        (
            b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n",
            "invalid bulk length",
        ),
        (b"*x\r\n", "invalid multibulk length"),
        (
            b"set \"\"\"test-key\"\"\" test-value\r\nping\r\n",
            "unbalanced quotes",
        ),
    ] {
        let mut c = s.client();
        c.w.write_all(bad).unwrap();
        let r = c.read();
        assert!(
            matches!(&r, Reply::Error(e) if e.starts_with("ERR Protocol error: ") && e.contains(text)),
            "{:?}: {r:?}",
            String::from_utf8_lossy(bad)
        );
    }
    let mut c = s.client();
    c.w.write_all(b"\r\n*-10\r\nset \"a b\" 'it\\'s'\r\nget \"a\\x20b\"\r\nping\r\n")
        .unwrap();
    assert_eq!(c.read(), ok());
    assert_eq!(c.read(), bulk("it's"));
    assert_eq!(c.read(), Reply::Simple("PONG".into()));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn info_sections_command_stats_and_memory_usage() {
    let dir = temp_dir("info");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let text = |r: Reply| match r {
        Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(c.cmd(&["SET", "k", "value"]), ok());
    let default = text(c.cmd(&["INFO"]));
    for want in [
        "redis_version:",
        "used_cpu_user:",
        "used_memory:",
        "db0:keys=1",
        "role:master",
    ] {
        assert!(default.contains(want), "{want} in {default}");
    }
    assert!(!default.contains("rejected_calls") && !default.contains("# Strata"));
    let cpu = text(c.cmd(&["INFO", "cpu"]));
    assert!(
        cpu.contains("used_cpu_sys:") && !cpu.contains("used_memory"),
        "{cpu}"
    );
    let stats = text(c.cmd(&["INFO", "commandSTATS"]));
    assert!(
        stats.contains("cmdstat_set:calls=1,") && stats.contains("rejected_calls=0"),
        "{stats}"
    );
    let all = text(c.cmd(&["INFO", "cpu", "all"]));
    assert_eq!(all.matches("used_cpu_user_children").count(), 1);
    assert!(all.contains("cmdstat_info:") && all.contains("# Strata"));
    assert!(matches!(c.cmd(&["MEMORY", "USAGE", "k"]), Reply::Int(n) if n >= 6));
    assert_eq!(c.cmd(&["HSET", "h", "f", "v", "g", "w"]), Reply::Int(2));
    assert!(matches!(c.cmd(&["MEMORY", "USAGE", "h", "SAMPLES", "0"]), Reply::Int(n) if n > 4));
    assert_eq!(c.cmd(&["MEMORY", "USAGE", "nosuch"]), Reply::Bulk(None));
    assert!(matches!(c.cmd(&["MEMORY", "DOCTOR"]), Reply::Error(_)));
    assert!(matches!(c.cmd(&["MEMORY"]), Reply::Error(e) if e.contains("wrong number")));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn more_string_and_hash_commands() {
    let dir = temp_dir("more");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "10.5"]), bulk("10.5"));
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "0.1"]), bulk("10.6"));
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "-10.6"]), bulk("0"));
    assert_eq!(c.cmd(&["SET", "g", "1"]), ok());
    assert_eq!(c.cmd(&["INCRBYFLOAT", "g", "0.1"]), bulk("1.1"));
    assert_eq!(c.cmd(&["INCRBYFLOAT", "g", "0.1"]), bulk("1.2"));
    err(c.cmd(&["INCRBYFLOAT", "f", "x"]), "not a valid float");
    err(c.cmd(&["INCRBYFLOAT", "f", "nan"]), "not a valid float");
    err(c.cmd(&["INCRBYFLOAT", "f", "+inf"]), "NaN or Infinity");
    assert_eq!(c.cmd(&["SET", "s", "Hello World"]), ok());
    assert_eq!(c.cmd(&["GETRANGE", "s", "0", "4"]), bulk("Hello"));
    assert_eq!(c.cmd(&["GETRANGE", "s", "-5", "-1"]), bulk("World"));
    assert_eq!(c.cmd(&["GETRANGE", "s", "5", "3"]), bulk(""));
    assert_eq!(c.cmd(&["GETRANGE", "s", "0", "-100"]), bulk("H"));
    assert_eq!(c.cmd(&["GETRANGE", "s", "-1", "-5"]), bulk(""));
    assert_eq!(c.cmd(&["SUBSTR", "nosuch", "0", "10"]), bulk(""));
    assert_eq!(c.cmd(&["SETRANGE", "s", "6", "Redis"]), Reply::Int(11));
    assert_eq!(c.cmd(&["GET", "s"]), bulk("Hello Redis"));
    assert_eq!(c.cmd(&["SETRANGE", "pad", "3", "x"]), Reply::Int(4));
    assert_eq!(
        c.cmd(&["GET", "pad"]),
        Reply::Bulk(Some(b"\0\0\0x".to_vec()))
    );
    assert_eq!(c.cmd(&["SETRANGE", "empty", "5", ""]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "empty"]), Reply::Int(0));
    err(c.cmd(&["SETRANGE", "s", "-1", "x"]), "out of range");
    err(
        c.cmd(&["SETRANGE", "s", "536870911", "xx"]),
        "maximum allowed size",
    );
    assert_eq!(c.cmd(&["GETSET", "s", "new"]), bulk("Hello Redis"));
    assert_eq!(c.cmd(&["GETDEL", "s"]), bulk("new"));
    assert_eq!(c.cmd(&["GETDEL", "s"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["MSETNX", "a", "1", "b", "2"]), Reply::Int(1));
    assert_eq!(c.cmd(&["MSETNX", "b", "3", "c", "4"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "c"]), Reply::Int(0));
    // Bits: bit 0 is the high bit of the first byte.
    assert_eq!(c.cmd(&["SETBIT", "bits", "7", "1"]), Reply::Int(0));
    assert_eq!(c.cmd(&["SETBIT", "bits", "7", "1"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GET", "bits"]), bulk("\u{1}"));
    assert_eq!(c.cmd(&["SETBIT", "bits", "16", "1"]), Reply::Int(0));
    assert_eq!(c.cmd(&["STRLEN", "bits"]), Reply::Int(3));
    assert_eq!(c.cmd(&["GETBIT", "bits", "16"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GETBIT", "bits", "100"]), Reply::Int(0));
    assert_eq!(c.cmd(&["GETBIT", "nosuch", "0"]), Reply::Int(0));
    err(c.cmd(&["SETBIT", "bits", "4294967296", "1"]), "bit offset");
    err(c.cmd(&["SETBIT", "bits", "1", "2"]), "bit is not");
    // LCS, Redis's documented example.
    assert_eq!(c.cmd(&["MSET", "k1", "ohmytext", "k2", "mynewtext"]), ok());
    assert_eq!(c.cmd(&["LCS", "k1", "k2"]), bulk("mytext"));
    assert_eq!(c.cmd(&["LCS", "k1", "k2", "LEN"]), Reply::Int(6));
    let pair = |a: i64, b: i64| Reply::Array(vec![Reply::Int(a), Reply::Int(b)]);
    assert_eq!(
        c.cmd(&["LCS", "k1", "k2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"]),
        Reply::Array(vec![
            bulk("matches"),
            Reply::Array(vec![Reply::Array(vec![
                pair(4, 7),
                pair(5, 8),
                Reply::Int(4)
            ])]),
            bulk("len"),
            Reply::Int(6),
        ])
    );
    assert_eq!(
        c.cmd(&["LCS", "k1", "k2", "IDX"]),
        Reply::Array(vec![
            bulk("matches"),
            Reply::Array(vec![
                Reply::Array(vec![pair(4, 7), pair(5, 8)]),
                Reply::Array(vec![pair(2, 3), pair(0, 1)]),
            ]),
            bulk("len"),
            Reply::Int(6),
        ])
    );
    err(c.cmd(&["LCS", "k1", "k2", "LEN", "IDX"]), "just use IDX");
    // Hashes.
    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), Reply::Int(1));
    assert_eq!(c.cmd(&["HSETNX", "h", "f", "w"]), Reply::Int(0));
    assert_eq!(c.cmd(&["HSETNX", "h", "g", "w"]), Reply::Int(1));
    assert_eq!(c.cmd(&["HEXISTS", "h", "g"]), Reply::Int(1));
    assert_eq!(c.cmd(&["HEXISTS", "h", "x"]), Reply::Int(0));
    assert_eq!(c.cmd(&["HSTRLEN", "h", "f"]), Reply::Int(1));
    assert_eq!(c.cmd(&["HINCRBY", "h", "n", "5"]), Reply::Int(5));
    assert_eq!(c.cmd(&["HINCRBY", "h", "n", "-7"]), Reply::Int(-2));
    err(c.cmd(&["HINCRBY", "h", "f", "1"]), "not an integer");
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "x", "1.5"]), bulk("1.5"));
    err(
        c.cmd(&["HINCRBYFLOAT", "h", "x", "+inf"]),
        "value is NaN or Infinity",
    );
    assert_eq!(c.cmd(&["HLEN", "h"]), Reply::Int(4));
    assert_eq!(
        c.cmd(&["HKEYS", "h"]),
        Reply::Array(vec![bulk("f"), bulk("g"), bulk("n"), bulk("x")])
    );
    assert_eq!(
        c.cmd(&["HVALS", "h"]),
        Reply::Array(vec![bulk("v"), bulk("w"), bulk("-2"), bulk("1.5")])
    );
    assert_eq!(c.cmd(&["HKEYS", "nosuch"]), Reply::Array(vec![]));
    err(c.cmd(&["HSETNX", "a", "f", "v"]), "WRONGTYPE");
    err(c.cmd(&["GETRANGE", "h", "0", "1"]), "WRONGTYPE");
    err(c.cmd(&["INCRBYFLOAT", "h", "1"]), "WRONGTYPE");
    assert_eq!(c.cmd(&["MSETNX", "h", "1"]), Reply::Int(0));
    assert_eq!(c.cmd(&["DBSIZE"]), c.cmd(&["DEBUG", "COUNTKEYS"]));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn float_sums_limits_follow_config_and_flush_arguments() {
    let dir = temp_dir("limits");
    // A 2 MiB request limit: CONFIG SET may lower it to 1 MiB, never raise it past 2.
    let s = Server::start(
        &dir,
        &["--max-request-bytes", "2097152", "--enable-flushdb"],
    );
    let mut c = s.client();
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    // Sums as Redis's long double writes them, not f64's binary noise.
    assert_eq!(c.cmd(&["SET", "f", "1"]), ok());
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "-1.1"]), bulk("-0.1"));
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "0.4"]), bulk("0.3"));
    assert_eq!(
        c.cmd(&["INCRBYFLOAT", "f", "12345678901234567890"]),
        bulk("12345678901234567890.3")
    );
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "x", "0.1"]), bulk("0.1"));
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "x", "0.2"]), bulk("0.3"));
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "x", "-0.3"]), bulk("0"));
    // The request limit's bounds, units and duplicates.
    err(
        c.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "3mb"]),
        "between",
    );
    err(
        c.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "1000"]),
        "between",
    );
    err(
        c.cmd(&[
            "CONFIG",
            "SET",
            "proto-max-bulk-len",
            "1mb",
            "proto-max-bulk-len",
            "2mb",
        ]),
        "duplicate parameter",
    );
    assert_eq!(c.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "1mb"]), ok());
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "proto-max-bulk-len"]),
        Reply::Array(vec![bulk("proto-max-bulk-len"), bulk("1048576")])
    );
    // Strings are bounded by the limit now in force (512 KiB + 600 KiB > 1 MiB).
    let half = "x".repeat(512 << 10);
    let more = "y".repeat(600 << 10);
    assert_eq!(c.cmd(&["SET", "big", &half]), ok());
    err(c.cmd(&["APPEND", "big", &more]), "maximum allowed size");
    err(
        c.cmd(&["SETRANGE", "big", "1048570", "0123456789"]),
        "maximum allowed size",
    );
    err(
        c.cmd(&["SETBIT", "bits", &(8u64 << 20).to_string(), "1"]),
        "out of range",
    );
    assert_eq!(
        c.cmd(&["SETBIT", "bits", &((8u64 << 20) - 1).to_string(), "1"]),
        Reply::Int(0)
    );
    assert_eq!(c.cmd(&["STRLEN", "big"]), Reply::Int(512 << 10));
    // CONFIG GET port answers the port listened on.
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "port"]),
        Reply::Array(vec![bulk("port"), bulk(&s.port.to_string())])
    );
    // FLUSHALL takes ASYNC or SYNC only; an empty database has no keyspace line.
    err(c.cmd(&["FLUSHALL", "NOW"]), "syntax error");
    err(c.cmd(&["FLUSHDB", "ASYNC", "SYNC"]), "syntax error");
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(4));
    assert_eq!(c.cmd(&["FLUSHALL", "sync"]), ok());
    let Reply::Bulk(Some(info)) = c.cmd(&["INFO", "keyspace"]) else {
        panic!("INFO")
    };
    assert!(!String::from_utf8(info).unwrap().contains("db0"));
}

#[test]
fn keys_expire_lazily_actively_and_across_restarts() {
    let dir = temp_dir("expiry");
    let mut s = Server::start(&dir, &[]);
    let mut c = s.client();
    let int = |r: Reply| match r {
        Reply::Int(n) => n,
        r => panic!("{r:?}"),
    };
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    // TTL's family and EXPIRE's conditions.
    assert_eq!(c.cmd(&["SET", "a", "v", "EX", "100"]), ok());
    assert!((99..=100).contains(&int(c.cmd(&["TTL", "a"]))));
    assert!((99_000..=100_000).contains(&int(c.cmd(&["PTTL", "a"]))));
    assert_eq!(c.cmd(&["TTL", "missing"]), Reply::Int(-2));
    assert_eq!(c.cmd(&["EXPIRE", "a", "50", "NX"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXPIRE", "a", "50", "GT"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXPIRE", "a", "50", "LT"]), Reply::Int(1));
    assert!((49..=50).contains(&int(c.cmd(&["TTL", "a"]))));
    err(c.cmd(&["EXPIRE", "a", "50", "NX", "XX"]), "not compatible");
    err(c.cmd(&["EXPIRE", "a", "x"]), "not an integer");
    assert_eq!(c.cmd(&["PERSIST", "a"]), Reply::Int(1));
    assert_eq!(c.cmd(&["TTL", "a"]), Reply::Int(-1));
    assert_eq!(c.cmd(&["PERSIST", "a"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXPIRE", "a", "50", "XX"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXPIRE", "nope", "50"]), Reply::Int(0));
    // SET clears an expiry; APPEND, INCR and KEEPTTL keep it.
    assert_eq!(c.cmd(&["SET", "n", "1", "PX", "100000"]), ok());
    assert_eq!(c.cmd(&["INCR", "n"]), Reply::Int(2));
    assert_eq!(c.cmd(&["APPEND", "n", "0"]), Reply::Int(2));
    assert_eq!(c.cmd(&["SET", "n", "5", "KEEPTTL"]), ok());
    assert!(int(c.cmd(&["PTTL", "n"])) > 90_000);
    assert_eq!(c.cmd(&["SET", "n", "5"]), ok());
    assert_eq!(c.cmd(&["TTL", "n"]), Reply::Int(-1));
    // SETEX, PSETEX, GETEX.
    assert_eq!(c.cmd(&["SETEX", "x", "100", "v"]), ok());
    err(
        c.cmd(&["SETEX", "x", "0", "v"]),
        "invalid expire time in 'setex'",
    );
    assert_eq!(c.cmd(&["GETEX", "x", "PERSIST"]), bulk("v"));
    assert_eq!(c.cmd(&["TTL", "x"]), Reply::Int(-1));
    assert_eq!(c.cmd(&["GETEX", "x", "EX", "200"]), bulk("v"));
    assert!((199..=200).contains(&int(c.cmd(&["TTL", "x"]))));
    assert_eq!(c.cmd(&["GETEX", "x", "PXAT", "1"]), bulk("v"));
    assert_eq!(c.cmd(&["EXISTS", "x"]), Reply::Int(0));
    // A time already past deletes the key.
    assert_eq!(c.cmd(&["ZADD", "z", "1", "m"]), Reply::Int(1));
    assert_eq!(c.cmd(&["EXPIRE", "z", "-1"]), Reply::Int(1));
    assert_eq!(c.cmd(&["EXISTS", "z"]), Reply::Int(0));
    // Lazy expiry alone: expired keys read as missing though not yet reaped; a hash
    // made again after its expiry starts empty (its old fields belong to an old version).
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), ok());
    assert_eq!(c.cmd(&["SET", "b", "v", "PX", "200"]), ok());
    assert_eq!(c.cmd(&["HSET", "h", "old", "1"]), Reply::Int(1));
    assert_eq!(c.cmd(&["PEXPIRE", "h", "200"]), Reply::Int(1));
    let before = int(c.cmd(&["DBSIZE"]));
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(c.cmd(&["GET", "b"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["HGET", "h", "old"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["TYPE", "h"]), Reply::Simple("none".into()));
    assert_eq!(
        c.cmd(&["KEYS", "*"]),
        Reply::Array(vec![bulk("a"), bulk("n")])
    );
    assert_eq!(int(c.cmd(&["DBSIZE"])), before, "not reaped yet");
    assert_eq!(c.cmd(&["HSET", "h", "new", "2"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["HGETALL", "h"]),
        Reply::Array(vec![bulk("new"), bulk("2")])
    );
    assert_eq!(int(c.cmd(&["DBSIZE"])), before, "h reaped, then made again");
    // Active expiry reaps what is due.
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), ok());
    let deadline = Instant::now() + Duration::from_secs(10);
    while int(c.cmd(&["DBSIZE"])) != before - 1 {
        assert!(Instant::now() < deadline, "b never reaped");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(int(c.cmd(&["DEBUG", "COUNTKEYS"])), before - 1);
    assert_eq!(c.cmd(&["SET", "r", "v", "EX", "1000"]), ok());
    drop(c);
    assert!(s.signal("-TERM").success());
    s = Server::start(&dir, &[]);
    let mut c = s.client();
    assert!((999..=1000).contains(&int(c.cmd(&["TTL", "r"]))));
    assert_eq!(
        c.cmd(&["HGETALL", "h"]),
        Reply::Array(vec![bulk("new"), bulk("2")])
    );
    drop(c);
    drop(s);
    // Versions survive a restart (a killed one too): a hash deleted before it and made
    // again after it does not get its old fields back, though it is the first collection
    // made in either run.
    let dir = temp_dir("versions");
    let mut s = Server::start(&dir, &[]);
    let mut c = s.client();
    assert_eq!(c.cmd(&["HSET", "rh", "f1", "1"]), Reply::Int(1));
    assert_eq!(c.cmd(&["DEL", "rh"]), Reply::Int(1));
    drop(c);
    s.signal("-KILL");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    assert_eq!(c.cmd(&["HSET", "rh", "f2", "2"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["HGETALL", "rh"]),
        Reply::Array(vec![bulk("f2"), bulk("2")])
    );
}

/// A database written by the first key-space layout (strings under `s`, collection metas
/// under `m`, elements without versions) is converted at start, every key readable.
#[test]
fn the_first_layout_is_converted_at_start() {
    let dir = temp_dir("layout1");
    {
        let db = strata::Db::open(
            &dir,
            strata::Options {
                create_if_missing: true,
                ..strata::Options::default()
            },
        )
        .unwrap();
        let prefixed = |tag: u8, k: &[u8], rest: &[u8]| {
            let mut v = vec![tag];
            v.extend_from_slice(&(k.len() as u32).to_be_bytes());
            v.extend_from_slice(k);
            v.extend_from_slice(rest);
            v
        };
        let meta = |t: u8, n: u64| {
            let mut v = vec![t];
            v.extend_from_slice(&n.to_le_bytes());
            v
        };
        db.put(b"sstr", b"hello").unwrap();
        db.put(b"mh", meta(b'h', 2)).unwrap();
        db.put(prefixed(b'h', b"h", b"f1"), b"v1").unwrap();
        db.put(prefixed(b'h', b"h", b"f2"), b"v2").unwrap();
        db.put(b"mz", meta(b'z', 1)).unwrap();
        db.put(prefixed(b'z', b"z", b"m"), 1.5f64.to_le_bytes())
            .unwrap();
        let ordered = (1.5f64.to_bits() | (1 << 63)).to_be_bytes();
        let mut index = ordered.to_vec();
        index.extend_from_slice(b"m");
        db.put(prefixed(b'y', b"z", &index), b"").unwrap();
        db.close().unwrap();
    }
    for _ in 0..2 {
        let s = Server::start(&dir, &[]);
        let mut c = s.client();
        assert_eq!(c.cmd(&["GET", "str"]), bulk("hello"));
        assert_eq!(
            c.cmd(&["HGETALL", "h"]),
            Reply::Array(vec![bulk("f1"), bulk("v1"), bulk("f2"), bulk("v2")])
        );
        assert_eq!(c.cmd(&["HLEN", "h"]), Reply::Int(2));
        assert_eq!(
            c.cmd(&["ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"]),
            Reply::Array(vec![bulk("m"), bulk("1.5")])
        );
        assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(3));
        assert_eq!(c.cmd(&["DEBUG", "COUNTKEYS"]), Reply::Int(3));
        assert_eq!(c.cmd(&["HSET", "h", "f3", "v3"]), Reply::Int(1));
        assert_eq!(c.cmd(&["HDEL", "h", "f3"]), Reply::Int(1));
    }
}

#[test]
fn rename_copy_and_randomkey_carry_every_type() {
    let dir = temp_dir("rename");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    assert_eq!(c.cmd(&["RANDOMKEY"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["SET", "s", "v", "EX", "100"]), ok());
    assert_eq!(c.cmd(&["HSET", "h", "f", "1", "g", "2"]), Reply::Int(2));
    assert_eq!(c.cmd(&["ZADD", "z", "1", "a", "2", "b"]), Reply::Int(2));
    err(c.cmd(&["RENAME", "nope", "x"]), "no such key");
    assert_eq!(c.cmd(&["RENAME", "s", "s2"]), ok());
    assert!(matches!(c.cmd(&["TTL", "s2"]), Reply::Int(99..=100)));
    assert_eq!(c.cmd(&["EXISTS", "s"]), Reply::Int(0));
    // A hash renamed over a sorted set: the set's members do not show through.
    assert_eq!(c.cmd(&["RENAME", "h", "z"]), ok());
    assert_eq!(c.cmd(&["TYPE", "z"]), Reply::Simple("hash".into()));
    assert_eq!(
        c.cmd(&["HGETALL", "z"]),
        Reply::Array(vec![bulk("f"), bulk("1"), bulk("g"), bulk("2")])
    );
    assert_eq!(c.cmd(&["RENAMENX", "z", "s2"]), Reply::Int(0));
    assert_eq!(c.cmd(&["RENAMENX", "z", "z"]), Reply::Int(0));
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(2));
    // COPY keeps the source, copies the expiry, refuses an existing target without REPLACE.
    assert_eq!(c.cmd(&["COPY", "z", "z2"]), Reply::Int(1));
    assert_eq!(c.cmd(&["HSET", "z", "f", "changed"]), Reply::Int(0));
    assert_eq!(c.cmd(&["HGET", "z2", "f"]), bulk("1"));
    assert_eq!(c.cmd(&["COPY", "s2", "z2"]), Reply::Int(0));
    assert_eq!(c.cmd(&["COPY", "s2", "z2", "REPLACE"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GET", "z2"]), bulk("v"));
    assert!(matches!(c.cmd(&["TTL", "z2"]), Reply::Int(99..=100)));
    err(c.cmd(&["COPY", "s2", "x", "DB", "x"]), "not an integer");
    err(c.cmd(&["COPY", "s2", "x", "DB", "1"]), "out of range");
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(3));
    assert_eq!(c.cmd(&["DEBUG", "COUNTKEYS"]), Reply::Int(3));
    for _ in 0..20 {
        let Reply::Bulk(Some(k)) = c.cmd(&["RANDOMKEY"]) else {
            panic!("RANDOMKEY")
        };
        assert!([&b"s2"[..], b"z", b"z2"].contains(&k.as_slice()), "{k:?}");
    }
    let Reply::Array(t) = c.cmd(&["TIME"]) else {
        panic!("TIME")
    };
    assert_eq!(t.len(), 2);
}

#[test]
fn lists_push_pop_index_edit_and_block() {
    let dir = temp_dir("lists");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let list = |xs: &[&str]| Reply::Array(xs.iter().map(|x| bulk(x)).collect());
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    assert_eq!(c.cmd(&["RPUSH", "l", "b", "c"]), Reply::Int(2));
    assert_eq!(c.cmd(&["LPUSH", "l", "a", "z"]), Reply::Int(4));
    assert_eq!(
        c.cmd(&["LRANGE", "l", "0", "-1"]),
        list(&["z", "a", "b", "c"])
    );
    assert_eq!(c.cmd(&["LPOP", "l"]), bulk("z"));
    assert_eq!(c.cmd(&["LINDEX", "l", "-1"]), bulk("c"));
    assert_eq!(c.cmd(&["LINDEX", "l", "5"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["LSET", "l", "1", "B"]), ok());
    err(c.cmd(&["LSET", "l", "9", "x"]), "index out of range");
    err(c.cmd(&["LSET", "nol", "0", "x"]), "no such key");
    assert_eq!(c.cmd(&["LINSERT", "l", "BEFORE", "c", "x"]), Reply::Int(4));
    assert_eq!(c.cmd(&["LINSERT", "l", "AFTER", "a", "y"]), Reply::Int(5));
    assert_eq!(
        c.cmd(&["LINSERT", "l", "AFTER", "none", "y"]),
        Reply::Int(-1)
    );
    assert_eq!(
        c.cmd(&["LRANGE", "l", "0", "-1"]),
        list(&["a", "y", "B", "x", "c"])
    );
    assert_eq!(c.cmd(&["RPUSH", "l", "y", "y"]), Reply::Int(7));
    assert_eq!(c.cmd(&["LREM", "l", "-2", "y"]), Reply::Int(2));
    assert_eq!(
        c.cmd(&["LRANGE", "l", "0", "-1"]),
        list(&["a", "y", "B", "x", "c"])
    );
    assert_eq!(c.cmd(&["LPOS", "l", "x"]), Reply::Int(3));
    assert_eq!(c.cmd(&["LTRIM", "l", "1", "-2"]), ok());
    assert_eq!(c.cmd(&["LRANGE", "l", "0", "-1"]), list(&["y", "B", "x"]));
    assert_eq!(c.cmd(&["RPOP", "l", "2"]), list(&["x", "B"]));
    assert_eq!(c.cmd(&["LLEN", "l"]), Reply::Int(1));
    assert_eq!(c.cmd(&["LMOVE", "l", "m", "LEFT", "RIGHT"]), bulk("y"));
    assert_eq!(c.cmd(&["EXISTS", "l"]), Reply::Int(0));
    assert_eq!(c.cmd(&["LPOP", "l", "3"]), Reply::Null);
    assert_eq!(c.cmd(&["LPUSHX", "l", "q"]), Reply::Int(0));
    assert_eq!(c.cmd(&["TYPE", "m"]), Reply::Simple("list".into()));
    assert_eq!(c.cmd(&["DBSIZE"]), Reply::Int(1));
    assert_eq!(c.cmd(&["SET", "str", "v"]), ok());
    err(c.cmd(&["RPUSH", "str", "v"]), "WRONGTYPE");
    err(c.cmd(&["LMOVE", "m", "str", "LEFT", "LEFT"]), "WRONGTYPE");
    assert_eq!(c.cmd(&["LLEN", "m"]), Reply::Int(1), "nothing moved");
    // A list trimmed to nothing is gone; made again it does not show its old items.
    assert_eq!(c.cmd(&["RPUSH", "t", "1", "2", "3"]), Reply::Int(3));
    assert_eq!(c.cmd(&["LTRIM", "t", "5", "9"]), ok());
    assert_eq!(c.cmd(&["EXISTS", "t"]), Reply::Int(0));
    assert_eq!(c.cmd(&["RPUSH", "t", "new"]), Reply::Int(1));
    assert_eq!(c.cmd(&["LRANGE", "t", "0", "-1"]), list(&["new"]));
    // Blocking pops: served at once when there is an item, else by the push, in the order
    // the clients blocked; a timeout answers a null array.
    assert_eq!(c.cmd(&["BLPOP", "m", "0"]), list(&["m", "y"]));
    assert_eq!(c.cmd(&["BLPOP", "m", "0.05"]), Reply::Null);
    let mut first = s.client();
    let mut second = s.client();
    first.send(&[b"BLPOP", b"q1", b"q2", b"5"]);
    std::thread::sleep(Duration::from_millis(200));
    second.send(&[b"BRPOP", b"q2", b"5"]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(c.cmd(&["RPUSH", "q2", "one", "two"]), Reply::Int(2));
    assert_eq!(first.read(), list(&["q2", "one"]));
    assert_eq!(second.read(), list(&["q2", "two"]));
    first.send(&[b"BLMOVE", b"src", b"dst", b"RIGHT", b"LEFT", b"5"]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(c.cmd(&["LPUSH", "src", "moved"]), Reply::Int(1));
    assert_eq!(first.read(), bulk("moved"));
    assert_eq!(c.cmd(&["LRANGE", "dst", "0", "-1"]), list(&["moved"]));
    assert_eq!(
        c.cmd(&["LMPOP", "2", "none", "dst", "LEFT", "COUNT", "5"]),
        Reply::Array(vec![bulk("dst"), list(&["moved"])])
    );
    err(c.cmd(&["BLPOP", "x", "-1"]), "timeout is negative");
    assert_eq!(c.cmd(&["DEBUG", "COUNTKEYS"]), c.cmd(&["DBSIZE"]));
}

#[test]
fn sets_add_remove_draw_and_combine() {
    let dir = temp_dir("sets");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let list = |xs: &[&str]| Reply::Array(xs.iter().map(|x| bulk(x)).collect());
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    assert_eq!(c.cmd(&["SADD", "a", "x", "y", "z", "x"]), Reply::Int(3));
    assert_eq!(c.cmd(&["SADD", "a", "x", "w"]), Reply::Int(1));
    assert_eq!(c.cmd(&["SCARD", "a"]), Reply::Int(4));
    assert_eq!(c.cmd(&["SISMEMBER", "a", "w"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["SMISMEMBER", "a", "w", "q"]),
        Reply::Array(vec![Reply::Int(1), Reply::Int(0)])
    );
    assert_eq!(c.cmd(&["SREM", "a", "w", "q"]), Reply::Int(1));
    assert_eq!(c.cmd(&["SMEMBERS", "a"]), list(&["x", "y", "z"]));
    assert_eq!(c.cmd(&["SADD", "b", "y", "z", "v"]), Reply::Int(3));
    assert_eq!(c.cmd(&["SINTER", "a", "b"]), list(&["y", "z"]));
    assert_eq!(c.cmd(&["SUNION", "a", "b"]), list(&["v", "x", "y", "z"]));
    assert_eq!(c.cmd(&["SDIFF", "a", "b"]), list(&["x"]));
    assert_eq!(c.cmd(&["SINTER", "a", "nope"]), list(&[]));
    assert_eq!(
        c.cmd(&["SINTERCARD", "2", "a", "b", "LIMIT", "1"]),
        Reply::Int(1)
    );
    assert_eq!(c.cmd(&["SUNIONSTORE", "u", "a", "b"]), Reply::Int(4));
    assert_eq!(c.cmd(&["SDIFFSTORE", "u", "a", "a"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "u"]), Reply::Int(0));
    assert_eq!(c.cmd(&["SMOVE", "a", "b", "x"]), Reply::Int(1));
    assert_eq!(c.cmd(&["SMOVE", "a", "b", "x"]), Reply::Int(0));
    assert_eq!(c.cmd(&["SCARD", "b"]), Reply::Int(4));
    // SPOP and SRANDMEMBER draw from the members only; SPOP removes what it draws.
    let Reply::Array(drawn) = c.cmd(&["SRANDMEMBER", "b", "-10"]) else {
        panic!()
    };
    assert_eq!(drawn.len(), 10);
    let Reply::Array(drawn) = c.cmd(&["SRANDMEMBER", "b", "10"]) else {
        panic!()
    };
    assert_eq!(drawn.len(), 4);
    let Reply::Array(popped) = c.cmd(&["SPOP", "b", "3"]) else {
        panic!()
    };
    assert_eq!(popped.len(), 3);
    assert_eq!(c.cmd(&["SCARD", "b"]), Reply::Int(1));
    for p in popped {
        let Reply::Bulk(Some(p)) = p else { panic!() };
        let p = String::from_utf8(p).unwrap();
        assert_eq!(c.cmd(&["SISMEMBER", "b", &p]), Reply::Int(0));
    }
    let Reply::Bulk(Some(_)) = c.cmd(&["SPOP", "b"]) else {
        panic!()
    };
    assert_eq!(c.cmd(&["EXISTS", "b"]), Reply::Int(0));
    assert_eq!(c.cmd(&["SPOP", "b"]), Reply::Bulk(None));
    err(c.cmd(&["SPOP", "a", "-1"]), "out of range");
    assert_eq!(c.cmd(&["SET", "str", "v"]), ok());
    err(c.cmd(&["SADD", "str", "v"]), "WRONGTYPE");
    err(c.cmd(&["SINTER", "nope", "str"]), "WRONGTYPE");
    assert_eq!(c.cmd(&["TYPE", "a"]), Reply::Simple("set".into()));
    assert_eq!(c.cmd(&["DEBUG", "COUNTKEYS"]), c.cmd(&["DBSIZE"]));
}

#[test]
fn multi_exec_runs_atomically_and_watch_aborts() {
    let dir = temp_dir("multi");
    let s = Server::start(&dir, &["--enable-flushdb"]);
    let mut c = s.client();
    let mut other = s.client();
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    // Queued, then run in order; a runtime error is one reply of the array.
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "x", "1"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["INCR", "x"]), Reply::Simple("QUEUED".into()));
    assert_eq!(
        c.cmd(&["HSET", "x", "f", "v"]),
        Reply::Simple("QUEUED".into())
    );
    assert_eq!(c.cmd(&["INCR", "x"]), Reply::Simple("QUEUED".into()));
    let Reply::Array(r) = c.cmd(&["EXEC"]) else {
        panic!("EXEC")
    };
    assert_eq!(r[..2], [ok(), Reply::Int(2)]);
    assert!(matches!(&r[2], Reply::Error(e) if e.starts_with("WRONGTYPE")));
    assert_eq!(r[3], Reply::Int(3));
    // A command refused while queueing voids the transaction.
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "y", "1"]), Reply::Simple("QUEUED".into()));
    err(c.cmd(&["NOSUCH"]), "unknown command");
    err(c.cmd(&["GET"]), "wrong number of arguments");
    err(c.cmd(&["MULTI"]), "nested");
    err(c.cmd(&["EXEC"]), "EXECABORT");
    assert_eq!(c.cmd(&["EXISTS", "y"]), Reply::Int(0));
    err(c.cmd(&["EXEC"]), "without MULTI");
    err(c.cmd(&["DISCARD"]), "without MULTI");
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["SET", "y", "1"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["DISCARD"]), ok());
    assert_eq!(c.cmd(&["EXISTS", "y"]), Reply::Int(0));
    // WATCH: a change by another client (even to the same value) aborts; none runs it.
    assert_eq!(c.cmd(&["WATCH", "x"]), ok());
    assert_eq!(other.cmd(&["SET", "x", "3"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["INCR", "x"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
    assert_eq!(c.cmd(&["GET", "x"]), bulk("3"));
    // Unchanged, or UNWATCHed: it runs.
    assert_eq!(c.cmd(&["WATCH", "x", "never"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["INCR", "x"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![Reply::Int(4)]));
    assert_eq!(c.cmd(&["WATCH", "x"]), ok());
    assert_eq!(other.cmd(&["SET", "x", "9"]), ok());
    assert_eq!(c.cmd(&["UNWATCH"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["GET", "x"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![bulk("9")]));
    // FLUSHALL touches a watched key that existed; an expiry reached since WATCH too.
    assert_eq!(c.cmd(&["WATCH", "x"]), ok());
    assert_eq!(other.cmd(&["FLUSHALL"]), ok());
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
    assert_eq!(c.cmd(&["SET", "e", "1", "PX", "100"]), ok());
    assert_eq!(c.cmd(&["WATCH", "e"]), ok());
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["EXEC"]), Reply::Null);
    // A blocking pop in a transaction does not wait.
    assert_eq!(c.cmd(&["MULTI"]), ok());
    assert_eq!(
        c.cmd(&["BLPOP", "nolist", "0"]),
        Reply::Simple("QUEUED".into())
    );
    assert_eq!(c.cmd(&["EXEC"]), Reply::Array(vec![Reply::Null]));
    // Isolation: another client's INCRs never land between a transaction's two reads.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let port = s.port;
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut w = Client::connect(port);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                w.cmd(&["INCR", "n"]);
            }
        })
    };
    for _ in 0..200 {
        assert_eq!(c.cmd(&["MULTI"]), ok());
        c.cmd(&["GET", "n"]);
        c.cmd(&["GET", "n"]);
        let Reply::Array(r) = c.cmd(&["EXEC"]) else {
            panic!("EXEC")
        };
        assert_eq!(
            r[0], r[1],
            "another client's write ran inside the transaction"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}

#[test]
fn element_scans_hrandfield_and_object() {
    let dir = temp_dir("escan");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    let mut members: Vec<String> = (0..250).map(|i| format!("m{i}")).collect();
    let mut args = vec!["SADD", "s"];
    args.extend(members.iter().map(String::as_str));
    assert_eq!(c.cmd(&args), Reply::Int(250));
    // SSCAN returns every member once over a full iteration, in pieces.
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let Reply::Array(r) = c.cmd(&["SSCAN", "s", &cursor, "COUNT", "30"]) else {
            panic!("SSCAN")
        };
        let (Reply::Bulk(Some(next)), Reply::Array(items)) = (&r[0], &r[1]) else {
            panic!("{r:?}")
        };
        for i in items {
            let Reply::Bulk(Some(i)) = i else { panic!() };
            seen.push(String::from_utf8(i.clone()).unwrap());
        }
        calls += 1;
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert!(calls > 5);
    seen.sort();
    members.sort();
    assert_eq!(seen, members);
    // HSCAN pairs fields with values; ZSCAN members with scores; MATCH filters.
    assert_eq!(c.cmd(&["HSET", "h", "a", "1", "b", "2"]), Reply::Int(2));
    assert_eq!(
        c.cmd(&["HSCAN", "h", "0", "MATCH", "b*"]),
        Reply::Array(vec![bulk("0"), Reply::Array(vec![bulk("b"), bulk("2")])])
    );
    assert_eq!(c.cmd(&["ZADD", "z", "1.5", "x"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["ZSCAN", "z", "0"]),
        Reply::Array(vec![bulk("0"), Reply::Array(vec![bulk("x"), bulk("1.5")])])
    );
    err(c.cmd(&["SSCAN", "h", "0"]), "WRONGTYPE");
    err(c.cmd(&["SSCAN", "s", "x"]), "invalid cursor");
    // HRANDFIELD and SRANDMEMBER bound their counts as Redis does.
    let Reply::Array(r) = c.cmd(&["HRANDFIELD", "h", "-5", "WITHVALUES"]) else {
        panic!()
    };
    assert_eq!(r.len(), 10);
    let Reply::Array(r) = c.cmd(&["HRANDFIELD", "h", "5"]) else {
        panic!()
    };
    assert_eq!(r.len(), 2);
    err(
        c.cmd(&["HRANDFIELD", "h", "-9223372036854770000", "WITHVALUES"]),
        "out of range",
    );
    err(
        c.cmd(&["SRANDMEMBER", "s", "-9223372036854775808"]),
        "out of range",
    );
    assert_eq!(c.cmd(&["OBJECT", "REFCOUNT", "h"]), Reply::Int(1));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "s"]), bulk("hashtable"));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "nope"]), Reply::Bulk(None));
}

#[test]
fn sorted_set_ranges_flags_pops_and_combinations() {
    let dir = temp_dir("zsets");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let list = |xs: &[&str]| Reply::Array(xs.iter().map(|x| bulk(x)).collect());
    let err =
        |r: Reply, what: &str| assert!(matches!(&r, Reply::Error(e) if e.contains(what)), "{r:?}");
    assert_eq!(
        c.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]),
        Reply::Int(4)
    );
    assert_eq!(
        c.cmd(&["ZADD", "z", "NX", "9", "a", "5", "e"]),
        Reply::Int(1)
    );
    assert_eq!(
        c.cmd(&["ZADD", "z", "XX", "CH", "0", "a", "7", "new"]),
        Reply::Int(1)
    );
    assert_eq!(
        c.cmd(&["ZADD", "z", "GT", "CH", "-1", "a", "6", "e"]),
        Reply::Int(1)
    );
    assert_eq!(c.cmd(&["ZADD", "z", "INCR", "1.5", "b"]), bulk("3.5"));
    assert_eq!(
        c.cmd(&["ZADD", "z", "NX", "INCR", "1", "b"]),
        Reply::Bulk(None)
    );
    err(
        c.cmd(&["ZADD", "z", "NX", "XX", "1", "a"]),
        "not compatible",
    );
    err(
        c.cmd(&["ZADD", "z", "INCR", "1", "a", "2", "b"]),
        "single increment",
    );
    assert_eq!(c.cmd(&["ZINCRBY", "z", "10", "c"]), bulk("13"));
    // Now a=0 b=3.5 d=4 e=6 c=13.
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "0", "-1"]),
        list(&["a", "b", "d", "e", "c"])
    );
    assert_eq!(c.cmd(&["ZREVRANGE", "z", "0", "1"]), list(&["c", "e"]));
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "(3.5", "+inf", "BYSCORE", "LIMIT", "1", "2"]),
        list(&["e", "c"])
    );
    assert_eq!(
        c.cmd(&["ZRANGE", "z", "6", "0", "BYSCORE", "REV", "WITHSCORES"]),
        list(&["e", "6", "d", "4", "b", "3.5", "a", "0"])
    );
    assert_eq!(
        c.cmd(&["ZREVRANGEBYSCORE", "z", "4", "(0"]),
        list(&["d", "b"])
    );
    assert_eq!(c.cmd(&["ZRANK", "z", "d"]), Reply::Int(2));
    assert_eq!(c.cmd(&["ZREVRANK", "z", "d"]), Reply::Int(2));
    assert_eq!(c.cmd(&["ZRANK", "z", "none"]), Reply::Bulk(None));
    assert_eq!(c.cmd(&["ZCOUNT", "z", "3.5", "6"]), Reply::Int(3));
    assert_eq!(
        c.cmd(&["ZMSCORE", "z", "a", "none"]),
        Reply::Array(vec![bulk("0"), Reply::Bulk(None)])
    );
    err(
        c.cmd(&["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"]),
        "LIMIT is only supported",
    );
    // Lexicographical ranges over equal scores.
    assert_eq!(
        c.cmd(&["ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d"]),
        Reply::Int(4)
    );
    assert_eq!(
        c.cmd(&["ZRANGEBYLEX", "lex", "(a", "[c"]),
        list(&["b", "c"])
    );
    assert_eq!(
        c.cmd(&["ZREVRANGEBYLEX", "lex", "+", "(b"]),
        list(&["d", "c"])
    );
    assert_eq!(c.cmd(&["ZLEXCOUNT", "lex", "-", "+"]), Reply::Int(4));
    err(
        c.cmd(&["ZRANGEBYLEX", "lex", "a", "c"]),
        "not valid string range",
    );
    assert_eq!(c.cmd(&["ZREMRANGEBYLEX", "lex", "[b", "[c"]), Reply::Int(2));
    assert_eq!(c.cmd(&["ZRANGE", "lex", "0", "-1"]), list(&["a", "d"]));
    // Pops, removal by rank and score, stores.
    assert_eq!(c.cmd(&["ZPOPMIN", "z"]), list(&["a", "0"]));
    assert_eq!(c.cmd(&["ZPOPMAX", "z", "2"]), list(&["c", "13", "e", "6"]));
    assert_eq!(c.cmd(&["ZCARD", "z"]), Reply::Int(2));
    assert_eq!(
        c.cmd(&["ZRANGESTORE", "copy", "z", "0", "-1"]),
        Reply::Int(2)
    );
    assert_eq!(c.cmd(&["ZREMRANGEBYRANK", "z", "0", "0"]), Reply::Int(1));
    assert_eq!(
        c.cmd(&["ZREMRANGEBYSCORE", "z", "-inf", "+inf"]),
        Reply::Int(1)
    );
    assert_eq!(c.cmd(&["EXISTS", "z"]), Reply::Int(0));
    // Combinations, with a plain set counted at score 1.
    assert_eq!(c.cmd(&["ZADD", "x", "1", "p", "2", "q"]), Reply::Int(2));
    assert_eq!(c.cmd(&["SADD", "plain", "q", "r"]), Reply::Int(2));
    assert_eq!(
        c.cmd(&["ZUNION", "2", "x", "plain", "WITHSCORES"]),
        list(&["p", "1", "r", "1", "q", "3"])
    );
    assert_eq!(
        c.cmd(&[
            "ZINTER",
            "2",
            "x",
            "plain",
            "WEIGHTS",
            "2",
            "10",
            "AGGREGATE",
            "MAX",
            "WITHSCORES"
        ]),
        list(&["q", "10"])
    );
    assert_eq!(c.cmd(&["ZDIFF", "2", "x", "plain"]), list(&["p"]));
    assert_eq!(
        c.cmd(&["ZINTERSTORE", "dst", "2", "x", "plain"]),
        Reply::Int(1)
    );
    assert_eq!(c.cmd(&["ZSCORE", "dst", "q"]), bulk("3"));
    assert_eq!(
        c.cmd(&["ZINTERCARD", "2", "x", "plain", "LIMIT", "5"]),
        Reply::Int(1)
    );
    assert_eq!(c.cmd(&["SET", "str", "v"]), ok());
    err(c.cmd(&["ZUNION", "2", "x", "str"]), "WRONGTYPE");
    // A blocked BZPOPMIN is served by a ZADD.
    let mut waiter = s.client();
    waiter.send(&[b"BZPOPMIN", b"later", b"5"]);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(c.cmd(&["ZADD", "later", "4", "w"]), Reply::Int(1));
    assert_eq!(waiter.read(), list(&["later", "w", "4"]));
    assert_eq!(c.cmd(&["DEBUG", "COUNTKEYS"]), c.cmd(&["DBSIZE"]));
}

/// Killed with -9 while clients push, add and remove across every collection type, the
/// server restarts with every collection's count equal to the elements it holds: each
/// command's records (record, elements, index) are one batch.
#[test]
fn kill_9_keeps_collections_consistent() {
    let dir = temp_dir("kill-collections");
    let mut s = Server::start(&dir, &[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..3)
        .map(|t| {
            let (port, stop) = (s.port, stop.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let k = format!("k{}", i % 7);
                    let v = format!("v{t}-{i}");
                    let cmds: [Vec<&str>; 6] = [
                        vec!["RPUSH", "list", &v],
                        vec!["LPOP", "list"],
                        vec!["HSET", "hash", &k, &v],
                        vec!["SADD", "set", &v],
                        vec!["ZADD", "zset", "1", &k],
                        vec!["ZREM", "zset", &k],
                    ];
                    c.send(
                        &cmds[(i % 6) as usize]
                            .iter()
                            .map(|a| a.as_bytes())
                            .collect::<Vec<_>>(),
                    );
                    c.w.set_read_timeout(Some(Duration::from_secs(5))).ok();
                    let mut line = String::new();
                    if c.r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    // Skip a bulk reply's payload.
                    if let Some(n) = line
                        .strip_prefix('$')
                        .and_then(|n| n.trim().parse::<i64>().ok())
                    {
                        if n >= 0 {
                            let mut b = vec![0; n as usize + 2];
                            if c.r.read_exact(&mut b).is_err() {
                                return;
                            }
                        }
                    }
                    i += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    s.signal("-KILL");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let len = |r: Reply| match r {
        Reply::Array(v) => v.len() as i64,
        r => panic!("{r:?}"),
    };
    let n = |r: Reply| match r {
        Reply::Int(n) => n,
        r => panic!("{r:?}"),
    };
    assert_eq!(
        n(c.cmd(&["LLEN", "list"])),
        len(c.cmd(&["LRANGE", "list", "0", "-1"]))
    );
    assert_eq!(
        2 * n(c.cmd(&["HLEN", "hash"])),
        len(c.cmd(&["HGETALL", "hash"]))
    );
    assert_eq!(
        n(c.cmd(&["SCARD", "set"])),
        len(c.cmd(&["SMEMBERS", "set"]))
    );
    assert!(
        n(c.cmd(&["SCARD", "set"])) > 0,
        "nothing was written before the kill"
    );
    assert_eq!(
        n(c.cmd(&["ZCARD", "zset"])),
        len(c.cmd(&["ZRANGE", "zset", "0", "-1"]))
    );
    assert_eq!(c.cmd(&["DEBUG", "COUNTKEYS"]), c.cmd(&["DBSIZE"]));
}

/// The kill loop of the server: clients write every type, with expiry, while the server is
/// killed (-9) and restarted on its directory, over and over, under each kind of value
/// store and L0 layout, with a small memtable so that flushes and compactions (and the
/// compaction filter that drops the members of deleted collections) run between the kills.
/// Each client owns its keys and keeps a model of them with the replies Redis gives; after
/// each restart every key must hold what the model says (the one command a kill left
/// without a reply may have been applied or not), keys whose expiry passed must be gone,
/// and DBSIZE must count what is there. `STRATA_SERVER_KILLS` sets the kills per preset.
mod kill_loop {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet, VecDeque};

    #[derive(Debug, Clone, PartialEq)]
    enum Val {
        Str(String),
        Hash(BTreeMap<String, String>),
        List(VecDeque<String>),
        Set(BTreeSet<String>),
        Zset(BTreeMap<String, i64>),
    }

    /// One client's keys: each with its value and whether it has a (long) expiry.
    #[derive(Debug, Clone, PartialEq)]
    struct Model {
        keys: BTreeMap<String, (Val, bool)>,
        /// Keys given a short expiry, with an instant past the deadline the server set.
        expiring: Vec<(String, Instant)>,
        /// The next retired key's number.
        gen: u64,
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn int(n: usize) -> Reply {
        Reply::Int(n as i64)
    }

    /// Applies a command to the model; the reply Redis gives.
    fn apply(m: &mut Model, args: &[String], now: Instant) -> Reply {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let entry = m.keys.get(a[1]).cloned();
        let has_ttl = entry.as_ref().is_some_and(|(_, t)| *t);
        // Redis deletes a collection with its last member.
        fn drop_if_empty(m: &mut Model, k: &str) {
            let empty = match m.keys.get(k) {
                Some((Val::Hash(h), _)) => h.is_empty(),
                Some((Val::List(l), _)) => l.is_empty(),
                Some((Val::Set(s), _)) => s.is_empty(),
                Some((Val::Zset(z), _)) => z.is_empty(),
                _ => false,
            };
            if empty {
                m.keys.remove(k);
            }
        }
        match a[0] {
            "SET" => {
                match a.get(3) {
                    Some(&"PX") => {
                        m.keys.remove(a[1]);
                        let ms = a[4].parse().unwrap();
                        m.expiring
                            .push((a[1].into(), now + Duration::from_millis(ms)));
                        m.gen += 1;
                    }
                    ex => {
                        m.keys
                            .insert(a[1].into(), (Val::Str(a[2].into()), ex == Some(&"EX")));
                    }
                }
                ok()
            }
            "APPEND" => {
                let mut s = match entry {
                    Some((Val::Str(s), _)) => s,
                    _ => String::new(),
                };
                s.push_str(a[2]);
                let n = s.len();
                m.keys.insert(a[1].into(), (Val::Str(s), has_ttl));
                int(n)
            }
            "DEL" => int(m.keys.remove(a[1]).is_some() as usize),
            "HSET" => {
                let e = m
                    .keys
                    .entry(a[1].into())
                    .or_insert((Val::Hash(BTreeMap::new()), false));
                let Val::Hash(h) = &mut e.0 else {
                    panic!("{a:?}")
                };
                int(h.insert(a[2].into(), a[3].into()).is_none() as usize)
            }
            "HDEL" => {
                let removed = match m.keys.get_mut(a[1]) {
                    Some((Val::Hash(h), _)) => h.remove(a[2]).is_some(),
                    _ => false,
                };
                drop_if_empty(m, a[1]);
                int(removed as usize)
            }
            "RPUSH" | "LPUSH" => {
                let e = m
                    .keys
                    .entry(a[1].into())
                    .or_insert((Val::List(VecDeque::new()), false));
                let Val::List(l) = &mut e.0 else {
                    panic!("{a:?}")
                };
                if a[0] == "RPUSH" {
                    l.push_back(a[2].into());
                } else {
                    l.push_front(a[2].into());
                }
                int(l.len())
            }
            "LPOP" | "RPOP" => {
                let v = match m.keys.get_mut(a[1]) {
                    Some((Val::List(l), _)) if a[0] == "LPOP" => l.pop_front(),
                    Some((Val::List(l), _)) => l.pop_back(),
                    _ => None,
                };
                drop_if_empty(m, a[1]);
                Reply::Bulk(v.map(String::into_bytes))
            }
            "SADD" => {
                let e = m
                    .keys
                    .entry(a[1].into())
                    .or_insert((Val::Set(BTreeSet::new()), false));
                let Val::Set(s) = &mut e.0 else {
                    panic!("{a:?}")
                };
                int(s.insert(a[2].into()) as usize)
            }
            "SREM" => {
                let removed = match m.keys.get_mut(a[1]) {
                    Some((Val::Set(s), _)) => s.remove(a[2]),
                    _ => false,
                };
                drop_if_empty(m, a[1]);
                int(removed as usize)
            }
            "ZADD" => {
                let e = m
                    .keys
                    .entry(a[1].into())
                    .or_insert((Val::Zset(BTreeMap::new()), false));
                let Val::Zset(z) = &mut e.0 else {
                    panic!("{a:?}")
                };
                int(z.insert(a[3].into(), a[2].parse().unwrap()).is_none() as usize)
            }
            "ZREM" => {
                let removed = match m.keys.get_mut(a[1]) {
                    Some((Val::Zset(z), _)) => z.remove(a[2]).is_some(),
                    _ => false,
                };
                drop_if_empty(m, a[1]);
                int(removed as usize)
            }
            "RENAME" => match m.keys.remove(a[1]) {
                None => Reply::Error("ERR no such key".into()),
                Some(v) => {
                    m.keys.insert(a[2].into(), v);
                    ok()
                }
            },
            "EXPIRE" => match m.keys.get_mut(a[1]) {
                Some(e) => {
                    e.1 = true;
                    int(1)
                }
                None => int(0),
            },
            "PERSIST" => match m.keys.get_mut(a[1]) {
                Some(e) if e.1 => {
                    e.1 = false;
                    int(1)
                }
                _ => int(0),
            },
            "PEXPIRE" => {
                assert!(m.keys.remove(a[1]).is_some(), "{a:?}");
                let ms = a[2].parse().unwrap();
                m.expiring
                    .push((a[1].into(), now + Duration::from_millis(ms)));
                m.gen += 1;
                int(1)
            }
            _ => unreachable!("{a:?}"),
        }
    }

    /// A command for client `t`'s keys.
    fn command(t: usize, m: &Model, rng: &mut Rng, i: u64) -> Vec<String> {
        let pad = match rng.below(4) {
            2 => "x".repeat(300),
            3 => "y".repeat(2000),
            _ => String::new(),
        };
        let v = format!("{t}-{i}-{pad}");
        let slot = rng.below(3);
        let f = format!("f{}", rng.below(8));
        let key = |kind: &str, n: u64| format!("w{t}:{kind}{n}");
        let c: Vec<String> = match rng.below(16) {
            0 => vec!["SET".into(), key("s", slot), v],
            1 => vec![
                "SET".into(),
                key("s", slot),
                v,
                "EX".into(),
                "100000".into(),
            ],
            2 => vec!["APPEND".into(), key("s", slot), v],
            3 => vec!["HSET".into(), key("h", slot), f, v],
            4 => vec!["HDEL".into(), key("h", slot), f],
            5 => vec![
                ["RPUSH", "LPUSH"][rng.below(2) as usize].into(),
                key("l", slot),
                v,
            ],
            6 => vec![
                ["LPOP", "RPOP"][rng.below(2) as usize].into(),
                key("l", slot),
            ],
            7 => vec!["SADD".into(), key("S", slot), f],
            8 => vec!["SREM".into(), key("S", slot), f],
            9 => vec!["ZADD".into(), key("z", slot), rng.below(5).to_string(), f],
            10 => vec!["ZREM".into(), key("z", slot), f],
            11 => {
                let kind = ["s", "h", "l", "S", "z"][rng.below(5) as usize];
                let to = (slot + 1 + rng.below(2)) % 3;
                vec!["RENAME".into(), key(kind, slot), key(kind, to)]
            }
            12 | 13 => {
                let kind = ["s", "h", "l", "S", "z"][rng.below(5) as usize];
                let verb = ["DEL", "EXPIRE", "PERSIST"][rng.below(3) as usize];
                let mut c = vec![verb.to_string(), key(kind, slot)];
                if verb == "EXPIRE" {
                    c.push("100000".into());
                }
                c
            }
            _ => {
                // A key given a short expiry, never written again.
                let e = key("e", m.gen);
                let ms = (50 + rng.below(200)).to_string();
                if m.keys.contains_key(&e) {
                    vec!["PEXPIRE".into(), e, ms]
                } else if rng.below(2) == 0 {
                    vec!["HSET".into(), e, f, v]
                } else {
                    vec!["SET".into(), e, v, "PX".into(), ms]
                }
            }
        };
        c
    }

    /// Runs client `t` against the server on `port` until the server goes away. Returns the
    /// model of what was acknowledged and, if a command went without a reply, the model with
    /// it applied too.
    fn client(
        t: usize,
        port: u16,
        mut m: Model,
        seed: u64,
        killed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> (Model, Option<Model>, u64) {
        let mut c = Client::connect(port);
        let mut rng = Rng(seed | 1);
        let mut acked = 0u64;
        loop {
            let args = command(t, &m, &mut rng, seed.wrapping_add(acked));
            let mut next = m.clone();
            let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
            let reply = c.w.write_all(&encode(&a)).and_then(|()| c.try_read());
            let reply = match reply {
                Ok(r) => r,
                // Only the kill may end a connection: anything before it is a failure.
                Err(e) => {
                    assert!(
                        killed.load(std::sync::atomic::Ordering::Acquire),
                        "client {t}: {args:?} failed before the kill: {e}"
                    );
                    apply(&mut next, &args, Instant::now());
                    return (m, Some(next), acked);
                }
            };
            let expected = apply(&mut next, &args, Instant::now());
            assert_eq!(
                reply,
                expected,
                "client {t}: {args:?} on {:?}",
                m.keys.get(&args[1])
            );
            m = next;
            acked += 1;
        }
    }

    fn strings(r: Reply) -> Vec<String> {
        match r {
            Reply::Array(v) => v
                .into_iter()
                .map(|r| match r {
                    Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
                    r => panic!("{r:?}"),
                })
                .collect(),
            r => panic!("{r:?}"),
        }
    }

    /// What the server holds of client `t`'s keys.
    fn read_back(c: &mut Client, t: usize) -> BTreeMap<String, (Val, bool)> {
        let mut out = BTreeMap::new();
        for k in strings(c.cmd(&["KEYS", &format!("w{t}:*")])) {
            let val = match c.cmd(&["TYPE", &k]) {
                Reply::Simple(t) if t == "string" => match c.cmd(&["GET", &k]) {
                    Reply::Bulk(Some(b)) => Val::Str(String::from_utf8(b).unwrap()),
                    r => panic!("{k}: {r:?}"),
                },
                Reply::Simple(t) if t == "hash" => {
                    let v = strings(c.cmd(&["HGETALL", &k]));
                    Val::Hash(v.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect())
                }
                Reply::Simple(t) if t == "list" => {
                    Val::List(strings(c.cmd(&["LRANGE", &k, "0", "-1"])).into())
                }
                Reply::Simple(t) if t == "set" => {
                    Val::Set(strings(c.cmd(&["SMEMBERS", &k])).into_iter().collect())
                }
                Reply::Simple(t) if t == "zset" => {
                    let v = strings(c.cmd(&["ZRANGE", &k, "0", "-1", "WITHSCORES"]));
                    Val::Zset(
                        v.chunks(2)
                            .map(|p| (p[0].clone(), p[1].parse().unwrap()))
                            .collect(),
                    )
                }
                r => panic!("{k}: TYPE {r:?}"),
            };
            let ttl = match c.cmd(&["PTTL", &k]) {
                Reply::Int(-1) => false,
                Reply::Int(n) if n > 0 => true,
                r => panic!("{k}: PTTL {r:?}"),
            };
            out.insert(k, (val, ttl));
        }
        out
    }

    /// Checks the restarted server against client `t`'s models; the one it matches.
    fn verify(c: &mut Client, t: usize, acked: Model, pending: Option<Model>) -> Model {
        let last = pending
            .iter()
            .chain([&acked])
            .flat_map(|m| m.expiring.iter().map(|e| e.1))
            .max();
        if let Some(d) = last {
            std::thread::sleep(d.saturating_duration_since(Instant::now()));
        }
        let held = read_back(c, t);
        let m = match pending {
            Some(p) if held == p.keys => p,
            p => {
                assert!(
                    held == acked.keys,
                    "client {t}: after the restart the server holds\n{held:?}\nwhere the \
                     acknowledged writes leave\n{:?}\n(or, with the command in flight, {:?})",
                    acked.keys,
                    p.map(|p| p.keys)
                );
                acked
            }
        };
        for (k, _) in &m.expiring {
            assert_eq!(c.cmd(&["EXISTS", k]), Reply::Int(0), "{k} expired");
            assert_eq!(c.cmd(&["GET", k]), Reply::Bulk(None), "{k} expired");
        }
        m
    }

    fn run(preset: &str) {
        let kills: usize = std::env::var("STRATA_SERVER_KILLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2);
        let dir = temp_dir(&format!("kill-loop-{preset}"));
        let args = ["--preset", preset, "--option", "write_buffer_size=65536"];
        let mut models: Vec<Model> = (0..3)
            .map(|_| Model {
                keys: BTreeMap::new(),
                expiring: Vec::new(),
                gen: 0,
            })
            .collect();
        let mut s = Server::start(&dir, &args);
        let mut total = 0;
        for round in 0..kills {
            let port = s.port;
            let killed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let clients: Vec<_> = models
                .drain(..)
                .enumerate()
                .map(|(t, m)| {
                    let seed = (round as u64 + 1) * 1_000_003 + t as u64 * 7919;
                    let killed = killed.clone();
                    std::thread::spawn(move || client(t, port, m, seed, killed))
                })
                .collect();
            std::thread::sleep(Duration::from_millis(1200));
            assert!(
                s.child.try_wait().unwrap().is_none(),
                "{preset}: the server exited before the kill"
            );
            s.assert_no_panic();
            killed.store(true, std::sync::atomic::Ordering::Release);
            s.signal("-KILL");
            let results: Vec<_> = clients.into_iter().map(|c| c.join().unwrap()).collect();
            s = Server::start(&dir, &args);
            let mut c = s.client();
            for (t, (acked, pending, n)) in results.into_iter().enumerate() {
                total += n;
                models.push(verify(&mut c, t, acked, pending));
            }
            // DBSIZE counts expired keys until they are reaped (as Redis's does): the
            // active expiry, which finds them from the index kept across the restart,
            // brings it down to what is live.
            let held: usize = models.iter().map(|m| m.keys.len()).sum();
            let deadline = Instant::now() + Duration::from_secs(10);
            while c.cmd(&["DBSIZE"]) != int(held) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert_eq!(
                c.cmd(&["DBSIZE"]),
                int(held),
                "{preset}: DBSIZE after kill {round}"
            );
            s.assert_no_panic();
        }
        assert!(total > 100, "{preset}: only {total} commands acknowledged");
        drop(s);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A server in this process on `db` (syncing before every reply, with its active
    /// expiry running), on a port of its own; stopped by its `shutting_down`.
    fn serve_in_process(db: strata::Db) -> (std::sync::Arc<strata_server::Server>, u16) {
        use std::sync::atomic::Ordering;
        let config = strata_server::Config {
            sync: strata_server::SyncMode::Always,
            ..Default::default()
        };
        let server = strata_server::Server::new(db, config).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let s = server.clone();
        std::thread::spawn(move || {
            while !s.shutting_down.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        let s = s.clone();
                        std::thread::spawn(move || s.serve(stream));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        let s = server.clone();
        std::thread::spawn(move || {
            while !s.shutting_down.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(100));
                while s.active_expiry() {}
            }
        });
        (server, port)
    }

    fn open_on(preset: &str, fs: std::sync::Arc<dyn strata::fs::Fs>) -> strata::Db {
        let mut o = strata::Options::preset(preset).unwrap();
        o.fs = fs;
        o.create_if_missing = true;
        o.write_buffer_size = 64 << 10;
        o.compaction_filter = Some(std::sync::Arc::new(strata_server::OrphanFilter::new()));
        strata::Db::open("/db", o).unwrap_or_else(|e| panic!("{preset}: open: {e}"))
    }

    /// Power cuts under the server, on the engine's in-memory file system: clients write
    /// every type with expiry (each owning its keys, with a model), and at moments when no
    /// command is in flight the file system is copied as a power cut would leave it (what
    /// was not synced is gone), while flushes, compactions and their filter run. Each copy
    /// is opened after the run: with `--sync always` every acknowledged write is there,
    /// nothing else, no key whose expiry passed, and DBSIZE counts what is there.
    fn power_cuts(preset: &str) {
        use std::sync::{Arc, Mutex, RwLock};
        use strata::fs::{CrashMode, MemFs};
        let mem = MemFs::new();
        let (server, port) = serve_in_process(open_on(preset, Arc::new(mem.clone())));
        let models: Vec<Arc<Mutex<Model>>> = (0..3)
            .map(|_| {
                Arc::new(Mutex::new(Model {
                    keys: BTreeMap::new(),
                    expiring: Vec::new(),
                    gen: 0,
                }))
            })
            .collect();
        // Held shared around each command; a cut takes it whole, so none is in flight.
        let gate = Arc::new(RwLock::new(()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let clients: Vec<_> = models
            .iter()
            .enumerate()
            .map(|(t, model)| {
                let (model, gate, stop) = (model.clone(), gate.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut c = Client::connect(port);
                    let mut rng = Rng((t as u64 + 1) * 7919);
                    let mut i = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Acquire) {
                        let _g = gate.read().unwrap();
                        let mut m = model.lock().unwrap();
                        let args = command(t, &m, &mut rng, i);
                        let mut next = m.clone();
                        let expected = apply(&mut next, &args, Instant::now());
                        let a: Vec<&str> = args.iter().map(String::as_str).collect();
                        let reply = c.cmd(&a);
                        // (Deadlines from after the reply: no earlier than the server's.)
                        let expected =
                            if args[0] == "PEXPIRE" || args.get(3).is_some_and(|x| x == "PX") {
                                let mut again = m.clone();
                                let e = apply(&mut again, &args, Instant::now());
                                next = again;
                                e
                            } else {
                                expected
                            };
                        assert_eq!(reply, expected, "client {t}: {args:?}");
                        *m = next;
                        i += 1;
                    }
                })
            })
            .collect();
        let mut cuts = Vec::new();
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(300));
            let _w = gate.write().unwrap();
            let held: Vec<Model> = models.iter().map(|m| m.lock().unwrap().clone()).collect();
            cuts.push((mem.crash_clone(CrashMode::DropUnsynced), held));
        }
        stop.store(true, std::sync::atomic::Ordering::Release);
        for c in clients {
            c.join().unwrap();
        }
        server
            .shutting_down
            .store(true, std::sync::atomic::Ordering::Release);
        for (n, (fs, held)) in cuts.into_iter().enumerate() {
            let (server, port) = serve_in_process(open_on(preset, Arc::new(fs)));
            let mut c = Client::connect(port);
            let mut live = 0;
            for (t, m) in held.into_iter().enumerate() {
                live += m.keys.len();
                verify(&mut c, t, m, None);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while c.cmd(&["DBSIZE"]) != int(live) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert_eq!(
                c.cmd(&["DBSIZE"]),
                int(live),
                "{preset}: DBSIZE after cut {n}"
            );
            server
                .shutting_down
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }

    #[test]
    fn power_cuts_keep_every_acknowledged_write() {
        for preset in ["default", "hashkv", "matrixkv", "cleveldb", "wisckey"] {
            power_cuts(preset);
        }
    }

    #[test]
    fn default_preset() {
        run("default");
    }

    #[test]
    fn hashkv() {
        run("hashkv");
    }

    #[test]
    fn matrixkv() {
        run("matrixkv");
    }

    #[test]
    fn cleveldb() {
        run("cleveldb");
    }

    #[test]
    fn wisckey() {
        run("wisckey");
    }

    #[test]
    fn blob() {
        run("blob");
    }

    #[test]
    fn ohdb_l0p() {
        run("ohdb-l0p");
    }
}

#[test]
fn publish_reaches_subscribers_of_channels_and_patterns_only() {
    let dir = temp_dir("pubsub");
    let s = Server::start(&dir, &[]);
    let arr = |v: &[Reply]| Reply::Array(v.to_vec());
    let mut sub = s.client();
    let mut psub = s.client();
    let mut publ = s.client();
    sub.send(&[b"SUBSCRIBE", b"a", b"b"]);
    assert_eq!(
        sub.read(),
        arr(&[bulk("subscribe"), bulk("a"), Reply::Int(1)])
    );
    assert_eq!(
        sub.read(),
        arr(&[bulk("subscribe"), bulk("b"), Reply::Int(2)])
    );
    assert_eq!(
        psub.cmd(&["PSUBSCRIBE", "n*"]),
        arr(&[bulk("psubscribe"), bulk("n*"), Reply::Int(1)])
    );
    assert_eq!(publ.cmd(&["PUBLISH", "a", "hello"]), Reply::Int(1));
    assert_eq!(publ.cmd(&["PUBLISH", "news", "x"]), Reply::Int(1));
    assert_eq!(publ.cmd(&["PUBLISH", "other", "y"]), Reply::Int(0));
    assert_eq!(
        sub.read(),
        arr(&[bulk("message"), bulk("a"), bulk("hello")])
    );
    assert_eq!(
        psub.read(),
        arr(&[bulk("pmessage"), bulk("n*"), bulk("news"), bulk("x")])
    );
    // Subscribed (RESP2): pub/sub commands and PING only.
    assert!(matches!(sub.cmd(&["GET", "k"]),
        Reply::Error(e) if e.starts_with("ERR Can't execute 'get': only (P|S)SUBSCRIBE")));
    assert_eq!(sub.cmd(&["PING"]), arr(&[bulk("pong"), bulk("")]));
    assert_eq!(
        publ.cmd(&["PUBSUB", "CHANNELS"]),
        arr(&[bulk("a"), bulk("b")])
    );
    assert!(matches!(publ.cmd(&["PUBSUB", "NUMPAT", "x"]),
        Reply::Error(e) if e == "ERR wrong number of arguments for 'pubsub|numpat' command"));
    assert_eq!(
        publ.cmd(&["PUBSUB", "NUMSUB", "a", "zz"]),
        arr(&[bulk("a"), Reply::Int(1), bulk("zz"), Reply::Int(0)])
    );
    assert_eq!(publ.cmd(&["PUBSUB", "NUMPAT"]), Reply::Int(1));
    // What was published before the UNSUBSCRIBE comes before its replies.
    assert_eq!(publ.cmd(&["PUBLISH", "a", "last"]), Reply::Int(1));
    sub.send(&[b"UNSUBSCRIBE"]);
    assert_eq!(sub.read(), arr(&[bulk("message"), bulk("a"), bulk("last")]));
    assert_eq!(
        sub.read(),
        arr(&[bulk("unsubscribe"), bulk("a"), Reply::Int(1)])
    );
    assert_eq!(
        sub.read(),
        arr(&[bulk("unsubscribe"), bulk("b"), Reply::Int(0)])
    );
    assert_eq!(sub.cmd(&["GET", "k"]), Reply::Bulk(None));
    assert_eq!(publ.cmd(&["PUBLISH", "a", "late"]), Reply::Int(0));
    // RESP3: messages are pushes, and any command may be sent meanwhile.
    let mut r3 = s.client();
    assert!(matches!(r3.cmd(&["HELLO", "3"]), Reply::Map(_)));
    assert_eq!(
        r3.cmd(&["SUBSCRIBE", "c"]),
        arr(&[bulk("subscribe"), bulk("c"), Reply::Int(1)])
    );
    assert_eq!(r3.cmd(&["SET", "k", "v"]), ok());
    // (NUMSUB: a flat array under RESP3 too.)
    assert_eq!(
        r3.cmd(&["PUBSUB", "NUMSUB", "c"]),
        arr(&[bulk("c"), Reply::Int(1)])
    );
    assert_eq!(publ.cmd(&["PUBLISH", "c", "m"]), Reply::Int(1));
    assert_eq!(r3.read(), arr(&[bulk("message"), bulk("c"), bulk("m")]));
    assert_eq!(r3.cmd(&["RESET"]), Reply::Simple("RESET".into()));
    assert_eq!(publ.cmd(&["PUBLISH", "c", "m"]), Reply::Int(0));
    // A subscriber that goes away is out of its channels.
    drop(psub);
    let deadline = Instant::now() + Duration::from_secs(10);
    while publ.cmd(&["PUBSUB", "NUMPAT"]) != Reply::Int(0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(publ.cmd(&["PUBSUB", "NUMPAT"]), Reply::Int(0));
    // A subscriber that stops reading holds up no publisher: past 32 MiB of unread
    // messages its connection is closed.
    let mut slow = s.client();
    assert_eq!(
        slow.cmd(&["SUBSCRIBE", "flood"]),
        arr(&[bulk("subscribe"), bulk("flood"), Reply::Int(1)])
    );
    let big = "z".repeat(1 << 20);
    let began = Instant::now();
    for _ in 0..64 {
        publ.cmd(&["PUBLISH", "flood", &big]);
    }
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "publishing waited"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while publ.cmd(&["PUBSUB", "NUMSUB", "flood"]) != arr(&[bulk("flood"), Reply::Int(0)])
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        publ.cmd(&["PUBSUB", "NUMSUB", "flood"]),
        arr(&[bulk("flood"), Reply::Int(0)]),
        "the flooded subscriber was let go"
    );
    drop(slow);
    std::fs::remove_dir_all(&dir).ok();
}

/// A client that asks for a long reply and does not read it holds up no one: the reply is
/// written as the connection takes it, so the command ends and lets go of the transaction
/// lock, and an EXEC (which takes it whole) and the commands behind that go on.
#[test]
fn a_client_that_does_not_read_its_long_reply_holds_up_nobody() {
    let dir = temp_dir("slow-reader");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let value = "v".repeat(10 << 10);
    for batch in 0..20 {
        let mut args = vec!["HSET".to_string(), "big".to_string()];
        for f in 0..100 {
            args.push(format!("f{batch}-{f}"));
            args.push(value.clone());
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(c.cmd(&a), Reply::Int(100));
    }
    // 20 MiB asked for, none of it read.
    let mut slow = s.client();
    slow.send(&[b"HGETALL", b"big"]);
    std::thread::sleep(Duration::from_millis(500));
    let port = s.port;
    let exec = std::thread::spawn(move || {
        let mut t = Client::connect(port);
        assert_eq!(t.cmd(&["MULTI"]), ok());
        assert_eq!(t.cmd(&["SET", "x", "1"]), Reply::Simple("QUEUED".into()));
        t.cmd(&["EXEC"])
    });
    std::thread::sleep(Duration::from_millis(200));
    let began = Instant::now();
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    let r = exec.join().unwrap();
    assert_eq!(r, Reply::Array(vec![ok()]));
    assert_eq!(c.cmd(&["GET", "x"]), bulk("1"));
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "held up {:?} behind a client that did not read",
        began.elapsed()
    );
    // The slow client still gets its whole reply.
    match slow.read() {
        Reply::Array(v) => assert_eq!(v.len(), 4000),
        r => panic!("{r:?}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sort_orders_by_value_or_pattern_gets_and_stores() {
    let dir = temp_dir("sort");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let strs = |v: &[&str]| Reply::Array(v.iter().map(|x| bulk(x)).collect());
    c.cmd(&["RPUSH", "l", "3", "10", "1", "2"]);
    assert_eq!(c.cmd(&["SORT", "l"]), strs(&["1", "2", "3", "10"]));
    assert_eq!(c.cmd(&["SORT", "l", "ALPHA"]), strs(&["1", "10", "2", "3"]));
    assert_eq!(
        c.cmd(&["SORT", "l", "DESC", "LIMIT", "1", "2"]),
        strs(&["3", "2"])
    );
    for (x, w) in [("1", "40"), ("2", "30"), ("3", "20"), ("10", "10")] {
        c.cmd(&["SET", &format!("w_{x}"), w]);
        c.cmd(&["HSET", &format!("h_{x}"), "name", &format!("n{x}")]);
    }
    assert_eq!(
        c.cmd(&["SORT", "l", "BY", "w_*"]),
        strs(&["10", "3", "2", "1"])
    );
    assert_eq!(
        c.cmd(&[
            "SORT",
            "l",
            "BY",
            "w_*",
            "GET",
            "#",
            "GET",
            "h_*->name",
            "LIMIT",
            "0",
            "1"
        ]),
        strs(&["10", "n10"])
    );
    // A pattern without `*` leaves the list's order; a missing key is nil.
    assert_eq!(
        c.cmd(&["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2"]),
        strs(&["1", "10"])
    );
    assert_eq!(
        c.cmd(&["SORT", "l", "BY", "nosort"]),
        strs(&["3", "10", "1", "2"])
    );
    assert_eq!(
        c.cmd(&["SORT", "l", "GET", "missing_*", "LIMIT", "0", "1"]),
        Reply::Array(vec![Reply::Bulk(None)])
    );
    c.cmd(&["SADD", "s", "b", "a"]);
    assert!(matches!(c.cmd(&["SORT", "s"]),
        Reply::Error(e) if e == "ERR One or more scores can't be converted into double"));
    assert_eq!(c.cmd(&["SORT_RO", "s", "ALPHA"]), strs(&["a", "b"]));
    assert!(matches!(c.cmd(&["SORT_RO", "s", "ALPHA", "STORE", "x"]),
        Reply::Error(e) if e == "ERR syntax error"));
    c.cmd(&["SET", "str", "v"]);
    assert!(matches!(c.cmd(&["SORT", "str"]), Reply::Error(e) if e.starts_with("WRONGTYPE")));
    // STORE replaces the destination with a list and wakes a client blocked on it.
    let port = s.port;
    let waiter = std::thread::spawn(move || Client::connect(port).cmd(&["BLPOP", "dst", "10"]));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(c.cmd(&["SORT", "l", "STORE", "dst"]), Reply::Int(4));
    assert_eq!(waiter.join().unwrap(), strs(&["dst", "1"]));
    assert_eq!(
        c.cmd(&["LRANGE", "dst", "0", "-1"]),
        strs(&["2", "3", "10"])
    );
    // An empty result deletes the destination.
    assert_eq!(c.cmd(&["SORT", "nothing", "STORE", "dst"]), Reply::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "dst"]), Reply::Int(0));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn client_unblock_ends_a_wait_as_its_timeout_or_with_an_error() {
    let dir = temp_dir("unblock");
    let s = Server::start(&dir, &[]);
    let mut c = s.client();
    let mut b = s.client();
    let Reply::Int(id) = b.cmd(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID")
    };
    let id = id.to_string();
    let wait_blocked = |c: &mut Client| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let Reply::Bulk(Some(info)) = c.cmd(&["INFO", "clients"]) else {
                panic!("INFO")
            };
            if String::from_utf8_lossy(&info).contains("blocked_clients:1") {
                return;
            }
            assert!(Instant::now() < deadline, "the client never blocked");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    for (how, reply) in [
        (None, Reply::Null),
        (Some("TIMEOUT"), Reply::Null),
        (
            Some("ERROR"),
            Reply::Error("UNBLOCKED client unblocked via CLIENT UNBLOCK".into()),
        ),
    ] {
        b.send(&[b"BLPOP", b"l", b"0"]);
        wait_blocked(&mut c);
        let mut args = vec!["CLIENT", "UNBLOCK", id.as_str()];
        args.extend(how);
        assert_eq!(c.cmd(&args), Reply::Int(1));
        assert_eq!(b.read(), reply);
    }
    // Not blocked: 0; not a number, or no such reason: errors.
    assert_eq!(c.cmd(&["CLIENT", "UNBLOCK", &id]), Reply::Int(0));
    assert!(matches!(
        c.cmd(&["CLIENT", "UNBLOCK", "x"]),
        Reply::Error(_)
    ));
    assert!(matches!(
        c.cmd(&["CLIENT", "UNBLOCK", &id, "LATER"]),
        Reply::Error(_)
    ));
    // The client goes on as any: blocks, and a push serves it.
    b.send(&[b"BLPOP", b"l", b"0"]);
    wait_blocked(&mut c);
    c.cmd(&["RPUSH", "l", "foo"]);
    assert_eq!(b.read(), Reply::Array(vec![bulk("l"), bulk("foo")]));
    std::fs::remove_dir_all(&dir).ok();
}

/// Under a stream of messages, a SUBSCRIBE's confirmation comes before the channel's first
/// message, and nothing of the channel comes after an UNSUBSCRIBE's reply (a RESP2 client
/// back out of subscribed mode would read it as the reply to its next command).
#[test]
fn subscription_replies_stay_in_order_under_a_stream_of_messages() {
    let dir = temp_dir("pubsub-order");
    let s = Server::start(&dir, &[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let publisher = {
        let (port, stop) = (s.port, stop.clone());
        std::thread::spawn(move || {
            let mut p = Client::connect(port);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                p.cmd(&["PUBLISH", "c", "m"]);
            }
        })
    };
    let mut sub = s.client();
    for round in 0..30 {
        sub.send(&[b"SUBSCRIBE", b"c"]);
        assert_eq!(
            sub.read(),
            Reply::Array(vec![bulk("subscribe"), bulk("c"), Reply::Int(1)]),
            "round {round}: the confirmation first"
        );
        std::thread::sleep(Duration::from_millis(5));
        sub.send(&[b"UNSUBSCRIBE", b"c"]);
        loop {
            match sub.read() {
                Reply::Array(v) if v[0] == bulk("message") => {}
                r => {
                    assert_eq!(
                        r,
                        Reply::Array(vec![bulk("unsubscribe"), bulk("c"), Reply::Int(0)])
                    );
                    break;
                }
            }
        }
        assert_eq!(
            sub.cmd(&["PING"]),
            Reply::Simple("PONG".into()),
            "round {round}: nothing after the unsubscribe"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    publisher.join().unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn options_that_hold_for_one_open_or_do_not_parse_are_refused_before_anything_is_written() {
    for bad in [
        "wal_recovery_mode=PointInTime",
        "error_if_exists=true",
        "write_buffer_size=lots",
        "no_such_option=1",
        "write_buffer_size",
    ] {
        let dir = temp_dir("bad-option");
        let out = Command::new(env!("CARGO_BIN_EXE_strata-server"))
            .arg("--dir")
            .arg(&dir)
            .args(["--port", "0", "--option", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--option"),
            "{bad}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!dir.exists(), "{bad}: the refused start wrote {dir:?}");
    }
}
