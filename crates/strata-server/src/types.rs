//! Hashes and sorted sets (docs/format/redis-keys.md): the key's record (keyspace.rs)
//! holds the type, version and element count; one record per hash field or sorted-set
//! member under the collection's version, and for sorted sets a score index ordered by
//! score.

use crate::keyspace::{
    element_prefix, end_of, record_key, Meta, HASH, HASH_FIELD, ZSET, ZSET_MEMBER, ZSET_SCORE,
};
use crate::resp::Out;
use crate::{lock, stripe_of, Server};

fn with(prefix: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut v = prefix.to_vec();
    v.extend_from_slice(rest);
    v
}

/// A score as 8 bytes that sort as the numbers do.
pub(crate) fn ordered(score: f64) -> [u8; 8] {
    let b = score.to_bits();
    let b = if b >> 63 == 1 { !b } else { b | (1 << 63) };
    b.to_be_bytes()
}

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Under a key's stripe, for a write: the key's live record (None: absent) and the record
/// the write starts from (the same, or a new empty collection of its own version).
pub(crate) type ForWrite = (Option<Meta>, Meta);

impl Server {
    /// Collection `k` of type `t` for a read: Ok(None) if absent, Err(()) if `k` holds
    /// another type.
    pub(crate) fn collection(&self, k: &[u8], t: u8) -> strata::Result<Result<Option<Meta>, ()>> {
        Ok(match self.lookup(k)? {
            Some(m) if m.kind == t => Ok(Some(m)),
            Some(_) => Err(()),
            None => Ok(None),
        })
    }

    /// Collection `k` of type `t` for a write, the caller holding its stripe; None once
    /// WRONGTYPE is answered. A missing collection starts empty under a new version (its
    /// old elements, if any, belong to an older one).
    pub(crate) fn collection_for_write(
        &self,
        k: &[u8],
        t: u8,
        out: &mut Out,
    ) -> strata::Result<Option<ForWrite>> {
        match self.lookup_for_update(k)? {
            Some(m) if m.kind != t => {
                out.error(WRONGTYPE);
                Ok(None)
            }
            Some(m) => Ok(Some((Some(m.clone()), m))),
            None => Ok(Some((None, Meta::collection(t, self.new_version()?)))),
        }
    }

    /// Writes collection `k`'s record `new` (replacing `old`) in `b`: deleted once empty.
    /// The change in the key count.
    pub(crate) fn stage(
        b: &mut strata::WriteBatch,
        k: &[u8],
        old: Option<&Meta>,
        new: &Meta,
    ) -> i64 {
        if new.count == 0 {
            if let Some(o) = old {
                Self::delete_record(b, k, o);
            }
        } else {
            Self::put_record(b, k, old, new);
        }
        match (old.is_some(), new.count > 0) {
            (false, true) => 1,
            (true, false) => -1,
            _ => 0,
        }
    }

    /// `stage`, then writes `b`; the key count follows.
    pub(crate) fn finish(
        &self,
        mut b: strata::WriteBatch,
        k: &[u8],
        old: Option<&Meta>,
        new: &Meta,
    ) -> strata::Result<()> {
        let delta = Self::stage(&mut b, k, old, new);
        self.write(b)?;
        self.keys_changed(delta);
        Ok(())
    }

    /// The records under `prefix` (one key's elements), from `from` on.
    fn elements(&self, prefix: &[u8], from: Vec<u8>) -> strata::Result<strata::DbIterator> {
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(from),
            upper_bound: Some(end_of(prefix)),
            ..Default::default()
        })?;
        it.seek_to_first();
        Ok(it)
    }

    /// MEMORY USAGE key [SAMPLES n]: the bytes of the key's records (keys and values as
    /// stored): exact for a string; for a hash or sorted set, the first `n` elements
    /// (default 5, 0: all) stand for the rest, as Redis samples them. Nil if no such key.
    pub(crate) fn memory_command(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        if !args[1].eq_ignore_ascii_case(b"USAGE") {
            out.error(&format!(
                "ERR strata-server serves MEMORY USAGE only (not MEMORY {})",
                String::from_utf8_lossy(&args[1])
            ));
            return Ok(());
        }
        let mut samples = 5u64;
        match args.len() {
            3 => {}
            5 if args[3].eq_ignore_ascii_case(b"SAMPLES") => match crate::parse_i64(&args[4]) {
                Some(n) if n >= 0 => samples = n as u64,
                _ => {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(());
                }
            },
            _ => {
                out.error("ERR syntax error");
                return Ok(());
            }
        }
        let k = &args[2];
        let Some(m) = self.lookup(k)? else {
            out.null();
            return Ok(());
        };
        let record = (record_key(k).len() + m.encode().len()) as u64;
        if m.kind == crate::keyspace::STRING {
            out.int(record as i64);
            return Ok(());
        }
        let (t, n) = (m.kind, m.count);
        let tag = crate::keyspace::element_tags(t)[0];
        let p = element_prefix(tag, k, m.version);
        let mut it = self.elements(&p, p.clone())?;
        let (mut seen, mut bytes) = (0u64, 0u64);
        while it.valid() && (samples == 0 || seen < samples) {
            // A sorted-set member has a score-index record of about the same size.
            let per = (it.key().len() + it.value().len()) as u64;
            bytes += if t == ZSET { 2 * per } else { per };
            seen += 1;
            it.next();
        }
        it.status()?;
        let total = record + bytes.saturating_mul(n).checked_div(seen).unwrap_or(0);
        out.int(total.min(i64::MAX as u64) as i64);
        Ok(())
    }

    /// Hash and sorted-set commands; false if `name` is none of them.
    pub(crate) fn typed_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        Ok(self.hash_command(name, args, out)? || self.zset_command(name, args, out)?)
    }

    /// HSET, HMSET, HGET, HMGET, HGETALL, HDEL, HLEN; false for another command.
    fn hash_command(&self, name: &str, args: &[Vec<u8>], out: &mut Out) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| crate::check_arity(name, ok, out);
        // The hash at args[1] for a read; None once WRONGTYPE is answered (Some(None):
        // no such key).
        let read = |out: &mut Out| -> strata::Result<Option<Option<Meta>>> {
            Ok(match self.collection(&args[1], HASH)? {
                Ok(m) => Some(m),
                Err(()) => {
                    out.error(WRONGTYPE);
                    None
                }
            })
        };
        let field = |m: &Meta, f: &[u8]| with(&element_prefix(HASH_FIELD, &args[1], m.version), f);
        match name {
            "HSET" | "HMSET" => {
                if !arity(argc >= 4 && argc.is_multiple_of(2), out) {
                    return Ok(true);
                }
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                let Some((old, mut m)) = self.collection_for_write(k, HASH, out)? else {
                    return Ok(true);
                };
                let p = element_prefix(HASH_FIELD, k, m.version);
                let mut b = strata::WriteBatch::new();
                let mut added = 0u64;
                let mut seen = std::collections::HashSet::new();
                for pair in args[2..].chunks(2) {
                    let f = with(&p, &pair[0]);
                    if seen.insert(pair[0].clone()) && (old.is_none() || self.db.get(&f)?.is_none())
                    {
                        added += 1;
                    }
                    b.put(&f, &pair[1]);
                }
                m.count += added;
                self.finish(b, k, old.as_ref(), &m)?;
                if name == "HMSET" {
                    out.simple("OK");
                } else {
                    out.int(added as i64);
                }
            }
            "HGET" => {
                if arity(argc == 3, out) {
                    match read(out)? {
                        None => {}
                        Some(None) => out.null(),
                        Some(Some(m)) => match self.db.get(field(&m, &args[2]))? {
                            Some(v) => out.bulk(&v),
                            None => out.null(),
                        },
                    }
                }
            }
            "HMGET" => {
                if arity(argc >= 3, out) {
                    if let Some(m) = read(out)? {
                        out.array(argc - 2);
                        for f in &args[2..] {
                            match &m {
                                Some(m) => match self.db.get(field(m, f))? {
                                    Some(v) => out.bulk(&v),
                                    None => out.null(),
                                },
                                None => out.null(),
                            }
                        }
                    }
                }
            }
            "HGETALL" | "HKEYS" | "HVALS" => {
                if arity(argc == 2, out) {
                    self.hgetall(&args[1], name != "HVALS", name != "HKEYS", out)?;
                }
            }
            "HEXISTS" | "HSTRLEN" => {
                if arity(argc == 3, out) {
                    if let Some(m) = read(out)? {
                        let v = match &m {
                            Some(m) => self.db.get(field(m, &args[2]))?,
                            None => None,
                        };
                        let n = match name {
                            "HEXISTS" => usize::from(v.is_some()),
                            _ => v.map_or(0, |v| v.len()),
                        };
                        out.int(n as i64);
                    }
                }
            }
            "HSETNX" | "HINCRBY" | "HINCRBYFLOAT" => {
                if arity(argc == 4, out) {
                    self.hash_update(name, &args[1], &args[2], &args[3], out)?;
                }
            }
            "HDEL" => {
                if arity(argc >= 3, out) {
                    let k = &args[1];
                    let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                    let m = match self.lookup_for_update(k)? {
                        Some(m) if m.kind != HASH => {
                            out.error(WRONGTYPE);
                            return Ok(true);
                        }
                        Some(m) => m,
                        None => {
                            out.int(0);
                            return Ok(true);
                        }
                    };
                    let p = element_prefix(HASH_FIELD, k, m.version);
                    let mut b = strata::WriteBatch::new();
                    let mut removed = 0u64;
                    let mut seen = std::collections::HashSet::new();
                    for f in &args[2..] {
                        let fk = with(&p, f);
                        if seen.insert(f.clone()) && self.db.get(&fk)?.is_some() {
                            removed += 1;
                            b.delete(&fk);
                        }
                    }
                    if removed > 0 {
                        let new = Meta {
                            count: m.count.saturating_sub(removed),
                            ..m.clone()
                        };
                        self.finish(b, k, Some(&m), &new)?;
                    }
                    out.int(removed as i64);
                }
            }
            "HLEN" => {
                if arity(argc == 2, out) {
                    if let Some(m) = read(out)? {
                        out.int(m.map_or(0, |m| m.count) as i64);
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// HGETALL of hash `key`, streamed: the field count (the meta record) and the fields
    /// read from one snapshot agree (HSET and HDEL write both in one batch), so the header
    /// goes first and the fields follow as they are read, written out in pieces
    /// (`Out::spill`) instead of gathered whole.
    /// HSETNX, HINCRBY, HINCRBYFLOAT of field `f` of hash `k` with argument `arg`, under
    /// the key's lock (a read, then one batch: the field and the count).
    fn hash_update(
        &self,
        name: &str,
        k: &[u8],
        f: &[u8],
        arg: &[u8],
        out: &mut Out,
    ) -> strata::Result<()> {
        let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
        let Some((record, mut m)) = self.collection_for_write(k, HASH, out)? else {
            return Ok(());
        };
        let fk = with(&element_prefix(HASH_FIELD, k, m.version), f);
        let old = match record {
            Some(_) => self.db.get(&fk)?,
            None => None,
        };
        let new: Vec<u8> = match name {
            "HSETNX" => {
                if old.is_some() {
                    out.int(0);
                    return Ok(());
                }
                arg.to_vec()
            }
            "HINCRBY" => {
                let Some(by) = crate::parse_i64(arg) else {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(());
                };
                let cur = match &old {
                    None => 0,
                    Some(v) => match crate::parse_i64(v) {
                        Some(c) => c,
                        None => {
                            out.error("ERR hash value is not an integer");
                            return Ok(());
                        }
                    },
                };
                let Some(sum) = cur.checked_add(by) else {
                    out.error("ERR increment or decrement would overflow");
                    return Ok(());
                };
                sum.to_string().into_bytes()
            }
            _ => {
                let Some(by) = crate::parse_float(arg) else {
                    out.error("ERR value is not a valid float");
                    return Ok(());
                };
                if by.is_infinite() {
                    out.error("ERR value is NaN or Infinity");
                    return Ok(());
                }
                let cur = match &old {
                    None => 0.0,
                    Some(v) => match crate::parse_float(v) {
                        Some(c) => c,
                        None => {
                            out.error("ERR hash value is not a float");
                            return Ok(());
                        }
                    },
                };
                let sum = cur + by;
                if !sum.is_finite() {
                    out.error("ERR increment would produce NaN or Infinity");
                    return Ok(());
                }
                crate::float::sum_text(old.as_deref(), arg, sum).into_bytes()
            }
        };
        let mut b = strata::WriteBatch::new();
        b.put(&fk, &new);
        if old.is_none() {
            m.count += 1;
            self.finish(b, k, record.as_ref(), &m)?;
        } else {
            self.write(b)?;
        }
        match name {
            "HSETNX" => out.int(1),
            "HINCRBY" => out.int(crate::parse_i64(&new).unwrap_or(0)),
            _ => out.bulk(&new),
        }
        Ok(())
    }

    /// HGETALL (fields and values, as a map), HKEYS (`fields`), HVALS (`values`).
    fn hgetall(&self, key: &[u8], fields: bool, values: bool, out: &mut Out) -> strata::Result<()> {
        let snap = self.db.snapshot();
        let ro = || strata::ReadOptions {
            snapshot: Some(snap.clone()),
            ..Default::default()
        };
        let m = match self.lookup_in(&ro(), key)? {
            Some(m) if m.kind != HASH => {
                out.error(WRONGTYPE);
                return Ok(());
            }
            m => m,
        };
        let (n, version) = m.map_or((0, 0), |m| (m.count, m.version));
        let p = element_prefix(HASH_FIELD, key, version);
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(p.clone()),
            upper_bound: Some(end_of(&p)),
            ..ro()
        })?;
        it.seek_to_first();
        if fields && values {
            out.map(n as usize);
        } else {
            out.array(n as usize);
        }
        let mut written = 0u64;
        while it.valid() && written < n {
            if fields {
                out.bulk(&it.key()[p.len()..]);
            }
            if values {
                out.bulk(it.value());
            }
            out.spill();
            written += 1;
            it.next();
        }
        if it.status().is_err() {
            // The header promised `n` fields: an error now cannot be framed as a
            // reply. End the connection instead (the client sees it closed).
            out.failed = true;
            return Ok(());
        }
        // (Never true: the count and the fields come from one snapshot. Should
        // it be, pad so the client's framing holds.)
        for _ in written..n {
            for _ in 0..u8::from(fields) + u8::from(values) {
                out.null();
            }
        }
        Ok(())
    }

    /// ZADD, ZREM, ZSCORE, ZCARD, ZRANGEBYSCORE; false for another command.
    fn zset_command(&self, name: &str, args: &[Vec<u8>], out: &mut Out) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| crate::check_arity(name, ok, out);
        match name {
            "ZCARD" => {
                if arity(argc == 2, out) {
                    match self.collection(&args[1], ZSET)? {
                        Ok(m) => out.int(m.map_or(0, |m| m.count) as i64),
                        Err(()) => out.error(WRONGTYPE),
                    }
                }
            }
            "ZREM" => {
                if !arity(argc >= 3, out) {
                    return Ok(true);
                }
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                let m = match self.lookup_for_update(k)? {
                    Some(m) if m.kind != ZSET => {
                        out.error(WRONGTYPE);
                        return Ok(true);
                    }
                    Some(m) => m,
                    None => {
                        out.int(0);
                        return Ok(true);
                    }
                };
                let (mp, ip) = (
                    element_prefix(ZSET_MEMBER, k, m.version),
                    element_prefix(ZSET_SCORE, k, m.version),
                );
                let mut b = strata::WriteBatch::new();
                let mut removed = 0u64;
                let mut seen = std::collections::HashSet::new();
                for m in &args[2..] {
                    let mk = with(&mp, m);
                    if !seen.insert(m.clone()) {
                        continue;
                    }
                    if let Some(v) = self.db.get(&mk)? {
                        if let Ok(bytes) = v.try_into() {
                            let s = f64::from_le_bytes(bytes);
                            b.delete(with(&with(&ip, &ordered(s)), m));
                        }
                        b.delete(&mk);
                        removed += 1;
                    }
                }
                if removed > 0 {
                    let new = Meta {
                        count: m.count.saturating_sub(removed),
                        ..m.clone()
                    };
                    self.finish(b, k, Some(&m), &new)?;
                }
                out.int(removed as i64);
            }
            "ZSCORE" => {
                if arity(argc == 3, out) {
                    match self.collection(&args[1], ZSET)? {
                        Err(()) => out.error(WRONGTYPE),
                        Ok(None) => out.null(),
                        Ok(Some(m)) => match self.db.get(with(
                            &element_prefix(ZSET_MEMBER, &args[1], m.version),
                            &args[2],
                        ))? {
                            Some(v) if v.len() == 8 => {
                                let s = f64::from_le_bytes(v.try_into().expect("8 bytes"));
                                out.double(&fmt_score(s));
                            }
                            _ => out.null(),
                        },
                    }
                }
            }
            "ZRANGEBYSCORE" => self.zrange_by_score(args, out)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn zrange_by_score(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        if args.len() < 4 {
            out.error("ERR wrong number of arguments for 'zrangebyscore' command");
            return Ok(());
        }
        let (Some(min), Some(max)) = (parse_bound(&args[2]), parse_bound(&args[3])) else {
            out.error("ERR min or max is not a float");
            return Ok(());
        };
        let (mut with_scores, mut offset, mut count) = (false, 0usize, usize::MAX);
        let mut i = 4;
        while i < args.len() {
            match crate::upper(&args[i]).as_str() {
                "WITHSCORES" => {
                    with_scores = true;
                    i += 1;
                }
                "LIMIT" if i + 2 < args.len() => {
                    let (Some(o), Some(c)) = (
                        crate::parse_i64(&args[i + 1]),
                        crate::parse_i64(&args[i + 2]),
                    ) else {
                        out.error("ERR value is not an integer or out of range");
                        return Ok(());
                    };
                    if o < 0 {
                        out.array(0);
                        return Ok(());
                    }
                    offset = o as usize;
                    count = if c < 0 { usize::MAX } else { c as usize };
                    i += 3;
                }
                _ => {
                    out.error("ERR syntax error");
                    return Ok(());
                }
            }
        }
        // Streamed in two passes over one snapshot: the first counts the members in range
        // (RESP's header needs the count first), the second writes them out as it reads,
        // in pieces (`Out::spill`): no reply is ever held whole.
        let snap = self.db.snapshot();
        let m = match self.lookup_in(
            &strata::ReadOptions {
                snapshot: Some(snap.clone()),
                ..Default::default()
            },
            &args[1],
        )? {
            Some(m) if m.kind != ZSET => {
                out.error(WRONGTYPE);
                return Ok(());
            }
            Some(m) => m,
            None => {
                out.array(0);
                return Ok(());
            }
        };
        let ip = element_prefix(ZSET_SCORE, &args[1], m.version);
        let walk = |emit: &mut dyn FnMut(&[u8], f64)| -> strata::Result<usize> {
            let mut it = self.db.iter(strata::ReadOptions {
                // (From the lowest zero when the bound is zero: a member an older build
                // stored with the score -0, which sorts just below 0, is in range too.)
                lower_bound: Some(with(&ip, &ordered(if min.0 == 0.0 { -0.0 } else { min.0 }))),
                upper_bound: Some(end_of(&ip)),
                snapshot: Some(snap.clone()),
            })?;
            it.seek_to_first();
            let (mut skipped, mut taken) = (0usize, 0usize);
            while it.valid() && taken < count {
                let rest = &it.key()[ip.len()..];
                if rest.len() < 8 {
                    it.next();
                    continue;
                }
                let bits = u64::from_be_bytes(rest[..8].try_into().expect("8 bytes"));
                let bits = if bits >> 63 == 1 {
                    bits & !(1 << 63)
                } else {
                    !bits
                };
                let score = f64::from_bits(bits);
                if score > max.0 || (max.1 && score == max.0) {
                    break;
                }
                if !(min.1 && score == min.0) {
                    if skipped < offset {
                        skipped += 1;
                    } else {
                        emit(&rest[8..], score);
                        taken += 1;
                    }
                }
                it.next();
            }
            it.status()?;
            Ok(taken)
        };
        let n = walk(&mut |_, _| {})?;
        // RESP3 pairs each member with its score (a double); RESP2 interleaves them.
        let pairs = with_scores && out.resp3;
        out.array(if with_scores && !pairs { 2 * n } else { n });
        let mut written = 0usize;
        let second = walk(&mut |m, score| {
            if written == n {
                return;
            }
            if pairs {
                out.array(2);
            }
            out.bulk(m);
            if with_scores {
                out.double(&fmt_score(score));
            }
            out.spill();
            written += 1;
        });
        if second.is_err() || written != n {
            // The header is out: an error (or, impossible in one snapshot, a different
            // count) cannot be framed as this reply. End the connection instead.
            out.failed = true;
        }
        Ok(())
    }
}

/// A score as Redis reads it; `-0` is zero (stored as `0`: it sorts with it).
pub(crate) fn parse_score(b: &[u8]) -> Option<f64> {
    match std::str::from_utf8(b).ok()?.to_ascii_lowercase().as_str() {
        "+inf" | "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        // Rust reads "nan"; Redis refuses it as a score or a bound.
        s if s.contains("nan") => None,
        s => s
            .parse::<f64>()
            .ok()
            .map(|x| if x == 0.0 { 0.0 } else { x }),
    }
}

/// A ZRANGEBYSCORE bound: the score and whether it is exclusive (`(`).
pub(crate) fn parse_bound(b: &[u8]) -> Option<(f64, bool)> {
    match b.strip_prefix(b"(") {
        Some(rest) => parse_score(rest).map(|s| (s, true)),
        None => parse_score(b).map(|s| (s, false)),
    }
}

/// A score as Redis 7.0 writes one: C's `%.17g` (17 significant digits, trailing zeros
/// trimmed; exponent form below 1e-4 and from 1e17), `inf` and `-inf`.
pub(crate) fn fmt_score(s: f64) -> String {
    if s.is_infinite() {
        return if s > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if s == 0.0 {
        return "0".into();
    }
    // 17 significant digits: d.dddddddddddddddde±x.
    let sci = format!("{s:.16e}");
    let (mantissa, exp) = sci.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("a number");
    if !(-4..17).contains(&exp) {
        let m = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let fixed = format!("{s:.*}", (16 - exp) as usize);
    if fixed.contains('.') {
        fixed
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_sort_as_numbers() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            1e300,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(ordered(w[0]) <= ordered(w[1]), "{} {}", w[0], w[1]);
        }
        assert_eq!(fmt_score(3.0), "3");
        assert_eq!(fmt_score(2.5), "2.5");
        // As C's %.17g writes them (Redis 7.0's replies).
        assert_eq!(fmt_score(0.8600312787387666), "0.86003127873876661");
        assert_eq!(fmt_score(f64::MAX), "1.7976931348623157e+308");
        assert_eq!(fmt_score(-1e-5), "-1.0000000000000001e-05");
        assert_eq!(fmt_score(1e17), "1e+17");
        assert_eq!(fmt_score(123456.5), "123456.5");
        assert_eq!(fmt_score(-0.0), "0");
        assert_eq!(parse_score(b"NaN"), None);
    }
}
