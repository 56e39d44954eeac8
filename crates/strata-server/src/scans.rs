//! Scans of one collection's elements: HSCAN, SSCAN, ZSCAN; and HRANDFIELD, OBJECT.
//!
//! A cursor is a number the server maps to the element to resume at (as SCAN's are, in
//! lib.rs); elements are visited in order, so a scan over the whole collection returns
//! every element present for its duration exactly once. A collection made again between
//! two calls is scanned on under its new version, from the element the cursor names.

use crate::keyspace::{
    element_prefix, end_of, random_u64, HASH, HASH_FIELD, SET, SET_MEMBER, ZSET, ZSET_MEMBER,
};
use crate::resp::Out;
use crate::types::WRONGTYPE;
use crate::{check_arity, glob, parse_i64, upper, Server};

impl Server {
    /// HSCAN, SSCAN, ZSCAN, HRANDFIELD, OBJECT; false for another command.
    pub(crate) fn element_scan(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let (kind, tag) = match name {
            "HSCAN" => (HASH, HASH_FIELD),
            "SSCAN" => (SET, SET_MEMBER),
            "ZSCAN" => (ZSET, ZSET_MEMBER),
            "HRANDFIELD" => {
                if check_arity(name, (2..=4).contains(&args.len()), out) {
                    self.hrandfield(args, out)?;
                }
                return Ok(true);
            }
            "OBJECT" => {
                if check_arity(name, args.len() >= 2, out) {
                    self.object(args, out)?;
                }
                return Ok(true);
            }
            _ => return Ok(false),
        };
        if !check_arity(name, args.len() >= 3 && !args.len().is_multiple_of(2), out) {
            return Ok(true);
        }
        let Some(cursor) = std::str::from_utf8(&args[2])
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        else {
            out.error("ERR invalid cursor");
            return Ok(true);
        };
        let (mut pattern, mut count): (&[u8], usize) = (b"*", 10);
        for pair in args[3..].chunks(2) {
            match upper(&pair[0]).as_str() {
                "MATCH" => pattern = &pair[1],
                "COUNT" => match parse_i64(&pair[1]) {
                    Some(n) if n > 0 => count = (n as usize).min(self.config.keys_limit.max(1)),
                    _ => {
                        out.error("ERR value is not an integer or out of range");
                        return Ok(true);
                    }
                },
                _ => {
                    out.error("ERR syntax error");
                    return Ok(true);
                }
            }
        }
        let m = match self.collection(&args[1], kind)? {
            Err(()) => {
                out.error(WRONGTYPE);
                return Ok(true);
            }
            Ok(None) => {
                out.array(2);
                out.bulk(b"0");
                out.array(0);
                return Ok(true);
            }
            Ok(Some(m)) => m,
        };
        let from = if cursor == 0 {
            Vec::new()
        } else {
            match self.take_cursor(cursor) {
                Some(e) => e,
                None => {
                    out.error("ERR invalid cursor (unknown or expired)");
                    return Ok(true);
                }
            }
        };
        let p = element_prefix(tag, &args[1], m.version);
        let mut start = p.clone();
        start.extend_from_slice(&from);
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(start),
            upper_bound: Some(end_of(&p)),
            ..Default::default()
        })?;
        it.seek_to_first();
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut visited = 0;
        while it.valid() && visited < count {
            let element = &it.key()[p.len()..];
            if glob(pattern, element) {
                found.push((element.to_vec(), it.value().to_vec()));
            }
            visited += 1;
            it.next();
        }
        it.status()?;
        let next = if it.valid() {
            self.new_cursor(it.key()[p.len()..].to_vec())
        } else {
            0
        };
        out.array(2);
        out.bulk(next.to_string().as_bytes());
        let pairs = kind != SET;
        out.array(if pairs { 2 * found.len() } else { found.len() });
        for (e, v) in found {
            out.bulk(&e);
            match kind {
                HASH => out.bulk(&v),
                ZSET => {
                    let score = v.try_into().map(f64::from_le_bytes).unwrap_or(0.0);
                    out.bulk(crate::types::fmt_score(score).as_bytes());
                }
                _ => {}
            }
        }
        Ok(true)
    }

    /// HRANDFIELD key [count [WITHVALUES]]: as SRANDMEMBER draws members (a negative count
    /// allows repeats).
    fn hrandfield(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
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
        let with_values = match args.get(3) {
            None => false,
            Some(w) if count.is_some() && upper(w) == "WITHVALUES" => true,
            Some(_) => {
                out.error("ERR syntax error");
                return Ok(());
            }
        };
        // Redis's bounds: the reply's length must fit (twice the count with values).
        let most = if with_values { i64::MAX / 2 } else { i64::MAX };
        if count.is_some_and(|c| c == i64::MIN || c.abs() > most) {
            out.error("ERR value is out of range");
            return Ok(());
        }
        let m = match self.collection(&args[1], HASH)? {
            Err(()) => {
                out.error(WRONGTYPE);
                return Ok(());
            }
            Ok(m) => m,
        };
        let Some(m) = m else {
            match count {
                None => out.null(),
                Some(_) => out.array(0),
            }
            return Ok(());
        };
        let p = element_prefix(HASH_FIELD, &args[1], m.version);
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(p.clone()),
            upper_bound: Some(end_of(&p)),
            ..Default::default()
        })?;
        it.seek_to_first();
        let mut all = Vec::new();
        while it.valid() {
            all.push((it.key()[p.len()..].to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status()?;
        let n = all.len() as u64;
        if n == 0 {
            out.null();
            return Ok(());
        }
        let emit = |out: &mut Out, (f, v): &(Vec<u8>, Vec<u8>)| {
            if with_values && out.resp3 {
                out.array(2);
            }
            out.bulk(f);
            if with_values {
                out.bulk(v);
            }
            out.spill();
        };
        let per = if with_values && !out.resp3 { 2 } else { 1 };
        match count {
            None => out.bulk(&all[(random_u64() % n) as usize].0),
            Some(c) if c < 0 => {
                let c = c.unsigned_abs();
                out.array((c * per) as usize);
                for _ in 0..c {
                    emit(out, &all[(random_u64() % n) as usize]);
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
                out.array(want * per as usize);
                for e in &all[..want] {
                    emit(out, e);
                }
            }
        }
        Ok(())
    }

    /// OBJECT REFCOUNT | ENCODING | IDLETIME | FREQ | HELP. strata shares no values between
    /// keys (REFCOUNT is 1) and keeps no access times (IDLETIME 0); ENCODING names Redis's
    /// general encoding of the type, the one whose behaviour strata's matches.
    fn object(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let sub = upper(&args[1]);
        if sub == "HELP" {
            out.array(4);
            for line in [
                "OBJECT <subcommand> [<arg> ...]. Subcommands are:",
                "ENCODING <key>: the general encoding of the key's type.",
                "REFCOUNT <key>: 1 (strata shares no values).",
                "IDLETIME <key>: 0 (strata keeps no access times).",
            ] {
                out.simple(line);
            }
            return Ok(());
        }
        if args.len() != 3 || !matches!(sub.as_str(), "REFCOUNT" | "ENCODING" | "IDLETIME" | "FREQ")
        {
            out.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try OBJECT HELP.",
                String::from_utf8_lossy(&args[1])
            ));
            return Ok(());
        }
        let Some(m) = self.lookup(&args[2])? else {
            out.null();
            return Ok(());
        };
        match sub.as_str() {
            "REFCOUNT" => out.int(1),
            "IDLETIME" => out.int(0),
            "FREQ" => out.error(
                "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
            ),
            _ => out.bulk(match m.kind {
                crate::keyspace::STRING if crate::parse_i64(&m.value).is_some() => b"int",
                crate::keyspace::STRING => b"raw",
                crate::keyspace::LIST => b"quicklist",
                ZSET => b"skiplist",
                _ => b"hashtable",
            }),
        }
        Ok(())
    }
}
