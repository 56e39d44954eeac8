//! `strata-server --dir PATH [--port 6379] [--bind 127.0.0.1] [--requirepass-file FILE] ...`:
//! a strata database served over the Redis protocol.

use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{value_parser, Arg, ArgAction, Command};
use strata_server::resp::Limits;
use strata_server::{Config, Server, SyncMode};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn cli() -> Command {
    Command::new("strata-server")
        .about("A strata database served over the Redis protocol (RESP2 and RESP3)")
        .version(env!("CARGO_PKG_VERSION"))
        .arg(Arg::new("dir").long("dir").value_name("PATH").required(true).help("The database's directory (created if missing)"))
        .arg(Arg::new("port").long("port").value_name("PORT").default_value("6379").value_parser(value_parser!(u16)))
        .arg(Arg::new("bind").long("bind").value_name("ADDR").default_value("127.0.0.1").help("Address to listen on (127.0.0.1: this machine only)"))
        .arg(Arg::new("requirepass").long("requirepass").value_name("PW").help("Clients must AUTH with PW before any data command (visible in the process list: prefer --requirepass-file or STRATA_SERVER_PASSWORD)"))
        .arg(Arg::new("requirepass-file").long("requirepass-file").value_name("FILE").conflicts_with("requirepass")
            .help("Read the password from FILE (its first line)"))
        .arg(Arg::new("protected-mode").long("protected-mode").value_name("yes|no").default_value("yes").value_parser(["yes", "no"])
            .help("yes: refuse to listen beyond this machine without a password"))
        .arg(Arg::new("maxclients").long("maxclients").value_name("N").default_value("10000").value_parser(value_parser!(usize)))
        .arg(Arg::new("sync").long("sync").value_name("MODE").default_value("batch").value_parser(["always", "batch", "none"])
            .help("always: fsync before each reply; batch: fsync every --sync-interval-ms; none: the OS decides"))
        .arg(Arg::new("sync-interval-ms").long("sync-interval-ms").value_name("MS").default_value("10").value_parser(value_parser!(u64)))
        .arg(Arg::new("max-request-bytes").long("max-request-bytes").value_name("N").default_value("536870912").value_parser(value_parser!(usize))
            .help("Largest request accepted; a larger one is an error and closes the connection"))
        .arg(Arg::new("timeout").long("timeout").value_name("SECONDS").default_value("0").value_parser(value_parser!(u64))
            .help("Close connections idle this long (0: never)"))
        .arg(Arg::new("keys-limit").long("keys-limit").value_name("N").default_value("100000").value_parser(value_parser!(usize))
            .help("KEYS refuses to return more keys than this (use SCAN)"))
        .arg(Arg::new("enable-flushdb").long("enable-flushdb").action(ArgAction::SetTrue).help("Allow FLUSHDB/FLUSHALL"))
        .arg(Arg::new("preset").long("preset").value_name("NAME")
            .help("strata options preset (default: the options the database recorded in its OPTIONS file, or the default preset)"))
        .arg(Arg::new("option").long("option").value_name("NAME=VALUE").action(ArgAction::Append)
            .help("Set one strata option over the preset or the recorded options, as a line of an OPTIONS file (say write_buffer_size=67108864, block_cache_size=..., pmem_dir=...); repeatable"))
}

/// `--option NAME=VALUE` flags applied over `opts`, in order.
fn apply_options(opts: &mut strata::Options, m: &clap::ArgMatches) -> Result<(), String> {
    for flag in m.get_many::<String>("option").into_iter().flatten() {
        let Some((name, value)) = flag.split_once('=') else {
            return Err(format!("--option {flag}: expected NAME=VALUE"));
        };
        // Options of one open, not of the database: the open records its options in the
        // OPTIONS file, and these would then hold for every later open (a rescue's
        // recovery mode losing writes at later damage without a word; error_if_exists
        // refusing every start). Their tool is `strata` (and `strata repair`).
        if matches!(
            name.trim(),
            "wal_recovery_mode" | "error_if_exists" | "create_if_missing" | "migrate_l0_layout"
        ) {
            return Err(format!(
                "--option {flag}: {} is an option of one open, which the server would record \
                 for every later one; open with the strata tool for that",
                name.trim()
            ));
        }
        opts.set(name.trim(), value)
            .map_err(|e| format!("--option {flag}: {e}"))?;
    }
    Ok(())
}

/// The password: `--requirepass`, `--requirepass-file` (first line), or the
/// `STRATA_SERVER_PASSWORD` environment variable, in that order.
fn password(m: &clap::ArgMatches) -> Result<Option<Vec<u8>>, String> {
    if let Some(p) = m.get_one::<String>("requirepass") {
        return Ok(Some(p.as_bytes().to_vec()));
    }
    if let Some(f) = m.get_one::<String>("requirepass-file") {
        let text =
            std::fs::read_to_string(f).map_err(|e| format!("--requirepass-file {f}: {e}"))?;
        let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
        if line.is_empty() {
            return Err(format!("--requirepass-file {f}: the first line is empty"));
        }
        return Ok(Some(line.as_bytes().to_vec()));
    }
    Ok(std::env::var_os("STRATA_SERVER_PASSWORD")
        .filter(|p| !p.is_empty())
        .map(|p| p.as_encoded_bytes().to_vec()))
}

fn main() -> ExitCode {
    // A long-running server: freed memory goes back to the system (glibc keeps it otherwise).
    strata::limit_malloc_retention();
    let m = cli().get_matches();
    let dir = m.get_one::<String>("dir").expect("required");
    // Without --preset, the options the database's last writing open recorded (its
    // directories, value store, layout), as the strata tool does; else the preset.
    let named = m.get_one::<String>("preset").is_some();
    let recorded = std::fs::read_to_string(std::path::Path::new(dir).join("OPTIONS"))
        .ok()
        .filter(|_| !named);
    let base = match recorded {
        Some(text) => strata::Options::from_text(&text).map(|o| strata::Options {
            create_if_missing: true,
            ..o
        }),
        None => strata::Options::preset(
            m.get_one::<String>("preset")
                .map_or("default", String::as_str),
        ),
    };
    let base = base.map_err(|e| e.to_string()).and_then(|mut o| {
        apply_options(&mut o, &m)?;
        Ok(o)
    });
    let opts = match base {
        Ok(o) => strata::Options {
            info_log: Some(std::sync::Arc::new(|line: &str| {
                eprintln!("strata-server: note: {line}")
            })),
            // Compactions drop the elements of deleted, overwritten and expired collections.
            compaction_filter: Some(std::sync::Arc::new(strata_server::OrphanFilter::new())),
            ..o
        },
        Err(e) => {
            eprintln!("strata-server: {e}");
            return ExitCode::from(2);
        }
    };
    let requirepass = match password(&m) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("strata-server: {e}");
            return ExitCode::from(2);
        }
    };
    let bind = m.get_one::<String>("bind").expect("defaulted");
    let loopback = bind == "localhost"
        || bind
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback());
    if !loopback
        && requirepass.is_none()
        && m.get_one::<String>("protected-mode").map(String::as_str) != Some("no")
    {
        eprintln!(
            "strata-server: refusing to listen on {bind} without a password: anyone who reaches \
             it could read and change the database. Set one (--requirepass-file, \
             STRATA_SERVER_PASSWORD) or pass --protected-mode no"
        );
        return ExitCode::from(2);
    }
    // Listen first: a port that cannot be had leaves no new database behind.
    let addr = format!("{bind}:{}", m.get_one::<u16>("port").expect("defaulted"));
    let listener = match TcpListener::bind(&addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("strata-server: listening on {addr}: {e}");
            return ExitCode::from(2);
        }
    };
    let db = match strata::Db::open(dir, opts) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("strata-server: opening {dir}: {e}");
            return ExitCode::from(2);
        }
    };
    let sync = match m.get_one::<String>("sync").map(String::as_str) {
        Some("always") => SyncMode::Always,
        Some("none") => SyncMode::None,
        _ => SyncMode::Batch,
    };
    let timeout = *m.get_one::<u64>("timeout").expect("defaulted");
    let config = Config {
        requirepass,
        maxclients: *m.get_one::<usize>("maxclients").expect("defaulted"),
        sync,
        limits: Limits {
            max_request: *m.get_one::<usize>("max-request-bytes").expect("defaulted"),
            ..Limits::default()
        },
        idle_timeout: (timeout > 0).then(|| Duration::from_secs(timeout)),
        enable_flushdb: m.get_flag("enable-flushdb"),
        keys_limit: *m.get_one::<usize>("keys-limit").expect("defaulted"),
        port: listener.local_addr().map_or(0, |a| a.port()),
    };
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let server = match Server::new(db, config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("strata-server: {dir}: {e}");
            return ExitCode::from(2);
        }
    };
    // Active expiry: ten times a second, the keys whose time has passed (found in the
    // expiry index, oldest first), as many passes as there are due keys.
    let expirer = {
        let s = server.clone();
        std::thread::spawn(move || {
            while !s.shutting_down.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(100));
                while s.active_expiry() {
                    if s.shutting_down.load(Ordering::Acquire) {
                        break;
                    }
                }
            }
        })
    };
    let interval = Duration::from_millis(*m.get_one::<u64>("sync-interval-ms").expect("defaulted"));
    let syncer = (sync == SyncMode::Batch).then(|| {
        let s = server.clone();
        std::thread::spawn(move || {
            while !s.shutting_down.load(Ordering::Acquire) {
                std::thread::sleep(interval);
                // An empty synced write syncs the WAL (and the value log) up to here.
                let _ = s.db.write(
                    &strata::WriteOptions {
                        sync: true,
                        ..Default::default()
                    },
                    strata::WriteBatch::new(),
                );
            }
        })
    });
    // The bound address (with `--port 0`, the port the system chose).
    let bound = listener.local_addr().map_or(addr, |a| a.to_string());
    eprintln!("strata-server: serving {dir} on {bound}");
    let _ = listener.set_nonblocking(true);
    let mut workers = Vec::new();
    // Fault injection for tests: after this many client threads, starting one fails as a
    // refused spawn does (the process must turn that client away and go on).
    let spawn_limit: Option<usize> = std::env::var("STRATA_SERVER_TEST_THREADS")
        .ok()
        .and_then(|v| v.parse().ok());
    let mut spawned_threads = 0usize;
    while !STOP.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                if server.clients.load(Ordering::Acquire) >= server.config.maxclients {
                    use std::io::Write;
                    let mut stream = stream;
                    let _ = stream.write_all(b"-ERR max number of clients reached\r\n");
                    continue;
                }
                server.clients.fetch_add(1, Ordering::AcqRel);
                let s = server.clone();
                // The stream goes to the thread; a clone stays to turn the client away if
                // no thread can be had (the process goes on serving the others).
                let spare = stream.try_clone();
                let spawned = if spawn_limit.is_some_and(|l| spawned_threads >= l) {
                    Err(std::io::Error::other(
                        "thread limit (STRATA_SERVER_TEST_THREADS)",
                    ))
                } else {
                    std::thread::Builder::new()
                        .name("strata-client".into())
                        .spawn(move || {
                            // The client's place is given back however `serve` ends (a
                            // panic too: slots lost to panics would turn clients away).
                            struct Leave<'a>(&'a std::sync::atomic::AtomicUsize);
                            impl Drop for Leave<'_> {
                                fn drop(&mut self) {
                                    self.0.fetch_sub(1, Ordering::AcqRel);
                                }
                            }
                            let _leave = Leave(&s.clients);
                            s.serve(stream);
                        })
                };
                spawned_threads += 1;
                match spawned {
                    Ok(w) => workers.push(w),
                    Err(e) => {
                        server.clients.fetch_sub(1, Ordering::AcqRel);
                        eprintln!("strata-server: cannot start a thread for a client: {e}");
                        if let Ok(mut stream) = spare {
                            use std::io::Write;
                            let _ =
                                stream.write_all(b"-ERR server cannot take more clients now\r\n");
                        }
                    }
                }
                workers.retain(|w| !w.is_finished());
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => {
                eprintln!("strata-server: accept: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    eprintln!("strata-server: shutting down");
    server.shutting_down.store(true, Ordering::Release);
    for w in workers {
        let _ = w.join();
    }
    if let Some(t) = syncer {
        let _ = t.join();
    }
    let _ = expirer.join();
    match Arc::try_unwrap(server) {
        Ok(s) => {
            if let Err(e) = s.db.close() {
                eprintln!("strata-server: closing the database: {e}");
                return ExitCode::from(1);
            }
        }
        Err(s) => {
            let _ = s.db.close();
        }
    }
    ExitCode::SUCCESS
}
