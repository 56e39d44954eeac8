//! Publish/subscribe (SUBSCRIBE, PSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH, PUBSUB), as Redis
//! does it: messages go to the clients subscribed at the moment of the PUBLISH, to nobody
//! else, and are never stored (nothing of pub/sub reaches the database).
//!
//! Each connection runs on its own thread, blocked reading its socket; a subscriber gets a
//! mailbox: PUBLISH encodes the message into each receiver's mailbox and wakes its thread
//! through an eventfd the thread polls beside its socket, and the thread writes what its
//! mailbox holds. A publisher never writes to another client's socket, so a subscriber
//! that stops reading holds up nobody: its mailbox grows to `MAILBOX_LIMIT` (Redis's
//! `client-output-buffer-limit pubsub` hard limit, 32 MiB) and the connection is then closed,
//! as Redis closes it.

use std::collections::{BTreeSet, HashMap};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::resp::Out;
use crate::{glob, lock, upper, Server, Session};

/// Bytes a subscriber's undelivered messages may take before its connection is closed.
pub(crate) const MAILBOX_LIMIT: usize = 32 << 20;

/// Where messages for one subscribed connection wait for its thread.
pub(crate) struct Mailbox {
    pending: Mutex<Vec<u8>>,
    /// Messages were dropped for want of room: the connection is to be closed.
    overflowed: AtomicBool,
    /// RESP3 pushes (`>`) or RESP2 arrays.
    resp3: AtomicBool,
    wake: OwnedFd,
}

impl Mailbox {
    fn new(resp3: bool) -> std::io::Result<Mailbox> {
        // SAFETY: eventfd takes no pointers; a negative result is an error, checked below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mailbox {
            pending: Mutex::new(Vec::new()),
            overflowed: AtomicBool::new(false),
            resp3: AtomicBool::new(resp3),
            // SAFETY: `fd` was just returned by eventfd, is open, and is owned by nothing
            // else.
            wake: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Messages posted from now on are encoded for RESP3 (pushes) or RESP2.
    pub(crate) fn set_resp3(&self, resp3: bool) {
        self.resp3.store(resp3, Ordering::Relaxed);
    }

    /// The descriptor that becomes readable when messages wait.
    pub(crate) fn wake_fd(&self) -> i32 {
        self.wake.as_raw_fd()
    }

    fn post(&self, parts: &[&[u8]]) {
        let mut out = Out::new(self.resp3.load(Ordering::Relaxed));
        out.push(parts.len());
        for p in parts {
            out.bulk(p);
        }
        {
            let mut pending = lock(&self.pending);
            if pending.len() + out.buf.len() > MAILBOX_LIMIT {
                self.overflowed.store(true, Ordering::Release);
            } else {
                pending.extend_from_slice(&out.buf);
            }
        }
        let one: u64 = 1;
        // SAFETY: `wake` is an open eventfd; the buffer is 8 valid bytes. A full counter
        // (EAGAIN) already wakes the reader, so the result needs no check.
        let _ = unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// What waits, taken (the wake-up consumed); `None` once messages were dropped.
    pub(crate) fn take(&self) -> Option<Vec<u8>> {
        let mut counter: u64 = 0;
        // SAFETY: `wake` is an open, non-blocking eventfd; the buffer is 8 writable bytes.
        // Nothing to read (EAGAIN) is fine: the pending bytes are what count.
        let _ = unsafe { libc::read(self.wake.as_raw_fd(), (&mut counter as *mut u64).cast(), 8) };
        if self.overflowed.load(Ordering::Acquire) {
            return None;
        }
        Some(std::mem::take(&mut *lock(&self.pending)))
    }
}

/// Who is subscribed to what, server-wide.
#[derive(Default)]
pub(crate) struct PubSub {
    channels: HashMap<Vec<u8>, HashMap<u64, Arc<Mailbox>>>,
    patterns: HashMap<Vec<u8>, HashMap<u64, Arc<Mailbox>>>,
    /// The connections that ever subscribed (a closing one that is not needs no search).
    subscribers: std::collections::HashSet<u64>,
}

/// One connection's subscriptions.
#[derive(Default)]
pub(crate) struct Subscriptions {
    pub(crate) mailbox: Option<Arc<Mailbox>>,
    channels: BTreeSet<Vec<u8>>,
    patterns: BTreeSet<Vec<u8>>,
}

impl Subscriptions {
    /// Channels and patterns subscribed.
    pub(crate) fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }
}

/// The commands a RESP2 connection with subscriptions may send (Redis's rule).
pub(crate) fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "SUBSCRIBE" | "PSUBSCRIBE" | "UNSUBSCRIBE" | "PUNSUBSCRIBE" | "PING" | "QUIT" | "RESET"
    )
}

impl Server {
    /// The pub/sub commands; false for another command.
    pub(crate) fn pubsub_command(
        &self,
        s: &mut Session,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> bool {
        let argc = args.len();
        match name {
            "SUBSCRIBE" | "PSUBSCRIBE" => {
                if !crate::check_arity(name, argc >= 2, out) {
                    return true;
                }
                let pattern = name == "PSUBSCRIBE";
                let mailbox = match &s.subs.mailbox {
                    Some(m) => m.clone(),
                    None => match Mailbox::new(s.resp3) {
                        Ok(m) => {
                            let m = Arc::new(m);
                            s.subs.mailbox = Some(m.clone());
                            m
                        }
                        Err(e) => {
                            out.error(&format!("ERR cannot subscribe: {e}"));
                            return true;
                        }
                    },
                };
                mailbox.set_resp3(s.resp3);
                let kind: &[u8] = if pattern { b"psubscribe" } else { b"subscribe" };
                for ch in &args[1..] {
                    let new = if pattern {
                        s.subs.patterns.insert(ch.clone())
                    } else {
                        s.subs.channels.insert(ch.clone())
                    };
                    if new {
                        let mut ps = lock(&self.pubsub);
                        ps.subscribers.insert(s.id);
                        let map = if pattern {
                            &mut ps.patterns
                        } else {
                            &mut ps.channels
                        };
                        map.entry(ch.clone())
                            .or_default()
                            .insert(s.id, mailbox.clone());
                    }
                    out.push(3);
                    out.bulk(kind);
                    out.bulk(ch);
                    out.int(s.subs.count() as i64);
                }
            }
            "UNSUBSCRIBE" | "PUNSUBSCRIBE" => {
                let pattern = name == "PUNSUBSCRIBE";
                let kind: &[u8] = if pattern {
                    b"punsubscribe"
                } else {
                    b"unsubscribe"
                };
                let names: Vec<Vec<u8>> = if argc > 1 {
                    args[1..].to_vec()
                } else if pattern {
                    s.subs.patterns.iter().cloned().collect()
                } else {
                    s.subs.channels.iter().cloned().collect()
                };
                if names.is_empty() {
                    out.push(3);
                    out.bulk(kind);
                    out.null();
                    out.int(s.subs.count() as i64);
                }
                for ch in &names {
                    self.unsubscribe(s, ch, pattern);
                    out.push(3);
                    out.bulk(kind);
                    out.bulk(ch);
                    out.int(s.subs.count() as i64);
                }
            }
            "PUBLISH" => {
                if crate::check_arity(name, argc == 3, out) {
                    out.int(self.publish(&args[1], &args[2]) as i64);
                }
            }
            "PUBSUB" => {
                if crate::check_arity(name, argc >= 2, out) {
                    self.pubsub_info(args, out);
                }
            }
            _ => return false,
        }
        true
    }

    fn unsubscribe(&self, s: &mut Session, ch: &[u8], pattern: bool) {
        let was = if pattern {
            s.subs.patterns.remove(ch)
        } else {
            s.subs.channels.remove(ch)
        };
        if !was {
            return;
        }
        let mut ps = lock(&self.pubsub);
        let map = if pattern {
            &mut ps.patterns
        } else {
            &mut ps.channels
        };
        if let Some(subs) = map.get_mut(ch) {
            subs.remove(&s.id);
            if subs.is_empty() {
                map.remove(ch);
            }
        }
    }

    /// Every subscription of the connection ends (RESET).
    pub(crate) fn unsubscribe_all(&self, s: &mut Session) {
        let channels: Vec<Vec<u8>> = s.subs.channels.iter().cloned().collect();
        for ch in channels {
            self.unsubscribe(s, &ch, false);
        }
        let patterns: Vec<Vec<u8>> = s.subs.patterns.iter().cloned().collect();
        for p in patterns {
            self.unsubscribe(s, &p, true);
        }
    }

    /// Connection `id` is gone: out of every channel and pattern.
    pub(crate) fn drop_subscriber(&self, id: u64) {
        let mut guard = lock(&self.pubsub);
        let ps = &mut *guard;
        if !ps.subscribers.remove(&id) {
            return;
        }
        for map in [&mut ps.channels, &mut ps.patterns] {
            map.retain(|_, subs| {
                subs.remove(&id);
                !subs.is_empty()
            });
        }
    }

    /// Posts `msg` to every subscriber of `channel` and of a pattern it matches; how many.
    pub(crate) fn publish(&self, channel: &[u8], msg: &[u8]) -> usize {
        let ps = lock(&self.pubsub);
        let mut n = 0;
        if let Some(subs) = ps.channels.get(channel) {
            for m in subs.values() {
                m.post(&[b"message", channel, msg]);
                n += 1;
            }
        }
        for (pat, subs) in &ps.patterns {
            if glob(pat, channel) {
                for m in subs.values() {
                    m.post(&[b"pmessage", pat, channel, msg]);
                    n += 1;
                }
            }
        }
        n
    }

    /// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | HELP.
    fn pubsub_info(&self, args: &[Vec<u8>], out: &mut Out) {
        let sub = upper(&args[1]);
        let ps = lock(&self.pubsub);
        match sub.as_str() {
            "CHANNELS" if args.len() <= 3 => {
                let mut names: Vec<&Vec<u8>> = ps
                    .channels
                    .keys()
                    .filter(|c| args.get(2).is_none_or(|p| glob(p, c)))
                    .collect();
                names.sort();
                out.array(names.len());
                for c in names {
                    out.bulk(c);
                }
            }
            // (A flat array under RESP3 too, as Redis 7.0 answers.)
            "NUMSUB" => {
                out.array(2 * (args.len() - 2));
                for c in &args[2..] {
                    out.bulk(c);
                    out.int(ps.channels.get(c).map_or(0, HashMap::len) as i64);
                }
            }
            "NUMPAT" if args.len() == 2 => out.int(ps.patterns.len() as i64),
            "HELP" if args.len() == 2 => {
                let lines = [
                    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "CHANNELS [<pattern>]",
                    "    Return the currently active channels matching a <pattern> (default: '*').",
                    "NUMPAT",
                    "    Return number of subscriptions to patterns.",
                    "NUMSUB [<channel> ...]",
                    "    Return the number of subscribers for the specified channels, excluding",
                    "    pattern subscriptions(default: no channels).",
                    "HELP",
                    "    Prints this help.",
                ];
                out.array(lines.len());
                for l in lines {
                    out.simple(l);
                }
            }
            "CHANNELS" | "NUMPAT" | "HELP" => out.error(&format!(
                "ERR wrong number of arguments for 'pubsub|{}' command",
                sub.to_lowercase()
            )),
            _ => out.error(&format!(
                "ERR unknown subcommand '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(&args[1])
            )),
        }
    }

    /// Channels and patterns with at least one subscriber (INFO stats).
    pub(crate) fn pubsub_counts(&self) -> (usize, usize) {
        let ps = lock(&self.pubsub);
        (ps.channels.len(), ps.patterns.len())
    }
}

/// Waits (up to the connection's read timeout, 200 ms) until the socket has something to
/// read (or `write` and it takes more bytes) or the mailbox has messages; whether the
/// socket has something to read.
pub(crate) fn wait(stream: &std::net::TcpStream, mailbox: &Mailbox, write: bool) -> bool {
    let read_events = libc::POLLIN | libc::POLLRDHUP;
    let mut fds = [
        libc::pollfd {
            fd: stream.as_raw_fd(),
            events: read_events | if write { libc::POLLOUT } else { 0 },
            revents: 0,
        },
        libc::pollfd {
            fd: mailbox.wake_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: both descriptors are open for the call (the stream and the mailbox are
    // borrowed); `fds` is two valid pollfds.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, 200) };
    n > 0 && fds[0].revents & (read_events | libc::POLLHUP | libc::POLLERR) != 0
}

/// Sends what of `buf` the socket takes without blocking, and drops it from `buf`; false
/// if the connection failed.
pub(crate) fn send_some(stream: &std::net::TcpStream, buf: &mut Vec<u8>) -> bool {
    match send_now(stream, buf) {
        Some(n) => {
            buf.drain(..n);
            true
        }
        None => false,
    }
}

/// Sends what of `bytes` the socket takes without blocking: how many bytes went, or None
/// if the connection failed.
pub(crate) fn send_now(stream: &std::net::TcpStream, bytes: &[u8]) -> Option<usize> {
    let mut sent = 0;
    while sent < bytes.len() {
        let rest = &bytes[sent..];
        // SAFETY: the descriptor is open (the stream is borrowed); `rest` is valid for
        // `rest.len()` bytes.
        let n = unsafe {
            libc::send(
                stream.as_raw_fd(),
                rest.as_ptr().cast(),
                rest.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n > 0 {
            sent += n as usize;
            continue;
        }
        let e = std::io::Error::last_os_error();
        match e.kind() {
            _ if n == 0 => return None,
            std::io::ErrorKind::Interrupted => {}
            std::io::ErrorKind::WouldBlock => break,
            _ => return None,
        }
    }
    Some(sent)
}
