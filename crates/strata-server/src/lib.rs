//! strata-server: a strata database behind the Redis protocol.
//!
//! One thread per connection (see docs/design/server.md for why), one `strata::Db`
//! underneath; read-modify-write commands (`INCR`, `SET NX`, `APPEND`, ...) and the writes
//! they race with are serialised per key by a striped lock. Keys are namespaced by type
//! in strata's key space (docs/format/redis-keys.md).

mod admin;
mod blocking;
mod expire;
mod float;
mod keys;
mod keyspace;
mod lists;
mod multi;
mod pubsub;
pub mod resp;
mod scans;
mod sets;
mod sort;
mod strings;
mod types;
mod zsets;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use keyspace::OrphanFilter;
use keyspace::{record_key, Meta};
use resp::{Limits, Out};

/// How writes are made durable before they are acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// Each write is synced before its reply (strata's group commit shares the syncs of
    /// concurrent writes).
    Always,
    /// Writes are acknowledged once strata accepted them; a background thread syncs the
    /// WAL every `sync_interval` (a machine crash may lose that much; like Redis's AOF
    /// `everysec`, at a finer interval).
    Batch,
    /// The OS writes back when it likes.
    None,
}

/// The server's settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub requirepass: Option<Vec<u8>>,
    pub maxclients: usize,
    pub sync: SyncMode,
    pub limits: Limits,
    /// Connections idle this long are closed (None: never).
    pub idle_timeout: Option<Duration>,
    /// Whether FLUSHDB may run.
    pub enable_flushdb: bool,
    /// KEYS refuses patterns that would return more keys than this (use SCAN).
    pub keys_limit: usize,
    /// The port the server listens on, as CONFIG GET port answers it (0: not known).
    pub port: u16,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            requirepass: None,
            maxclients: 10_000,
            sync: SyncMode::Batch,
            limits: Limits::default(),
            idle_timeout: None,
            enable_flushdb: false,
            keys_limit: 100_000,
            port: 0,
        }
    }
}

const STRIPES: usize = 1024;

/// The shared state of a running server.
pub struct Server {
    pub db: strata::Db,
    pub config: Config,
    stripes: Vec<Mutex<()>>,
    cursors: Mutex<Cursors>,
    pub clients: AtomicUsize,
    pub shutting_down: AtomicBool,
    started: Instant,
    commands: AtomicU64,
    connections: AtomicU64,
    /// Keys in the database (DBSIZE, INFO's keyspace line): counted once at start, then
    /// kept by every command that creates or removes a key, under that key's stripe lock.
    keys: std::sync::atomic::AtomicI64,
    /// Whether counting at start succeeded (if not, DBSIZE scans).
    keys_counted: AtomicBool,
    /// The connections open now, by id (CLIENT LIST).
    sessions: Mutex<std::collections::BTreeMap<u64, ClientEntry>>,
    /// CONFIG's parameters (admin.rs), by their Redis names.
    parameters: Mutex<std::collections::BTreeMap<&'static str, Vec<u8>>>,
    /// Calls, microseconds and error replies per command of `admin::COMMANDS` (INFO
    /// commandstats).
    command_stats: Vec<[AtomicU64; 3]>,
    /// The bytes one request may take (`proto-max-bulk-len` and
    /// `client-query-buffer-limit` bound it; at start, `Config::limits`).
    max_request: AtomicUsize,
    /// Writes begun and writes finished (any connection, counted before and after
    /// `Db::write`), and how many begun writes a synced write is known to cover: under
    /// `--sync=always` no reply goes out while `synced < begun`, so a reply never shows a
    /// write (its own connection's or another's) that a crash could still take back.
    begun: AtomicU64,
    finished: AtomicU64,
    synced: AtomicU64,
    /// The collection version counter (keyspace.rs).
    versions: Mutex<keyspace::Versions>,
    /// Keys reaped after their expiry (INFO's `expired_keys`).
    expired_keys: AtomicU64,
    /// Whether the background reaps expired keys (`DEBUG SET-ACTIVE-EXPIRE 0|1`).
    active_expire: AtomicBool,
    /// The clients blocked in BLPOP and its kin (blocking.rs).
    blocking: blocking::Blocking,
    /// Who is subscribed to which channels and patterns (pubsub.rs).
    pubsub: Mutex<pubsub::PubSub>,
    /// Held shared by every command and exclusively by EXEC while it runs its queue.
    transactions: std::sync::RwLock<()>,
    /// Writes per stripe, and FLUSHALLs (WATCH's counters: multi.rs).
    touched: Vec<AtomicU64>,
    flushes: AtomicU64,
}

/// What CLIENT LIST says of a connection.
struct ClientEntry {
    addr: String,
    laddr: String,
    name: Vec<u8>,
    since: Instant,
    last: Instant,
    resp: u8,
}

impl ClientEntry {
    /// The connection's line in CLIENT LIST and CLIENT INFO, in Redis's fields (those
    /// strata-server has nothing to say of are Redis's idle values).
    fn line(&self, id: u64) -> String {
        format!(
            "id={id} addr={} laddr={} fd=-1 name={} age={} idle={} flags=N db=0 sub=0 \
             psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 \
             obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client user=default redir=-1 \
             resp={}\n",
            self.addr,
            self.laddr,
            String::from_utf8_lossy(&self.name),
            self.since.elapsed().as_secs(),
            self.last.elapsed().as_secs(),
            self.resp,
        )
    }
}

/// SCAN cursors: Redis clients want integers, strata resumes at a key.
#[derive(Default)]
struct Cursors {
    next: u64,
    keys: HashMap<u64, Vec<u8>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn stripe_of(k: &[u8]) -> usize {
    // FNV-1a: cheap and spreads short keys.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in k {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h % STRIPES as u64) as usize
}

/// Glob matching as Redis does it (`*`, `?`, `[abc]`, `[^a-z]`, `\x`).
pub fn glob(pattern: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let (mut star_p, mut star_i) = (usize::MAX, 0);
    while i < s.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star_p = p;
                    star_i = i;
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class(pattern, p, s[i]) {
                        if matched {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if pattern[p + 1] == s[i] {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if c == s[i] {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        if star_p == usize::MAX {
            return false;
        }
        p = star_p + 1;
        star_i += 1;
        i = star_i;
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Whether `c` is in the class starting at `pattern[p] == '['`, and where it ends.
fn class(pattern: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = pattern.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut matched = false;
    while j < pattern.len() && pattern[j] != b']' {
        if pattern[j] == b'\\' && j + 1 < pattern.len() {
            matched |= pattern[j + 1] == c;
            j += 2;
        } else if j + 2 < pattern.len() && pattern[j + 1] == b'-' && pattern[j + 2] != b']' {
            let (lo, hi) = (
                pattern[j].min(pattern[j + 2]),
                pattern[j].max(pattern[j + 2]),
            );
            matched |= (lo..=hi).contains(&c);
            j += 3;
        } else {
            matched |= pattern[j] == c;
            j += 1;
        }
    }
    (j < pattern.len()).then_some((matched != negate, j + 1))
}

/// `ok`, after answering Redis's arity error for command `name` if it is false.
fn check_arity(name: &str, ok: bool, out: &mut Out) -> bool {
    if !ok {
        out.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            name.to_ascii_lowercase()
        ));
    }
    ok
}

/// An integer in the canonical form Redis takes (its `string2ll`): an optional `-`, then
/// digits with no leading zero; `01`, `-0`, `+1` and ` 1` are not integers.
fn parse_i64(b: &[u8]) -> Option<i64> {
    let n: i64 = std::str::from_utf8(b).ok()?.parse().ok()?;
    (n.to_string().as_bytes() == b).then_some(n)
}

/// A float as Redis's INCRBYFLOAT and HINCRBYFLOAT read one: the whole argument, no blanks,
/// `inf` allowed (the sum is checked), NaN refused.
fn parse_float(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.len() > 5000 || s.bytes().any(|c| c.is_ascii_whitespace()) {
        return None;
    }
    let x = s.parse::<f64>().ok()?;
    (!x.is_nan()).then_some(x)
}

fn upper(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_ascii_uppercase()
}

/// One connection's state.
struct Session {
    /// The connection's id (CLIENT ID, HELLO), unique for the server's life.
    id: u64,
    authed: bool,
    resp3: bool,
    quit: bool,
    /// Inside MULTI: commands are checked and queued (multi.rs); EXEC runs them.
    in_multi: bool,
    queue: Vec<Vec<Vec<u8>>>,
    /// A command failed its check while queued: EXEC refuses the transaction.
    multi_error: bool,
    /// The keys WATCH noted, until EXEC, DISCARD or UNWATCH.
    watched: Vec<multi::Watched>,
    /// Channels and patterns subscribed, and the mailbox their messages wait in.
    subs: pubsub::Subscriptions,
}

/// Redis's refusal of a client name with spaces or other characters outside `!`..`~`.
const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

/// Whether `name` is a client name Redis takes (empty clears the name).
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// Whether `given` is the password `expected`, in time that depends on the lengths only
/// (not on where they first differ).
fn password_matches(expected: &[u8], given: &[u8]) -> bool {
    let mut diff = u8::from(expected.len() != given.len());
    for (i, &e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// What a client that has not authenticated may send in one request (Redis 7 allows such
/// clients 10 arguments of 16 KiB).
const UNAUTHENTICATED: resp::Limits = resp::Limits {
    max_request: 16 << 10,
    max_args: 10,
};

/// How long a failed AUTH waits before it answers: guessing costs time.
const FAILED_AUTH_DELAY: Duration = Duration::from_millis(200);

impl Server {
    /// A server over `db`.
    ///
    /// # Errors
    /// The database holds another key-space layout, or cannot be read.
    pub fn new(db: strata::Db, config: Config) -> Result<Arc<Server>, String> {
        let parameters = Mutex::new(Server::initial_parameters(&config));
        let max_request = AtomicUsize::new(config.limits.max_request);
        let server = Server {
            command_stats: (0..admin::COMMANDS.len())
                .map(|_| Default::default())
                .collect(),
            parameters,
            max_request,
            db,
            config,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            cursors: Mutex::new(Cursors::default()),
            clients: AtomicUsize::new(0),
            shutting_down: AtomicBool::new(false),
            started: Instant::now(),
            commands: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            keys: std::sync::atomic::AtomicI64::new(0),
            keys_counted: AtomicBool::new(false),
            sessions: Mutex::default(),
            begun: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            versions: keyspace::Versions::new(),
            expired_keys: AtomicU64::new(0),
            active_expire: AtomicBool::new(true),
            blocking: blocking::Blocking::default(),
            pubsub: Mutex::default(),
            transactions: std::sync::RwLock::new(()),
            touched: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(),
            flushes: AtomicU64::new(0),
        };
        server.open_keyspace()?;
        if let Ok(n) = server.count_keys() {
            server.keys.store(n as i64, Ordering::Release);
            server.keys_counted.store(true, Ordering::Release);
        }
        Ok(Arc::new(server))
    }

    /// One step of active expiry (unless `DEBUG SET-ACTIVE-EXPIRE 0`): reaps up to 1000
    /// due keys; whether there may be more due now.
    pub fn active_expiry(&self) -> bool {
        const STEP: usize = 1000;
        if !self.active_expire.load(Ordering::Acquire) {
            return false;
        }
        // As a command: never between a transaction's first and last effect.
        let _shared = self
            .transactions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.expire_due(STEP).is_ok_and(|n| n == STEP)
    }

    /// Notes `delta` keys created (+) or removed (-). REQUIRES: the stripe locks of the
    /// keys concerned held since their existence was read.
    pub(crate) fn keys_changed(&self, delta: i64) {
        if delta != 0 {
            self.keys.fetch_add(delta, Ordering::AcqRel);
        }
    }

    /// Writes `b` (not synced: under `--sync=always` the connection syncs once before it
    /// sends the replies of the requests it has read, so a key's lock is never held across
    /// an fsync, and concurrent connections share syncs in strata's group commit).
    fn write(&self, b: strata::WriteBatch) -> strata::Result<()> {
        let stripes = multi::stripes_written(&b);
        self.begun.fetch_add(1, Ordering::AcqRel);
        let r = self.db.write(&strata::WriteOptions::default(), b);
        self.finished.fetch_add(1, Ordering::AcqRel);
        // After the write: a WATCH that read the counter before it sees it change.
        for i in stripes {
            self.touched[i].fetch_add(1, Ordering::AcqRel);
        }
        r
    }

    /// Under `--sync=always`, makes every write accepted so far durable (this
    /// connection's, and any other's its replies may show).
    fn sync_before_reply(&self) -> strata::Result<()> {
        if self.config.sync != SyncMode::Always {
            return Ok(());
        }
        // `finished` first: when it equals `begun` read after it, every write begun so far
        // has finished (is in the WAL), and the sync below covers them all; otherwise the
        // sync still covers every write this reply can show (each finished before the
        // reads that saw it) but claims none, as one in flight may not be in the WAL yet.
        let finished = self.finished.load(Ordering::Acquire);
        let begun = self.begun.load(Ordering::Acquire);
        if self.synced.load(Ordering::Acquire) < begun {
            // An empty synced write syncs the WAL (and the value log) up to here.
            self.db.write(
                &strata::WriteOptions {
                    sync: true,
                    ..Default::default()
                },
                strata::WriteBatch::new(),
            )?;
            if finished == begun {
                self.synced.fetch_max(begun, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    /// Serves one connection until it closes, QUITs, breaks the protocol or the server
    /// shuts down.
    pub fn serve(self: &Arc<Self>, mut stream: TcpStream) {
        let id = self.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let addr = |a: std::io::Result<std::net::SocketAddr>| {
            a.map_or_else(|_| "?:0".to_string(), |a| a.to_string())
        };
        lock(&self.sessions).insert(
            id,
            ClientEntry {
                addr: addr(stream.peer_addr()),
                laddr: addr(stream.local_addr()),
                name: Vec::new(),
                since: Instant::now(),
                last: Instant::now(),
                resp: 2,
            },
        );
        // (Out of the list however this function ends.)
        struct Leave<'a>(&'a Server, u64);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                lock(&self.0.sessions).remove(&self.1);
                // (Its subscriptions end with it, a panic too.)
                self.0.drop_subscriber(self.1);
            }
        }
        let _leave = Leave(self, id);
        let _ = stream.set_nodelay(true);
        // Short reads so that shutdown and the idle timeout are noticed; bounded writes so
        // that a client that stops reading cannot hold the shutdown forever.
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
        let mut s = Session {
            id,
            authed: self.config.requirepass.is_none(),
            resp3: false,
            quit: false,
            in_multi: false,
            queue: Vec::new(),
            multi_error: false,
            watched: Vec::new(),
            subs: pubsub::Subscriptions::default(),
        };
        let mut inbuf: Vec<u8> = Vec::with_capacity(16 << 10);
        let mut chunk = vec![0u8; 64 << 10];
        let mut idle_since = Instant::now();
        // Bytes the request at the front of `inbuf` needs before parsing it can succeed.
        let mut need = 0usize;
        // A subscriber's bytes the socket has not taken yet (pub/sub messages, replies):
        // once a connection has a mailbox, everything it is sent goes through here, in
        // order (`queued`), the long replies that spill too.
        let unsent: Arc<Mutex<Vec<u8>>> = Arc::default();
        let queued = Arc::new(AtomicBool::new(false));
        // Every request already buffered is answered before the replies go out
        // (pipelining: one write per batch of requests), the output flushed early once
        // it passes OUTPUT_FLUSH so that a client's replies never pile up unbounded. One
        // reply buffer for the connection's life (its sink made once: no descriptor
        // duplicated per batch).
        let mut out = Out::new(s.resp3);
        out.client_id = id;
        // What spills goes to the connection, after the sync `--sync=always` owes the
        // replies (this thread's writes: the same thread runs the sink).
        if let Ok(mut w) = stream.try_clone() {
            let server = Arc::clone(self);
            let (unsent, queued) = (unsent.clone(), queued.clone());
            out.sink = Some(Box::new(move |bytes: &[u8], wait: bool| {
                server.sync_before_reply().ok()?;
                if queued.load(Ordering::Acquire) {
                    // Behind what the connection is owed already.
                    let mut u = lock(&unsent);
                    u.extend_from_slice(bytes);
                    if !pubsub::send_some(&w, &mut u) {
                        return None;
                    }
                    // (Past SPILL_WAIT_BYTES owed, it waits for the client as any
                    // connection's long reply does.)
                    if wait || u.len() >= resp::SPILL_WAIT_BYTES {
                        w.write_all(&u).ok()?;
                        u.clear();
                    }
                    Some(bytes.len())
                } else if wait {
                    w.write_all(bytes).ok().map(|()| bytes.len())
                } else {
                    pubsub::send_now(&w, bytes)
                }
            }));
        }
        {
            use std::os::fd::AsRawFd;
            let fd = stream.as_raw_fd();
            out.alive = Some(Box::new(move || {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLRDHUP,
                    revents: 0,
                };
                // SAFETY: `fd` is this connection's socket, open for as long as `out`
                // lives (`out` is dropped before `stream`, which closes it);
                // `p` is one valid pollfd, and a zero timeout never blocks.
                let n = unsafe { libc::poll(&mut p, 1, 0) };
                // The peer hung up or shut down its side (even with requests still
                // unread: POLLRDHUP, where a peek would see only the pending bytes).
                n <= 0 || p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) == 0
            }));
        }
        loop {
            let mut used = 0;
            let mut broken = None;
            let mut write_failed = false;
            while inbuf.len() - used >= need {
                // Before AUTH, only small requests (as Redis 7 allows).
                let limits = if s.authed {
                    Limits {
                        max_request: self.max_request.load(Ordering::Acquire),
                        ..self.config.limits
                    }
                } else {
                    UNAUTHENTICATED
                };
                match resp::parse_step(&inbuf[used..], &limits) {
                    Ok(resp::Step::Request(args, n)) => {
                        used += n;
                        need = 0;
                        if !args.is_empty() {
                            // A subscriber's messages published before this command come
                            // before its reply (Redis's order: an UNSUBSCRIBE's reply is
                            // the last thing of the channel's a RESP2 client reads).
                            if let Some(mailbox) = &s.subs.mailbox {
                                match mailbox.take() {
                                    Some(msgs) => out.buf.extend_from_slice(&msgs),
                                    None => {
                                        write_failed = true;
                                        break;
                                    }
                                }
                            }
                            out.resp3 = s.resp3;
                            let (at, drained) = (out.buf.len(), out.drained);
                            self.command(&mut s, &args, &mut out);
                            if let Some(mailbox) = &s.subs.mailbox {
                                mailbox.set_resp3(s.resp3);
                                // Its replies go out behind the messages not sent yet.
                                queued.store(true, Ordering::Release);
                                // Messages posted while an UNSUBSCRIBE (or RESET) ran, before
                                // it took the channel away, come before its reply (a RESP2
                                // client out of subscribed mode would take one for the reply
                                // to its next command); after any other command's (a
                                // SUBSCRIBE's confirmation comes before the channel's first
                                // message), or if part of the reply has gone out already.
                                let before = matches!(
                                    upper(&args[0]).as_str(),
                                    "UNSUBSCRIBE" | "PUNSUBSCRIBE" | "RESET"
                                );
                                match mailbox.take() {
                                    Some(msgs)
                                        if before
                                            && !out.failed
                                            && out.drained == drained
                                            && at <= out.buf.len() =>
                                    {
                                        out.buf.splice(at..at, msgs);
                                    }
                                    Some(msgs) => out.buf.extend_from_slice(&msgs),
                                    None => {
                                        write_failed = true;
                                        break;
                                    }
                                }
                            }
                        }
                        if s.quit {
                            break;
                        }
                        out.spill();
                        if out.failed {
                            write_failed = true;
                            break;
                        }
                    }
                    Ok(resp::Step::Need(n)) => {
                        need = n;
                        break;
                    }
                    Err(e) => {
                        broken = Some(e);
                        break;
                    }
                }
            }
            if write_failed {
                break;
            }
            inbuf.drain(..used);
            if let Some(e) = &broken {
                out.error(&format!("ERR Protocol error: {}", e.0));
            }
            // (Nothing read and nothing to answer, as a subscriber woken by its mailbox is:
            // nothing to sync for.)
            let replies = used > 0 || !out.buf.is_empty() || broken.is_some();
            let synced = if replies {
                self.sync_before_reply()
            } else {
                Ok(())
            };
            if let Err(e) = synced {
                // The replies cannot promise durability: say so for the whole batch.
                out.buf.clear();
                out.error(&format!("ERR strata: syncing the log: {e}"));
                broken = Some(resp::ProtocolError("sync failed".into()));
            }
            if !out.buf.is_empty() {
                // A subscriber's replies queue behind the messages it has not taken yet.
                if s.subs.mailbox.is_some() {
                    lock(&unsent).extend_from_slice(&out.buf);
                } else if stream.write_all(&out.buf).is_err() {
                    break;
                }
            }
            out.buf.clear();
            if broken.is_some() || s.quit || self.shutting_down.load(Ordering::Acquire) {
                // (What a subscriber is owed, its last reply with it, goes before the close.)
                let u = lock(&unsent);
                if !u.is_empty() {
                    let _ = stream.write_all(&u);
                }
                break;
            }
            // A subscriber waits for its socket or its mailbox, and writes what it owes
            // as the socket takes it, never blocking on a client that does not read.
            if let Some(mailbox) = s.subs.mailbox.clone() {
                let pending = {
                    let mut u = lock(&unsent);
                    if !pubsub::send_some(&stream, &mut u) {
                        break;
                    }
                    !u.is_empty()
                };
                let readable = pubsub::wait(&stream, &mailbox, pending);
                let mut u = lock(&unsent);
                match mailbox.take() {
                    Some(msgs) => u.extend_from_slice(&msgs),
                    // Its messages outgrew the mailbox: closed, as Redis closes it.
                    None => break,
                }
                if !pubsub::send_some(&stream, &mut u) {
                    break;
                }
                // Past the limit a subscribed connection is closed, as Redis's pubsub
                // output limit closes it; one that unsubscribed waits for its client, as
                // any connection does (and reads no more meanwhile).
                if u.len() > pubsub::MAILBOX_LIMIT {
                    if s.subs.count() > 0 || stream.write_all(&u).is_err() {
                        break;
                    }
                    u.clear();
                }
                drop(u);
                if !readable {
                    // (Redis's idle timeout spares subscribers.)
                    if s.subs.count() == 0
                        && self
                            .config
                            .idle_timeout
                            .is_some_and(|t| idle_since.elapsed() >= t)
                    {
                        break;
                    }
                    continue;
                }
            }
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    inbuf.extend_from_slice(&chunk[..n]);
                    idle_since = Instant::now();
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    if self
                        .config
                        .idle_timeout
                        .is_some_and(|t| idle_since.elapsed() >= t)
                    {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }

    fn command(&self, s: &mut Session, args: &[Vec<u8>], out: &mut Out) {
        self.commands.fetch_add(1, Ordering::Relaxed);
        let name = upper(&args[0]);
        if !s.authed && !matches!(name.as_str(), "AUTH" | "HELLO" | "QUIT" | "PING" | "RESET") {
            out.error("NOAUTH Authentication required.");
            return;
        }
        if !s.authed && name == "PING" {
            out.error("NOAUTH Authentication required.");
            return;
        }
        // A RESP2 connection with subscriptions speaks pub/sub only (Redis's rule).
        if !s.resp3 && s.subs.count() > 0 && !pubsub::allowed_when_subscribed(&name) {
            out.error(&format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
                 RESET are allowed in this context",
                String::from_utf8_lossy(&args[0]).to_lowercase()
            ));
            return;
        }
        if s.in_multi {
            match name.as_str() {
                "EXEC" => self.exec(s, out),
                "DISCARD" => {
                    s.in_multi = false;
                    s.multi_error = false;
                    s.queue.clear();
                    s.watched.clear();
                    out.simple("OK");
                }
                // Run at once, ending the transaction (Redis never queues it).
                "RESET" if args.len() == 1 => self.run(s, "RESET", args, out),
                // Refused, not queued; the transaction goes on (as in Redis).
                "MULTI" => out.error("ERR MULTI calls can not be nested"),
                "WATCH" => out.error("ERR WATCH inside MULTI is not allowed"),
                "QUIT" => {
                    out.simple("OK");
                    s.quit = true;
                }
                _ => self.queue(s, &name, args, out),
            }
            return;
        }
        // Every command but EXEC holds the transaction lock shared; a blocking command
        // takes it for each attempt instead (blocking.rs), never while it waits.
        let _shared = (!blocking::blocks(&name)).then(|| {
            self.transactions
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        });
        self.run(s, &name, args, out);
    }

    /// Runs one command (`name` in capitals) and counts it in INFO commandstats.
    fn run(&self, s: &mut Session, name: &str, args: &[Vec<u8>], out: &mut Out) {
        let (began, errors) = (Instant::now(), out.errors);
        let (reply_at, drained) = (out.buf.len(), out.drained);
        let name = name.to_string();
        let r: strata::Result<()> = (|| {
            if self.connection_command(s, &name, args, out)?
                || self.pubsub_command(s, &name, args, out)
                || self.server_command(&name, args, out)?
                || self.string_command(&name, args, out)?
                || self.more_string_command(&name, args, out)?
                || self.expire_command(&name, args, out)?
                || self.key_command(&name, args, out)?
                || self.list_command(&name, args, out)?
                || self.set_command(&name, args, out)?
                || self.sort_command(&name, args, out)?
                || self.element_scan(&name, args, out)?
                || self.zset_more(&name, args, out)?
                || self.keyspace_command(&name, args, out)?
                || self.typed_command(&name, args, out)?
            {
                return Ok(());
            }
            let shown: Vec<String> = args[1..]
                .iter()
                .take(3)
                .map(|a| format!("'{}'", String::from_utf8_lossy(a)))
                .collect();
            out.error(&format!(
                "ERR unknown command '{}', with args beginning with: {}",
                String::from_utf8_lossy(&args[0]),
                shown.join(" ")
            ));
            Ok(())
        })();
        if let Err(e) = r {
            // A reply begun before the failure is taken back (an error after an array's
            // header would leave the client reading a reply that never ends); if part of
            // it has gone out already, the connection is closed instead.
            if out.drained == drained && out.buf.len() >= reply_at {
                out.buf.truncate(reply_at);
                out.error(&format!("ERR strata: {e}"));
            } else {
                out.failed = true;
            }
        }
        if let Some(i) = admin::index(&name) {
            let [calls, usec, failed] = &self.command_stats[i];
            calls.fetch_add(1, Ordering::Relaxed);
            usec.fetch_add(began.elapsed().as_micros() as u64, Ordering::Relaxed);
            if out.errors > errors {
                failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The connection's commands (PING, ECHO, QUIT, MULTI, AUTH, HELLO, SELECT, CLIENT...);
    /// `false` if `name` is none of them.
    fn connection_command(
        &self,
        s: &mut Session,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        match name {
            // With subscriptions (RESP2), PING answers as a message would come.
            "PING" if argc <= 2 && !s.resp3 && s.subs.count() > 0 => {
                out.array(2);
                out.bulk(b"pong");
                out.bulk(args.get(1).map_or(&b""[..], |a| a));
            }
            "PING" => match argc {
                1 => out.simple("PONG"),
                2 => out.bulk(&args[1]),
                _ => {
                    arity(false, out);
                }
            },
            // The connection as a new one: no transaction, watches, subscriptions or name,
            // RESP2, and authenticated only if no password is set.
            "RESET" => {
                if arity(argc == 1, out) {
                    s.in_multi = false;
                    s.multi_error = false;
                    s.queue.clear();
                    s.watched.clear();
                    self.unsubscribe_all(s);
                    s.resp3 = false;
                    out.resp3 = false;
                    s.authed = self.config.requirepass.is_none();
                    if let Some(e) = lock(&self.sessions).get_mut(&s.id) {
                        e.name.clear();
                        e.resp = 2;
                    }
                    out.simple("RESET");
                }
            }
            "ECHO" => {
                if arity(argc == 2, out) {
                    out.bulk(&args[1]);
                }
            }
            "QUIT" => {
                out.simple("OK");
                s.quit = true;
            }
            "MULTI" => {
                if arity(argc == 1, out) {
                    s.in_multi = true;
                    out.simple("OK");
                }
            }
            "EXEC" => out.error("ERR EXEC without MULTI"),
            "DISCARD" => out.error("ERR DISCARD without MULTI"),
            "WATCH" => {
                if arity(argc >= 2, out) {
                    self.watch(s, args, out)?;
                }
            }
            "UNWATCH" => {
                if arity(argc == 1, out) {
                    s.watched.clear();
                    out.simple("OK");
                }
            }
            "AUTH" => {
                if !arity(argc == 2 || argc == 3, out) {
                    return Ok(true);
                }
                // (Only the default user exists: `AUTH <user> <password>` names it, or
                // fails as a wrong password does.)
                let user_ok = argc == 2 || args[1] == b"default";
                match &self.config.requirepass {
                    None if argc == 2 => out.error(
                        "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
                    ),
                    None if user_ok => {
                        s.authed = true;
                        out.simple("OK");
                    }
                    Some(p) if user_ok && password_matches(p, &args[argc - 1]) => {
                        s.authed = true;
                        out.simple("OK");
                    }
                    _ => {
                        std::thread::sleep(FAILED_AUTH_DELAY);
                        out.error(
                            "WRONGPASS invalid username-password pair or user is disabled.",
                        )
                    }
                }
            }
            "HELLO" => self.hello(s, args, out),
            "SELECT" => {
                if arity(argc == 2, out) {
                    if args[1] == b"0" {
                        out.simple("OK");
                    } else {
                        out.error("ERR DB index is out of range");
                    }
                }
            }
            "CLIENT" => self.client(s, args, out),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The server's commands (COMMAND, CONFIG, INFO, DBSIZE, DEBUG, FLUSHDB/FLUSHALL);
    /// `false` if `name` is none of them.
    fn server_command(&self, name: &str, args: &[Vec<u8>], out: &mut Out) -> strata::Result<bool> {
        let argc = args.len();
        match name {
            "COMMAND" => self.command_command(args, out),
            "CONFIG" => {
                if check_arity(name, argc >= 2, out) {
                    self.config_command(args, out);
                }
            }
            "FUNCTION" => {
                if check_arity(name, argc >= 2, out) {
                    self.function_command(args, out);
                }
            }
            "INFO" => {
                let info = self.info(&args[1..]);
                out.bulk(info.as_bytes());
            }
            "MEMORY" => {
                if check_arity(name, argc >= 2, out) {
                    self.memory_command(args, out)?;
                }
            }
            "DBSIZE" => {
                let n = self.dbsize()?;
                out.int(n as i64);
            }
            "TIME" => {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                out.array(2);
                out.bulk(t.as_secs().to_string().as_bytes());
                out.bulk(t.subsec_micros().to_string().as_bytes());
            }
            // The scan DBSIZE once was (for tests and for checking the kept count).
            "DEBUG" if argc == 2 && upper(&args[1]) == "COUNTKEYS" => {
                let n = self.count_keys()?;
                out.int(n as i64);
            }
            // Redis's tests turn active expiry off to see lazy expiry alone.
            "DEBUG" if argc == 3 && upper(&args[1]) == "SET-ACTIVE-EXPIRE" => {
                self.active_expire
                    .store(args[2].as_slice() != b"0", Ordering::Release);
                out.simple("OK");
            }
            "DEBUG" => out
                .error("ERR strata-server serves DEBUG COUNTKEYS and DEBUG SET-ACTIVE-EXPIRE only"),
            "FLUSHDB" | "FLUSHALL" => {
                let mode = args.get(1).map(|a| upper(a));
                if args.len() > 2 || mode.as_deref().is_some_and(|m| m != "ASYNC" && m != "SYNC") {
                    out.error("ERR syntax error");
                } else if !self.config.enable_flushdb {
                    out.error("ERR FLUSHDB is disabled (start the server with --enable-flushdb)");
                } else {
                    self.flush_all()?;
                    out.simple("OK");
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// String commands: GET, SET, SETNX, MGET, MSET, INCR and its kin, APPEND, STRLEN;
    /// false for another command.
    fn string_command(&self, name: &str, args: &[Vec<u8>], out: &mut Out) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        match name {
            "GET" => {
                if arity(argc == 2, out) {
                    match self.string_at(&args[1])? {
                        Ok(Some(v)) => out.bulk(&v),
                        Ok(None) => out.null(),
                        Err(()) => out.error(types::WRONGTYPE),
                    }
                }
            }
            "SET" => self.set(args, out)?,
            "SETNX" => {
                if arity(argc == 3, out) {
                    let _g = lock(&self.stripes[stripe_of(&record_key(&args[1]))]);
                    if self.lookup_for_update(&args[1])?.is_some() {
                        out.int(0);
                    } else {
                        let mut b = strata::WriteBatch::new();
                        Self::put_string(&mut b, &args[1], None, args[2].clone(), false);
                        self.write(b)?;
                        self.keys_changed(1);
                        out.int(1);
                    }
                }
            }
            "MGET" => {
                if arity(argc >= 2, out) {
                    out.array(argc - 1);
                    for k in &args[1..] {
                        match self.string_at(k)? {
                            Ok(Some(v)) => out.bulk(&v),
                            _ => out.null(),
                        }
                    }
                }
            }
            "MSET" => {
                if arity(argc >= 3 && !argc.is_multiple_of(2), out) {
                    let keys: Vec<Vec<u8>> =
                        args[1..].chunks(2).map(|p| record_key(&p[0])).collect();
                    let _g = self.lock_keys(&keys);
                    let mut b = strata::WriteBatch::new();
                    let mut created = 0i64;
                    // The last value of a key given twice wins; each key's old record
                    // (its expiry entry) is read once.
                    let mut last: HashMap<&[u8], &[u8]> = HashMap::new();
                    for p in args[1..].chunks(2) {
                        last.insert(&p[0], &p[1]);
                    }
                    for (k, v) in last {
                        let old = self.lookup_for_update(k)?;
                        created += i64::from(old.is_none());
                        Self::put_string(&mut b, k, old.as_ref(), v.to_vec(), false);
                    }
                    self.write(b)?;
                    self.keys_changed(created);
                    out.simple("OK");
                }
            }
            "INCR" | "DECR" | "INCRBY" | "DECRBY" => self.incr_by(name, args, out)?,
            "APPEND" => {
                if arity(argc == 3, out) {
                    let Some((_g, old)) = self.string_for_update(&args[1], out)? else {
                        return Ok(true);
                    };
                    let created = old.is_none();
                    let mut v = old.as_ref().map(|m| m.value.clone()).unwrap_or_default();
                    if (v.len() + args[2].len()) as u64 > self.max_string() {
                        out.error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
                        return Ok(true);
                    }
                    v.extend_from_slice(&args[2]);
                    let len = v.len();
                    let mut b = strata::WriteBatch::new();
                    Self::put_string(&mut b, &args[1], old.as_ref(), v, true);
                    self.write(b)?;
                    self.keys_changed(i64::from(created));
                    out.int(len as i64);
                }
            }
            "STRLEN" => {
                if arity(argc == 2, out) {
                    match self.string_at(&args[1])? {
                        Ok(v) => out.int(v.map_or(0, |v| v.len()) as i64),
                        Err(()) => out.error(types::WRONGTYPE),
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Commands on keys of any type: TYPE, DEL, UNLINK, EXISTS, SCAN, KEYS; false for
    /// another command.
    fn keyspace_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        match name {
            "TYPE" => {
                if arity(argc == 2, out) {
                    out.simple(self.lookup(&args[1])?.map_or("none", |m| m.type_name()));
                }
            }
            "DEL" | "UNLINK" => {
                if arity(argc >= 2, out) {
                    let keys: Vec<Vec<u8>> = args[1..].iter().map(|k| record_key(k)).collect();
                    let _g = self.lock_keys(&keys);
                    let mut b = strata::WriteBatch::new();
                    let mut n = 0;
                    let mut seen = std::collections::HashSet::new();
                    // One record each, whatever the key's size: a collection's elements
                    // become orphans, which compactions drop.
                    for k in &args[1..] {
                        if seen.insert(k) {
                            if let Some(m) = self.lookup_for_update(k)? {
                                Self::delete_record(&mut b, k, &m);
                                n += 1;
                            }
                        }
                    }
                    if n > 0 {
                        self.write(b)?;
                        self.keys_changed(-n);
                    }
                    out.int(n);
                }
            }
            "EXISTS" => {
                if arity(argc >= 2, out) {
                    let mut n = 0;
                    for k in &args[1..] {
                        n += i64::from(self.lookup(k)?.is_some());
                    }
                    out.int(n);
                }
            }
            "SCAN" => self.scan(args, out)?,
            "KEYS" => {
                if arity(argc == 2, out) {
                    let keys = self.keys(&args[1], self.config.keys_limit + 1)?;
                    if keys.len() > self.config.keys_limit {
                        out.error(&format!(
                            "ERR KEYS would return more than {} keys (--keys-limit); use SCAN",
                            self.config.keys_limit
                        ));
                    } else {
                        out.array(keys.len());
                        for k in keys {
                            out.bulk(&k);
                        }
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// INCR, DECR, INCRBY, DECRBY: the string at the key read as a signed 64-bit integer
    /// (0 when absent), changed and written back under its stripe's lock.
    fn incr_by(&self, name: &str, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        let by_arg = name.ends_with("BY");
        if !arity(argc == if by_arg { 3 } else { 2 }, out) {
            return Ok(());
        }
        let mut by = if by_arg {
            match parse_i64(&args[2]) {
                Some(v) => v,
                None => {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(());
                }
            }
        } else {
            1
        };
        if name.starts_with("DECR") {
            let Some(neg) = by.checked_neg() else {
                out.error("ERR decrement would overflow");
                return Ok(());
            };
            by = neg;
        }
        let Some((_g, old)) = self.string_for_update(&args[1], out)? else {
            return Ok(());
        };
        let created = old.is_none();
        let now = match &old {
            None => 0,
            Some(m) => match parse_i64(&m.value) {
                Some(n) => n,
                None => {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(());
                }
            },
        };
        let Some(next) = now.checked_add(by) else {
            out.error("ERR increment or decrement would overflow");
            return Ok(());
        };
        let mut b = strata::WriteBatch::new();
        Self::put_string(
            &mut b,
            &args[1],
            old.as_ref(),
            next.to_string().into_bytes(),
            true,
        );
        self.write(b)?;
        self.keys_changed(i64::from(created));
        out.int(next);
        Ok(())
    }

    /// The stripe locks of `keys`, taken in order (no deadlock between two multi-key
    /// commands).
    fn lock_keys(&self, keys: &[Vec<u8>]) -> Vec<MutexGuard<'_, ()>> {
        let mut ids: Vec<usize> = keys.iter().map(|k| stripe_of(k)).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(|i| lock(&self.stripes[i])).collect()
    }

    /// CLIENT's subcommands that clients send (redis-py's `client_list()`, `client_id()`,
    /// `client_setname()`, `SETINFO` on connect); any other is an error, never a silent OK.
    fn client(&self, s: &mut Session, args: &[Vec<u8>], out: &mut Out) {
        let sub = args.get(1).map(|a| upper(a)).unwrap_or_default();
        let argc = args.len();
        match sub.as_str() {
            "ID" if argc == 2 => out.int(s.id as i64),
            "GETNAME" if argc == 2 => match lock(&self.sessions).get(&s.id) {
                Some(e) if !e.name.is_empty() => out.bulk(&e.name),
                _ => out.null(),
            },
            "SETNAME" if argc == 3 => {
                if valid_client_name(&args[2]) {
                    if let Some(e) = lock(&self.sessions).get_mut(&s.id) {
                        e.name = args[2].clone();
                    }
                    out.simple("OK");
                } else {
                    out.error(BAD_CLIENT_NAME);
                }
            }
            "LIST" if argc == 2 => {
                let list: String = lock(&self.sessions)
                    .iter()
                    .map(|(id, e)| e.line(*id))
                    .collect();
                out.bulk(list.as_bytes());
            }
            "INFO" if argc == 2 => {
                let line = lock(&self.sessions)
                    .get(&s.id)
                    .map(|e| e.line(s.id))
                    .unwrap_or_default();
                out.bulk(line.as_bytes());
            }
            // Library name and version (redis-py, go-redis send them on connect): noted by
            // Redis, nothing to do here.
            "SETINFO" if argc == 4 => out.simple("OK"),
            // Ends a blocked client's wait as its timeout would, or with an error.
            "UNBLOCK" if argc == 3 || argc == 4 => {
                let error = match args.get(3).map(|a| upper(a)).as_deref() {
                    None | Some("TIMEOUT") => false,
                    Some("ERROR") => true,
                    Some(_) => {
                        out.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
                        return;
                    }
                };
                match parse_i64(&args[2]) {
                    Some(id) => {
                        out.int((id >= 0 && self.blocking.unblock(id as u64, error)) as i64)
                    }
                    None => out.error("ERR value is not an integer or out of range"),
                }
            }
            "ID" | "GETNAME" | "SETNAME" | "LIST" | "INFO" | "SETINFO" | "UNBLOCK" => {
                out.error(&format!(
                    "ERR wrong number of arguments for 'client|{}' command",
                    sub.to_ascii_lowercase()
                ))
            }
            _ => out.error(&format!(
                "ERR strata-server does not implement CLIENT {sub} (it has CLIENT ID, GETNAME, \
                 SETNAME, LIST, INFO, SETINFO and UNBLOCK)"
            )),
        }
    }

    fn hello(&self, s: &mut Session, args: &[Vec<u8>], out: &mut Out) {
        let mut name: Option<Vec<u8>> = None;
        let mut i = 1;
        if let Some(v) = args.get(1) {
            match parse_i64(v) {
                Some(2) => s.resp3 = false,
                Some(3) => s.resp3 = true,
                _ => {
                    out.error("NOPROTO unsupported protocol version");
                    return;
                }
            }
            i = 2;
        }
        while i < args.len() {
            match upper(&args[i]).as_str() {
                "AUTH" if i + 2 < args.len() => {
                    let user_ok = args[i + 1] == b"default";
                    match &self.config.requirepass {
                        Some(p) if user_ok && password_matches(p, &args[i + 2]) => s.authed = true,
                        None if user_ok => s.authed = true,
                        _ => {
                            std::thread::sleep(FAILED_AUTH_DELAY);
                            out.error(
                                "WRONGPASS invalid username-password pair or user is disabled.",
                            );
                            return;
                        }
                    }
                    i += 3;
                }
                "SETNAME" if i + 1 < args.len() => {
                    if !valid_client_name(&args[i + 1]) {
                        out.error(BAD_CLIENT_NAME);
                        return;
                    }
                    name = Some(args[i + 1].clone());
                    i += 2;
                }
                _ => {
                    out.error("ERR syntax error in HELLO");
                    return;
                }
            }
        }
        if !s.authed {
            out.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
            return;
        }
        if let Some(e) = lock(&self.sessions).get_mut(&s.id) {
            e.resp = if s.resp3 { 3 } else { 2 };
            if let Some(n) = name {
                e.name = n;
            }
        }
        out.resp3 = s.resp3;
        out.map(7);
        out.bulk(b"server");
        out.bulk(b"strata");
        out.bulk(b"version");
        out.bulk(env!("CARGO_PKG_VERSION").as_bytes());
        out.bulk(b"proto");
        out.int(if s.resp3 { 3 } else { 2 });
        out.bulk(b"id");
        out.int(s.id as i64);
        out.bulk(b"mode");
        out.bulk(b"standalone");
        out.bulk(b"role");
        out.bulk(b"master");
        out.bulk(b"modules");
        out.array(0);
    }

    fn set(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        if args.len() < 3 {
            out.error("ERR wrong number of arguments for 'set' command");
            return Ok(());
        }
        let (mut nx, mut xx, mut get, mut keep_ttl) = (false, false, false, false);
        let mut expiry: Option<(&str, &[u8])> = None;
        let mut i = 3;
        while i < args.len() {
            let word = upper(&args[i]);
            match word.as_str() {
                "NX" if !xx => nx = true,
                "XX" if !nx => xx = true,
                "GET" => get = true,
                "KEEPTTL" if expiry.is_none() => keep_ttl = true,
                "EX" | "PX" | "EXAT" | "PXAT"
                    if expiry.is_none() && !keep_ttl && i + 1 < args.len() =>
                {
                    expiry = Some((
                        ["EX", "PX", "EXAT", "PXAT"]
                            .into_iter()
                            .find(|w| *w == word)
                            .expect("matched"),
                        &args[i + 1],
                    ));
                    i += 1;
                }
                _ => {
                    out.error("ERR syntax error");
                    return Ok(());
                }
            }
            i += 1;
        }
        let expire = match expiry {
            None => None,
            Some((unit, n)) => match expire::deadline(unit, n, keyspace::now_ms()) {
                Some(at) => Some(at),
                None => {
                    out.error(if parse_i64(n).is_none() {
                        "ERR value is not an integer or out of range"
                    } else {
                        "ERR invalid expire time in 'set' command"
                    });
                    return Ok(());
                }
            },
        };
        let _g = lock(&self.stripes[stripe_of(&record_key(&args[1]))]);
        let old = self.lookup_for_update(&args[1])?;
        if get && old.as_ref().is_some_and(|m| m.kind != keyspace::STRING) {
            out.error(types::WRONGTYPE);
            return Ok(());
        }
        let exists = old.is_some();
        let go = !(nx && exists || xx && !exists);
        if go {
            // SET replaces a key of any type (a collection's elements become orphans).
            let mut b = strata::WriteBatch::new();
            let at = match expire {
                Some(at) => at,
                None if keep_ttl => old.as_ref().map_or(0, |m| m.expire),
                None => 0,
            };
            if at != 0 && at <= keyspace::now_ms() {
                // An expiry already past: the key is gone at once (Redis deletes it too).
                if let Some(m) = &old {
                    Self::delete_record(&mut b, &args[1], m);
                    self.write(b)?;
                    self.keys_changed(-1);
                }
            } else {
                Self::put_record(
                    &mut b,
                    &args[1],
                    old.as_ref(),
                    &Meta::string(args[2].clone(), at),
                );
                self.write(b)?;
                self.keys_changed(i64::from(!exists));
            }
        }
        match (get, go) {
            (true, _) => match old {
                Some(m) => out.bulk(&m.value),
                None => out.null(),
            },
            (false, true) => out.simple("OK"),
            (false, false) => out.null(),
        }
        Ok(())
    }

    /// Every key's record, in order, from strata key `from`.
    fn key_records(&self, from: Vec<u8>) -> strata::Result<strata::DbIterator> {
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(from),
            upper_bound: Some(vec![keyspace::RECORD + 1]),
            ..Default::default()
        })?;
        it.seek_to_first();
        Ok(it)
    }

    /// Up to `limit` live keys matching `pattern`, in order.
    fn keys(&self, pattern: &[u8], limit: usize) -> strata::Result<Vec<Vec<u8>>> {
        let mut it = self.key_records(vec![keyspace::RECORD])?;
        let now = keyspace::now_ms();
        let mut keys = Vec::new();
        while it.valid() && keys.len() < limit {
            let k = &it.key()[1..];
            if !keyspace::expired_at(it.value(), now) && glob(pattern, k) {
                keys.push(k.to_vec());
            }
            it.next();
        }
        it.status()?;
        Ok(keys)
    }

    /// The kept key count (a scan if counting at start failed).
    fn dbsize(&self) -> strata::Result<usize> {
        if !self.keys_counted.load(Ordering::Acquire) {
            return self.count_keys();
        }
        Ok(self.keys.load(Ordering::Acquire).max(0) as usize)
    }

    /// Counts the keys by walking every key record (expired ones not yet reaped too, as
    /// the kept count and Redis's DBSIZE do).
    fn count_keys(&self) -> strata::Result<usize> {
        let mut it = self.key_records(vec![keyspace::RECORD])?;
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }

    /// A cursor number that resumes at `resume` (SCAN's strata key, or an element
    /// scan's element): kept until used or until more than 100,000 are outstanding.
    pub(crate) fn new_cursor(&self, resume: Vec<u8>) -> u64 {
        let mut c = lock(&self.cursors);
        if c.keys.len() >= 100_000 {
            // Abandoned cursors: forget the oldest numbers.
            let cut = c.next.saturating_sub(50_000);
            c.keys.retain(|&id, _| id > cut);
        }
        c.next += 1;
        let id = c.next;
        c.keys.insert(id, resume);
        id
    }

    /// Where cursor `id` resumes (None: unknown or forgotten).
    pub(crate) fn take_cursor(&self, id: u64) -> Option<Vec<u8>> {
        lock(&self.cursors).keys.remove(&id)
    }

    fn scan(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        if args.len() < 2 || !args.len().is_multiple_of(2) {
            out.error("ERR wrong number of arguments for 'scan' command");
            return Ok(());
        }
        let Some(cursor) = std::str::from_utf8(&args[1])
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        else {
            out.error("ERR invalid cursor");
            return Ok(());
        };
        let (mut pattern, mut count): (&[u8], usize) = (b"*", 10);
        let mut kind: Option<String> = None;
        for pair in args[2..].chunks(2) {
            match upper(&pair[0]).as_str() {
                "MATCH" => pattern = &pair[1],
                // Clamped to --keys-limit: one call never walks more records than KEYS may.
                "COUNT" => match parse_i64(&pair[1]) {
                    Some(n) if n > 0 => count = (n as usize).min(self.config.keys_limit.max(1)),
                    _ => {
                        out.error("ERR value is not an integer or out of range");
                        return Ok(());
                    }
                },
                "TYPE" => kind = Some(String::from_utf8_lossy(&pair[1]).to_ascii_lowercase()),
                _ => {
                    out.error("ERR syntax error");
                    return Ok(());
                }
            }
        }
        let start = if cursor == 0 {
            vec![keyspace::RECORD]
        } else {
            match self.take_cursor(cursor) {
                Some(k) => k,
                None => {
                    out.error("ERR invalid cursor (unknown or expired)");
                    return Ok(());
                }
            }
        };
        let mut it = self.key_records(start)?;
        let mut found = Vec::new();
        let mut visited = 0;
        let now = keyspace::now_ms();
        while it.valid() && visited < count {
            let k = &it.key()[1..];
            let type_ok = kind
                .as_deref()
                .is_none_or(|want| keyspace::type_name(keyspace::kind_of(it.value())) == want);
            if type_ok && !keyspace::expired_at(it.value(), now) && glob(pattern, k) {
                found.push(k.to_vec());
            }
            visited += 1;
            it.next();
        }
        it.status()?;
        let next = if it.valid() {
            self.new_cursor(it.key().to_vec())
        } else {
            0
        };
        out.array(2);
        out.bulk(next.to_string().as_bytes());
        out.array(found.len());
        for k in found {
            out.bulk(&k);
        }
        Ok(())
    }

    /// Removes every key: two range deletions around the server's own records (constant
    /// time however many keys there are; compactions drop what they cover).
    ///
    /// Every stripe is held meanwhile (in index order, as `lock_keys` takes them), so no
    /// read-modify-write straddles the flush (an HSET that read a count before it would
    /// write that count back over the emptied hash), and the key count is set to zero with
    /// no update racing it.
    fn flush_all(&self) -> strata::Result<()> {
        let _all: Vec<MutexGuard<'_, ()>> = self.stripes.iter().map(lock).collect();
        let mut b = strata::WriteBatch::new();
        Self::flush_ranges(&mut b);
        self.write(b)?;
        self.flushes.fetch_add(1, Ordering::AcqRel);
        self.keys.store(0, Ordering::Release);
        self.keys_counted.store(true, Ordering::Release);
        Ok(())
    }

    /// INFO's text for the sections asked (none or `default`: Redis's default set; `all`:
    /// those and commandstats and strata's own; `everything`: the same, strata-server
    /// having no modules), each once, in Redis's order.
    fn info(&self, asked: &[Vec<u8>]) -> String {
        // The order they are written in; `default` leaves out the sections in NOT_DEFAULT.
        const ORDER: [&str; 11] = [
            "server",
            "clients",
            "memory",
            "persistence",
            "stats",
            "replication",
            "cpu",
            "commandstats",
            "errorstats",
            "keyspace",
            "strata",
        ];
        const NOT_DEFAULT: [&str; 3] = ["commandstats", "errorstats", "strata"];
        let mut want: std::collections::HashSet<&&str> = std::collections::HashSet::new();
        let asked: Vec<String> = if asked.is_empty() {
            vec!["default".into()]
        } else {
            asked
                .iter()
                .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
                .collect()
        };
        for a in &asked {
            match a.as_str() {
                "default" => want.extend(ORDER.iter().filter(|s| !NOT_DEFAULT.contains(s))),
                "all" | "everything" => want.extend(&ORDER),
                other => {
                    want.extend(ORDER.iter().filter(|s| **s == other));
                }
            }
        }
        let mut text = String::new();
        for section in ORDER.iter().filter(|s| want.contains(*s)) {
            if !text.is_empty() {
                text.push_str("\r\n");
            }
            text.push_str(&self.info_section(section));
        }
        text
    }

    fn info_section(&self, section: &str) -> String {
        let status = |field: &str| -> u64 {
            std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find(|l| l.starts_with(field))?
                        .split_whitespace()
                        .nth(1)?
                        .parse::<u64>()
                        .ok()
                })
                .map_or(0, |kib| kib * 1024)
        };
        let lines: Vec<String> = match section {
            "server" => vec![
                "redis_version:7.0.0".into(),
                format!("strata_version:{}", env!("CARGO_PKG_VERSION")),
                "redis_mode:standalone".into(),
                format!("process_id:{}", std::process::id()),
                format!("uptime_in_seconds:{}", self.started.elapsed().as_secs()),
                format!("sync_mode:{:?}", self.config.sync),
            ],
            "clients" => vec![
                format!("connected_clients:{}", self.clients.load(Ordering::Relaxed)),
                format!("maxclients:{}", self.config.maxclients),
                format!("blocked_clients:{}", self.blocking.waiting()),
            ],
            // Redis's used_memory is its allocator's count; here the process's anonymous
            // resident memory (heap, memtables, caches), the page cache apart.
            "memory" => vec![
                format!("used_memory:{}", status("RssAnon:")),
                format!("used_memory_rss:{}", status("VmRSS:")),
                format!("used_memory_peak:{}", status("VmHWM:")),
                "maxmemory:0".into(),
                "mem_allocator:libc".into(),
            ],
            "persistence" => vec![
                "loading:0".into(),
                "aof_enabled:1".into(),
                "rdb_bgsave_in_progress:0".into(),
                "aof_rewrite_in_progress:0".into(),
            ],
            "stats" => vec![
                format!(
                    "total_connections_received:{}",
                    self.connections.load(Ordering::Relaxed)
                ),
                format!(
                    "total_commands_processed:{}",
                    self.commands.load(Ordering::Relaxed)
                ),
                format!("expired_keys:{}", self.expired_keys.load(Ordering::Relaxed)),
                "evicted_keys:0".into(),
                format!("pubsub_channels:{}", self.pubsub_counts().0),
                format!("pubsub_patterns:{}", self.pubsub_counts().1),
            ],
            "replication" => vec![
                "role:master".into(),
                "connected_slaves:0".into(),
                "master_repl_offset:0".into(),
            ],
            "cpu" => {
                let usage = |who| {
                    // SAFETY: getrusage writes the struct it is given; zeroed is a valid
                    // rusage (plain integers).
                    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
                    // SAFETY: `u` is a valid, writable rusage for the call.
                    unsafe { libc::getrusage(who, &mut u) };
                    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
                    (secs(u.ru_stime), secs(u.ru_utime))
                };
                let (sys, user) = usage(libc::RUSAGE_SELF);
                let (csys, cuser) = usage(libc::RUSAGE_CHILDREN);
                vec![
                    format!("used_cpu_sys:{sys:.6}"),
                    format!("used_cpu_user:{user:.6}"),
                    format!("used_cpu_sys_children:{csys:.6}"),
                    format!("used_cpu_user_children:{cuser:.6}"),
                ]
            }
            // Error replies count as failed calls; rejected_calls (refused before running:
            // arity, authentication) is not told apart yet and stays 0.
            "commandstats" => admin::COMMANDS
                .iter()
                .zip(&self.command_stats)
                .filter_map(|(c, [calls, usec, failed])| {
                    let n = calls.load(Ordering::Relaxed);
                    let us = usec.load(Ordering::Relaxed);
                    (n > 0).then(|| {
                        format!(
                            "cmdstat_{}:calls={n},usec={us},usec_per_call={:.2},rejected_calls=0,failed_calls={}",
                            c.name,
                            us as f64 / n as f64,
                            failed.load(Ordering::Relaxed)
                        )
                    })
                })
                .collect(),
            "errorstats" => Vec::new(),
            // Redis writes no line for an empty database.
            // Redis writes no line for an empty database. `expires` walks the expiry
            // index (one entry per key with an expiry).
            "keyspace" => match self.dbsize().unwrap_or(0) {
                0 => vec![],
                n => vec![format!(
                    "db0:keys={n},expires={},avg_ttl=0",
                    self.count_expiring(usize::MAX).unwrap_or(0)
                )],
            },
            "strata" => self.db.stats().to_text().lines().map(str::to_string).collect(),
            _ => return String::new(),
        };
        let mut title = section.to_string();
        title[..1].make_ascii_uppercase();
        let title = match section {
            "cpu" => "CPU".to_string(),
            "commandstats" => "Commandstats".to_string(),
            _ => title,
        };
        format!("# {title}\r\n{}\r\n", lines.join("\r\n"))
    }
}
