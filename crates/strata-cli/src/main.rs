//! `strata`: read, write and inspect a strata database from a shell.
//!
//! Every subcommand takes `--db PATH`. Keys and values are given and shown as text with
//! escapes (`\xNN`, `\\`, `\n`, `\t`, `\r`, `\0`), or as hex with `--hex`; `--json` prints
//! one JSON object per line for scripts. Exit status: 0 done, 1 a key not found (`get`),
//! 2 an error (the message on stderr).

mod codec;

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::{value_parser, Arg, ArgAction, ArgMatches, Command};
use codec::{json_string, prefix_end, Encoding};
use strata::{Db, Options, ReadOptions};

/// A failure to report: the message, and the exit status.
struct Failure(String, u8);

/// The reader of our output went away (`strata scan | head`): not an error, and nothing to
/// say (exit status 0, as `cat` would).
const QUIET: Failure = Failure(String::new(), 0);

impl From<strata::Error> for Failure {
    fn from(e: strata::Error) -> Self {
        if e.io_kind() == Some(io::ErrorKind::BrokenPipe) {
            return QUIET;
        }
        Failure(e.to_string(), 2)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return QUIET;
        }
        Failure(format!("writing output: {e}"), 2)
    }
}

fn db_args(c: Command) -> Command {
    let name = c.get_name().to_string();
    c.arg(
        Arg::new("db")
            .long("db")
            .value_name("PATH")
            .required(true)
            .help("The database's directory"),
    )
    .arg(
        Arg::new("create")
            .long("create")
            .action(ArgAction::SetTrue)
            .help("Create the database if PATH holds none (otherwise such a PATH is refused)"),
    )
    .arg(
        Arg::new("preset")
            .long("preset")
            .value_name("NAME")
            .help(
                "Options preset to open with (default: the options recorded in the database's \
                 OPTIONS file, or the default preset)",
            ),
    )
    .arg(
        Arg::new("wal-dir")
            .long("wal-dir")
            .value_name("DIR")
            .help("Where the database keeps its WALs, if not in PATH"),
    )
    .arg(
        Arg::new("level-dir")
            .long("level-dir")
            .value_name("DIR")
            .help("Where the database keeps tables of levels >= 1, if not in PATH"),
    )
    .arg(
        Arg::new("value-dir")
            .long("value-dir")
            .value_name("DIR")
            .help("Where the database keeps separated values, if not in PATH"),
    )
    .arg(
        Arg::new("pmem-dir")
            .long("pmem-dir")
            .value_name("DIR")
            .help(
                "Where the database keeps L0 in persistent memory (rocksdb-l0-nvm, matrixkv), if not in PATH",
            ),
    )
    .args(
        OUTPUT_FLAGS
            .iter()
            .filter(|(_, commands, _)| commands.contains(&name.as_str()))
            .map(|&(flag, _, help)| Arg::new(flag).long(flag).action(ArgAction::SetTrue).help(help)),
    )
}

/// The output flags and the commands that honour them: a command is given only the flags
/// it honours, so its `--help` lists no other and clap refuses any other.
const OUTPUT_FLAGS: [(&str, &[&str], &str); 3] = [
    (
        "hex",
        &[
            "get",
            "put",
            "delete",
            "delete-range",
            "scan",
            "count",
            "dump",
            "load",
            "compact",
        ],
        "Keys and values as hex, in arguments and output",
    ),
    (
        "json",
        &["get", "scan", "count", "load", "property", "info", "stats"],
        "Output one JSON object per line: a key or value is a string where it is UTF-8, \
         a `_hex` field where not",
    ),
    (
        "escape",
        &["get", "scan", "dump"],
        "Print every byte outside printable ASCII as \\xNN (default: UTF-8 as is)",
    ),
];

/// Whether `m` was given the output flag `flag` (one its command may not have).
fn flag(m: &ArgMatches, flag: &str) -> bool {
    matches!(m.try_get_one::<bool>(flag), Ok(Some(true)))
}

/// A time to live in seconds, a non-negative decimal.
fn parse_ttl(s: &str) -> std::result::Result<std::time::Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    std::time::Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("{s:?}: a time to live is a number of seconds, 0 or more"))
}

fn backup_dir_arg() -> Arg {
    Arg::new("dir")
        .required(true)
        .value_name("BACKUP_DIR")
        .help("The backup directory (created by the first backup)")
}

/// `strata backup ...`.
fn backup(m: &ArgMatches) -> Result<(), Failure> {
    let (sub, m) = m.subcommand().expect("subcommand_required");
    let dir = m.get_one::<String>("dir").expect("required");
    if sub != "create" && !Path::new(dir).join("meta").is_dir() {
        return Err(Failure(format!("{dir}: no backup directory there"), 2));
    }
    let mut out = BufWriter::new(io::stdout().lock());
    match sub {
        "create" => {
            if let Some(path) = m.get_one::<String>("db") {
                if Path::new(path).is_file() {
                    return Err(Failure(
                        format!("{path} is a file: --db names the database's directory"),
                        2,
                    ));
                }
            }
            // (The engine first: a busy directory is refused before the database is
            // opened, which writes.)
            let engine = strata::BackupEngine::open(dir)?;
            let db = open(m)?;
            let i = engine.create_backup(&db)?;
            writeln!(
                out,
                "backup {}: {} files, {} bytes ({} files, {} bytes new)",
                i.id, i.files, i.bytes, i.copied_files, i.copied_bytes
            )?;
            drop(engine);
            db.close()?;
        }
        "list" => {
            let engine = strata::BackupEngine::open(dir)?;
            for i in engine.list()? {
                if flag(m, "json") {
                    writeln!(
                        out,
                        "{{\"id\":{},\"created\":{},\"sequence\":{},\"files\":{},\"bytes\":{},\"copied_files\":{},\"copied_bytes\":{}}}",
                        i.id, i.created, i.sequence, i.files, i.bytes, i.copied_files, i.copied_bytes
                    )?;
                } else {
                    writeln!(
                        out,
                        "{}\t{}\t{}\t{}\t{}\t{}",
                        i.id, i.created, i.sequence, i.files, i.bytes, i.copied_bytes
                    )?;
                }
            }
            for (id, e) in engine.damaged()? {
                eprintln!("backup {id}: {e} (`strata backup delete` removes it)");
            }
        }
        "verify" => {
            let engine = strata::BackupEngine::open(dir)?;
            let ids = match m.get_one::<u64>("id") {
                Some(&id) => vec![id],
                None => engine.list()?.iter().map(|i| i.id).collect(),
            };
            // Every backup checked, each failure said, the first one the exit's.
            let mut first: Option<strata::Error> = None;
            let one = m.get_one::<u64>("id").is_some();
            for id in ids {
                match engine.verify(id) {
                    Ok(()) => writeln!(out, "backup {id}: ok")?,
                    Err(e) if one => return Err(e.into()),
                    Err(e) => {
                        out.flush()?;
                        let named = e.message().contains(&format!("backup {id}"));
                        if named {
                            eprintln!("{e}");
                        } else {
                            eprintln!("backup {id}: {e}");
                        }
                        first.get_or_insert(e);
                    }
                }
            }
            if !one {
                for (id, e) in engine.damaged()? {
                    let e = strata::Error::new(e.kind(), format!("backup {id}: {}", e.message()));
                    eprintln!("{e}");
                    first.get_or_insert(e);
                }
            }
            if let Some(e) = first {
                return Err(strata::Error::new(
                    e.kind(),
                    "backups failed to verify (each named above)".to_string(),
                )
                .into());
            }
        }
        "restore" => {
            let engine = strata::BackupEngine::open(dir)?;
            let id = *m.get_one::<u64>("id").expect("required");
            engine.restore(id, m.get_one::<String>("target").expect("required"))?;
        }
        "delete" => {
            let engine = strata::BackupEngine::open(dir)?;
            engine.delete(*m.get_one::<u64>("id").expect("required"))?;
        }
        "purge" => {
            let engine = strata::BackupEngine::open(dir)?;
            let n = engine.purge(*m.get_one::<usize>("keep").expect("required"))?;
            writeln!(out, "deleted {n} backups")?;
        }
        _ => unreachable!("every backup subcommand is handled"),
    }
    out.flush()?;
    Ok(())
}

fn hex_arg() -> Arg {
    Arg::new("hex")
        .long("hex")
        .action(ArgAction::SetTrue)
        .help("Keys and values as hex")
}

fn range_args(c: Command) -> Command {
    c.arg(
        Arg::new("from")
            .long("from")
            .value_name("KEY")
            .help("First key (inclusive)"),
    )
    .arg(
        Arg::new("to")
            .long("to")
            .value_name("KEY")
            .help("End key (exclusive)"),
    )
    .arg(
        Arg::new("prefix")
            .long("prefix")
            .value_name("P")
            .help("Only keys starting with P"),
    )
}

fn cli() -> Command {
    Command::new("strata")
        .about("Read, write and inspect strata databases")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(db_args(
            Command::new("get")
                .about("Print KEY's value (exit status 1 if there is none)")
                .arg(Arg::new("key").required(true).value_name("KEY")),
        ))
        .subcommand(db_args(
            Command::new("put")
                .about("Set KEY to VALUE")
                .arg(Arg::new("key").required(true).value_name("KEY"))
                .arg(Arg::new("value").required(true).value_name("VALUE"))
                .arg(
                    Arg::new("ttl")
                        .long("ttl")
                        .value_name("SECONDS")
                        .value_parser(parse_ttl)
                        .help("Expire the value SECONDS (a decimal) after the write: no read returns it after that"),
                ),
        ))
        .subcommand(db_args(
            Command::new("delete")
                .about("Delete KEY")
                .arg(Arg::new("key").required(true).value_name("KEY")),
        ))
        .subcommand(db_args(
            Command::new("delete-range")
                .about("Delete every key from START (inclusive) to END (exclusive), as one write")
                .arg(Arg::new("start").required(true).value_name("START"))
                .arg(Arg::new("end").required(true).value_name("END")),
        ))
        .subcommand(range_args(db_args(
            Command::new("scan")
                .about("Print keys and values in key order")
                .arg(
                    Arg::new("limit")
                        .long("limit")
                        .value_name("N")
                        .value_parser(value_parser!(u64))
                        .help("At most N entries"),
                )
                .arg(
                    Arg::new("reverse")
                        .long("reverse")
                        .action(ArgAction::SetTrue)
                        .help("Largest key first"),
                )
                .arg(
                    Arg::new("keys-only")
                        .long("keys-only")
                        .action(ArgAction::SetTrue)
                        .help("Print keys only (separated values are not read)"),
                ),
        )))
        .subcommand(range_args(db_args(
            Command::new("count").about("Count the keys (in the range given)"),
        )))
        .subcommand(range_args(db_args(
            Command::new("dump")
                .about("Write every key and value, one `KEY<TAB>VALUE` line each (escaped text, or hex; an expiring entry adds `<TAB>expires=MS`, its expiry in ms since the Unix epoch), between a first and a last line that `load` checks (a dump cut short is refused)")
                .arg(
                    Arg::new("output")
                        .long("output")
                        .short('o')
                        .value_name("FILE")
                        .help("Write to FILE instead of stdout"),
                ),
        )))
        .subcommand(db_args(Command::new("flush").about("Write the memtable out as tables")))
        .subcommand(db_args(
            Command::new("checkpoint")
                .about(
                    "Write a consistent, openable copy of the database to a new directory \
                     (tables linked where the file system allows)",
                )
                .arg(
                    Arg::new("target")
                        .required(true)
                        .value_name("NEW_DIR")
                        .help("The new directory (must not exist; its parent must)"),
                ),
        ))
        .subcommand(
            Command::new("backup")
                .about(
                    "Incremental backups in a directory of their own: create, list, verify, \
                     restore, delete, purge",
                )
                .subcommand_required(true)
                .subcommand(db_args(
                    Command::new("create")
                        .about("Back the database up (sharing unchanged files with earlier backups)")
                        .arg(backup_dir_arg()),
                ))
                .subcommand(
                    Command::new("list")
                        .about("One line per backup: id, created (Unix seconds), sequence, files, bytes, bytes it added")
                        .arg(backup_dir_arg())
                        .arg(
                            Arg::new("json")
                                .long("json")
                                .action(ArgAction::SetTrue)
                                .help("One JSON object per line"),
                        ),
                )
                .subcommand(
                    Command::new("verify")
                        .about("Check every file of a backup (all backups by default): there, of its size and checksum")
                        .arg(backup_dir_arg())
                        .arg(Arg::new("id").value_name("ID").value_parser(value_parser!(u64))),
                )
                .subcommand(
                    Command::new("restore")
                        .about("Restore backup ID into NEW_DIR (must not exist), an openable database")
                        .arg(backup_dir_arg())
                        .arg(Arg::new("id").required(true).value_name("ID").value_parser(value_parser!(u64)))
                        .arg(Arg::new("target").required(true).value_name("NEW_DIR")),
                )
                .subcommand(
                    Command::new("delete")
                        .about("Delete backup ID and the files no other backup shares")
                        .arg(backup_dir_arg())
                        .arg(Arg::new("id").required(true).value_name("ID").value_parser(value_parser!(u64))),
                )
                .subcommand(
                    Command::new("purge")
                        .about("Delete every backup but the newest N")
                        .arg(backup_dir_arg())
                        .arg(
                            Arg::new("keep")
                                .long("keep")
                                .required(true)
                                .value_name("N")
                                .value_parser(value_parser!(usize)),
                        ),
                ),
        )
        .subcommand(db_args(
            Command::new("compact")
                .about("Compact the key range (all keys by default) down the levels, and wait")
                .arg(
                    Arg::new("from")
                        .long("from")
                        .value_name("KEY")
                        .help("First key"),
                )
                .arg(
                    Arg::new("to")
                        .long("to")
                        .value_name("KEY")
                        .help("Last key, compacted too (inclusive, unlike scan's --to)"),
                ),
        ))
        .subcommand(db_args(
            Command::new("property")
                .about("Print a property (e.g. strata.levels, strata.stats, strata.value-bytes)")
                .arg(Arg::new("name").required(true).value_name("NAME")),
        ))
        .subcommand(db_args(
            Command::new("info").about(
                "Levels, tables, what the manifest records (format features, L0 layout), \
                 value-store space, and the options the previous open recorded in OPTIONS",
            ),
        ))
        .subcommand(db_args(
            Command::new("stats").about(
                "The engine's counters of this command's own read-only open (so mostly \
                 zeros: counters are kept per open, not in the database; a running \
                 process's are its strata.stats property)",
            ),
        ))
        .subcommand(
            Command::new("sst-dump")
                .about("Show a table file: properties, blocks, and with --entries every entry; --verify checks every block's checksum")
                .arg(Arg::new("file").required(true).value_name("FILE"))
                .arg(
                    Arg::new("entries")
                        .long("entries")
                        .action(ArgAction::SetTrue)
                        .help("Every entry (key, sequence, kind, value); verifies every block"),
                )
                .arg(
                    Arg::new("verify")
                        .long("verify")
                        .action(ArgAction::SetTrue)
                        .help("Read every data block and verify its checksum"),
                )
                .arg(hex_arg()),
        )
        .subcommand(
            Command::new("wal-dump")
                .about("Show a WAL file's batches with their sequences")
                .arg(Arg::new("file").required(true).value_name("FILE"))
                .arg(hex_arg()),
        )
        .subcommand(
            Command::new("value-dump")
                .about("Show a value file's records (.blob, .vlog, .hkv or .grp), checking each")
                .arg(Arg::new("file").required(true).value_name("FILE"))
                .arg(hex_arg()),
        )
        .subcommand(
            Command::new("manifest-dump")
                .about("Show a manifest's edits in order (the current one of --db, or FILE)")
                .arg(Arg::new("file").value_name("FILE"))
                .arg(
                    Arg::new("db")
                        .long("db")
                        .value_name("PATH")
                        .conflicts_with("file")
                        .help("The database whose current manifest to show"),
                ),
        )
        .subcommand(db_args(Command::new("check").about(
            "Verify every checksum of every live file without opening the database; \
             report every problem (exit status 2 if any)",
        )))
        .subcommand(db_args(Command::new("repair").about(
            "Rebuild a database whose MANIFEST or CURRENT is lost or damaged from the tables, \
             WALs and value files that survive; replaced files are moved to lost/",
        )))
        .subcommand(db_args(
            Command::new("load")
                .about("Put every `KEY<TAB>VALUE` line of a dump (same encoding), in batches")
                .arg(
                    Arg::new("input")
                        .long("input")
                        .short('i')
                        .value_name("FILE")
                        .help("Read FILE instead of stdin"),
                ),
        ))
}

/// The database `m` names, opened as its flags say.
fn open(m: &ArgMatches) -> Result<Db, Failure> {
    let path = m.get_one::<String>("db").expect("required");
    let create = m.get_flag("create");
    if !create {
        require_database(path, m, "; --create makes one")?;
    }
    let opts = Options {
        create_if_missing: create,
        ..options(m)?
    };
    Ok(Db::open(path, opts)?)
}

/// The database `m` names, opened read-only (a command that only reads).
fn open_read_only(m: &ArgMatches) -> Result<Db, Failure> {
    let path = m.get_one::<String>("db").expect("required");
    require_database(path, m, "")?;
    Ok(Db::open_read_only(path, options(m)?)?)
}

/// Ok if `path` holds a database (a CURRENT file). Otherwise the error to show: for a
/// directory that holds tables, WALs or value files but no CURRENT (a database that lost its
/// CURRENT or MANIFEST), the engine's, which points to `strata repair` (a read-only open,
/// which creates nothing, gives it); for anything else, "not a strata database" and `hint`.
fn require_database(path: &str, m: &ArgMatches, hint: &str) -> Result<(), Failure> {
    if Path::new(path).join("CURRENT").exists() {
        return Ok(());
    }
    match Db::open_read_only(path, options(m)?) {
        Err(e) if e.kind() == strata::ErrorKind::Corruption => Err(Failure(e.to_string(), 2)),
        _ => Err(Failure(
            format!("{path}: not a strata database (no CURRENT file){hint}"),
            2,
        )),
    }
}

/// The options to open the database `m` names with: the `--preset` given; without one, the
/// options its last writing open recorded in `OPTIONS` (so a tool opens an `ohdb-2dc`
/// database with its level directory, a `blob` one with its value store, ...), or the
/// `default` preset where there is no such file. Directory flags override either.
fn options(m: &ArgMatches) -> Result<Options, Failure> {
    let given = m.get_one::<String>("preset");
    let preset = given.map_or("default", String::as_str);
    let dir = |name: &str| m.get_one::<String>(name).map(std::path::PathBuf::from);
    let named = given.is_some();
    let recorded = m
        .get_one::<String>("db")
        .filter(|_| !named)
        .and_then(|db| std::fs::read_to_string(Path::new(db).join("OPTIONS")).ok());
    let mut opts = match recorded {
        Some(text) => Options::from_text(&text).map_err(|e| {
            Failure(
                format!("{e} (the database's OPTIONS file; --preset NAME opens without it)"),
                2,
            )
        })?,
        None => Options::preset(preset)?,
    };
    if let Some(w) = dir("wal-dir") {
        // A directory named for the WALs places them (WALs left in `pmem_dir` by a
        // `matrixkv` preset are still found there: an open lists every directory).
        opts.wal_dir = Some(w);
        opts.wal_in_pmem = false;
    }
    opts.level_dir = dir("level-dir").or(opts.level_dir);
    opts.value_dir = dir("value-dir").or(opts.value_dir);
    opts.pmem_dir = dir("pmem-dir").or(opts.pmem_dir);
    opts.info_log = Some(std::sync::Arc::new(|line: &str| {
        eprintln!("strata: note: {line}")
    }));
    Ok(opts)
}

fn encoding(m: &ArgMatches) -> Encoding {
    if flag(m, "hex") {
        Encoding::Hex
    } else if flag(m, "escape") {
        Encoding::Escaped
    } else {
        Encoding::Text
    }
}

fn arg_bytes(m: &ArgMatches, name: &str) -> Result<Option<Vec<u8>>, Failure> {
    m.get_one::<String>(name)
        .map(|s| encoding(m).parse(s).map_err(|e| Failure(e, 2)))
        .transpose()
}

/// The read options for `--from`, `--to` and `--prefix` (the narrower of each bound).
fn range(m: &ArgMatches) -> Result<ReadOptions, Failure> {
    let mut lower = arg_bytes(m, "from")?;
    let mut upper = arg_bytes(m, "to")?;
    if let Some(p) = arg_bytes(m, "prefix")? {
        if lower.as_ref().is_none_or(|l| *l < p) {
            lower = Some(p.clone());
        }
        if let Some(end) = prefix_end(&p) {
            if upper.as_ref().is_none_or(|u| *u > end) {
                upper = Some(end);
            }
        }
    }
    Ok(ReadOptions {
        lower_bound: lower,
        upper_bound: upper,
        ..ReadOptions::default()
    })
}

/// The file-inspection commands, which open no database.
fn inspect(name: &str, m: &ArgMatches) -> Result<(), Failure> {
    use strata::inspect;
    let enc = encoding(m);
    let show = |b: &[u8]| enc.show(b);
    let mut out = BufWriter::new(io::stdout().lock());
    let problems = match name {
        "sst-dump" => {
            let file = m.get_one::<String>("file").expect("required");
            let what = inspect::TableDump {
                entries: m.get_flag("entries"),
                verify: m.get_flag("verify"),
            };
            inspect::dump_table(Path::new(file), what, &show, &mut out)?
        }
        "wal-dump" => {
            let file = m.get_one::<String>("file").expect("required");
            inspect::dump_wal(Path::new(file), &show, &mut out)?
        }
        "value-dump" => {
            let file = m.get_one::<String>("file").expect("required");
            inspect::dump_value_file(Path::new(file), &show, &mut out)?
        }
        _ => {
            let file = match (m.get_one::<String>("file"), m.get_one::<String>("db")) {
                (Some(f), _) => std::path::PathBuf::from(f),
                (None, Some(db)) => {
                    let current =
                        std::fs::read_to_string(Path::new(db).join("CURRENT")).map_err(|e| {
                            Failure(format!("{db}: not a strata database (CURRENT: {e})"), 2)
                        })?;
                    Path::new(db).join(current.trim())
                }
                (None, None) => {
                    return Err(Failure("manifest-dump: give FILE or --db PATH".into(), 2))
                }
            };
            inspect::dump_manifest(&file, &show, &mut out)?
        }
    };
    out.flush()?;
    if problems.is_empty() {
        return Ok(());
    }
    for p in &problems {
        eprintln!("strata: {p}");
    }
    Err(Failure(format!("{} problems found", problems.len()), 2))
}

fn run(m: &ArgMatches) -> Result<(), Failure> {
    let (name, m) = m.subcommand().expect("subcommand_required");
    if name == "backup" {
        return backup(m);
    }
    if matches!(
        name,
        "sst-dump" | "wal-dump" | "value-dump" | "manifest-dump"
    ) {
        return inspect(name, m);
    }
    if let Some(path) = m.get_one::<String>("db") {
        if Path::new(path).is_file() {
            return Err(Failure(
                format!("{path} is a file: --db names the database's directory"),
                2,
            ));
        }
    }
    match name {
        "repair" => return repair(m),
        "check" => return check(m),
        _ => {}
    }
    let cx = Cx {
        enc: encoding(m),
        json: flag(m, "json"),
    };
    // What the last writing open recorded (a read-only open writes nothing).
    let recorded = (name == "info").then(|| {
        let path = Path::new(m.get_one::<String>("db").expect("required")).join("OPTIONS");
        std::fs::read_to_string(&path).unwrap_or_else(|e| format!("(none: {e})"))
    });
    // Commands that only read open the database read-only: no lock, nothing written (no
    // WAL, manifest or OPTIONS), no flush, compaction or layout change.
    let reads_only = matches!(
        name,
        "get" | "scan" | "count" | "dump" | "info" | "stats" | "property"
    );
    // The arguments read before the database is opened: one that does not parse (or a
    // dump that cannot be read) creates nothing with `--create`.
    for a in ["key", "value", "start", "end", "from", "to", "prefix"] {
        if m.try_get_one::<String>(a).is_ok() {
            arg_bytes(m, a)?;
        }
    }
    if name == "load" {
        if let Some(path) = m.get_one::<String>("input") {
            std::fs::File::open(path).map_err(|e| Failure(format!("{path}: {e}"), 2))?;
            refuse_a_dump_cut_short(path)?;
        }
    }
    let db = if reads_only {
        open_read_only(m)?
    } else {
        open(m)?
    };
    let mut out = BufWriter::new(io::stdout().lock());
    match name {
        "get" => get(&db, m, &mut out, cx)?,
        "put" => {
            let key = arg_bytes(m, "key")?.expect("required");
            let value = arg_bytes(m, "value")?.expect("required");
            match m.get_one::<std::time::Duration>("ttl") {
                Some(&ttl) => db.put_with_ttl(key, value, ttl)?,
                None => db.put(key, value)?,
            }
        }
        "delete" => {
            let key = arg_bytes(m, "key")?.expect("required");
            db.delete(key)?;
        }
        "delete-range" => {
            let start = arg_bytes(m, "start")?.expect("required");
            let end = arg_bytes(m, "end")?.expect("required");
            db.delete_range(start, end)?;
        }
        "scan" => scan(&db, m, &mut out, cx)?,
        "count" => count(&db, m, &mut out, cx)?,
        "dump" => dump(&db, m, &mut out, cx)?,
        "load" => load_command(&db, m, &mut out, cx)?,
        "flush" => db.flush()?,
        "checkpoint" => {
            let target = m.get_one::<String>("target").expect("required");
            db.checkpoint(target)?;
        }
        "compact" => compact(&db, m)?,
        "property" => property(&db, m, &mut out, cx)?,
        "info" | "stats" => info(&db, name, recorded, &mut out, cx)?,
        _ => unreachable!("every subcommand is handled"),
    }
    out.flush()?;
    drop(out);
    db.close()?;
    Ok(())
}

/// How a command prints: the keys' and values' encoding, and whether as JSON.
#[derive(Clone, Copy)]
struct Cx {
    enc: Encoding,
    json: bool,
}

/// `strata repair`.
fn repair(m: &ArgMatches) -> Result<(), Failure> {
    let path = m.get_one::<String>("db").expect("required");
    if !Path::new(path).is_dir() {
        return Err(Failure(format!("{path}: no such directory"), 2));
    }
    let r = strata::repair(path, &options(m)?)?;
    for (file, offset, what) in &r.damage {
        eprintln!(
            "strata: skipped {} at offset {offset}: {what}",
            file.display()
        );
    }
    for (file, why) in &r.tables_lost {
        eprintln!("strata: lost table {}: {why}", file.display());
    }
    let l0 = if r.l0_parts_read > 0 {
        format!(", {} L0 rows", r.l0_parts_read)
    } else {
        String::new()
    };
    let obsolete = if r.obsolete_files > 0 {
        format!(
            " ({} tables and WALs the database no longer needed left out)",
            r.obsolete_files
        )
    } else {
        String::new()
    };
    println!(
        "repaired: {} keys from {} tables{l0} and {} WAL records{obsolete}, written to {} \
         tables; {} value files kept; replaced files moved to {}",
        r.keys,
        r.tables_read,
        r.wal_records,
        r.tables_written,
        r.value_files,
        r.moved_to.display()
    );
    if r.dropped_data() {
        for d in &r.dropped {
            eprintln!("strata: dropped: {d}");
        }
        return Err(Failure(
            format!(
                "repair dropped data the database held: {} entries it could count, in {} \
                 place(s) listed above; the database opens with what was recovered (the \
                 damaged files are in {})",
                r.entries_lost,
                r.dropped.len(),
                r.moved_to.display()
            ),
            2,
        ));
    }
    Ok(())
}

/// `strata check`.
fn check(m: &ArgMatches) -> Result<(), Failure> {
    let path = m.get_one::<String>("db").expect("required");
    require_database(path, m, "")?;
    let mut out = BufWriter::new(io::stdout().lock());
    let problems = strata::inspect::check(Path::new(path), &options(m)?, &mut out)?;
    out.flush()?;
    for p in &problems {
        eprintln!("strata: {p}");
    }
    if problems.is_empty() {
        println!("no problems found");
        return Ok(());
    }
    Err(Failure(format!("{} problems found", problems.len()), 2))
}

/// `strata get`.
fn get(db: &Db, m: &ArgMatches, out: &mut dyn Write, cx: Cx) -> Result<(), Failure> {
    let Cx { enc, json } = cx;
    let key = arg_bytes(m, "key")?.expect("required");
    match db.get(&key)? {
        Some(v) if json => writeln!(
            out,
            "{{{},{}}}",
            enc.json_field("key", &key),
            enc.json_field("value", &v)
        )?,
        Some(v) => writeln!(out, "{}", enc.show(&v))?,
        None => {
            return Err(Failure(format!("{}: not found", enc.show(&key)), 1));
        }
    }
    Ok(())
}

/// `strata scan`: stops at the first error, having printed only what came before it.
fn scan(db: &Db, m: &ArgMatches, out: &mut dyn Write, cx: Cx) -> Result<(), Failure> {
    let Cx { enc, json } = cx;
    let limit = m.get_one::<u64>("limit").copied().unwrap_or(u64::MAX);
    let keys_only = m.get_flag("keys-only");
    let mut it = db.iter(range(m)?)?;
    let reverse = m.get_flag("reverse");
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut n = 0;
    let mut last: Option<Vec<u8>> = None;
    while it.valid() && n < limit {
        // An entry is printed only once the iterator has met no error: past one
        // (a damaged block or value record), it may stand on an older version.
        if !keys_only {
            let _ = it.value();
        }
        it.status()
            .map_err(|e| stopped_listing(e, last.as_deref(), enc, reverse))?;
        match (json, keys_only) {
            (true, true) => writeln!(out, "{{{}}}", enc.json_field("key", it.key()))?,
            (true, false) => writeln!(
                out,
                "{{{},{}}}",
                enc.json_field("key", it.key()),
                enc.json_field("value", it.value())
            )?,
            (false, true) => writeln!(out, "{}", enc.show(it.key()))?,
            (false, false) => writeln!(out, "{}\t{}", enc.show(it.key()), enc.show(it.value()))?,
        }
        n += 1;
        last = Some(it.key().to_vec());
        if n == limit {
            // (Not a step further: an error past the last entry asked for is no
            // error of this listing.)
            break;
        }
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    it.status()
        .map_err(|e| stopped_listing(e, last.as_deref(), enc, reverse))?;
    Ok(())
}

/// `strata count`.
fn count(db: &Db, m: &ArgMatches, out: &mut dyn Write, cx: Cx) -> Result<(), Failure> {
    let json = cx.json;
    let mut it = db.iter(range(m)?)?;
    it.seek_to_first();
    let mut n = 0u64;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status()?;
    if json {
        writeln!(out, "{{\"count\":{n}}}")?;
    } else {
        writeln!(out, "{n}")?;
    }
    Ok(())
}

/// `strata dump`: framed, so that `load` refuses one cut short.
fn dump(db: &Db, m: &ArgMatches, out: &mut dyn Write, cx: Cx) -> Result<(), Failure> {
    let enc = cx.enc;
    let mut file;
    let w: &mut dyn Write = match m.get_one::<String>("output") {
        Some(path) => {
            file = BufWriter::new(
                std::fs::File::create(path).map_err(|e| Failure(format!("{path}: {e}"), 2))?,
            );
            &mut file
        }
        None => out,
    };
    let mut it = db.iter(range(m)?)?;
    it.seek_to_first();
    // Framed, so that `load` refuses a dump cut short: a first and a last line with
    // two tabs, which no entry line has (keys and values are escaped).
    writeln!(w, "{DUMP_HEADER}")?;
    let mut n = 0u64;
    let mut last: Option<Vec<u8>> = None;
    while it.valid() {
        let _ = it.value();
        it.status()
            .map_err(|e| stopped_listing(e, last.as_deref(), enc, false))?;
        match it.expires_at() {
            // (A third field: the expiry, so that `load` writes the entry as it was.)
            Some(at) => writeln!(
                w,
                "{}\t{}\texpires={at}",
                enc.show(it.key()),
                enc.show(it.value())
            )?,
            None => writeln!(w, "{}\t{}", enc.show(it.key()), enc.show(it.value()))?,
        }
        n += 1;
        last = Some(it.key().to_vec());
        it.next();
    }
    it.status()
        .map_err(|e| stopped_listing(e, last.as_deref(), enc, false))?;
    writeln!(w, "{DUMP_TRAILER}{n} entries")?;
    w.flush()?;
    Ok(())
}

/// `strata load`.
fn load_command(db: &Db, m: &ArgMatches, out: &mut dyn Write, cx: Cx) -> Result<(), Failure> {
    let Cx { enc, json } = cx;
    if let Some(path) = m.get_one::<String>("input") {
        refuse_a_dump_cut_short(path)?;
    }
    let input: Box<dyn io::BufRead> = match m.get_one::<String>("input") {
        Some(path) => Box::new(io::BufReader::new(
            std::fs::File::open(path).map_err(|e| Failure(format!("{path}: {e}"), 2))?,
        )),
        None => Box::new(io::stdin().lock()),
    };
    let n = load(db, enc, input)?;
    if json {
        writeln!(out, "{{\"loaded\":{n}}}")?;
    } else {
        eprintln!("loaded {n} entries");
    }
    Ok(())
}

/// `strata compact`: the range down the levels, waited for.
fn compact(db: &Db, m: &ArgMatches) -> Result<(), Failure> {
    let lo = arg_bytes(m, "from")?;
    let hi = arg_bytes(m, "to")?;
    db.compact_range(lo.as_deref(), hi.as_deref())?;
    db.wait_for_compactions()?;
    Ok(())
}

/// `strata property`.
fn property(db: &Db, m: &ArgMatches, out: &mut dyn Write, cx: Cx) -> Result<(), Failure> {
    let json = cx.json;
    let name = m.get_one::<String>("name").expect("required");
    let v = db.property(name).ok_or_else(|| {
        Failure(
            format!(
                "{name}: no such property (known: {})",
                Db::PROPERTY_NAMES.join(", ")
            ),
            1,
        )
    })?;
    if json {
        writeln!(out, "{{{}:{}}}", json_string(name), json_string(&v))?;
    } else {
        writeln!(out, "{v}")?;
    }
    Ok(())
}

/// `strata info` and `strata stats`: properties, and (info) the options OPTIONS recorded.
fn info(
    db: &Db,
    name: &str,
    recorded: Option<String>,
    out: &mut dyn Write,
    cx: Cx,
) -> Result<(), Failure> {
    let json = cx.json;
    let names: &[&str] = if name == "stats" {
        &["strata.stats"]
    } else {
        &[
            "strata.levels",
            "strata.tables",
            "strata.features",
            "strata.l0-layout",
            "strata.table-reads",
            "strata.value-files",
            "strata.value-bytes",
            "strata.value-live-bytes",
            "strata.value-garbage-bytes",
        ]
    };
    let mut props: Vec<(&str, String)> = names
        .iter()
        .map(|n| (*n, db.property(n).unwrap_or_default()))
        .collect();
    if let Some(text) = recorded {
        // Without the comment line: only `name = value` lines.
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        props.push(("options recorded by the previous open", lines.join("\n")));
    }
    if json {
        let fields: Vec<String> = props
            .iter()
            .map(|(n, v)| format!("{}:{}", json_string(n), json_string(v.trim_end())))
            .collect();
        writeln!(out, "{{{}}}", fields.join(","))?;
    } else if name == "stats" {
        write!(out, "{}", props[0].1)?;
    } else {
        for (n, v) in &props {
            let v = v.trim_end();
            if v.contains('\n') {
                writeln!(out, "{n}:\n{v}")?;
            } else {
                writeln!(out, "{n}: {v}")?;
            }
        }
    }
    Ok(())
}

/// Puts every line of a dump read from `input`, 1 MiB a batch; returns how many.
fn load(db: &Db, enc: Encoding, input: Box<dyn io::BufRead>) -> Result<u64, Failure> {
    let mut batch = strata::WriteBatch::new();
    let mut n = 0u64;
    // Entries written to the database so far (whole batches): what a failure leaves loaded.
    let mut committed = 0u64;
    // A dump (its first line `DUMP_HEADER`) must end with its last line: one cut short
    // would load as if whole.
    let (mut framed, mut ended) = (false, false);
    let progress = io::IsTerminal::is_terminal(&io::stderr());
    for (i, line) in io::BufRead::lines(input).enumerate() {
        let stopped = |why: String| {
            Failure(
                format!(
                    "line {}: {why}; {committed} entries before it were loaded (the lines \
                     up to the last full batch), nothing after",
                    i + 1
                ),
                2,
            )
        };
        let line = line.map_err(|e| stopped(format!("reading it: {e}")))?;
        if line.is_empty() {
            continue;
        }
        if i == 0 && line == DUMP_HEADER {
            framed = true;
            continue;
        }
        if line.starts_with(DUMP_TRAILER) {
            let count = trailer_count(&line);
            if count != Some(n) {
                return Err(stopped(match count {
                    Some(c) => format!("the dump's last line says {c} entries, {n} came before it"),
                    None => format!("the dump's last line ({line:?}) gives no entry count"),
                }));
            }
            ended = true;
            continue;
        }
        if ended {
            return Err(stopped("a line after the dump's last line".into()));
        }
        if line.starts_with("\t\t") {
            // No entry line starts with two tabs (keys and values are escaped).
            return Err(stopped(
                "two tabs where only a dump's first or last line has them".into(),
            ));
        }
        let bad = stopped;
        let (k, v) = line
            .split_once('\t')
            .ok_or_else(|| bad("no tab between key and value".into()))?;
        // An expiring entry's third field: its expiry (ms since the Unix epoch).
        let (v, expiry) = match v.split_once('\t') {
            Some((v, e)) => {
                let at = e
                    .strip_prefix("expires=")
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| bad(format!("a third field {e:?}: expected expires=MS")))?;
                (v, Some(at))
            }
            None => (v, None),
        };
        let (k, v) = (enc.parse(k).map_err(bad)?, enc.parse(v).map_err(bad)?);
        match expiry {
            Some(at) => batch.put_expiring_at(k, v, at),
            None => batch.put(k, v),
        };
        n += 1;
        if batch.encoded_len() >= 1 << 20 {
            db.write(&strata::WriteOptions::default(), std::mem::take(&mut batch))?;
            committed = n;
            if progress {
                eprint!("\rloaded {n} entries");
            }
        }
    }
    if framed && !ended {
        return Err(Failure(
            format!(
                "the dump has no last line: it was cut short; {committed} entries were \
                 loaded (the lines up to the last full batch), the rest are not"
            ),
            2,
        ));
    }
    if !batch.is_empty() {
        db.write(&strata::WriteOptions::default(), batch)?;
    }
    if progress {
        eprint!("\r");
    }
    Ok(n)
}

/// A dump file (its first line `DUMP_HEADER`) whose last line is not the dump's last line is
/// refused before anything is loaded (from stdin, `load` finds out at the end).
fn refuse_a_dump_cut_short(path: &str) -> Result<(), Failure> {
    use std::io::{Read, Seek, SeekFrom};
    let fail = |e: io::Error| Failure(format!("{path}: {e}"), 2);
    // (A pipe is read once, by `load`, which checks the end when it reaches it.)
    if !std::fs::metadata(path).map_err(fail)?.is_file() {
        return Ok(());
    }
    let mut f = std::fs::File::open(path).map_err(fail)?;
    let mut head = vec![0u8; DUMP_HEADER.len() + 2];
    let got = f.read(&mut head).map_err(fail)?;
    let head = &head[..got];
    let framed = [format!("{DUMP_HEADER}\n"), format!("{DUMP_HEADER}\r\n")]
        .iter()
        .any(|h| head.starts_with(h.as_bytes()));
    if !framed {
        return Ok(());
    }
    let len = f.metadata().map_err(fail)?.len();
    let back = len.min(256);
    f.seek(SeekFrom::Start(len - back)).map_err(fail)?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).map_err(fail)?;
    let tail = String::from_utf8_lossy(&tail);
    let last = tail
        .trim_end_matches(['\n', '\r'])
        .rsplit('\n')
        .next()
        .unwrap_or("");
    if trailer_count(last.trim_end_matches('\r')).is_some() {
        return Ok(());
    }
    // (Lines after the last line are another fault than a dump cut short.)
    if tail
        .lines()
        .any(|l| trailer_count(l.trim_end_matches('\r')).is_some())
    {
        return Err(Failure(
            format!("{path}: lines after the dump's last line; nothing was loaded"),
            2,
        ));
    }
    Err(Failure(
        format!("{path}: a dump without its last line: it was cut short; nothing was loaded"),
        2,
    ))
}

/// The entry count a dump's last line gives (`None`: not such a line, or cut short).
fn trailer_count(line: &str) -> Option<u64> {
    line.strip_prefix(DUMP_TRAILER)?
        .strip_suffix(" entries")?
        .parse()
        .ok()
}

/// A dump's first line: two tabs, which no entry line holds.
const DUMP_HEADER: &str = "\t\tstrata dump";
/// The start of a dump's last line, followed by the entry count and ` entries`.
const DUMP_TRAILER: &str = "\t\tend of the dump: ";

/// The error that stopped a listing (`scan`, `dump`), saying where: nothing after the last
/// key printed was printed.
fn stopped_listing(e: strata::Error, last: Option<&[u8]>, enc: Encoding, reverse: bool) -> Failure {
    let printed = match last {
        Some(k) => format!(
            "keys {} {} were not printed",
            if reverse { "before" } else { "after" },
            enc.show(k)
        ),
        None => "no key was printed".to_string(),
    };
    Failure(format!("{e}; the listing stopped there: {printed}"), 2)
}

fn main() -> ExitCode {
    let m = cli().get_matches();
    match run(&m) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg, code)) => {
            if !msg.is_empty() {
                eprintln!("strata: {msg}");
            }
            ExitCode::from(code)
        }
    }
}
