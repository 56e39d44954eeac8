//! Sets (docs/format/redis-keys.md): one record per member (`M` + key + version +
//! member, empty value), in member order; the key's record keeps the count.
//!
//! SRANDMEMBER and SPOP read the whole set and draw from it (O(n) in the set, where
//! Redis draws from its hash table in O(count)); SINTER, SUNION and SDIFF read their sets
//! whole and combine them in order.

use std::collections::BTreeSet;

use crate::keyspace::{element_prefix, end_of, random_u64, record_key, Meta, SET, SET_MEMBER};
use crate::resp::Out;
use crate::types::WRONGTYPE;
use crate::{check_arity, lock, parse_i64, upper, Server};

fn member(prefix: &[u8], m: &[u8]) -> Vec<u8> {
    let mut v = prefix.to_vec();
    v.extend_from_slice(m);
    v
}

impl Server {
    /// The members of set `m` (key `k`) read through `ro`, in order.
    pub(crate) fn members(
        &self,
        ro: &strata::ReadOptions,
        k: &[u8],
        m: &Meta,
    ) -> strata::Result<Vec<Vec<u8>>> {
        let p = element_prefix(SET_MEMBER, k, m.version);
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(p.clone()),
            upper_bound: Some(end_of(&p)),
            ..ro.clone()
        })?;
        it.seek_to_first();
        let mut out = Vec::with_capacity(m.count as usize);
        while it.valid() {
            out.push(it.key()[p.len()..].to_vec());
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// The sets at `keys` (a missing key is an empty set), all read from one snapshot;
    /// None once WRONGTYPE is answered (every key is checked first, as Redis does).
    fn sets_of(
        &self,
        keys: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<Option<Vec<Vec<Vec<u8>>>>> {
        let ro = self.snapshot_reads();
        let mut records = Vec::with_capacity(keys.len());
        for k in keys {
            match self.lookup_in(&ro, k)? {
                Some(m) if m.kind != SET => {
                    out.error(WRONGTYPE);
                    return Ok(None);
                }
                m => records.push(m),
            }
        }
        let mut sets = Vec::with_capacity(keys.len());
        for (k, m) in keys.iter().zip(records) {
            sets.push(match m {
                Some(m) => self.members(&ro, k, &m)?,
                None => Vec::new(),
            });
        }
        Ok(Some(sets))
    }

    /// The set commands; false for another command.
    pub(crate) fn set_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        let read = |out: &mut Out| -> strata::Result<Option<Option<Meta>>> {
            Ok(match self.collection(&args[1], SET)? {
                Ok(m) => Some(m),
                Err(()) => {
                    out.error(WRONGTYPE);
                    None
                }
            })
        };
        match name {
            "SADD" => {
                if !arity(argc >= 3, out) {
                    return Ok(true);
                }
                let k = &args[1];
                let _g = lock(&self.stripes[crate::stripe_of(&record_key(k))]);
                let Some((old, mut m)) = self.collection_for_write(k, SET, out)? else {
                    return Ok(true);
                };
                let p = element_prefix(SET_MEMBER, k, m.version);
                let mut b = strata::WriteBatch::new();
                let mut seen = std::collections::HashSet::new();
                let mut added = 0u64;
                for x in &args[2..] {
                    let mk = member(&p, x);
                    if seen.insert(x) && (old.is_none() || self.db.get(&mk)?.is_none()) {
                        b.put(&mk, b"");
                        added += 1;
                    }
                }
                if added > 0 {
                    m.count += added;
                    self.finish(b, k, old.as_ref(), &m)?;
                }
                out.int(added as i64);
            }
            "SREM" => {
                if !arity(argc >= 3, out) {
                    return Ok(true);
                }
                let k = &args[1];
                let _g = lock(&self.stripes[crate::stripe_of(&record_key(k))]);
                let m = match self.lookup_for_update(k)? {
                    None => {
                        out.int(0);
                        return Ok(true);
                    }
                    Some(m) if m.kind != SET => {
                        out.error(WRONGTYPE);
                        return Ok(true);
                    }
                    Some(m) => m,
                };
                let p = element_prefix(SET_MEMBER, k, m.version);
                let mut b = strata::WriteBatch::new();
                let mut seen = std::collections::HashSet::new();
                let mut removed = 0u64;
                for x in &args[2..] {
                    let mk = member(&p, x);
                    if seen.insert(x) && self.db.get(&mk)?.is_some() {
                        b.delete(&mk);
                        removed += 1;
                    }
                }
                if removed > 0 {
                    let new = Meta {
                        count: m.count - removed.min(m.count),
                        ..m.clone()
                    };
                    self.finish(b, k, Some(&m), &new)?;
                }
                out.int(removed as i64);
            }
            "SCARD" => {
                if arity(argc == 2, out) {
                    if let Some(m) = read(out)? {
                        out.int(m.map_or(0, |m| m.count) as i64);
                    }
                }
            }
            "SISMEMBER" | "SMISMEMBER" => {
                let single = name == "SISMEMBER";
                if !arity(if single { argc == 3 } else { argc >= 3 }, out) {
                    return Ok(true);
                }
                if let Some(m) = read(out)? {
                    if !single {
                        out.array(argc - 2);
                    }
                    for x in &args[2..] {
                        let has = match &m {
                            Some(m) => self
                                .db
                                .get(member(&element_prefix(SET_MEMBER, &args[1], m.version), x))?
                                .is_some(),
                            None => false,
                        };
                        out.int(i64::from(has));
                    }
                }
            }
            "SMEMBERS" => {
                if arity(argc == 2, out) {
                    if let Some(sets) = self.sets_of(&args[1..2], out)? {
                        out.array(sets[0].len());
                        for x in &sets[0] {
                            out.bulk(x);
                            out.spill();
                        }
                    }
                }
            }
            "SRANDMEMBER" | "SPOP" => {
                if arity(argc == 2 || argc == 3, out) {
                    self.draw(name == "SPOP", args, out)?;
                }
            }
            "SMOVE" => {
                if arity(argc == 4, out) {
                    self.smove(&args[1], &args[2], &args[3], out)?;
                }
            }
            "SINTER" | "SUNION" | "SDIFF" => {
                if arity(argc >= 2, out) {
                    if let Some(sets) = self.sets_of(&args[1..], out)? {
                        let r = combine(name, sets);
                        out.array(r.len());
                        for x in &r {
                            out.bulk(x);
                            out.spill();
                        }
                    }
                }
            }
            "SINTERSTORE" | "SUNIONSTORE" | "SDIFFSTORE" => {
                if !arity(argc >= 3, out) {
                    return Ok(true);
                }
                let dst = &args[1];
                let _g = lock(&self.stripes[crate::stripe_of(&record_key(dst))]);
                let Some(sets) = self.sets_of(&args[2..], out)? else {
                    return Ok(true);
                };
                let r = combine(&name[..name.len() - 5], sets);
                let old = self.lookup_for_update(dst)?;
                let mut m = Meta::collection(SET, self.new_version()?);
                let p = element_prefix(SET_MEMBER, dst, m.version);
                let mut b = strata::WriteBatch::new();
                for x in &r {
                    b.put(member(&p, x), b"");
                }
                m.count = r.len() as u64;
                self.finish(b, dst, old.as_ref(), &m)?;
                out.int(r.len() as i64);
            }
            "SINTERCARD" => {
                if !arity(argc >= 3, out) {
                    return Ok(true);
                }
                let n = match parse_i64(&args[1]) {
                    Some(n) if n > 0 => n as usize,
                    _ => {
                        out.error("ERR numkeys should be greater than 0");
                        return Ok(true);
                    }
                };
                if argc < 2 + n {
                    out.error("ERR Number of keys can't be greater than number of args");
                    return Ok(true);
                }
                let mut limit = usize::MAX;
                match &args[2 + n..] {
                    [] => {}
                    [w, v] if upper(w) == "LIMIT" => match parse_i64(v) {
                        Some(l) if l >= 0 => limit = if l == 0 { usize::MAX } else { l as usize },
                        _ => {
                            out.error("ERR LIMIT can't be negative");
                            return Ok(true);
                        }
                    },
                    _ => {
                        out.error("ERR syntax error");
                        return Ok(true);
                    }
                }
                if let Some(sets) = self.sets_of(&args[2..2 + n], out)? {
                    out.int(combine("SINTER", sets).len().min(limit) as i64);
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// SRANDMEMBER key [count] and SPOP key [count].
    fn draw(&self, pop: bool, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let count = match args.get(2) {
            None => None,
            Some(a) => match parse_i64(a) {
                Some(i64::MIN) => {
                    out.error("ERR value is out of range");
                    return Ok(());
                }
                Some(c) if c >= 0 || !pop => Some(c),
                Some(_) => {
                    out.error("ERR value is out of range, must be positive");
                    return Ok(());
                }
                None => {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(());
                }
            },
        };
        let k = &args[1];
        let _g = pop.then(|| lock(&self.stripes[crate::stripe_of(&record_key(k))]));
        // Without the key's lock (SRANDMEMBER), the record and its members from one
        // snapshot: an SREM between two reads would leave a record without members.
        let ro = if pop {
            strata::ReadOptions::default()
        } else {
            self.snapshot_reads()
        };
        let m = match if pop {
            self.lookup_for_update(k)?
        } else {
            self.lookup_in(&ro, k)?
        } {
            Some(m) if m.kind != SET => {
                out.error(WRONGTYPE);
                return Ok(());
            }
            m => m,
        };
        let Some(m) = m else {
            match count {
                None => out.null(),
                Some(_) => out.array(0),
            }
            return Ok(());
        };
        let mut all = self.members(&ro, k, &m)?;
        let n = all.len();
        if n == 0 {
            match count {
                None => out.null(),
                Some(_) => out.array(0),
            }
            return Ok(());
        }
        if let Some(c) = count.filter(|&c| c < 0) {
            // Repeats allowed: |count| independent draws, written as they are drawn.
            out.array(c.unsigned_abs() as usize);
            for _ in 0..c.unsigned_abs() {
                out.bulk(&all[(random_u64() % n as u64) as usize]);
                out.spill();
                if out.failed {
                    break;
                }
            }
            return Ok(());
        }
        let want = count.map_or(1, |c| c as usize).min(n);
        // A partial Fisher-Yates shuffle: the first `want` are a uniform sample.
        for i in 0..want {
            let j = i + (random_u64() % (n - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(want);
        let chosen = all;
        if pop && !chosen.is_empty() {
            let p = element_prefix(SET_MEMBER, k, m.version);
            let mut b = strata::WriteBatch::new();
            for x in &chosen {
                b.delete(member(&p, x));
            }
            let new = Meta {
                count: m.count.saturating_sub(chosen.len() as u64),
                ..m.clone()
            };
            self.finish(b, k, Some(&m), &new)?;
        }
        match count {
            None => out.bulk(&chosen[0]),
            Some(_) => {
                out.array(chosen.len());
                for x in &chosen {
                    out.bulk(x);
                }
            }
        }
        Ok(())
    }

    /// SMOVE source destination member.
    fn smove(&self, from: &[u8], to: &[u8], x: &[u8], out: &mut Out) -> strata::Result<()> {
        let _g = self.lock_keys(&[record_key(from), record_key(to)]);
        // Redis's order: a missing source answers 0 before either type is checked.
        let src = self.lookup_for_update(from)?;
        let dst = self.lookup_for_update(to)?;
        if src.is_some()
            && [&src, &dst]
                .iter()
                .any(|m| m.as_ref().is_some_and(|m| m.kind != SET))
        {
            out.error(WRONGTYPE);
            return Ok(());
        }
        let Some(src) = src else {
            out.int(0);
            return Ok(());
        };
        let sp = element_prefix(SET_MEMBER, from, src.version);
        if self.db.get(member(&sp, x))?.is_none() {
            out.int(0);
            return Ok(());
        }
        if from == to {
            out.int(1);
            return Ok(());
        }
        let mut b = strata::WriteBatch::new();
        b.delete(member(&sp, x));
        let s = Meta {
            count: src.count - 1,
            ..src.clone()
        };
        let mut d = match &dst {
            Some(m) => m.clone(),
            None => Meta::collection(SET, self.new_version()?),
        };
        let dk = member(&element_prefix(SET_MEMBER, to, d.version), x);
        if dst.is_none() || self.db.get(&dk)?.is_none() {
            b.put(&dk, b"");
            d.count += 1;
        }
        let delta =
            Self::stage(&mut b, from, Some(&src), &s) + Self::stage(&mut b, to, dst.as_ref(), &d);
        self.write(b)?;
        self.keys_changed(delta);
        out.int(1);
        Ok(())
    }
}

/// SINTER, SUNION or SDIFF of `sets` (each in order), in order.
fn combine(how: &str, sets: Vec<Vec<Vec<u8>>>) -> Vec<Vec<u8>> {
    let mut it = sets.into_iter();
    let first: BTreeSet<Vec<u8>> = it.next().unwrap_or_default().into_iter().collect();
    let r = it.fold(first, |acc, s| {
        let s: BTreeSet<Vec<u8>> = s.into_iter().collect();
        match how {
            "SINTER" => acc.intersection(&s).cloned().collect(),
            "SUNION" => acc.union(&s).cloned().collect(),
            _ => acc.difference(&s).cloned().collect(),
        }
    });
    r.into_iter().collect()
}
