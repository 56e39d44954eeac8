//! The sorted-set commands beyond ZREM, ZSCORE, ZCARD and ZRANGEBYSCORE (types.rs): ZADD
//! with its flags, ZINCRBY, ZMSCORE, ZRANK, ZREVRANK, ZCOUNT, ZLEXCOUNT, ZRANGE in every
//! form (and ZREVRANGE, ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZRANGESTORE),
//! ZREMRANGEBYRANK/SCORE/LEX, ZPOPMIN, ZPOPMAX, ZMPOP, ZRANDMEMBER, and ZUNION, ZINTER,
//! ZDIFF with their STORE forms and ZINTERCARD.
//!
//! These read the set through its score index, in (score, member) order, into memory:
//! O(n) in the set per call, where Redis's skiplist answers ranks and ranges in
//! O(log n). Correct first; an order-statistics index is the way to do better.

use std::collections::BTreeMap;

use crate::keyspace::{
    element_prefix, end_of, random_u64, record_key, Meta, ZSET, ZSET_MEMBER, ZSET_SCORE,
};
use crate::resp::Out;
use crate::types::{fmt_score, ordered, parse_bound, parse_score, WRONGTYPE};
use crate::{check_arity, lock, parse_i64, stripe_of, upper, Server};

fn with(prefix: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut v = prefix.to_vec();
    v.extend_from_slice(rest);
    v
}

/// Members with their scores, in (score, member) order.
pub(crate) type Members = Vec<(f64, Vec<u8>)>;

/// A score from the index's 8 ordered bytes.
fn unordered(b: &[u8]) -> f64 {
    let bits = u64::from_be_bytes(b[..8].try_into().expect("8 bytes"));
    f64::from_bits(if bits >> 63 == 1 {
        bits & !(1 << 63)
    } else {
        !bits
    })
}

/// A ZRANGEBYLEX bound: `-`, `+`, `[x` (inclusive) or `(x` (exclusive).
#[derive(Clone, Debug)]
enum Lex {
    Min,
    Max,
    At(Vec<u8>, bool),
}

fn parse_lex(b: &[u8]) -> Option<Lex> {
    match b.first()? {
        b'-' if b.len() == 1 => Some(Lex::Min),
        b'+' if b.len() == 1 => Some(Lex::Max),
        b'[' => Some(Lex::At(b[1..].to_vec(), false)),
        b'(' => Some(Lex::At(b[1..].to_vec(), true)),
        _ => None,
    }
}

fn above_lex(m: &[u8], min: &Lex) -> bool {
    match min {
        Lex::Min => true,
        Lex::Max => false,
        Lex::At(x, excl) => m > x.as_slice() || (!excl && m == x.as_slice()),
    }
}

fn below_lex(m: &[u8], max: &Lex) -> bool {
    match max {
        Lex::Min => false,
        Lex::Max => true,
        Lex::At(x, excl) => m < x.as_slice() || (!excl && m == x.as_slice()),
    }
}

fn in_score(s: f64, min: (f64, bool), max: (f64, bool)) -> bool {
    (s > min.0 || (!min.1 && s == min.0)) && (s < max.0 || (!max.1 && s == max.0))
}

/// What a range selects.
enum By {
    Index(i64, i64),
    Score((f64, bool), (f64, bool)),
    Lex(Lex, Lex),
}

/// A parsed ZRANGE-family request.
struct Range {
    by: By,
    rev: bool,
    limit: Option<(i64, i64)>,
    scores: bool,
}

impl Range {
    /// The members it selects from `all` (in (score, member) order), in reply order.
    fn select(&self, all: &[(f64, Vec<u8>)]) -> Vec<(f64, Vec<u8>)> {
        let n = all.len() as i64;
        let picked: Vec<&(f64, Vec<u8>)> = match &self.by {
            By::Index(start, stop) => {
                let start = if *start < 0 {
                    (n + start).max(0)
                } else {
                    *start
                };
                let stop = if *stop < 0 {
                    n + stop
                } else {
                    (*stop).min(n - 1)
                };
                if start > stop || start >= n || stop < 0 {
                    return Vec::new();
                }
                let (a, b) = (start as usize, stop as usize + 1);
                if self.rev {
                    all.iter().rev().skip(a).take(b - a).collect()
                } else {
                    all[a..b].iter().collect()
                }
            }
            By::Score(min, max) => {
                let it = all.iter().filter(|(s, _)| in_score(*s, *min, *max));
                if self.rev {
                    let mut v: Vec<_> = it.collect();
                    v.reverse();
                    v
                } else {
                    it.collect()
                }
            }
            By::Lex(min, max) => {
                let it = all
                    .iter()
                    .filter(|(_, m)| above_lex(m, min) && below_lex(m, max));
                if self.rev {
                    let mut v: Vec<_> = it.collect();
                    v.reverse();
                    v
                } else {
                    it.collect()
                }
            }
        };
        let picked = match self.limit {
            None => picked,
            Some((offset, _)) if offset < 0 => Vec::new(),
            Some((offset, count)) => {
                let it = picked.into_iter().skip(offset as usize);
                if count < 0 {
                    it.collect()
                } else {
                    it.take(count as usize).collect()
                }
            }
        };
        picked.into_iter().cloned().collect()
    }
}

/// Parses a range request: `args` from the key's successor on are `min max [options]`;
/// `legacy` fixes the form (ZREVRANGE, ZRANGEBYSCORE, ...), None for ZRANGE's own.
fn parse_range(name: &str, args: &[Vec<u8>], store: bool, out: &mut Out) -> Option<Range> {
    let (mut byscore, mut bylex, mut rev) = match name {
        "ZREVRANGE" => (false, false, true),
        "ZRANGEBYSCORE" => (true, false, false),
        "ZREVRANGEBYSCORE" => (true, false, true),
        "ZRANGEBYLEX" => (false, true, false),
        "ZREVRANGEBYLEX" => (false, true, true),
        _ => (false, false, false),
    };
    let modern = name == "ZRANGE" || name == "ZRANGESTORE";
    let (mut limit, mut scores) = (None, false);
    let mut i = 2;
    while i < args.len() {
        match upper(&args[i]).as_str() {
            "WITHSCORES" if !store && name != "ZRANGEBYLEX" && name != "ZREVRANGEBYLEX" => {
                scores = true
            }
            "BYSCORE" if modern => byscore = true,
            "BYLEX" if modern => bylex = true,
            "REV" if modern => rev = true,
            "LIMIT" if i + 2 < args.len() && name != "ZREVRANGE" => {
                let (Some(o), Some(c)) = (parse_i64(&args[i + 1]), parse_i64(&args[i + 2])) else {
                    out.error("ERR value is not an integer or out of range");
                    return None;
                };
                limit = Some((o, c));
                i += 2;
            }
            _ => {
                out.error("ERR syntax error");
                return None;
            }
        }
        i += 1;
    }
    if byscore && bylex {
        out.error("ERR syntax error");
        return None;
    }
    if limit.is_some() && !byscore && !bylex {
        out.error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
        return None;
    }
    if scores && bylex {
        out.error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        return None;
    }
    // In the REV forms the first bound is the upper one.
    let (lo, hi) = if rev && (byscore || bylex) {
        (&args[1], &args[0])
    } else {
        (&args[0], &args[1])
    };
    let by = if byscore {
        let (Some(min), Some(max)) = (parse_bound(lo), parse_bound(hi)) else {
            out.error("ERR min or max is not a float");
            return None;
        };
        By::Score(min, max)
    } else if bylex {
        let (Some(min), Some(max)) = (parse_lex(lo), parse_lex(hi)) else {
            out.error("ERR min or max not valid string range item");
            return None;
        };
        By::Lex(min, max)
    } else {
        let (Some(a), Some(b)) = (parse_i64(&args[0]), parse_i64(&args[1])) else {
            out.error("ERR value is not an integer or out of range");
            return None;
        };
        By::Index(a, b)
    };
    Some(Range {
        by,
        rev,
        limit,
        scores,
    })
}

impl Server {
    /// Every member of sorted set `m` (key `k`) with its score, in (score, member) order.
    pub(crate) fn zset_all(
        &self,
        ro: &strata::ReadOptions,
        k: &[u8],
        m: &Meta,
    ) -> strata::Result<Vec<(f64, Vec<u8>)>> {
        let p = element_prefix(ZSET_SCORE, k, m.version);
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(p.clone()),
            upper_bound: Some(end_of(&p)),
            ..ro.clone()
        })?;
        it.seek_to_first();
        let mut all = Vec::with_capacity(m.count as usize);
        while it.valid() {
            let rest = &it.key()[p.len()..];
            if rest.len() >= 8 {
                all.push((unordered(rest), rest[8..].to_vec()));
            }
            it.next();
        }
        it.status()?;
        Ok(all)
    }

    /// The sorted set at `k` for a read (None once WRONGTYPE is answered).
    fn zset_read(
        &self,
        ro: &strata::ReadOptions,
        k: &[u8],
        out: &mut Out,
    ) -> strata::Result<Option<Option<Meta>>> {
        Ok(match self.lookup_in(ro, k)? {
            Some(m) if m.kind != ZSET => {
                out.error(WRONGTYPE);
                None
            }
            m => Some(m),
        })
    }

    /// Writes into `b` the changes to sorted set `k` (record `m`, updated): `set` gives
    /// members new scores (with their old ones, if any), `gone` removes members.
    fn zset_apply(
        b: &mut strata::WriteBatch,
        k: &[u8],
        m: &mut Meta,
        set: &[(Vec<u8>, Option<f64>, f64)],
        gone: &[(Vec<u8>, f64)],
    ) {
        let (mp, ip) = (
            element_prefix(ZSET_MEMBER, k, m.version),
            element_prefix(ZSET_SCORE, k, m.version),
        );
        for (member, old, new) in set {
            if let Some(o) = old {
                b.delete(with(&with(&ip, &ordered(*o)), member));
            } else {
                m.count += 1;
            }
            b.put(with(&mp, member), new.to_le_bytes());
            b.put(with(&with(&ip, &ordered(*new)), member), b"");
        }
        for (member, old) in gone {
            b.delete(with(&with(&ip, &ordered(*old)), member));
            b.delete(with(&mp, member));
            m.count = m.count.saturating_sub(1);
        }
    }

    fn zscore_of(&self, k: &[u8], m: &Meta, member: &[u8]) -> strata::Result<Option<f64>> {
        Ok(self
            .db
            .get(with(&element_prefix(ZSET_MEMBER, k, m.version), member))?
            .and_then(|v| Some(f64::from_le_bytes(v.try_into().ok()?))))
    }

    /// Writes a reply of members (with scores when asked).
    fn zreply(out: &mut Out, items: &[(f64, Vec<u8>)], scores: bool) {
        let pairs = scores && out.resp3;
        out.array(if scores && !pairs {
            2 * items.len()
        } else {
            items.len()
        });
        for (s, member) in items {
            if pairs {
                out.array(2);
            }
            out.bulk(member);
            if scores {
                out.double(&fmt_score(*s));
            }
            out.spill();
        }
    }

    /// The sorted-set commands of this file; false for another command.
    pub(crate) fn zset_more(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        let ro = strata::ReadOptions::default();
        match name {
            "ZADD" | "ZINCRBY" => {
                if arity(if name == "ZADD" { argc >= 4 } else { argc == 4 }, out) {
                    self.zadd(name == "ZINCRBY", args, out)?;
                }
            }
            "ZMSCORE" => {
                if arity(argc >= 3, out) {
                    if let Some(m) = self.zset_read(&ro, &args[1], out)? {
                        out.array(argc - 2);
                        for x in &args[2..] {
                            match m
                                .as_ref()
                                .map(|m| self.zscore_of(&args[1], m, x))
                                .transpose()?
                                .flatten()
                            {
                                Some(s) => out.double(&fmt_score(s)),
                                None => out.null(),
                            }
                        }
                    }
                }
            }
            "ZRANK" | "ZREVRANK" => {
                if !arity(argc == 3 || argc == 4, out) {
                    return Ok(true);
                }
                let with_score = match args.get(3) {
                    None => false,
                    Some(w) if upper(w) == "WITHSCORE" => true,
                    Some(_) => {
                        out.error("ERR syntax error");
                        return Ok(true);
                    }
                };
                let Some(m) = self.zset_read(&ro, &args[1], out)? else {
                    return Ok(true);
                };
                let all = match &m {
                    Some(m) => self.zset_all(&ro, &args[1], m)?,
                    None => Vec::new(),
                };
                match all.iter().position(|(_, x)| *x == args[2]) {
                    None if with_score => out.null_array(),
                    None => out.null(),
                    Some(i) => {
                        let rank = if name == "ZRANK" {
                            i
                        } else {
                            all.len() - 1 - i
                        };
                        if with_score {
                            out.array(2);
                            out.int(rank as i64);
                            out.double(&fmt_score(all[i].0));
                        } else {
                            out.int(rank as i64);
                        }
                    }
                }
            }
            "ZCOUNT" | "ZLEXCOUNT" => {
                if !arity(argc == 4, out) {
                    return Ok(true);
                }
                let by = if name == "ZCOUNT" {
                    let (Some(min), Some(max)) = (parse_bound(&args[2]), parse_bound(&args[3]))
                    else {
                        out.error("ERR min or max is not a float");
                        return Ok(true);
                    };
                    By::Score(min, max)
                } else {
                    let (Some(min), Some(max)) = (parse_lex(&args[2]), parse_lex(&args[3])) else {
                        out.error("ERR min or max not valid string range item");
                        return Ok(true);
                    };
                    By::Lex(min, max)
                };
                let Some(m) = self.zset_read(&ro, &args[1], out)? else {
                    return Ok(true);
                };
                let all = match &m {
                    Some(m) => self.zset_all(&ro, &args[1], m)?,
                    None => Vec::new(),
                };
                let r = Range {
                    by,
                    rev: false,
                    limit: None,
                    scores: false,
                };
                out.int(r.select(&all).len() as i64);
            }
            "ZRANGE" | "ZREVRANGE" | "ZREVRANGEBYSCORE" | "ZRANGEBYLEX" | "ZREVRANGEBYLEX" => {
                if !arity(argc >= 4, out) {
                    return Ok(true);
                }
                let Some(r) = parse_range(name, &args[2..], false, out) else {
                    return Ok(true);
                };
                let ro = self.snapshot_reads();
                let Some(m) = self.zset_read(&ro, &args[1], out)? else {
                    return Ok(true);
                };
                let all = match &m {
                    Some(m) => self.zset_all(&ro, &args[1], m)?,
                    None => Vec::new(),
                };
                Self::zreply(out, &r.select(&all), r.scores);
            }
            "ZRANGESTORE" => {
                if !arity(argc >= 5, out) {
                    return Ok(true);
                }
                let Some(r) = parse_range(name, &args[3..], true, out) else {
                    return Ok(true);
                };
                // The destination locked before the source is read (it may be the source:
                // a write between the read and the store would be lost), the source read
                // from one snapshot.
                let _g = lock(&self.stripes[stripe_of(&record_key(&args[1]))]);
                let ro = self.snapshot_reads();
                let items = {
                    let Some(m) = self.zset_read(&ro, &args[2], out)? else {
                        return Ok(true);
                    };
                    match &m {
                        Some(m) => r.select(&self.zset_all(&ro, &args[2], m)?),
                        None => Vec::new(),
                    }
                };
                let n = items.len();
                self.zstore(&args[1], items)?;
                out.int(n as i64);
            }
            "ZREMRANGEBYRANK" | "ZREMRANGEBYSCORE" | "ZREMRANGEBYLEX" => {
                if !arity(argc == 4, out) {
                    return Ok(true);
                }
                let by = match name {
                    "ZREMRANGEBYRANK" => {
                        let (Some(a), Some(b)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
                            out.error("ERR value is not an integer or out of range");
                            return Ok(true);
                        };
                        By::Index(a, b)
                    }
                    "ZREMRANGEBYSCORE" => {
                        let (Some(min), Some(max)) = (parse_bound(&args[2]), parse_bound(&args[3]))
                        else {
                            out.error("ERR min or max is not a float");
                            return Ok(true);
                        };
                        By::Score(min, max)
                    }
                    _ => {
                        let (Some(min), Some(max)) = (parse_lex(&args[2]), parse_lex(&args[3]))
                        else {
                            out.error("ERR min or max not valid string range item");
                            return Ok(true);
                        };
                        By::Lex(min, max)
                    }
                };
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                let m = match self.lookup_for_update(k)? {
                    None => {
                        out.int(0);
                        return Ok(true);
                    }
                    Some(m) if m.kind != ZSET => {
                        out.error(WRONGTYPE);
                        return Ok(true);
                    }
                    Some(m) => m,
                };
                let all = self.zset_all(&ro, k, &m)?;
                let r = Range {
                    by,
                    rev: false,
                    limit: None,
                    scores: false,
                };
                let gone: Vec<(Vec<u8>, f64)> =
                    r.select(&all).into_iter().map(|(s, x)| (x, s)).collect();
                if !gone.is_empty() {
                    let mut new = m.clone();
                    let mut b = strata::WriteBatch::new();
                    Self::zset_apply(&mut b, k, &mut new, &[], &gone);
                    self.finish(b, k, Some(&m), &new)?;
                }
                out.int(gone.len() as i64);
            }
            "ZPOPMIN" | "ZPOPMAX" => {
                if !arity(argc == 2 || argc == 3, out) {
                    return Ok(true);
                }
                let count = match args.get(2) {
                    None => None,
                    Some(c) => match parse_i64(c) {
                        Some(c) if c >= 0 => Some(c as u64),
                        _ => {
                            out.error("ERR value is out of range, must be positive");
                            return Ok(true);
                        }
                    },
                };
                match self.zpop(&args[1], name == "ZPOPMIN", count.unwrap_or(1))? {
                    Err(()) => out.error(WRONGTYPE),
                    Ok(items) => {
                        if count.is_none() && out.resp3 {
                            // RESP3: one pair, or an empty array.
                            match items.first() {
                                Some((s, x)) => {
                                    out.array(2);
                                    out.bulk(x);
                                    out.double(&fmt_score(*s));
                                }
                                None => out.array(0),
                            }
                        } else {
                            Self::zreply(out, &items, true);
                        }
                    }
                }
            }
            "ZMPOP" => {
                if let Some((keys, min, n)) = self.zmpop_args(name, args, 1, out) {
                    if !self.try_zmpop(&keys, min, n, out)? {
                        out.null_array();
                    }
                }
            }
            "ZRANDMEMBER" => {
                if arity((2..=4).contains(&argc), out) {
                    self.zrandmember(args, out)?;
                }
            }
            "ZUNION" | "ZINTER" | "ZDIFF" | "ZUNIONSTORE" | "ZINTERSTORE" | "ZDIFFSTORE"
            | "ZINTERCARD" => {
                if arity(argc >= 3, out) {
                    self.zcombine(name, args, out)?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member ..., and ZINCRBY key by member.
    fn zadd(&self, incrby: bool, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
            (false, false, false, false, false, incrby);
        let mut i = 2;
        if !incrby {
            while i < args.len() {
                match upper(&args[i]).as_str() {
                    "NX" => nx = true,
                    "XX" => xx = true,
                    "GT" => gt = true,
                    "LT" => lt = true,
                    "CH" => ch = true,
                    "INCR" => incr = true,
                    _ => break,
                }
                i += 1;
            }
        }
        let rest = &args[i..];
        if rest.is_empty() || !rest.len().is_multiple_of(2) {
            out.error("ERR syntax error");
            return Ok(());
        }
        if nx && xx {
            out.error("ERR XX and NX options at the same time are not compatible");
            return Ok(());
        }
        if (nx && (gt || lt)) || (gt && lt) {
            out.error("ERR GT, LT, and/or NX options at the same time are not compatible");
            return Ok(());
        }
        if incr && rest.len() > 2 {
            out.error("ERR INCR option supports a single increment-element pair");
            return Ok(());
        }
        let mut pairs = Vec::with_capacity(rest.len() / 2);
        for p in rest.chunks(2) {
            match parse_score(&p[0]) {
                Some(s) if !s.is_nan() => pairs.push((s, &p[1])),
                _ => {
                    out.error("ERR value is not a valid float");
                    return Ok(());
                }
            }
        }
        let k = &args[1];
        let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
        let (old, mut m) = match self.lookup_for_update(k)? {
            Some(m) if m.kind != ZSET => {
                out.error(WRONGTYPE);
                return Ok(());
            }
            Some(m) => (Some(m.clone()), m),
            None if xx => {
                // Nothing can be updated, and nothing is created.
                if incr {
                    out.null();
                } else {
                    out.int(0);
                }
                return Ok(());
            }
            None => (None, Meta::collection(ZSET, self.new_version()?)),
        };
        // Each member's score now (this command's earlier pairs included).
        let mut now: BTreeMap<Vec<u8>, (Option<f64>, f64)> = BTreeMap::new();
        let (mut added, mut changed) = (0i64, 0i64);
        let mut result = None;
        for (score, member) in pairs {
            let before = match now.get(member.as_slice()) {
                Some(&(_, s)) => Some(s),
                None if old.is_none() => None,
                None => self.zscore_of(k, &m, member)?,
            };
            if (nx && before.is_some()) || (xx && before.is_none()) {
                continue;
            }
            let new = if incr {
                before.unwrap_or(0.0) + score
            } else {
                score
            };
            if new.is_nan() {
                out.error("ERR resulting score is not a number (NaN)");
                return Ok(());
            }
            if let Some(b) = before {
                if (gt && new <= b) || (lt && new >= b) {
                    continue;
                }
            }
            result = Some(new);
            match before {
                None => added += 1,
                Some(b) if b != new => changed += 1,
                Some(_) => {}
            }
            let first = now.get(member.as_slice()).map_or(before, |e| e.0);
            now.insert(member.clone(), (first, new));
        }
        let set: Vec<(Vec<u8>, Option<f64>, f64)> = now
            .into_iter()
            .filter(|(_, (first, new))| *first != Some(*new))
            .map(|(x, (first, new))| (x, first, new))
            .collect();
        if !set.is_empty() {
            let mut b = strata::WriteBatch::new();
            Self::zset_apply(&mut b, k, &mut m, &set, &[]);
            self.finish(b, k, old.as_ref(), &m)?;
            self.wake_blocked(k);
        }
        if incr {
            match result {
                Some(s) => out.double(&fmt_score(s)),
                None => out.null(),
            }
        } else {
            out.int(if ch { added + changed } else { added });
        }
        Ok(())
    }

    /// Pops up to `n` members with the lowest (`min`) or highest scores.
    pub(crate) fn zpop(&self, k: &[u8], min: bool, n: u64) -> strata::Result<Result<Members, ()>> {
        let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
        let m = match self.lookup_for_update(k)? {
            None => return Ok(Ok(Vec::new())),
            Some(m) if m.kind != ZSET => return Ok(Err(())),
            Some(m) => m,
        };
        let all = self.zset_all(&strata::ReadOptions::default(), k, &m)?;
        let n = (n as usize).min(all.len());
        let taken: Vec<(f64, Vec<u8>)> = if min {
            all[..n].to_vec()
        } else {
            all.iter().rev().take(n).cloned().collect()
        };
        if !taken.is_empty() {
            let gone: Vec<(Vec<u8>, f64)> = taken.iter().map(|(s, x)| (x.clone(), *s)).collect();
            let mut new = m.clone();
            let mut b = strata::WriteBatch::new();
            Self::zset_apply(&mut b, k, &mut new, &[], &gone);
            self.finish(b, k, Some(&m), &new)?;
        }
        Ok(Ok(taken))
    }

    /// ZMPOP's and BZMPOP's arguments after the first `skip`: numkeys key... MIN|MAX
    /// [COUNT n]; None once the error is answered.
    pub(crate) fn zmpop_args(
        &self,
        name: &str,
        args: &[Vec<u8>],
        skip: usize,
        out: &mut Out,
    ) -> Option<(Vec<Vec<u8>>, bool, u64)> {
        if args.len() < skip + 3 {
            check_arity(name, false, out);
            return None;
        }
        let numkeys = match parse_i64(&args[skip]) {
            Some(n) if n > 0 => n as usize,
            _ => {
                out.error("ERR numkeys should be greater than 0");
                return None;
            }
        };
        let rest = &args[skip + 1..];
        if rest.len() <= numkeys {
            out.error("ERR syntax error");
            return None;
        }
        let min = match upper(&rest[numkeys]).as_str() {
            "MIN" => true,
            "MAX" => false,
            _ => {
                out.error("ERR syntax error");
                return None;
            }
        };
        let mut n = 1;
        match &rest[numkeys + 1..] {
            [] => {}
            [c, v] if upper(c) == "COUNT" => match parse_i64(v) {
                Some(c) if c > 0 => n = c as u64,
                _ => {
                    out.error("ERR count should be greater than 0");
                    return None;
                }
            },
            _ => {
                out.error("ERR syntax error");
                return None;
            }
        }
        Some((rest[..numkeys].to_vec(), min, n))
    }

    /// Pops from the first non-empty sorted set of `keys` and answers [key, [[member,
    /// score]...]]; false (nothing answered) if all are empty.
    pub(crate) fn try_zmpop(
        &self,
        keys: &[Vec<u8>],
        min: bool,
        n: u64,
        out: &mut Out,
    ) -> strata::Result<bool> {
        for k in keys {
            match self.zpop(k, min, n)? {
                Err(()) => {
                    out.error(WRONGTYPE);
                    return Ok(true);
                }
                Ok(items) if items.is_empty() => continue,
                Ok(items) => {
                    out.array(2);
                    out.bulk(k);
                    out.array(items.len());
                    for (s, x) in &items {
                        out.array(2);
                        out.bulk(x);
                        out.double(&fmt_score(*s));
                    }
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Replaces key `dst` (any type) by a sorted set of `items` (deleted if empty). The
    /// caller holds `dst`'s lock, taken before it read what `items` came from.
    fn zstore(&self, dst: &[u8], items: Vec<(f64, Vec<u8>)>) -> strata::Result<()> {
        let old = self.lookup_for_update(dst)?;
        let mut m = Meta::collection(ZSET, self.new_version()?);
        let set: Vec<(Vec<u8>, Option<f64>, f64)> =
            items.into_iter().map(|(s, x)| (x, None, s)).collect();
        let mut b = strata::WriteBatch::new();
        Self::zset_apply(&mut b, dst, &mut m, &set, &[]);
        self.finish(b, dst, old.as_ref(), &m)?;
        self.wake_blocked(dst);
        Ok(())
    }

    /// ZRANDMEMBER key [count [WITHSCORES]].
    fn zrandmember(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let count = match args.get(2) {
            None => None,
            Some(a) => match parse_i64(a) {
                Some(c) => Some(c),
                None => {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(());
                }
            },
        };
        let scores = match args.get(3) {
            None => false,
            Some(w) if upper(w) == "WITHSCORES" => true,
            Some(_) => {
                out.error("ERR syntax error");
                return Ok(());
            }
        };
        let most = if scores { i64::MAX / 2 } else { i64::MAX };
        if count.is_some_and(|c| c == i64::MIN || c.abs() > most) {
            out.error("ERR value is out of range");
            return Ok(());
        }
        // The record and its members from one snapshot (a ZREM between two reads would
        // leave a record without members).
        let ro = self.snapshot_reads();
        let Some(m) = self.zset_read(&ro, &args[1], out)? else {
            return Ok(());
        };
        let mut all = match m {
            Some(m) => self.zset_all(&ro, &args[1], &m)?,
            None => Vec::new(),
        };
        if all.is_empty() {
            match count {
                None => out.null(),
                Some(_) => out.array(0),
            }
            return Ok(());
        }
        let n = all.len() as u64;
        match count {
            None => {
                let (_, x) = &all[(random_u64() % n) as usize];
                out.bulk(x);
            }
            Some(c) if c < 0 => {
                let c = c.unsigned_abs();
                let pairs = scores && out.resp3;
                out.array((if scores && !pairs { 2 * c } else { c }) as usize);
                for _ in 0..c {
                    let (s, x) = &all[(random_u64() % n) as usize];
                    if pairs {
                        out.array(2);
                    }
                    out.bulk(x);
                    if scores {
                        out.double(&fmt_score(*s));
                    }
                    out.spill();
                    if out.failed {
                        break;
                    }
                }
            }
            Some(c) => {
                let want = (c as u64).min(n) as usize;
                for i in 0..want {
                    let j = i + (random_u64() % (all.len() - i) as u64) as usize;
                    all.swap(i, j);
                }
                all.truncate(want);
                Self::zreply(out, &all, scores);
            }
        }
        Ok(())
    }

    /// ZUNION/ZINTER/ZDIFF numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX]
    /// [WITHSCORES], their STORE forms (destination first) and ZINTERCARD numkeys key...
    /// [LIMIT n]. A set (not sorted) counts its members with score 1, as in Redis.
    fn zcombine(&self, name: &str, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let store = name.ends_with("STORE");
        let card = name == "ZINTERCARD";
        let at = if store { 2 } else { 1 };
        let Some(numkeys) = parse_i64(&args[at]).filter(|&n| n > 0).map(|n| n as usize) else {
            if parse_i64(&args[at]).is_some() {
                out.error(&format!(
                    "ERR at least 1 input key is needed for '{}' command",
                    name.to_ascii_lowercase()
                ));
            } else {
                out.error("ERR value is not an integer or out of range");
            }
            return Ok(());
        };
        if args.len() < at + 1 + numkeys {
            out.error("ERR syntax error");
            return Ok(());
        }
        let keys = &args[at + 1..at + 1 + numkeys];
        let (mut weights, mut aggregate, mut scores, mut limit) =
            (vec![1.0; numkeys], "SUM".to_string(), false, 0usize);
        let mut i = at + 1 + numkeys;
        while i < args.len() {
            match upper(&args[i]).as_str() {
                "WEIGHTS"
                    if !card
                        && name != "ZDIFF"
                        && name != "ZDIFFSTORE"
                        && i + numkeys < args.len() =>
                {
                    for (j, w) in args[i + 1..=i + numkeys].iter().enumerate() {
                        match parse_score(w) {
                            Some(w) if !w.is_nan() => weights[j] = w,
                            _ => {
                                out.error("ERR weight value is not a float");
                                return Ok(());
                            }
                        }
                    }
                    i += numkeys;
                }
                "AGGREGATE"
                    if !card && name != "ZDIFF" && name != "ZDIFFSTORE" && i + 1 < args.len() =>
                {
                    aggregate = upper(&args[i + 1]);
                    if !matches!(aggregate.as_str(), "SUM" | "MIN" | "MAX") {
                        out.error("ERR syntax error");
                        return Ok(());
                    }
                    i += 1;
                }
                "WITHSCORES" if !store && !card => scores = true,
                "LIMIT" if card && i + 1 < args.len() => {
                    match parse_i64(&args[i + 1]) {
                        Some(l) if l >= 0 => limit = l as usize,
                        _ => {
                            out.error("ERR LIMIT can't be negative");
                            return Ok(());
                        }
                    }
                    i += 1;
                }
                _ => {
                    out.error("ERR syntax error");
                    return Ok(());
                }
            }
            i += 1;
        }
        // The destination locked before the inputs are read (it may be one of them: a write
        // between the read and the store would be lost).
        let _g = store.then(|| lock(&self.stripes[stripe_of(&record_key(&args[1]))]));
        // Every input from one snapshot; a wrong type anywhere is an error.
        let ro = self.snapshot_reads();
        let mut inputs: Vec<BTreeMap<Vec<u8>, f64>> = Vec::with_capacity(numkeys);
        for k in keys {
            let set = match self.lookup_in(&ro, k)? {
                None => BTreeMap::new(),
                Some(m) if m.kind == ZSET => self
                    .zset_all(&ro, k, &m)?
                    .into_iter()
                    .map(|(s, x)| (x, s))
                    .collect(),
                Some(m) if m.kind == crate::keyspace::SET => {
                    let p = element_prefix(crate::keyspace::SET_MEMBER, k, m.version);
                    let mut it = self.db.iter(strata::ReadOptions {
                        lower_bound: Some(p.clone()),
                        upper_bound: Some(end_of(&p)),
                        ..ro.clone()
                    })?;
                    it.seek_to_first();
                    let mut s = BTreeMap::new();
                    while it.valid() {
                        s.insert(it.key()[p.len()..].to_vec(), 1.0);
                        it.next();
                    }
                    it.status()?;
                    s
                }
                Some(_) => {
                    out.error(WRONGTYPE);
                    return Ok(());
                }
            };
            inputs.push(set);
        }
        let combine = |a: f64, b: f64| -> f64 {
            let r = match aggregate.as_str() {
                "MIN" => a.min(b),
                "MAX" => a.max(b),
                _ => a + b,
            };
            // inf + -inf: Redis makes it 0.
            if r.is_nan() {
                0.0
            } else {
                r
            }
        };
        let weighted = |s: f64, w: f64| -> f64 {
            let r = s * w;
            if r.is_nan() {
                0.0
            } else {
                r
            }
        };
        let kind = name.trim_end_matches("STORE").trim_end_matches("CARD");
        let mut result: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        match kind {
            "ZUNION" => {
                for (set, &w) in inputs.iter().zip(&weights) {
                    for (x, &s) in set {
                        let s = weighted(s, w);
                        result
                            .entry(x.clone())
                            .and_modify(|e| *e = combine(*e, s))
                            .or_insert(s);
                    }
                }
            }
            "ZINTER" => {
                if let Some((first, rest)) = inputs.split_first() {
                    'member: for (x, &s) in first {
                        let mut acc = weighted(s, weights[0]);
                        for (j, set) in rest.iter().enumerate() {
                            match set.get(x) {
                                Some(&t) => acc = combine(acc, weighted(t, weights[j + 1])),
                                None => continue 'member,
                            }
                        }
                        result.insert(x.clone(), acc);
                    }
                }
            }
            _ => {
                if let Some((first, rest)) = inputs.split_first() {
                    for (x, &s) in first {
                        if !rest.iter().any(|set| set.contains_key(x)) {
                            result.insert(x.clone(), s);
                        }
                    }
                }
            }
        }
        if card {
            let n = result.len();
            out.int(if limit == 0 { n } else { n.min(limit) } as i64);
            return Ok(());
        }
        let mut items: Vec<(f64, Vec<u8>)> = result.into_iter().map(|(x, s)| (s, x)).collect();
        items.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        if store {
            let n = items.len();
            self.zstore(&args[1], items)?;
            out.int(n as i64);
        } else {
            Self::zreply(out, &items, scores);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_select_as_redis_does() {
        let all: Vec<(f64, Vec<u8>)> = [(1.0, "a"), (2.0, "b"), (2.0, "c"), (3.0, "d")]
            .iter()
            .map(|(s, x)| (*s, x.as_bytes().to_vec()))
            .collect();
        let names = |r: Range| -> Vec<String> {
            r.select(&all)
                .into_iter()
                .map(|(_, x)| String::from_utf8(x).unwrap())
                .collect()
        };
        let r = |by, rev, limit| Range {
            by,
            rev,
            limit,
            scores: false,
        };
        assert_eq!(
            names(r(By::Index(0, -1), false, None)),
            ["a", "b", "c", "d"]
        );
        assert_eq!(names(r(By::Index(0, 1), true, None)), ["d", "c"]);
        assert_eq!(
            names(r(By::Score((2.0, false), (3.0, true)), false, None)),
            ["b", "c"]
        );
        assert_eq!(
            names(r(
                By::Score((1.0, true), (f64::INFINITY, false)),
                true,
                Some((1, 1))
            )),
            ["c"]
        );
        assert_eq!(
            names(r(
                By::Lex(Lex::At(b"b".to_vec(), true), Lex::Max),
                false,
                None
            )),
            ["c", "d"]
        );
        assert!(names(r(By::Index(3, 1), false, None)).is_empty());
        assert_eq!(unordered(&ordered(-2.5)), -2.5);
        assert_eq!(unordered(&ordered(7.0)), 7.0);
    }
}
