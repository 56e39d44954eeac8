//! Commands on whole keys of any type: RENAME, RENAMENX, COPY, RANDOMKEY.
//!
//! A string moves as its record. A collection's elements are keyed by its key, so RENAME
//! and COPY write them again under the new key and a new version, in one batch with the
//! new record: O(n) in the elements (Redis's RENAME is O(1): it moves a pointer), the old
//! key's elements left to the compaction filter as orphans.

use crate::keyspace::{element_prefix, element_tags, end_of, record_key, Meta, RECORD, STRING};
use crate::resp::Out;
use crate::{check_arity, parse_i64, upper, Server};

impl Server {
    /// The commands of this file; false for another command.
    pub(crate) fn key_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        match name {
            "RENAME" | "RENAMENX" => {
                if arity(argc == 3, out) {
                    self.rename(name == "RENAMENX", &args[1], &args[2], out)?;
                }
            }
            "COPY" => {
                if arity(argc >= 3, out) {
                    self.copy(args, out)?;
                }
            }
            "RANDOMKEY" => {
                if arity(argc == 1, out) {
                    match self.random_key()? {
                        Some(k) => out.bulk(&k),
                        None => out.null(),
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Writes into `b` key `to` as a copy of `from`'s record `m` (expiry included), its
    /// elements under a new version; `old` is `to`'s live record, replaced.
    fn write_copy(
        &self,
        b: &mut strata::WriteBatch,
        from: &[u8],
        m: &Meta,
        to: &[u8],
        old: Option<&Meta>,
    ) -> strata::Result<()> {
        if m.kind == STRING {
            Self::put_record(b, to, old, m);
            return Ok(());
        }
        let copy = Meta {
            version: self.new_version()?,
            ..m.clone()
        };
        let snap = self.db.snapshot();
        for &tag in element_tags(m.kind) {
            let (p, np) = (
                element_prefix(tag, from, m.version),
                element_prefix(tag, to, copy.version),
            );
            let mut it = self.db.iter(strata::ReadOptions {
                lower_bound: Some(p.clone()),
                upper_bound: Some(end_of(&p)),
                snapshot: Some(snap.clone()),
            })?;
            it.seek_to_first();
            while it.valid() {
                let mut k = np.clone();
                k.extend_from_slice(&it.key()[p.len()..]);
                b.put(k, it.value());
                it.next();
            }
            it.status()?;
        }
        Self::put_record(b, to, old, &copy);
        Ok(())
    }

    fn rename(&self, nx: bool, from: &[u8], to: &[u8], out: &mut Out) -> strata::Result<()> {
        let _g = self.lock_keys(&[record_key(from), record_key(to)]);
        let Some(m) = self.lookup_for_update(from)? else {
            out.error("ERR no such key");
            return Ok(());
        };
        if from == to {
            if nx {
                out.int(0);
            } else {
                out.simple("OK");
            }
            return Ok(());
        }
        let old = self.lookup_for_update(to)?;
        if nx && old.is_some() {
            out.int(0);
            return Ok(());
        }
        let mut b = strata::WriteBatch::new();
        self.write_copy(&mut b, from, &m, to, old.as_ref())?;
        Self::delete_record(&mut b, from, &m);
        self.write(b)?;
        self.keys_changed(-i64::from(old.is_some()));
        self.wake_blocked(to);
        if nx {
            out.int(1);
        } else {
            out.simple("OK");
        }
        Ok(())
    }

    /// COPY source destination [DB n] [REPLACE] (database 0 only).
    fn copy(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let mut replace = false;
        let mut i = 3;
        while i < args.len() {
            match upper(&args[i]).as_str() {
                "REPLACE" => replace = true,
                "DB" if i + 1 < args.len() => {
                    match parse_i64(&args[i + 1]) {
                        None => {
                            out.error("ERR value is not an integer or out of range");
                            return Ok(());
                        }
                        Some(0) => {}
                        Some(_) => {
                            out.error(
                                "ERR DB index is out of range (strata-server has database 0 only)",
                            );
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
        let (from, to) = (&args[1], &args[2]);
        if from == to {
            out.error("ERR source and destination objects are the same");
            return Ok(());
        }
        let _g = self.lock_keys(&[record_key(from), record_key(to)]);
        let Some(m) = self.lookup_for_update(from)? else {
            out.int(0);
            return Ok(());
        };
        let old = self.lookup_for_update(to)?;
        if old.is_some() && !replace {
            out.int(0);
            return Ok(());
        }
        let mut b = strata::WriteBatch::new();
        self.write_copy(&mut b, from, &m, to, old.as_ref())?;
        self.write(b)?;
        self.keys_changed(i64::from(old.is_none()));
        self.wake_blocked(to);
        out.int(1);
        Ok(())
    }

    /// A key chosen at random: the first live key at or after a random point of the key
    /// range (wrapping around once), so keys after long gaps are likelier than others (Redis
    /// picks a random slot of its hash table, with the same kind of bias).
    fn random_key(&self) -> strata::Result<Option<Vec<u8>>> {
        let now = crate::keyspace::now_ms();
        let point = {
            // A random key: the clock's nanoseconds mixed (no RNG dependency for this).
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let mut x = t ^ (self.commands.load(std::sync::atomic::Ordering::Relaxed) << 32);
            x ^= x >> 33;
            x = x.wrapping_mul(0xff51afd7ed558ccd);
            x ^= x >> 33;
            let mut p = vec![RECORD];
            p.extend_from_slice(&x.to_be_bytes());
            p
        };
        for from in [point, vec![RECORD]] {
            let mut it = self.key_records(from)?;
            while it.valid() {
                if !crate::keyspace::expired_at(it.value(), now) {
                    return Ok(Some(it.key()[1..].to_vec()));
                }
                it.next();
            }
            it.status()?;
        }
        Ok(None)
    }
}
