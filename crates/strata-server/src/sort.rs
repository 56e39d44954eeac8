//! SORT and SORT_RO: the elements of a list, set or sorted set, ordered as numbers or as
//! strings, by themselves or by the values of other keys (`BY pattern`), with other keys'
//! values fetched beside them (`GET pattern`), a window of them (`LIMIT`), and the result
//! stored as a list (`STORE`). Everything is read from one snapshot; `STORE` holds the
//! destination's lock from before the read (the destination may be the source).

use crate::keyspace::{
    element_prefix, record_key, Meta, HASH, HASH_FIELD, LIST, SET, STRING, ZSET,
};
use crate::resp::Out;
use crate::types::WRONGTYPE;
use crate::{lock, parse_i64, stripe_of, upper, Server};

/// What a pattern names for one element.
enum Named {
    /// `#`: the element itself.
    Itself,
    /// A string key, or a hash key and a field (`key->field`).
    Key(Vec<u8>, Option<Vec<u8>>),
    /// A pattern without `*`: nothing.
    Nothing,
}

/// Redis's reading of `pattern` for `element`: the first `*` takes the element; a `->` after
/// it (with a field name after that) names a hash field.
fn named(pattern: &[u8], element: &[u8]) -> Named {
    if pattern == b"#" {
        return Named::Itself;
    }
    let Some(star) = pattern.iter().position(|&b| b == b'*') else {
        return Named::Nothing;
    };
    let arrow = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + 1 + i)
        .filter(|&i| i + 2 < pattern.len());
    let key_end = arrow.unwrap_or(pattern.len());
    let mut key = pattern[..star].to_vec();
    key.extend_from_slice(element);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    Named::Key(key, arrow.map(|i| pattern[i + 2..].to_vec()))
}

/// A number as SORT reads it, as Redis's strtod does: leading blanks skipped, the empty
/// string 0, not NaN, not out of range (an infinity only when written as one).
fn number(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?.trim_start();
    if s.is_empty() {
        return Some(0.0);
    }
    let x: f64 = s.parse().ok()?;
    let written_infinite = s
        .trim_start_matches(['+', '-'])
        .to_ascii_lowercase()
        .starts_with("inf");
    (!x.is_nan() && (x.is_finite() || written_infinite)).then_some(x)
}

struct Item {
    element: Vec<u8>,
    score: f64,
    by: Option<Vec<u8>>,
}

impl Server {
    /// SORT and SORT_RO; false for another command.
    pub(crate) fn sort_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        if name != "SORT" && name != "SORT_RO" {
            return Ok(false);
        }
        if !crate::check_arity(name, args.len() >= 2, out) {
            return Ok(true);
        }
        let (mut desc, mut alpha, mut by, mut gets) = (false, false, None, Vec::new());
        let (mut limit, mut store, mut dontsort) = (None, None, false);
        let mut i = 2;
        while i < args.len() {
            let left = args.len() - i - 1;
            match upper(&args[i]).as_str() {
                "ASC" => desc = false,
                "DESC" => desc = true,
                "ALPHA" => alpha = true,
                "LIMIT" if left >= 2 => {
                    match (parse_i64(&args[i + 1]), parse_i64(&args[i + 2])) {
                        (Some(o), Some(c)) => limit = Some((o, c)),
                        _ => {
                            out.error("ERR value is not an integer or out of range");
                            return Ok(true);
                        }
                    }
                    i += 2;
                }
                "STORE" if left >= 1 && name == "SORT" => {
                    store = Some(args[i + 1].clone());
                    i += 1;
                }
                "BY" if left >= 1 => {
                    // A pattern without `*` (say `nosort`) leaves the order as it is.
                    if !args[i + 1].contains(&b'*') {
                        dontsort = true;
                    }
                    by = Some(args[i + 1].clone());
                    i += 1;
                }
                "GET" if left >= 1 => {
                    gets.push(args[i + 1].clone());
                    i += 1;
                }
                _ => {
                    out.error("ERR syntax error");
                    return Ok(true);
                }
            }
            i += 1;
        }
        let _g = store
            .as_ref()
            .map(|d| lock(&self.stripes[stripe_of(&record_key(d))]));
        let ro = self.snapshot_reads();
        let k = &args[1];
        let (elements, kind) = match self.lookup_in(&ro, k)? {
            None => (Vec::new(), LIST),
            Some(m) => match self.sort_elements(&ro, k, &m)? {
                Some(e) => (e, m.kind),
                None => {
                    out.error(WRONGTYPE);
                    return Ok(true);
                }
            },
        };
        // Stored from a set, the order is made definite (Redis sorts as strings then).
        if dontsort && kind == SET && store.is_some() {
            dontsort = false;
            alpha = true;
            by = None;
        }
        let mut items: Vec<Item> = Vec::with_capacity(elements.len());
        for e in elements {
            let by_value = match (&by, dontsort) {
                (Some(p), false) => self.sort_lookup(&ro, p, &e)?,
                _ => None,
            };
            let score = if alpha || dontsort {
                0.0
            } else {
                match by_value
                    .as_deref()
                    .map_or(if by.is_some() { Some(0.0) } else { number(&e) }, number)
                {
                    Some(x) => x,
                    None => {
                        out.error("ERR One or more scores can't be converted into double");
                        return Ok(true);
                    }
                }
            };
            items.push(Item {
                element: e,
                score,
                by: by_value,
            });
        }
        if !dontsort {
            items.sort_by(|a, b| {
                let o = if !alpha {
                    // (-0 and 0 are equal, as in C; no NaN reaches here.)
                    a.score
                        .partial_cmp(&b.score)
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then_with(|| a.element.cmp(&b.element))
                } else if by.is_some() {
                    a.by.cmp(&b.by)
                } else {
                    a.element.cmp(&b.element)
                };
                if desc {
                    o.reverse()
                } else {
                    o
                }
            });
        } else if desc && (kind == ZSET || kind == LIST) {
            // (Unsorted, DESC walks a list or a sorted set from its end, as Redis does.)
            items.reverse();
        }
        let n = items.len() as i64;
        let (start, end) = match limit {
            None => (0, n - 1),
            Some((o, c)) => {
                let start = o.max(0);
                let mut end = if c < 0 {
                    n - 1
                } else {
                    start.saturating_add(c - 1)
                };
                if end >= n {
                    end = n - 1;
                }
                (start, end)
            }
        };
        let window: &[Item] = if start >= n || end < start {
            &[]
        } else {
            &items[start as usize..=end as usize]
        };
        // The output: each element, or what each GET names for it; streamed to the reply.
        let each = gets.len().max(1);
        let mut output: Vec<Option<Vec<u8>>> = Vec::new();
        if store.is_none() {
            out.array(window.len().saturating_mul(each));
        }
        for it in window {
            let mut emit = |v: Option<Vec<u8>>, out: &mut Out| {
                if store.is_some() {
                    output.push(v);
                    return;
                }
                match v {
                    Some(v) => out.bulk(&v),
                    None => out.null(),
                }
                out.spill();
            };
            if gets.is_empty() {
                emit(Some(it.element.clone()), out);
            }
            for g in &gets {
                let v = match named(g, &it.element) {
                    Named::Itself => Some(it.element.clone()),
                    _ => self.sort_lookup(&ro, g, &it.element)?,
                };
                emit(v, out);
            }
        }
        match store {
            None => {}
            Some(dst) => {
                let old = self.lookup_for_update(&dst)?;
                let mut m = Meta::collection(LIST, self.new_version()?);
                let mut b = strata::WriteBatch::new();
                let values: Vec<Vec<u8>> =
                    output.into_iter().map(Option::unwrap_or_default).collect();
                Self::list_push(&mut b, &dst, &mut m, false, &values);
                self.finish(b, &dst, old.as_ref(), &m)?;
                self.wake_blocked(&dst);
                out.int(values.len() as i64);
            }
        }
        Ok(true)
    }

    /// The elements of the collection `m` at `k`; None for a string or a hash.
    fn sort_elements(
        &self,
        ro: &strata::ReadOptions,
        k: &[u8],
        m: &Meta,
    ) -> strata::Result<Option<Vec<Vec<u8>>>> {
        Ok(Some(match m.kind {
            LIST => self.all_items(ro, k, m)?,
            SET => self.members(ro, k, m)?,
            ZSET => self
                .zset_all(ro, k, m)?
                .into_iter()
                .map(|(_, x)| x)
                .collect(),
            _ => return Ok(None),
        }))
    }

    /// The value `pattern` names for `element`: a string key's value, a hash field's, or
    /// None (missing, another type, or a pattern without `*`).
    fn sort_lookup(
        &self,
        ro: &strata::ReadOptions,
        pattern: &[u8],
        element: &[u8],
    ) -> strata::Result<Option<Vec<u8>>> {
        let (key, field) = match named(pattern, element) {
            Named::Itself => return Ok(Some(element.to_vec())),
            Named::Nothing => return Ok(None),
            Named::Key(k, f) => (k, f),
        };
        let Some(m) = self.lookup_in(ro, &key)? else {
            return Ok(None);
        };
        match (field, m.kind) {
            (None, STRING) => Ok(Some(m.value)),
            (Some(f), HASH) => {
                let mut fk = element_prefix(HASH_FIELD, &key, m.version);
                fk.extend_from_slice(&f);
                self.db.get_opt(ro, &fk)
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_name_keys_and_hash_fields_as_redis_reads_them() {
        let key = |n: Named| match n {
            Named::Key(k, f) => (k, f),
            _ => panic!("not a key"),
        };
        assert_eq!(key(named(b"w_*", b"3")), (b"w_3".to_vec(), None));
        assert_eq!(
            key(named(b"h_*->f", b"3")),
            (b"h_3".to_vec(), Some(b"f".to_vec()))
        );
        // `->` at the end names no field; a `*` after the first is kept.
        assert_eq!(key(named(b"h_*->", b"3")), (b"h_3->".to_vec(), None));
        assert_eq!(key(named(b"a*b*", b"x")), (b"axb*".to_vec(), None));
        assert!(matches!(named(b"#", b"x"), Named::Itself));
        assert!(matches!(named(b"nosort", b"x"), Named::Nothing));
        assert_eq!(number(b"1.5"), Some(1.5));
        assert_eq!(number(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(number(b"abc"), None);
        assert_eq!(number(b"nan"), None);
        assert_eq!(number(b""), Some(0.0));
        assert_eq!(number(b" 2"), Some(2.0));
        assert_eq!(number(b"1e400"), None);
        assert_eq!(number(b"+inf"), Some(f64::INFINITY));
    }
}
