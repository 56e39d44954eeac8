//! Key expiry: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX, GT, LT), TTL, PTTL,
//! EXPIRETIME, PEXPIRETIME, PERSIST, SETEX, PSETEX, GETEX.
//!
//! A key's expiry is in its record (keyspace.rs), as milliseconds since the Unix epoch, and
//! in the expiry index, ordered by time. Reads judge it (an expired key reads as missing);
//! a command that writes a key reaps it first if it has expired; the background's active
//! expiry walks the index from its oldest entry and reaps what is due. Reaping deletes the
//! record only: a collection's elements become orphans for the compaction filter.

use crate::keyspace::{now_ms, record_key, Meta, STRING};
use crate::resp::Out;
use crate::types::WRONGTYPE;
use crate::{check_arity, lock, parse_i64, stripe_of, upper, Server};

/// The deadline (ms since the epoch) that SET's, SETEX's and GETEX's `unit` `n` gives at
/// `now`, or None where Redis answers "invalid expire time": not positive, or past the
/// 64-bit range.
pub(crate) fn deadline(unit: &str, n: &[u8], now: u64) -> Option<u64> {
    let n = parse_i64(n).filter(|&n| n > 0)?;
    let ms = match unit {
        "EX" | "EXAT" => n.checked_mul(1000)?,
        _ => n,
    };
    let at = match unit {
        "EX" | "PX" => ms.checked_add(i64::try_from(now).ok()?)?,
        _ => ms,
    };
    Some(at as u64)
}

impl Server {
    /// The expiry commands; false for another command.
    pub(crate) fn expire_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        let arity = |ok: bool, out: &mut Out| check_arity(name, ok, out);
        match name {
            "EXPIRE" | "PEXPIRE" | "EXPIREAT" | "PEXPIREAT" => {
                if arity(argc >= 3, out) {
                    self.expire(name, args, out)?;
                }
            }
            "TTL" | "PTTL" | "EXPIRETIME" | "PEXPIRETIME" => {
                if arity(argc == 2, out) {
                    let n = match self.lookup(&args[1])? {
                        None => -2,
                        Some(m) if m.expire == 0 => -1,
                        Some(m) => {
                            let left = m.expire.saturating_sub(now_ms());
                            (match name {
                                "TTL" => (left + 500) / 1000,
                                "PTTL" => left,
                                "EXPIRETIME" => m.expire / 1000,
                                _ => m.expire,
                            }) as i64
                        }
                    };
                    out.int(n);
                }
            }
            "PERSIST" => {
                if arity(argc == 2, out) {
                    let _g = lock(&self.stripes[stripe_of(&record_key(&args[1]))]);
                    match self.lookup_for_update(&args[1])? {
                        Some(m) if m.expire != 0 => {
                            let mut b = strata::WriteBatch::new();
                            let new = Meta {
                                expire: 0,
                                ..m.clone()
                            };
                            Self::put_record(&mut b, &args[1], Some(&m), &new);
                            self.write(b)?;
                            out.int(1);
                        }
                        _ => out.int(0),
                    }
                }
            }
            "SETEX" | "PSETEX" => {
                if arity(argc == 4, out) {
                    let unit = if name == "SETEX" { "EX" } else { "PX" };
                    let Some(at) = deadline(unit, &args[2], now_ms()) else {
                        if parse_i64(&args[2]).is_none() {
                            out.error("ERR value is not an integer or out of range");
                        } else {
                            out.error(&format!(
                                "ERR invalid expire time in '{}' command",
                                name.to_ascii_lowercase()
                            ));
                        }
                        return Ok(true);
                    };
                    let _g = lock(&self.stripes[stripe_of(&record_key(&args[1]))]);
                    let old = self.lookup_for_update(&args[1])?;
                    let mut b = strata::WriteBatch::new();
                    Self::put_record(
                        &mut b,
                        &args[1],
                        old.as_ref(),
                        &Meta::string(args[3].clone(), at),
                    );
                    self.write(b)?;
                    self.keys_changed(i64::from(old.is_none()));
                    out.simple("OK");
                }
            }
            "GETEX" => {
                if arity(argc >= 2, out) {
                    self.getex(args, out)?;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [NX|XX|GT|LT].
    fn expire(&self, name: &str, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let Some(n) = parse_i64(&args[2]) else {
            out.error("ERR value is not an integer or out of range");
            return Ok(());
        };
        let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
        for a in &args[3..] {
            match upper(a).as_str() {
                "NX" => nx = true,
                "XX" => xx = true,
                "GT" => gt = true,
                "LT" => lt = true,
                _ => {
                    out.error(&format!(
                        "ERR Unsupported option {}",
                        String::from_utf8_lossy(a)
                    ));
                    return Ok(());
                }
            }
        }
        if nx && (xx || gt || lt) {
            out.error("ERR NX and XX, GT or LT options at the same time are not compatible");
            return Ok(());
        }
        if gt && lt {
            out.error("ERR GT and LT options at the same time are not compatible");
            return Ok(());
        }
        let now = now_ms() as i64;
        let invalid = |out: &mut Out| {
            out.error(&format!(
                "ERR invalid expire time in '{}' command",
                name.to_ascii_lowercase()
            ))
        };
        let ms = if name == "EXPIRE" || name == "EXPIREAT" {
            match n.checked_mul(1000) {
                Some(ms) => ms,
                None => {
                    invalid(out);
                    return Ok(());
                }
            }
        } else {
            n
        };
        let at = if name.ends_with("AT") {
            Some(ms)
        } else {
            ms.checked_add(now)
        };
        let Some(at) = at else {
            invalid(out);
            return Ok(());
        };
        let _g = lock(&self.stripes[stripe_of(&record_key(&args[1]))]);
        let Some(m) = self.lookup_for_update(&args[1])? else {
            out.int(0);
            return Ok(());
        };
        // No expiry counts as forever: GT never beats it, LT always does.
        let current = if m.expire == 0 {
            i64::MAX
        } else {
            m.expire as i64
        };
        let allowed = (!nx || m.expire == 0)
            && (!xx || m.expire != 0)
            && (!gt || at > current)
            && (!lt || at < current);
        if !allowed {
            out.int(0);
            return Ok(());
        }
        let mut b = strata::WriteBatch::new();
        if at <= now {
            // A time already past deletes the key (as Redis does).
            Self::delete_record(&mut b, &args[1], &m);
            self.write(b)?;
            self.keys_changed(-1);
        } else {
            let new = Meta {
                expire: at as u64,
                ..m.clone()
            };
            Self::put_record(&mut b, &args[1], Some(&m), &new);
            self.write(b)?;
        }
        out.int(1);
        Ok(())
    }

    /// GETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST].
    fn getex(&self, args: &[Vec<u8>], out: &mut Out) -> strata::Result<()> {
        let mut change: Option<Option<u64>> = None;
        let mut i = 2;
        while i < args.len() {
            let word = upper(&args[i]);
            match word.as_str() {
                "PERSIST" if change.is_none() => change = Some(None),
                "EX" | "PX" | "EXAT" | "PXAT" if change.is_none() && i + 1 < args.len() => {
                    let Some(at) = deadline(&word, &args[i + 1], now_ms()) else {
                        out.error(if parse_i64(&args[i + 1]).is_none() {
                            "ERR value is not an integer or out of range"
                        } else {
                            "ERR invalid expire time in 'getex' command"
                        });
                        return Ok(());
                    };
                    change = Some(Some(at));
                    i += 1;
                }
                _ => {
                    out.error("ERR syntax error");
                    return Ok(());
                }
            }
            i += 1;
        }
        let _g = lock(&self.stripes[stripe_of(&record_key(&args[1]))]);
        let m = match self.lookup_for_update(&args[1])? {
            None => {
                out.null();
                return Ok(());
            }
            Some(m) if m.kind != STRING => {
                out.error(WRONGTYPE);
                return Ok(());
            }
            Some(m) => m,
        };
        out.bulk(&m.value);
        let Some(at) = change else {
            return Ok(());
        };
        let at = at.unwrap_or(0);
        let mut b = strata::WriteBatch::new();
        if at != 0 && at <= now_ms() {
            Self::delete_record(&mut b, &args[1], &m);
            self.write(b)?;
            self.keys_changed(-1);
        } else if at != m.expire {
            Self::put_record(
                &mut b,
                &args[1],
                Some(&m),
                &Meta {
                    expire: at,
                    ..m.clone()
                },
            );
            self.write(b)?;
        }
        Ok(())
    }
}
