//! INCRBYFLOAT's arithmetic. Redis adds in `long double` and writes the sum with 17
//! digits after the point, trailing zeros trimmed, so `1` plus `-1.1` reads `-0.1`, where
//! an f64 sum reads `-0.10000000000000009`. strata has no `long double`; it adds the two
//! decimal texts exactly instead and rounds to those 17 places, which gives Redis's text
//! wherever the long double was exact to that many places (any sum of short decimals
//! below about 100) and the exact decimal where Redis's would show binary noise
//! (`1000.1` where Redis writes `1000.10000000000000009`). Operands with more than 38
//! significant digits, or too far apart in magnitude to align in 128 bits, are added as
//! f64s and the sum's shortest text is written the same way.

/// `mantissa * 10^exp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    mantissa: i128,
    exp: i32,
}

/// Places after the point in the written sum (Redis's `%.17Lf`).
const PLACES: i32 = 17;

/// A number in plain decimal notation (`-12.5`, `.5`, `3.`, `1e-3`, `+7E2`): None for hex,
/// `inf`, `nan`, or more than 38 significant digits.
fn parse(text: &str) -> Option<Decimal> {
    let b = text.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut mantissa: i128 = 0;
    let mut digits = 0usize;
    let mut significant = 0usize;
    let mut exp: i64 = 0;
    let mut seen_point = false;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                digits += 1;
                if significant > 0 || c != b'0' {
                    significant += 1;
                    if significant > 38 {
                        return None;
                    }
                    mantissa = mantissa * 10 + i128::from(c - b'0');
                }
                if seen_point {
                    exp -= 1;
                }
            }
            b'.' if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() {
        if b[i] != b'e' && b[i] != b'E' {
            return None;
        }
        let e: i64 = text.get(i + 1..)?.parse().ok()?;
        if e.abs() > 100_000 {
            return None;
        }
        exp += e;
    }
    let exp = i32::try_from(exp).ok()?;
    Some(Decimal {
        mantissa: if neg { -mantissa } else { mantissa },
        exp,
    })
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// The exact sum, or None when the operands cannot be aligned in 128 bits.
fn add(a: Decimal, b: Decimal) -> Option<Decimal> {
    let (hi, lo) = if a.exp >= b.exp { (a, b) } else { (b, a) };
    if hi.mantissa == 0 {
        return Some(lo);
    }
    let shift = u32::try_from(i64::from(hi.exp) - i64::from(lo.exp)).ok()?;
    let scaled = hi.mantissa.checked_mul(pow10(shift)?)?;
    Some(Decimal {
        mantissa: scaled.checked_add(lo.mantissa)?,
        exp: lo.exp,
    })
}

/// Rounds to `PLACES` places (half to even, as printf rounds an exact tie) and writes the
/// number in fixed notation without trailing zeros; `-0` is `0`.
fn write(d: Decimal) -> String {
    let Decimal {
        mut mantissa,
        mut exp,
    } = d;
    if exp < -PLACES {
        let cut = (-PLACES - exp) as u32;
        mantissa = match pow10(cut) {
            None => 0,
            Some(p) => {
                let (q, r) = (mantissa / p, mantissa % p);
                // |r| < p <= 10^38, so 2|r| fits in a u128.
                let twice = r.unsigned_abs() * 2;
                let up = twice > p.unsigned_abs() || (twice == p.unsigned_abs() && q % 2 != 0);
                if up {
                    q + mantissa.signum()
                } else {
                    q
                }
            }
        };
        exp = -PLACES;
    }
    if mantissa == 0 {
        return "0".to_string();
    }
    let neg = mantissa < 0;
    let mut digits = mantissa.unsigned_abs().to_string();
    let mut text = String::new();
    if neg {
        text.push('-');
    }
    if exp >= 0 {
        text.push_str(&digits);
        text.extend(std::iter::repeat_n('0', exp as usize));
        return text;
    }
    let places = (-exp) as usize;
    if digits.len() <= places {
        digits = "0".repeat(places - digits.len() + 1) + &digits;
    }
    let (int, frac) = digits.split_at(digits.len() - places);
    let frac = frac.trim_end_matches('0');
    text.push_str(int);
    if !frac.is_empty() {
        text.push('.');
        text.push_str(frac);
    }
    text
}

/// The text INCRBYFLOAT and HINCRBYFLOAT store and answer for `current + by`, given both
/// texts (already checked to be numbers) and their f64 sum (already checked finite).
pub(crate) fn sum_text(current: Option<&[u8]>, by: &[u8], f64_sum: f64) -> String {
    let exact = || {
        let a = match current {
            None => Decimal {
                mantissa: 0,
                exp: 0,
            },
            Some(c) => parse(std::str::from_utf8(c).ok()?)?,
        };
        add(a, parse(std::str::from_utf8(by).ok()?)?)
    };
    let d = exact().unwrap_or_else(|| {
        // f64's shortest text in scientific form parses back exactly (17 digits at most).
        parse(&format!("{f64_sum:e}")).unwrap_or(Decimal {
            mantissa: 0,
            exp: 0,
        })
    });
    write(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(cur: &str, by: &str) -> String {
        let f = cur.parse::<f64>().unwrap() + by.parse::<f64>().unwrap();
        sum_text(Some(cur.as_bytes()), by.as_bytes(), f)
    }

    #[test]
    fn sums_as_redis_writes_them() {
        assert_eq!(s("1", "-1.1"), "-0.1");
        assert_eq!(s("0.1", "0.2"), "0.3");
        assert_eq!(s("10.5", "0.1"), "10.6");
        assert_eq!(s("5.0e3", "2.0e2"), "5200");
        assert_eq!(s("17179869184", "1.5"), "17179869185.5");
        assert_eq!(s("1", "-1"), "0");
        assert_eq!(s("-0", "0"), "0");
        assert_eq!(s("3.", ".5"), "3.5");
        assert_eq!(s("0", "1e-20"), "0");
        assert_eq!(s("0", "5e-18"), "0"); // a tie rounds to even
        assert_eq!(s("0", "1.5e-17"), "0.00000000000000002");
        assert_eq!(s("0", "-0.000000000000000016"), "-0.00000000000000002");
        assert_eq!(s("12345678901234567890", "1"), "12345678901234567891");
        assert_eq!(s("0", "1e20"), "100000000000000000000");
        let third = format!("{}", 1.0f64 / 41.0);
        let minus = format!("{}", -1.0f64 / 41.0);
        assert_eq!(s(&s("0", &third), &minus), "0");
    }

    #[test]
    fn falls_back_to_f64_when_out_of_reach() {
        // 1e300 and 1 cannot align in 128 bits: the f64 sum is 1e300.
        let text = s("1e300", "1");
        assert_eq!(text.len(), 301);
        assert!(text.starts_with('1') && text[1..].bytes().all(|c| c == b'0'));
        assert_eq!(s("0", "1e-38"), "0");
        assert_eq!(
            s("1e-38", "99999999999999999999999999999999999999e-38"),
            "1"
        );
        assert!(parse("0x10").is_none() && parse("nan").is_none() && parse("").is_none());
        assert!(parse("1e").is_none() && parse("1.2.3").is_none() && parse("-").is_none());
    }
}
