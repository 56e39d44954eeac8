//! More string commands: INCRBYFLOAT, GETSET, GETDEL, GETRANGE (SUBSTR), SETRANGE, MSETNX,
//! SETBIT, GETBIT, LCS.
//! Each read-modify-write holds its key's stripe lock from the read to the write, as INCR
//! does (lib.rs).

use crate::keyspace::{record_key, Meta, STRING};
use crate::resp::Out;
use crate::types::WRONGTYPE;
use crate::{check_arity, lock, stripe_of, Server};

/// LCS's tables, summed over every connection computing one: one LCS of two large
/// strings may take up to the request limit, and many at once may not take more than this.
const LCS_BUDGET: u64 = 512 << 20;
static LCS_IN_USE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Holds `bytes` of the LCS budget until dropped.
struct LcsReservation(u64);

impl LcsReservation {
    fn take(bytes: u64) -> Option<LcsReservation> {
        use std::sync::atomic::Ordering::AcqRel;
        LCS_IN_USE
            .fetch_update(AcqRel, std::sync::atomic::Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&n| n <= LCS_BUDGET)
            })
            .ok()
            .map(|_| LcsReservation(bytes))
    }
}

impl Drop for LcsReservation {
    fn drop(&mut self) {
        LCS_IN_USE.fetch_sub(self.0, std::sync::atomic::Ordering::AcqRel);
    }
}

/// A key's stripe guard and its string's record (None: no such key).
type Locked<'a> = (std::sync::MutexGuard<'a, ()>, Option<Meta>);

impl Server {
    /// The longest string a command may make: what one request could carry now (Redis
    /// checks `proto-max-bulk-len`; here the request limit, which CONFIG SET of it moves).
    pub(crate) fn max_string(&self) -> u64 {
        self.max_request.load(std::sync::atomic::Ordering::Acquire) as u64
    }

    /// The string at `k`, or `Err(())` if `k` holds another type.
    pub(crate) fn string_at(&self, k: &[u8]) -> strata::Result<Result<Option<Vec<u8>>, ()>> {
        Ok(match self.lookup(k)? {
            Some(m) if m.kind == STRING => Ok(Some(m.value)),
            Some(_) => Err(()),
            None => Ok(None),
        })
    }

    /// The string record of `k` with the key's stripe lock held, for a read-modify-write
    /// (an expired key reaped first); None once WRONGTYPE is answered.
    pub(crate) fn string_for_update(
        &self,
        k: &[u8],
        out: &mut Out,
    ) -> strata::Result<Option<Locked<'_>>> {
        let g = lock(&self.stripes[stripe_of(&record_key(k))]);
        match self.lookup_for_update(k)? {
            Some(m) if m.kind != STRING => {
                out.error(WRONGTYPE);
                Ok(None)
            }
            m => Ok(Some((g, m))),
        }
    }

    /// Writes `value` as string `k` in `b`, replacing `old`; its expiry stays if `keep_ttl`
    /// (APPEND, INCR, SETRANGE... keep it; SET, GETSET, MSET clear it, as in Redis).
    pub(crate) fn put_string(
        b: &mut strata::WriteBatch,
        k: &[u8],
        old: Option<&Meta>,
        value: Vec<u8>,
        keep_ttl: bool,
    ) {
        let expire = if keep_ttl {
            old.map_or(0, |o| o.expire)
        } else {
            0
        };
        Self::put_record(b, k, old, &Meta::string(value, expire));
    }

    /// The string commands of this file; false for another command.
    pub(crate) fn more_string_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        match name {
            "INCRBYFLOAT" => {
                if !arity(argc == 3, out) {
                    return Ok(true);
                }
                let Some(by) = crate::parse_float(&args[2]) else {
                    out.error("ERR value is not a valid float");
                    return Ok(true);
                };
                let Some((_g, old)) = self.string_for_update(&args[1], out)? else {
                    return Ok(true);
                };
                let now = match &old {
                    None => None,
                    Some(m) => match crate::parse_float(&m.value) {
                        Some(x) => Some((x, &m.value)),
                        None => {
                            out.error("ERR value is not a valid float");
                            return Ok(true);
                        }
                    },
                };
                let sum = now.as_ref().map_or(0.0, |n| n.0) + by;
                if !sum.is_finite() {
                    out.error("ERR increment would produce NaN or Infinity");
                    return Ok(true);
                }
                let text = crate::float::sum_text(now.as_ref().map(|n| &n.1[..]), &args[2], sum);
                let mut b = strata::WriteBatch::new();
                Self::put_string(
                    &mut b,
                    &args[1],
                    old.as_ref(),
                    text.clone().into_bytes(),
                    true,
                );
                self.write(b)?;
                self.keys_changed(i64::from(old.is_none()));
                out.bulk(text.as_bytes());
            }
            "GETSET" | "GETDEL" => {
                if !arity(argc == if name == "GETSET" { 3 } else { 2 }, out) {
                    return Ok(true);
                }
                let Some((_g, old)) = self.string_for_update(&args[1], out)? else {
                    return Ok(true);
                };
                let mut b = strata::WriteBatch::new();
                if name == "GETSET" {
                    Self::put_string(&mut b, &args[1], old.as_ref(), args[2].clone(), false);
                    self.write(b)?;
                    self.keys_changed(i64::from(old.is_none()));
                } else if let Some(m) = &old {
                    Self::delete_record(&mut b, &args[1], m);
                    self.write(b)?;
                    self.keys_changed(-1);
                }
                match old {
                    Some(m) => out.bulk(&m.value),
                    None => out.null(),
                }
            }
            "GETRANGE" | "SUBSTR" => {
                if !arity(argc == 4, out) {
                    return Ok(true);
                }
                let (Some(start), Some(end)) =
                    (crate::parse_i64(&args[2]), crate::parse_i64(&args[3]))
                else {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(true);
                };
                let v = match self.string_at(&args[1])? {
                    Err(()) => {
                        out.error(WRONGTYPE);
                        return Ok(true);
                    }
                    Ok(v) => v.unwrap_or_default(),
                };
                // Redis's rules: negative indexes count from the end; both clamped; an
                // empty string or a start past the end gives "".
                let len = v.len() as i64;
                if start < 0 && end < 0 && start > end {
                    out.bulk(b"");
                    return Ok(true);
                }
                let from = if start < 0 {
                    (len + start).max(0)
                } else {
                    start
                };
                let to = if end < 0 { (len + end).max(0) } else { end }.min(len - 1);
                if len == 0 || from > to || from >= len {
                    out.bulk(b"");
                } else {
                    out.bulk(&v[from as usize..=to as usize]);
                }
            }
            "SETRANGE" => {
                if !arity(argc == 4, out) {
                    return Ok(true);
                }
                let offset = match crate::parse_i64(&args[2]) {
                    Some(o) if o >= 0 => o as u64,
                    Some(_) => {
                        out.error("ERR offset is out of range");
                        return Ok(true);
                    }
                    None => {
                        out.error("ERR value is not an integer or out of range");
                        return Ok(true);
                    }
                };
                let Some((_g, old)) = self.string_for_update(&args[1], out)? else {
                    return Ok(true);
                };
                let value = &args[3];
                if value.is_empty() {
                    // Nothing written; a missing key stays missing.
                    out.int(old.map_or(0, |m| m.value.len()) as i64);
                    return Ok(true);
                }
                if offset + value.len() as u64 > self.max_string() {
                    out.error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
                    return Ok(true);
                }
                let created = old.is_none();
                let mut v = old.as_ref().map(|m| m.value.clone()).unwrap_or_default();
                let end = offset as usize + value.len();
                if v.len() < end {
                    v.resize(end, 0);
                }
                v[offset as usize..end].copy_from_slice(value);
                let len = v.len();
                let mut b = strata::WriteBatch::new();
                Self::put_string(&mut b, &args[1], old.as_ref(), v, true);
                self.write(b)?;
                self.keys_changed(i64::from(created));
                out.int(len as i64);
            }
            "MSETNX" => {
                if !arity(argc >= 3 && !argc.is_multiple_of(2), out) {
                    return Ok(true);
                }
                let keys: Vec<Vec<u8>> = args[1..].chunks(2).map(|p| record_key(&p[0])).collect();
                let _g = self.lock_keys(&keys);
                // Nothing is set if any key exists, of any type.
                for p in args[1..].chunks(2) {
                    if self.lookup_for_update(&p[0])?.is_some() {
                        out.int(0);
                        return Ok(true);
                    }
                }
                // (A key given twice: the last value wins, as in Redis.)
                let mut b = strata::WriteBatch::new();
                let mut seen = std::collections::HashSet::new();
                for p in args[1..].chunks(2) {
                    seen.insert(&p[0]);
                    b.put(record_key(&p[0]), Meta::string(p[1].clone(), 0).encode());
                }
                self.write(b)?;
                self.keys_changed(seen.len() as i64);
                out.int(1);
            }
            "SETBIT" | "GETBIT" => {
                if !arity(argc == if name == "SETBIT" { 4 } else { 3 }, out) {
                    return Ok(true);
                }
                // Offsets address bits of a string no longer than a request may be
                // (Redis: below 8 x proto-max-bulk-len).
                let most = self.max_string();
                let Some(bit) = crate::parse_i64(&args[2])
                    .filter(|&b| b >= 0 && (b as u64 >> 3) < most && b < 1 << 32)
                else {
                    out.error("ERR bit offset is not an integer or out of range");
                    return Ok(true);
                };
                let (byte, mask) = ((bit / 8) as usize, 0x80u8 >> (bit % 8));
                let set = match args.get(3).map(|v| v.as_slice()) {
                    None => None,
                    Some(b"0") => Some(false),
                    Some(b"1") => Some(true),
                    Some(_) => {
                        out.error("ERR bit is not an integer or out of range");
                        return Ok(true);
                    }
                };
                let (_g, old) = if set.is_some() {
                    let Some((g, old)) = self.string_for_update(&args[1], out)? else {
                        return Ok(true);
                    };
                    (Some(g), old)
                } else {
                    match self.string_at(&args[1])? {
                        Err(()) => {
                            out.error(WRONGTYPE);
                            return Ok(true);
                        }
                        Ok(v) => (None, v.map(|v| Meta::string(v, 0))),
                    }
                };
                let was = old
                    .as_ref()
                    .and_then(|m| m.value.get(byte))
                    .is_some_and(|b| b & mask != 0);
                if let Some(on) = set {
                    let created = old.is_none();
                    let mut v = old.as_ref().map(|m| m.value.clone()).unwrap_or_default();
                    if v.len() <= byte {
                        v.resize(byte + 1, 0);
                    }
                    if on {
                        v[byte] |= mask;
                    } else {
                        v[byte] &= !mask;
                    }
                    let mut b = strata::WriteBatch::new();
                    Self::put_string(&mut b, &args[1], old.as_ref(), v, true);
                    self.write(b)?;
                    self.keys_changed(i64::from(created));
                }
                out.int(i64::from(was));
            }
            "LCS" => self.lcs(args, out)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// LCS a b [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest common subsequence
    /// of two strings (dynamic programming, as Redis does, with its bound on the table).
    fn lcs(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        if !check_arity("LCS", args.len() >= 3, out) {
            return Ok(());
        }
        let (mut len_only, mut idx, mut with_len, mut min_len) = (false, false, false, 0u64);
        let mut i = 3;
        while i < args.len() {
            match crate::upper(&args[i]).as_str() {
                "LEN" => len_only = true,
                "IDX" => idx = true,
                "WITHMATCHLEN" => with_len = true,
                "MINMATCHLEN" if i + 1 < args.len() => {
                    let Some(n) = crate::parse_i64(&args[i + 1]) else {
                        out.error("ERR value is not an integer or out of range");
                        return Ok(());
                    };
                    min_len = n.max(0) as u64;
                    i += 1;
                }
                _ => {
                    out.error("ERR syntax error");
                    return Ok(());
                }
            }
            i += 1;
        }
        if len_only && idx {
            out.error("ERR If you want both the length and indexes, please just use IDX.");
            return Ok(());
        }
        // Both strings from one moment: every write of a string holds its key's stripe.
        let _g = self.lock_keys(&[record_key(&args[1]), record_key(&args[2])]);
        let mut strings = Vec::with_capacity(2);
        for k in &args[1..3] {
            match self.string_at(k)? {
                Err(()) => {
                    out.error("ERR The specified keys must contain string values");
                    return Ok(());
                }
                Ok(v) => strings.push(v.unwrap_or_default()),
            }
        }
        let (a, b) = (&strings[0], &strings[1]);
        let (n, m) = (a.len(), b.len());
        let cells = (n as u64 + 1) * (m as u64 + 1);
        let bytes = cells.saturating_mul(4);
        let reserved = if bytes > self.max_string() {
            None
        } else {
            LcsReservation::take(bytes)
        };
        let Some(_reserved) = reserved else {
            out.error(
                "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
            );
            return Ok(());
        };
        // table[i][j]: the LCS length of a[..i] and b[..j].
        let w = m + 1;
        let mut t = vec![0u32; cells as usize];
        for i in 1..=n {
            for j in 1..=m {
                t[i * w + j] = if a[i - 1] == b[j - 1] {
                    t[(i - 1) * w + j - 1] + 1
                } else {
                    t[(i - 1) * w + j].max(t[i * w + j - 1])
                };
            }
        }
        let total = t[n * w + m] as usize;
        if len_only {
            out.int(total as i64);
            return Ok(());
        }
        // Walk back from the end, collecting the string and the matched ranges (each
        // [a_start, a_end], [b_start, b_end], from the end of the strings).
        let mut text = vec![0u8; total];
        let mut at = total;
        let mut ranges: Vec<(usize, usize, usize, usize)> = Vec::new();
        let mut open: Option<(usize, usize, usize, usize)> = None;
        let (mut i, mut j) = (n, m);
        while i > 0 && j > 0 {
            let mut emit = false;
            if a[i - 1] == b[j - 1] {
                at -= 1;
                text[at] = a[i - 1];
                open = Some(match open {
                    None => (i - 1, i - 1, j - 1, j - 1),
                    // Contiguous with the range so far: it grows backward.
                    Some((_, ae, _, be)) => (i - 1, ae, j - 1, be),
                });
                if i == 1 || j == 1 {
                    emit = true;
                }
                i -= 1;
                j -= 1;
            } else {
                if t[(i - 1) * w + j] > t[i * w + j - 1] {
                    i -= 1;
                } else {
                    j -= 1;
                }
                emit = open.is_some();
            }
            if emit {
                if let Some(r) = open.take() {
                    if (r.1 - r.0 + 1) as u64 >= min_len {
                        ranges.push(r);
                    }
                }
            }
        }
        if !idx {
            out.bulk(&text);
            return Ok(());
        }
        out.map(2);
        out.bulk(b"matches");
        out.array(ranges.len());
        for (a0, a1, b0, b1) in ranges {
            out.array(if with_len { 3 } else { 2 });
            for (x, y) in [(a0, a1), (b0, b1)] {
                out.array(2);
                out.int(x as i64);
                out.int(y as i64);
            }
            if with_len {
                out.int((a1 - a0 + 1) as i64);
            }
        }
        out.bulk(b"len");
        out.int(total as i64);
        Ok(())
    }
}
