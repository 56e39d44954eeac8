//! Counts level compactions in a LevelDB-family LOG file (LevelDB, HyperLevelDB, RocksDB),
//! for peers whose statistics do not count them: a merge logs "Compacting N@L + M@L+1 files"
//! (RocksDB: "Compacting N@L + M@L+1 files to L+1, score ..."), a moved table "Moved #F to
//! level-L" (RocksDB: "Moving #F to level-L").

/// (merges by input level, moved tables by input level) in the log text `log`.
pub fn compactions(log: &str) -> (Vec<u64>, Vec<u64>) {
    let (mut merges, mut moves) = (Vec::new(), Vec::new());
    let bump = |v: &mut Vec<u64>, level: usize| {
        if v.len() <= level {
            v.resize(level + 1, 0);
        }
        v[level] += 1;
    };
    for line in log.lines() {
        if let Some(rest) = after(line, "Compacting ") {
            // "N@L + M@L+1 files": the input level is the first L.
            if let Some(level) = rest
                .split_whitespace()
                .next()
                .and_then(|t| t.split_once('@'))
                .and_then(|(n, l)| n.parse::<u64>().ok().and(l.parse::<usize>().ok()))
            {
                bump(&mut merges, level);
            }
        } else if let Some(rest) = after(line, "Moved #").or_else(|| after(line, "Moving #")) {
            if let Some(level) = after(rest, " to level-").and_then(|r| {
                r.split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|d| d.parse::<usize>().ok())
            }) {
                bump(&mut moves, level.saturating_sub(1));
            }
        }
    }
    (merges, moves)
}

/// Bytes LevelDB's merges wrote, from its "Compacted N@L + M@L+1 files => B bytes" lines.
pub fn compacted_bytes(log: &str) -> u64 {
    log.lines()
        .filter(|l| l.contains("Compacted "))
        .filter_map(|l| after(l, " => "))
        .filter_map(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn after<'a>(s: &'a str, pat: &str) -> Option<&'a str> {
    s.find(pat).map(|i| &s[i + pat.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_leveldb_and_rocksdb_lines() {
        let log = "\
2026/11/22-10:00:00.000 7f Compacting 4@0 + 3@1 files
2026/11/22-10:00:01.000 7f Moved #12 to level-2 2097152 bytes OK: files[ 0 3 1 0 0 0 0 ]
2026/11/22-10:00:02.000 7f Compacting 1@1 + 2@2 files
2026/11/22-10:00:03.000 7f [default] [JOB 5] Compacting 4@0 + 1@1 files to L1, score 1.00
2026/11/22-10:00:04.000 7f [default] Moving #20 to level-3 100 bytes
2026/11/22-10:00:05.000 7f Compacted 4@0 + 3@1 files => 1000 bytes
";
        let (merges, moves) = compactions(log);
        assert_eq!(merges, vec![2, 1]);
        assert_eq!(moves, vec![0, 1, 1]);
        assert_eq!(compacted_bytes(log), 1000);
    }
}
