//! Lists (docs/format/redis-keys.md): the record holds the positions [head, tail) of the
//! items; an item is `L` + key + version + position (u64 BE). A push at the head writes at
//! head - 1, one at the tail at tail: O(1) with no read of any other item. LINDEX, LSET and
//! LRANGE find positions by arithmetic (head + index): a point read, or one seek and a walk.
//! LINSERT and LREM, which make or close a gap, rewrite the items on one side of it.
//!
//! Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) wait on the server's list of
//! blocked clients (blocking.rs) and are served in the order they blocked.

use crate::keyspace::{element_prefix, record_key, Meta, LIST, LIST_ITEM};
use crate::resp::Out;
use crate::types::WRONGTYPE;
use crate::{check_arity, lock, parse_i64, stripe_of, upper, Server};

fn item(prefix: &[u8], pos: u64) -> Vec<u8> {
    let mut v = prefix.to_vec();
    v.extend_from_slice(&pos.to_be_bytes());
    v
}

/// An index as Redis reads one (negative counts from the end), within a list of `len`.
fn index(i: i64, len: u64) -> Option<u64> {
    let len = len as i64;
    let i = if i < 0 { len + i } else { i };
    (0..len).contains(&i).then_some(i as u64)
}

/// LRANGE's and LTRIM's start and stop (inclusive; negatives from the end; clamped): the
/// indexes [from, to), or None when empty.
fn span(start: i64, stop: i64, len: u64) -> Option<(u64, u64)> {
    let n = len as i64;
    let start = if start < 0 { (n + start).max(0) } else { start };
    let stop = if stop < 0 { n + stop } else { stop.min(n - 1) };
    (start <= stop && start < n && stop >= 0).then(|| (start as u64, stop as u64 + 1))
}

/// LEFT or RIGHT.
fn side(arg: &[u8]) -> Option<bool> {
    match upper(arg).as_str() {
        "LEFT" => Some(true),
        "RIGHT" => Some(false),
        _ => None,
    }
}

impl Server {
    /// The list at `k` for a read: Ok(None) absent, Err(()) another type.
    fn list_at(
        &self,
        ro: &strata::ReadOptions,
        k: &[u8],
    ) -> strata::Result<Result<Option<Meta>, ()>> {
        Ok(match self.lookup_in(ro, k)? {
            Some(m) if m.kind == LIST => Ok(Some(m)),
            Some(_) => Err(()),
            None => Ok(None),
        })
    }

    /// The items of list `m` (key `k`) at indexes [from, to), read through `ro`, to `each`.
    fn walk_items(
        &self,
        ro: &strata::ReadOptions,
        k: &[u8],
        m: &Meta,
        from: u64,
        to: u64,
        each: &mut dyn FnMut(&[u8]),
    ) -> strata::Result<()> {
        let p = element_prefix(LIST_ITEM, k, m.version);
        let mut it = self.db.iter(strata::ReadOptions {
            lower_bound: Some(item(&p, m.head + from)),
            upper_bound: Some(item(&p, m.head + to)),
            ..ro.clone()
        })?;
        it.seek_to_first();
        while it.valid() {
            each(it.value());
            it.next();
        }
        it.status()
    }

    /// Every item of list `m`, in order, read through `ro`.
    pub(crate) fn all_items(
        &self,
        ro: &strata::ReadOptions,
        k: &[u8],
        m: &Meta,
    ) -> strata::Result<Vec<Vec<u8>>> {
        let mut items = Vec::with_capacity(m.count as usize);
        self.walk_items(ro, k, m, 0, m.count, &mut |v| items.push(v.to_vec()))?;
        Ok(items)
    }

    /// Pushes `values` at the head (`left`) or tail of list `m` (key `k`), in `b`.
    pub(crate) fn list_push(
        b: &mut strata::WriteBatch,
        k: &[u8],
        m: &mut Meta,
        left: bool,
        values: &[Vec<u8>],
    ) {
        let p = element_prefix(LIST_ITEM, k, m.version);
        for v in values {
            if left {
                m.head -= 1;
                b.put(item(&p, m.head), v);
            } else {
                b.put(item(&p, m.tail), v);
                m.tail += 1;
            }
        }
        m.count = m.tail - m.head;
    }

    /// Takes up to `n` items from the head (`left`) or tail of list `m`, deleting them in
    /// `b`; in the order they were taken.
    pub(crate) fn list_take(
        &self,
        b: &mut strata::WriteBatch,
        k: &[u8],
        m: &mut Meta,
        left: bool,
        n: u64,
    ) -> strata::Result<Vec<Vec<u8>>> {
        let n = n.min(m.count);
        let (from, to) = if left { (0, n) } else { (m.count - n, m.count) };
        let mut taken = Vec::with_capacity(n as usize);
        self.walk_items(&strata::ReadOptions::default(), k, m, from, to, &mut |v| {
            taken.push(v.to_vec())
        })?;
        let p = element_prefix(LIST_ITEM, k, m.version);
        for pos in m.head + from..m.head + to {
            b.delete(item(&p, pos));
        }
        if left {
            m.head += n;
        } else {
            m.tail -= n;
            taken.reverse();
        }
        m.count = m.tail - m.head;
        Ok(taken)
    }

    /// Rewrites list `m` (key `k`) in `b` to hold `items`, writing only the positions from
    /// index `from` on (those before are unchanged) and deleting what is past the new end.
    fn list_rewrite(
        b: &mut strata::WriteBatch,
        k: &[u8],
        m: &mut Meta,
        items: &[Vec<u8>],
        from: usize,
    ) {
        let p = element_prefix(LIST_ITEM, k, m.version);
        for (i, v) in items.iter().enumerate().skip(from) {
            b.put(item(&p, m.head + i as u64), v);
        }
        let end = m.head + items.len() as u64;
        for pos in end..m.tail {
            b.delete(item(&p, pos));
        }
        m.tail = end;
        m.count = items.len() as u64;
    }

    /// The list commands; false for another command.
    pub(crate) fn list_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        let ro = strata::ReadOptions::default();
        match name {
            "LPUSH" | "RPUSH" | "LPUSHX" | "RPUSHX" => {
                if !arity(argc >= 3, out) {
                    return Ok(true);
                }
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                if name.ends_with('X') {
                    match self.lookup_for_update(k)? {
                        None => {
                            out.int(0);
                            return Ok(true);
                        }
                        Some(m) if m.kind != LIST => {
                            out.error(WRONGTYPE);
                            return Ok(true);
                        }
                        Some(_) => {}
                    }
                }
                let Some((old, mut m)) = self.collection_for_write(k, LIST, out)? else {
                    return Ok(true);
                };
                let mut b = strata::WriteBatch::new();
                Self::list_push(&mut b, k, &mut m, name.starts_with('L'), &args[2..]);
                self.finish(b, k, old.as_ref(), &m)?;
                self.wake_blocked(k);
                out.int(m.count as i64);
            }
            "LPOP" | "RPOP" => {
                if !arity(argc == 2 || argc == 3, out) {
                    return Ok(true);
                }
                let n = match args.get(2) {
                    None => None,
                    Some(a) => match parse_i64(a) {
                        Some(n) if n >= 0 => Some(n as u64),
                        _ => {
                            out.error("ERR value is out of range, must be positive");
                            return Ok(true);
                        }
                    },
                };
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                let m = match self.lookup_for_update(k)? {
                    Some(m) if m.kind != LIST => {
                        out.error(WRONGTYPE);
                        return Ok(true);
                    }
                    m => m,
                };
                let Some(m) = m else {
                    if n.is_some() {
                        out.null_array();
                    } else {
                        out.null();
                    }
                    return Ok(true);
                };
                let mut new = m.clone();
                let mut b = strata::WriteBatch::new();
                let taken = self.list_take(&mut b, k, &mut new, name == "LPOP", n.unwrap_or(1))?;
                if !taken.is_empty() {
                    self.finish(b, k, Some(&m), &new)?;
                }
                match n {
                    None => match taken.first() {
                        Some(v) => out.bulk(v),
                        None => out.null(),
                    },
                    Some(_) => {
                        out.array(taken.len());
                        for v in &taken {
                            out.bulk(v);
                        }
                    }
                }
            }
            "LLEN" => {
                if arity(argc == 2, out) {
                    match self.list_at(&ro, &args[1])? {
                        Ok(m) => out.int(m.map_or(0, |m| m.count) as i64),
                        Err(()) => out.error(WRONGTYPE),
                    }
                }
            }
            "LINDEX" => {
                if !arity(argc == 3, out) {
                    return Ok(true);
                }
                let Some(i) = parse_i64(&args[2]) else {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(true);
                };
                match self.list_at(&ro, &args[1])? {
                    Err(()) => out.error(WRONGTYPE),
                    Ok(None) => out.null(),
                    Ok(Some(m)) => match index(i, m.count) {
                        None => out.null(),
                        Some(i) => {
                            let p = element_prefix(LIST_ITEM, &args[1], m.version);
                            match self.db.get(item(&p, m.head + i))? {
                                Some(v) => out.bulk(&v),
                                None => out.null(),
                            }
                        }
                    },
                }
            }
            "LSET" => {
                if !arity(argc == 4, out) {
                    return Ok(true);
                }
                let Some(i) = parse_i64(&args[2]) else {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(true);
                };
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                match self.lookup_for_update(k)? {
                    None => out.error("ERR no such key"),
                    Some(m) if m.kind != LIST => out.error(WRONGTYPE),
                    Some(m) => match index(i, m.count) {
                        None => out.error("ERR index out of range"),
                        Some(i) => {
                            let p = element_prefix(LIST_ITEM, k, m.version);
                            let mut b = strata::WriteBatch::new();
                            b.put(item(&p, m.head + i), &args[3]);
                            self.write(b)?;
                            out.simple("OK");
                        }
                    },
                }
            }
            "LRANGE" => {
                if !arity(argc == 4, out) {
                    return Ok(true);
                }
                let (Some(start), Some(stop)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(true);
                };
                // The count and the items from one snapshot: the header goes first and
                // the items follow in pieces (`Out::spill`).
                let ro = self.snapshot_reads();
                match self.list_at(&ro, &args[1])? {
                    Err(()) => out.error(WRONGTYPE),
                    Ok(None) => out.array(0),
                    Ok(Some(m)) => match span(start, stop, m.count) {
                        None => out.array(0),
                        Some((from, to)) => {
                            out.array((to - from) as usize);
                            let mut written = 0u64;
                            let r = self.walk_items(&ro, &args[1], &m, from, to, &mut |v| {
                                out.bulk(v);
                                out.spill();
                                written += 1;
                            });
                            if r.is_err() || written != to - from {
                                out.failed = true;
                            }
                        }
                    },
                }
            }
            "LTRIM" => {
                if !arity(argc == 4, out) {
                    return Ok(true);
                }
                let (Some(start), Some(stop)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(true);
                };
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                let m = match self.lookup_for_update(k)? {
                    None => {
                        out.simple("OK");
                        return Ok(true);
                    }
                    Some(m) if m.kind != LIST => {
                        out.error(WRONGTYPE);
                        return Ok(true);
                    }
                    Some(m) => m,
                };
                let mut b = strata::WriteBatch::new();
                let mut new = m.clone();
                match span(start, stop, m.count) {
                    // Nothing kept: the key goes (its items become orphans).
                    None => new.count = 0,
                    Some((from, to)) => {
                        let p = element_prefix(LIST_ITEM, k, m.version);
                        for pos in (m.head..m.head + from).chain(m.head + to..m.tail) {
                            b.delete(item(&p, pos));
                        }
                        new.head = m.head + from;
                        new.tail = m.head + to;
                        new.count = to - from;
                    }
                }
                if new != m {
                    self.finish(b, k, Some(&m), &new)?;
                }
                out.simple("OK");
            }
            "LREM" => {
                if !arity(argc == 4, out) {
                    return Ok(true);
                }
                let Some(count) = parse_i64(&args[2]) else {
                    out.error("ERR value is not an integer or out of range");
                    return Ok(true);
                };
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                let m = match self.lookup_for_update(k)? {
                    None => {
                        out.int(0);
                        return Ok(true);
                    }
                    Some(m) if m.kind != LIST => {
                        out.error(WRONGTYPE);
                        return Ok(true);
                    }
                    Some(m) => m,
                };
                let items = self.all_items(&strata::ReadOptions::default(), k, &m)?;
                let most = if count == 0 {
                    usize::MAX
                } else {
                    count.unsigned_abs() as usize
                };
                let mut gone = vec![false; items.len()];
                let mut removed = 0usize;
                let order: Box<dyn Iterator<Item = usize>> = if count < 0 {
                    Box::new((0..items.len()).rev())
                } else {
                    Box::new(0..items.len())
                };
                for i in order {
                    if removed == most {
                        break;
                    }
                    if items[i] == args[3] {
                        gone[i] = true;
                        removed += 1;
                    }
                }
                if removed > 0 {
                    let first = gone.iter().position(|&g| g).unwrap_or(0);
                    let kept: Vec<Vec<u8>> = items
                        .into_iter()
                        .zip(&gone)
                        .filter(|(_, &g)| !g)
                        .map(|(v, _)| v)
                        .collect();
                    let mut new = m.clone();
                    let mut b = strata::WriteBatch::new();
                    Self::list_rewrite(&mut b, k, &mut new, &kept, first);
                    self.finish(b, k, Some(&m), &new)?;
                }
                out.int(removed as i64);
            }
            "LINSERT" => {
                if !arity(argc == 5, out) {
                    return Ok(true);
                }
                let before = match upper(&args[2]).as_str() {
                    "BEFORE" => true,
                    "AFTER" => false,
                    _ => {
                        out.error("ERR syntax error");
                        return Ok(true);
                    }
                };
                let k = &args[1];
                let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                let m = match self.lookup_for_update(k)? {
                    None => {
                        out.int(0);
                        return Ok(true);
                    }
                    Some(m) if m.kind != LIST => {
                        out.error(WRONGTYPE);
                        return Ok(true);
                    }
                    Some(m) => m,
                };
                let items = self.all_items(&strata::ReadOptions::default(), k, &m)?;
                let Some(pivot) = items.iter().position(|v| *v == args[3]) else {
                    out.int(-1);
                    return Ok(true);
                };
                let at = if before { pivot } else { pivot + 1 };
                let p = element_prefix(LIST_ITEM, k, m.version);
                let mut new = m.clone();
                let mut b = strata::WriteBatch::new();
                // Shift the shorter side by one: the items before `at` toward the head, or
                // those from `at` on toward the tail.
                if at < items.len() / 2 {
                    new.head -= 1;
                    for (i, v) in items[..at].iter().enumerate() {
                        b.put(item(&p, new.head + i as u64), v);
                    }
                    b.put(item(&p, new.head + at as u64), &args[4]);
                } else {
                    for (i, v) in items.iter().enumerate().skip(at) {
                        b.put(item(&p, m.head + i as u64 + 1), v);
                    }
                    b.put(item(&p, m.head + at as u64), &args[4]);
                    new.tail += 1;
                }
                new.count += 1;
                self.finish(b, k, Some(&m), &new)?;
                out.int(new.count as i64);
            }
            "LPOS" => {
                if arity(argc >= 3, out) {
                    self.lpos(args, out)?;
                }
            }
            "RPOPLPUSH" | "LMOVE" => {
                let want = if name == "LMOVE" { 5 } else { 3 };
                if !arity(argc == want, out) {
                    return Ok(true);
                }
                let (from_left, to_left) = if name == "LMOVE" {
                    match (side(&args[3]), side(&args[4])) {
                        (Some(a), Some(b)) => (a, b),
                        _ => {
                            out.error("ERR syntax error");
                            return Ok(true);
                        }
                    }
                } else {
                    (false, true)
                };
                match self.list_move(&args[1], &args[2], from_left, to_left)? {
                    Moved::WrongType => out.error(WRONGTYPE),
                    Moved::Nothing => out.null(),
                    Moved::Item(v) => out.bulk(&v),
                }
            }
            "LMPOP" => {
                if let Some((keys, left, n)) = self.mpop_args(name, args, 1, out) {
                    self.lmpop(&keys, left, n, out)?;
                }
            }
            _ => return self.blocking_command(name, args, out),
        }
        Ok(true)
    }

    /// LMPOP's and BLMPOP's arguments after the first `skip`: numkeys key... LEFT|RIGHT
    /// [COUNT n]; None once the error is answered.
    pub(crate) fn mpop_args(
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
        let keys = rest[..numkeys].to_vec();
        let Some(left) = side(&rest[numkeys]) else {
            out.error("ERR syntax error");
            return None;
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
        Some((keys, left, n))
    }

    /// LMPOP's work: pops up to `n` from the first non-empty list of `keys` and answers
    /// [key, items]; false (nothing answered) if every list is empty.
    pub(crate) fn try_mpop(
        &self,
        keys: &[Vec<u8>],
        left: bool,
        n: u64,
        out: &mut Out,
    ) -> strata::Result<bool> {
        for k in keys {
            let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
            match self.lookup_for_update(k)? {
                None => continue,
                Some(m) if m.kind != LIST => {
                    out.error(WRONGTYPE);
                    return Ok(true);
                }
                Some(m) => {
                    let mut new = m.clone();
                    let mut b = strata::WriteBatch::new();
                    let taken = self.list_take(&mut b, k, &mut new, left, n)?;
                    self.finish(b, k, Some(&m), &new)?;
                    out.array(2);
                    out.bulk(k);
                    out.array(taken.len());
                    for v in &taken {
                        out.bulk(v);
                    }
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    fn lmpop(&self, keys: &[Vec<u8>], left: bool, n: u64, out: &mut Out) -> strata::Result<()> {
        if !self.try_mpop(keys, left, n, out)? {
            out.null_array();
        }
        Ok(())
    }

    /// Pops one item from `from` and pushes it onto `to`, atomically (both stripes held).
    pub(crate) fn list_move(
        &self,
        from: &[u8],
        to: &[u8],
        from_left: bool,
        to_left: bool,
    ) -> strata::Result<Moved> {
        let _g = self.lock_keys(&[record_key(from), record_key(to)]);
        let src = match self.lookup_for_update(from)? {
            None => return Ok(Moved::Nothing),
            Some(m) if m.kind != LIST => return Ok(Moved::WrongType),
            Some(m) => m,
        };
        let dst = if from == to {
            Some(src.clone())
        } else {
            match self.lookup_for_update(to)? {
                Some(m) if m.kind != LIST => return Ok(Moved::WrongType),
                m => m,
            }
        };
        let mut b = strata::WriteBatch::new();
        let mut s = src.clone();
        let taken = self.list_take(&mut b, from, &mut s, from_left, 1)?;
        let Some(v) = taken.into_iter().next() else {
            return Ok(Moved::Nothing);
        };
        if from == to {
            Self::list_push(&mut b, to, &mut s, to_left, std::slice::from_ref(&v));
            self.finish(b, from, Some(&src), &s)?;
        } else {
            let mut d = match &dst {
                Some(m) => m.clone(),
                None => Meta::collection(LIST, self.new_version()?),
            };
            Self::list_push(&mut b, to, &mut d, to_left, std::slice::from_ref(&v));
            let delta = Self::stage(&mut b, from, Some(&src), &s)
                + Self::stage(&mut b, to, dst.as_ref(), &d);
            self.write(b)?;
            self.keys_changed(delta);
            self.wake_blocked(to);
        }
        Ok(Moved::Item(v))
    }

    /// LPOS key element [RANK r] [COUNT n] [MAXLEN m].
    fn lpos(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let (mut rank, mut count, mut maxlen) = (1i64, None::<u64>, 0u64);
        let mut i = 3;
        while i < args.len() {
            let (Some(word), Some(v)) = (args.get(i).map(|a| upper(a)), args.get(i + 1)) else {
                out.error("ERR syntax error");
                return Ok(());
            };
            let Some(n) = parse_i64(v) else {
                out.error("ERR value is not an integer or out of range");
                return Ok(());
            };
            match word.as_str() {
                "RANK" if n == 0 => {
                    out.error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
                    return Ok(());
                }
                "RANK" if n == i64::MIN => {
                    out.error("ERR value is out of range");
                    return Ok(());
                }
                "RANK" => rank = n,
                "COUNT" if n < 0 => {
                    out.error("ERR COUNT can't be negative");
                    return Ok(());
                }
                "COUNT" => count = Some(n as u64),
                "MAXLEN" if n < 0 => {
                    out.error("ERR MAXLEN can't be negative");
                    return Ok(());
                }
                "MAXLEN" => maxlen = n as u64,
                _ => {
                    out.error("ERR syntax error");
                    return Ok(());
                }
            }
            i += 2;
        }
        let m = match self.list_at(&strata::ReadOptions::default(), &args[1])? {
            Err(()) => {
                out.error(WRONGTYPE);
                return Ok(());
            }
            Ok(None) => {
                if count.is_some() {
                    out.array(0);
                } else {
                    out.null();
                }
                return Ok(());
            }
            Ok(Some(m)) => m,
        };
        let items = self.all_items(&strata::ReadOptions::default(), &args[1], &m)?;
        let len = items.len();
        let want = match count {
            None => 1,
            Some(0) => usize::MAX,
            Some(c) => c as usize,
        };
        let mut skip = rank.unsigned_abs() - 1;
        let mut found = Vec::new();
        let limit = if maxlen == 0 {
            len
        } else {
            (maxlen as usize).min(len)
        };
        for step in 0..limit {
            let i = if rank > 0 { step } else { len - 1 - step };
            if items[i] == args[2] {
                if skip > 0 {
                    skip -= 1;
                } else {
                    found.push(i);
                    if found.len() == want {
                        break;
                    }
                }
            }
        }
        match count {
            None => match found.first() {
                Some(&i) => out.int(i as i64),
                None => out.null(),
            },
            Some(_) => {
                out.array(found.len());
                for i in found {
                    out.int(i as i64);
                }
            }
        }
        Ok(())
    }
}

/// What a move of one list item found.
pub(crate) enum Moved {
    WrongType,
    Nothing,
    Item(Vec<u8>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_spans_as_redis_reads_them() {
        assert_eq!(index(0, 3), Some(0));
        assert_eq!(index(-1, 3), Some(2));
        assert_eq!(index(3, 3), None);
        assert_eq!(index(-4, 3), None);
        assert_eq!(span(0, -1, 3), Some((0, 3)));
        assert_eq!(span(-100, 100, 3), Some((0, 3)));
        assert_eq!(span(1, 0, 3), None);
        assert_eq!(span(5, 10, 3), None);
        assert_eq!(span(0, -4, 3), None);
        assert_eq!(span(0, 0, 0), None);
    }
}
