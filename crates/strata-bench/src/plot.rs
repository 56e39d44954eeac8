//! `--plot=FILE.png`: the timeline as a chart, benchmarks end to end on one time axis. Top:
//! ops/s per interval (write stalls show as troughs); bottom: p99 latency per interval.
//!
//! Drawn into an RGB buffer with a 3x5 bitmap font and written as a PNG with stored
//! (uncompressed) deflate blocks, so no image or plotting dependency is needed.

use crate::report::BenchResult;

const W: usize = 960;
const H: usize = 560;
const LEFT: usize = 70;
const RIGHT: usize = 20;
const COLORS: [[u8; 3]; 8] = [
    [31, 119, 180],
    [214, 39, 40],
    [44, 160, 44],
    [255, 127, 14],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [23, 190, 207],
];

struct Canvas {
    px: Vec<u8>,
}

/// 3x5 glyphs, 15 bits row-major from the top-left (bit 14 = top-left).
fn glyph(c: char) -> u16 {
    let rows: [u8; 5] = match c.to_ascii_uppercase() {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        'A' => [2, 5, 7, 5, 5],
        'B' => [6, 5, 6, 5, 6],
        'C' => [3, 4, 4, 4, 3],
        'D' => [6, 5, 5, 5, 6],
        'E' => [7, 4, 6, 4, 7],
        'F' => [7, 4, 6, 4, 4],
        'G' => [3, 4, 5, 5, 3],
        'H' => [5, 5, 7, 5, 5],
        'I' => [7, 2, 2, 2, 7],
        'J' => [1, 1, 1, 5, 2],
        'K' => [5, 5, 6, 5, 5],
        'L' => [4, 4, 4, 4, 7],
        'M' => [5, 7, 7, 5, 5],
        'N' => [6, 5, 5, 5, 5],
        'O' => [2, 5, 5, 5, 2],
        'P' => [6, 5, 6, 4, 4],
        'Q' => [2, 5, 5, 6, 3],
        'R' => [6, 5, 6, 5, 5],
        'S' => [3, 4, 2, 1, 6],
        'T' => [7, 2, 2, 2, 2],
        'U' => [5, 5, 5, 5, 7],
        'V' => [5, 5, 5, 5, 2],
        'W' => [5, 5, 7, 7, 5],
        'X' => [5, 5, 2, 5, 5],
        'Y' => [5, 5, 2, 2, 2],
        'Z' => [7, 1, 2, 4, 7],
        '.' => [0, 0, 0, 0, 2],
        '/' => [1, 1, 2, 4, 4],
        '-' => [0, 0, 7, 0, 0],
        '_' => [0, 0, 0, 0, 7],
        ':' => [0, 2, 0, 2, 0],
        '(' => [1, 2, 2, 2, 1],
        ')' => [4, 2, 2, 2, 4],
        _ => [0, 0, 0, 0, 0],
    };
    rows.iter().fold(0u16, |acc, r| (acc << 3) | u16::from(*r))
}

impl Canvas {
    fn new() -> Self {
        Canvas {
            px: vec![255; W * H * 3],
        }
    }

    fn set(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < W && (y as usize) < H {
            let i = (y as usize * W + x as usize) * 3;
            self.px[i..i + 3].copy_from_slice(&c);
        }
    }

    fn rect(&mut self, x0: usize, y0: usize, x1: usize, y1: usize, c: [u8; 3]) {
        for y in y0..y1 {
            for x in x0..x1 {
                self.set(x as i64, y as i64, c);
            }
        }
    }

    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), c: [u8; 3]) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.set(x, y, c);
            self.set(x, y + 1, c);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    fn text(&mut self, x: usize, y: usize, s: &str, c: [u8; 3]) {
        for (i, ch) in s.chars().enumerate() {
            let g = glyph(ch);
            for row in 0..5 {
                for col in 0..3 {
                    if g & (1 << (14 - (row * 3 + col))) != 0 {
                        let (px, py) = (x + i * 8 + col * 2, y + row * 2);
                        self.rect(px, py, px + 2, py + 2, c);
                    }
                }
            }
        }
    }
}

fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}K", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Renders the timelines of `results` into a PNG at `path`.
///
/// # Errors
/// If there is no timeline, or the file cannot be written.
pub fn timeline_png(results: &[BenchResult], path: &str) -> Result<(), String> {
    let series: Vec<&BenchResult> = results.iter().filter(|r| !r.timeline.is_empty()).collect();
    if series.is_empty() {
        return Err(
            "--plot: no timeline was recorded (benchmarks too short for the interval?)".into(),
        );
    }
    let total_t: f64 = series
        .iter()
        .filter(|r| !r.name.ends_with(".writer"))
        .map(|r| r.timeline.last().map_or(0.0, |i| i.t))
        .sum::<f64>()
        .max(1e-9);
    let max_ops = series
        .iter()
        .flat_map(|r| r.timeline.iter().map(|i| i.ops_per_sec))
        .fold(1.0, f64::max);
    let max_p99 = series
        .iter()
        .flat_map(|r| r.timeline.iter().map(|i| i.p99_us))
        .fold(1.0, f64::max);
    let mut c = Canvas::new();
    let grey = [200, 200, 200];
    let black = [0, 0, 0];
    // Top: ops/s, linear. Bottom: p99 in microseconds, log scale from 1 us.
    let log_max = max_p99.max(10.0).log10().ceil();
    let panels = [
        (60usize, 300usize, "OPS/S", max_ops),
        (330, 520, "P99 US", log_max),
    ];
    for (i, (top, bottom, label, max)) in panels.into_iter().enumerate() {
        c.rect(LEFT, top, W - RIGHT, top + 1, grey);
        c.rect(LEFT, bottom, W - RIGHT, bottom + 1, black);
        c.rect(LEFT, top, LEFT + 1, bottom, black);
        c.text(4, top, label, black);
        if i == 0 {
            c.text(4, top + 14, &human(max), black);
            c.text(4, bottom - 10, "0", black);
        } else {
            c.text(4, top + 14, "LOG", black);
            for d in 0..=max as usize {
                let y = bottom - (d as f64 / max * (bottom - top) as f64) as usize;
                c.rect(LEFT, y, W - RIGHT, y + 1, grey);
                c.text(
                    LEFT - 30,
                    y.saturating_sub(5),
                    &human(10f64.powi(d as i32)),
                    black,
                );
            }
        }
    }
    c.text(LEFT, H - 14, "0", black);
    c.text(W - RIGHT - 60, H - 14, &format!("{total_t:.0} S"), black);
    let mut offset = 0.0;
    let mut last_offset = 0.0;
    let mut legend_x = LEFT;
    let mut legend_y = 8;
    for (i, r) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let width = 14 + r.name.len() * 8 + 16;
        if legend_x + width > W {
            legend_x = LEFT;
            legend_y += 16;
        }
        c.rect(legend_x, legend_y, legend_x + 10, legend_y + 10, color);
        c.text(legend_x + 14, legend_y, &r.name, black);
        legend_x += width;
        // A concurrent series (the writer of readwhilewriting) shares the previous start.
        let concurrent = r.name.ends_with(".writer");
        let start = if concurrent { last_offset } else { offset };
        let xs = |t: f64| LEFT as i64 + ((start + t) / total_t * (W - LEFT - RIGHT) as f64) as i64;
        for (top, bottom, _, max) in panels {
            let log = top != 60;
            let ys = |v: f64| {
                let v = if log { v.max(1.0).log10() } else { v };
                bottom as i64 - (v / max * (bottom - top) as f64) as i64
            };
            let pick = |iv: &crate::report::Interval| if log { iv.p99_us } else { iv.ops_per_sec };
            let mut prev: Option<(i64, i64)> = None;
            for iv in &r.timeline {
                let p = (xs(iv.t), ys(pick(iv)));
                if let Some(q) = prev {
                    c.line(q, p, color);
                }
                prev = Some(p);
            }
        }
        if !concurrent {
            last_offset = offset;
            offset += r.timeline.last().map_or(0.0, |i| i.t);
        }
    }
    std::fs::write(path, encode_png(&c.px, W, H)).map_err(|e| format!("writing {path}: {e}"))
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// An RGB image as PNG (zlib stored blocks: larger files, no compressor needed).
pub fn encode_png(rgb: &[u8], w: usize, h: usize) -> Vec<u8> {
    let mut raw = Vec::with_capacity(h * (w * 3 + 1));
    for row in rgb.chunks(w * 3) {
        raw.push(0);
        raw.extend_from_slice(row);
    }
    let mut z = vec![0x78, 0x01];
    let chunks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, block) in chunks.iter().enumerate() {
        z.push(u8::from(i + 1 == chunks.len()));
        let len = block.len() as u16;
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &x in &raw {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut out = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&(w as u32).to_be_bytes());
    ihdr.extend_from_slice(&(h as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_known_value() {
        assert_eq!(crc32(b"IEND"), 0xae42_6082);
    }

    #[test]
    fn png_has_signature_and_chunks() {
        let png = encode_png(&[255u8; 4 * 3 * 3], 4, 3);
        assert_eq!(&png[..8], &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]);
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(&png[png.len() - 8..png.len() - 4], b"IEND");
    }
}
