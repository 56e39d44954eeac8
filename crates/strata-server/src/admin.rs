//! The commands clients and tools ask the server about itself: COMMAND (from the table of
//! every command served), CONFIG GET/SET/RESETSTAT (from the table of parameters), and
//! FUNCTION (strata-server runs no functions: FLUSH and LIST answer as an empty library).

use std::sync::atomic::Ordering;

use crate::resp::Out;
use crate::{glob, lock, upper, Server};

/// One command as COMMAND describes it (Redis's fields: arity counts the name, negative
/// means "at least"; the key positions are 1-based, last -1 means "to the end").
pub(crate) struct Spec {
    pub name: &'static str,
    pub arity: i64,
    pub flags: &'static [&'static str],
    pub first_key: i64,
    pub last_key: i64,
    pub step: i64,
    pub group: &'static str,
    pub summary: &'static str,
}

const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const D: &[&str] = &["write"];
const DF: &[&str] = &["write", "fast"];
const R: &[&str] = &["readonly"];
const RF: &[&str] = &["readonly", "fast"];
const C: &[&str] = &["fast", "loading", "stale"];
const A: &[&str] = &["admin", "noscript", "loading", "stale"];
const P: &[&str] = &["pubsub", "noscript", "loading", "stale"];

const fn spec(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    keys: (i64, i64, i64),
    group: &'static str,
    summary: &'static str,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
        group,
        summary,
    }
}

const NONE: (i64, i64, i64) = (0, 0, 0);
const ONE: (i64, i64, i64) = (1, 1, 1);
const ALL: (i64, i64, i64) = (1, -1, 1);

/// Every command strata-server serves. A command missing here is not served (a test
/// sends each of these and expects no "unknown command"; the dispatch is in lib.rs).
pub(crate) const COMMANDS: &[Spec] = &[
    // connection
    spec(
        "ping",
        -1,
        C,
        NONE,
        "connection",
        "Returns PONG, or the argument.",
    ),
    spec("echo", 2, C, NONE, "connection", "Returns the argument."),
    spec("quit", -1, C, NONE, "connection", "Closes the connection."),
    spec(
        "reset",
        1,
        &["noscript", "loading", "stale", "fast", "no_auth"],
        NONE,
        "connection",
        "Resets the connection.",
    ),
    spec(
        "sort",
        -2,
        W,
        ONE,
        "generic",
        "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.",
    ),
    spec(
        "sort_ro",
        -2,
        R,
        ONE,
        "generic",
        "Returns the sorted elements of a list, a set, or a sorted set.",
    ),
    // pub/sub
    spec(
        "subscribe",
        -2,
        P,
        NONE,
        "pubsub",
        "Listens for messages published to channels.",
    ),
    spec(
        "psubscribe",
        -2,
        P,
        NONE,
        "pubsub",
        "Listens for messages published to channels that match one or more patterns.",
    ),
    spec(
        "unsubscribe",
        -1,
        P,
        NONE,
        "pubsub",
        "Stops listening to messages posted to channels.",
    ),
    spec(
        "punsubscribe",
        -1,
        P,
        NONE,
        "pubsub",
        "Stops listening to messages published to channels that match one or more patterns.",
    ),
    spec(
        "publish",
        3,
        &["pubsub", "loading", "stale", "fast"],
        NONE,
        "pubsub",
        "Posts a message to a channel.",
    ),
    spec(
        "pubsub",
        -2,
        &["pubsub", "loading", "stale"],
        NONE,
        "pubsub",
        "Channels, subscribers and patterns (CHANNELS, NUMSUB, NUMPAT, HELP).",
    ),
    spec(
        "auth",
        -2,
        C,
        NONE,
        "connection",
        "Authenticates the connection.",
    ),
    spec(
        "hello",
        -1,
        C,
        NONE,
        "connection",
        "Handshakes: protocol version, authentication, name.",
    ),
    spec(
        "select",
        2,
        C,
        NONE,
        "connection",
        "Selects the database (only 0 exists).",
    ),
    spec(
        "client",
        -2,
        &["admin", "noscript", "loading", "stale"],
        NONE,
        "connection",
        "Names and lists connections (ID, GETNAME, SETNAME, LIST, INFO, SETINFO).",
    ),
    // transactions
    spec("multi", 1, C, NONE, "transactions", "Starts a transaction."),
    spec(
        "exec",
        1,
        &["noscript", "loading", "stale"],
        NONE,
        "transactions",
        "Runs the queued commands atomically.",
    ),
    spec(
        "watch",
        -2,
        C,
        ALL,
        "transactions",
        "Makes the next EXEC depend on keys not changing.",
    ),
    spec(
        "unwatch",
        1,
        C,
        NONE,
        "transactions",
        "Forgets the watched keys.",
    ),
    spec(
        "discard",
        1,
        C,
        NONE,
        "transactions",
        "Discards a transaction.",
    ),
    // server
    spec(
        "command",
        -1,
        &["loading", "stale"],
        NONE,
        "server",
        "Describes the commands served.",
    ),
    spec(
        "config",
        -2,
        A,
        NONE,
        "server",
        "Reads and sets the server's parameters.",
    ),
    spec(
        "info",
        -1,
        &["loading", "stale"],
        NONE,
        "server",
        "Reports on the server.",
    ),
    spec("dbsize", 1, RF, NONE, "server", "Counts the keys."),
    spec("time", 1, C, NONE, "server", "Returns the server's time."),
    spec(
        "debug",
        -2,
        A,
        NONE,
        "server",
        "COUNTKEYS: counts the keys by a scan; SET-ACTIVE-EXPIRE 0|1.",
    ),
    spec("flushdb", -1, D, NONE, "server", "Removes every key."),
    spec("flushall", -1, D, NONE, "server", "Removes every key."),
    spec(
        "memory",
        -2,
        R,
        NONE,
        "server",
        "USAGE: the bytes a key's records take (estimated).",
    ),
    spec(
        "function",
        -2,
        &["noscript"],
        NONE,
        "scripting",
        "FLUSH and LIST of an empty function library (functions are not run).",
    ),
    // strings
    spec("get", 2, RF, ONE, "string", "Returns a string's value."),
    spec("set", -3, W, ONE, "string", "Sets a string's value."),
    spec(
        "setnx",
        3,
        WF,
        ONE,
        "string",
        "Sets a string's value if the key does not exist.",
    ),
    spec(
        "mget",
        -2,
        RF,
        ALL,
        "string",
        "Returns the values of several strings.",
    ),
    spec("mset", -3, W, (1, -1, 2), "string", "Sets several strings."),
    spec("incr", 2, WF, ONE, "string", "Adds one to an integer."),
    spec(
        "decr",
        2,
        WF,
        ONE,
        "string",
        "Subtracts one from an integer.",
    ),
    spec("incrby", 3, WF, ONE, "string", "Adds to an integer."),
    spec("decrby", 3, WF, ONE, "string", "Subtracts from an integer."),
    spec("append", 3, W, ONE, "string", "Appends to a string."),
    spec("strlen", 2, RF, ONE, "string", "Returns a string's length."),
    spec("incrbyfloat", 3, WF, ONE, "string", "Adds to a number."),
    spec(
        "getset",
        3,
        WF,
        ONE,
        "string",
        "Sets a string, returning the old value.",
    ),
    spec(
        "getdel",
        2,
        WF,
        ONE,
        "string",
        "Returns a string and deletes it.",
    ),
    spec("getrange", 4, R, ONE, "string", "Returns part of a string."),
    spec(
        "setex",
        4,
        W,
        ONE,
        "string",
        "Sets a string with a time to live in seconds.",
    ),
    spec(
        "psetex",
        4,
        W,
        ONE,
        "string",
        "Sets a string with a time to live in milliseconds.",
    ),
    spec(
        "getex",
        -2,
        WF,
        ONE,
        "string",
        "Returns a string and sets or removes its expiry.",
    ),
    spec("substr", 4, R, ONE, "string", "Returns part of a string."),
    spec(
        "setrange",
        4,
        W,
        ONE,
        "string",
        "Overwrites part of a string.",
    ),
    spec(
        "msetnx",
        -3,
        W,
        (1, -1, 2),
        "string",
        "Sets several strings if none exists.",
    ),
    spec(
        "setbit",
        4,
        W,
        ONE,
        "bitmap",
        "Sets or clears one bit of a string.",
    ),
    spec(
        "getbit",
        3,
        RF,
        ONE,
        "bitmap",
        "Returns one bit of a string.",
    ),
    spec(
        "lcs",
        -3,
        R,
        (1, 2, 1),
        "string",
        "The longest common subsequence of two strings.",
    ),
    // keys
    spec("type", 2, RF, ONE, "generic", "Returns a key's type."),
    spec(
        "expire",
        -3,
        DF,
        ONE,
        "generic",
        "Sets a key's time to live in seconds.",
    ),
    spec(
        "pexpire",
        -3,
        DF,
        ONE,
        "generic",
        "Sets a key's time to live in milliseconds.",
    ),
    spec(
        "expireat",
        -3,
        DF,
        ONE,
        "generic",
        "Sets a key's expiry as a Unix time in seconds.",
    ),
    spec(
        "pexpireat",
        -3,
        DF,
        ONE,
        "generic",
        "Sets a key's expiry as a Unix time in milliseconds.",
    ),
    spec(
        "ttl",
        2,
        RF,
        ONE,
        "generic",
        "Returns a key's time to live in seconds.",
    ),
    spec(
        "pttl",
        2,
        RF,
        ONE,
        "generic",
        "Returns a key's time to live in milliseconds.",
    ),
    spec(
        "expiretime",
        2,
        RF,
        ONE,
        "generic",
        "Returns a key's expiry as a Unix time in seconds.",
    ),
    spec(
        "pexpiretime",
        2,
        RF,
        ONE,
        "generic",
        "Returns a key's expiry as a Unix time in milliseconds.",
    ),
    spec("persist", 2, DF, ONE, "generic", "Removes a key's expiry."),
    spec(
        "rename",
        3,
        D,
        (1, 2, 1),
        "generic",
        "Renames a key, replacing the destination.",
    ),
    spec(
        "renamenx",
        3,
        DF,
        (1, 2, 1),
        "generic",
        "Renames a key if the destination does not exist.",
    ),
    spec("copy", -3, W, (1, 2, 1), "generic", "Copies a key."),
    spec(
        "randomkey",
        1,
        R,
        NONE,
        "generic",
        "Returns a key chosen at random.",
    ),
    spec("del", -2, D, ALL, "generic", "Deletes keys."),
    spec("unlink", -2, DF, ALL, "generic", "Deletes keys."),
    spec(
        "exists",
        -2,
        RF,
        ALL,
        "generic",
        "Counts the keys that exist.",
    ),
    spec("scan", -2, R, NONE, "generic", "Iterates over the keys."),
    spec(
        "keys",
        2,
        R,
        NONE,
        "generic",
        "Returns the keys matching a pattern.",
    ),
    // hashes
    spec("hset", -4, WF, ONE, "hash", "Sets fields of a hash."),
    spec("hmset", -4, WF, ONE, "hash", "Sets fields of a hash."),
    spec("hget", 3, RF, ONE, "hash", "Returns a field's value."),
    spec(
        "hmget",
        -3,
        RF,
        ONE,
        "hash",
        "Returns several fields' values.",
    ),
    spec(
        "hgetall",
        2,
        R,
        ONE,
        "hash",
        "Returns every field and value.",
    ),
    spec("hdel", -3, DF, ONE, "hash", "Deletes fields."),
    spec("hlen", 2, RF, ONE, "hash", "Counts the fields."),
    spec("hkeys", 2, R, ONE, "hash", "Returns every field."),
    spec("hvals", 2, R, ONE, "hash", "Returns every value."),
    spec("hexists", 3, RF, ONE, "hash", "Whether a field exists."),
    spec(
        "hstrlen",
        3,
        RF,
        ONE,
        "hash",
        "Returns a field's value's length.",
    ),
    spec(
        "hsetnx",
        4,
        WF,
        ONE,
        "hash",
        "Sets a field if it does not exist.",
    ),
    spec("hincrby", 4, WF, ONE, "hash", "Adds to a field's integer."),
    spec(
        "hincrbyfloat",
        4,
        WF,
        ONE,
        "hash",
        "Adds to a field's number.",
    ),
    // sets
    spec("sadd", -3, WF, ONE, "set", "Adds members to a set."),
    spec("srem", -3, DF, ONE, "set", "Removes members from a set."),
    spec("scard", 2, RF, ONE, "set", "Returns a set's size."),
    spec(
        "sismember",
        3,
        RF,
        ONE,
        "set",
        "Whether a value is a member.",
    ),
    spec(
        "smismember",
        -3,
        RF,
        ONE,
        "set",
        "Whether each value is a member.",
    ),
    spec("smembers", 2, R, ONE, "set", "Returns every member."),
    spec(
        "srandmember",
        -2,
        R,
        ONE,
        "set",
        "Returns members chosen at random.",
    ),
    spec(
        "spop",
        -2,
        DF,
        ONE,
        "set",
        "Removes and returns members chosen at random.",
    ),
    spec(
        "smove",
        4,
        DF,
        (1, 2, 1),
        "set",
        "Moves a member between sets.",
    ),
    spec("sinter", -2, R, ALL, "set", "The intersection of sets."),
    spec("sunion", -2, R, ALL, "set", "The union of sets."),
    spec("sdiff", -2, R, ALL, "set", "The difference of sets."),
    spec(
        "sinterstore",
        -3,
        W,
        ALL,
        "set",
        "Stores the intersection of sets.",
    ),
    spec(
        "sunionstore",
        -3,
        W,
        ALL,
        "set",
        "Stores the union of sets.",
    ),
    spec(
        "sdiffstore",
        -3,
        W,
        ALL,
        "set",
        "Stores the difference of sets.",
    ),
    spec(
        "sintercard",
        -3,
        R,
        NONE,
        "set",
        "The size of the intersection of sets.",
    ),
    spec("sscan", -3, R, ONE, "set", "Iterates a set's members."),
    spec(
        "hscan",
        -3,
        R,
        ONE,
        "hash",
        "Iterates a hash's fields and values.",
    ),
    spec(
        "zscan",
        -3,
        R,
        ONE,
        "sorted_set",
        "Iterates a sorted set's members and scores.",
    ),
    spec(
        "hrandfield",
        -2,
        R,
        ONE,
        "hash",
        "Returns fields chosen at random.",
    ),
    spec(
        "object",
        -2,
        R,
        (2, 2, 1),
        "generic",
        "Tells about a key's value (REFCOUNT, ENCODING, IDLETIME).",
    ),
    // lists
    spec(
        "lpush",
        -3,
        WF,
        ONE,
        "list",
        "Pushes items at a list's head.",
    ),
    spec(
        "rpush",
        -3,
        WF,
        ONE,
        "list",
        "Pushes items at a list's tail.",
    ),
    spec(
        "lpushx",
        -3,
        WF,
        ONE,
        "list",
        "Pushes at the head of an existing list.",
    ),
    spec(
        "rpushx",
        -3,
        WF,
        ONE,
        "list",
        "Pushes at the tail of an existing list.",
    ),
    spec(
        "lpop",
        -2,
        DF,
        ONE,
        "list",
        "Pops items from a list's head.",
    ),
    spec(
        "rpop",
        -2,
        DF,
        ONE,
        "list",
        "Pops items from a list's tail.",
    ),
    spec("llen", 2, RF, ONE, "list", "Returns a list's length."),
    spec("lindex", 3, R, ONE, "list", "Returns the item at an index."),
    spec("lset", 4, W, ONE, "list", "Sets the item at an index."),
    spec("lrange", 4, R, ONE, "list", "Returns a range of items."),
    spec(
        "ltrim",
        4,
        D,
        ONE,
        "list",
        "Keeps a range of items, deleting the rest.",
    ),
    spec("lrem", 4, D, ONE, "list", "Removes items equal to a value."),
    spec(
        "linsert",
        5,
        W,
        ONE,
        "list",
        "Inserts an item before or after another.",
    ),
    spec(
        "lpos",
        -3,
        R,
        ONE,
        "list",
        "Returns the indexes of items equal to a value.",
    ),
    spec(
        "rpoplpush",
        3,
        W,
        (1, 2, 1),
        "list",
        "Moves an item from one list's tail to another's head.",
    ),
    spec(
        "lmove",
        5,
        W,
        (1, 2, 1),
        "list",
        "Moves an item between two lists.",
    ),
    spec(
        "lmpop",
        -4,
        D,
        NONE,
        "list",
        "Pops items from the first non-empty list of several.",
    ),
    spec(
        "blpop",
        -3,
        &["write", "noscript"],
        (1, -2, 1),
        "list",
        "Pops from a list's head, waiting for one.",
    ),
    spec(
        "brpop",
        -3,
        &["write", "noscript"],
        (1, -2, 1),
        "list",
        "Pops from a list's tail, waiting for one.",
    ),
    spec(
        "brpoplpush",
        4,
        &["write", "denyoom", "noscript"],
        (1, 2, 1),
        "list",
        "RPOPLPUSH, waiting for an item.",
    ),
    spec(
        "blmove",
        6,
        &["write", "denyoom", "noscript"],
        (1, 2, 1),
        "list",
        "LMOVE, waiting for an item.",
    ),
    spec(
        "blmpop",
        -5,
        &["write", "noscript"],
        NONE,
        "list",
        "LMPOP, waiting for an item.",
    ),
    // sorted sets
    spec(
        "zincrby",
        4,
        WF,
        ONE,
        "sorted_set",
        "Adds to a member's score.",
    ),
    spec(
        "zmscore",
        -3,
        RF,
        ONE,
        "sorted_set",
        "Returns the scores of members.",
    ),
    spec(
        "zrank",
        -3,
        RF,
        ONE,
        "sorted_set",
        "Returns a member's rank by ascending score.",
    ),
    spec(
        "zrevrank",
        -3,
        RF,
        ONE,
        "sorted_set",
        "Returns a member's rank by descending score.",
    ),
    spec(
        "zcount",
        4,
        RF,
        ONE,
        "sorted_set",
        "Counts the members in a score range.",
    ),
    spec(
        "zlexcount",
        4,
        RF,
        ONE,
        "sorted_set",
        "Counts the members in a lexicographical range.",
    ),
    spec(
        "zrange",
        -4,
        R,
        ONE,
        "sorted_set",
        "Returns members by index, score or lexicographical range.",
    ),
    spec(
        "zrevrange",
        -4,
        R,
        ONE,
        "sorted_set",
        "Returns members by index, highest score first.",
    ),
    spec(
        "zrevrangebyscore",
        -4,
        R,
        ONE,
        "sorted_set",
        "Returns members in a score range, highest first.",
    ),
    spec(
        "zrangebylex",
        -4,
        R,
        ONE,
        "sorted_set",
        "Returns members in a lexicographical range.",
    ),
    spec(
        "zrevrangebylex",
        -4,
        R,
        ONE,
        "sorted_set",
        "Returns members in a lexicographical range, in reverse.",
    ),
    spec(
        "zrangestore",
        -5,
        W,
        (1, 2, 1),
        "sorted_set",
        "Stores a range of members.",
    ),
    spec(
        "zremrangebyrank",
        4,
        D,
        ONE,
        "sorted_set",
        "Removes the members in a range of ranks.",
    ),
    spec(
        "zremrangebyscore",
        4,
        D,
        ONE,
        "sorted_set",
        "Removes the members in a score range.",
    ),
    spec(
        "zremrangebylex",
        4,
        D,
        ONE,
        "sorted_set",
        "Removes the members in a lexicographical range.",
    ),
    spec(
        "zpopmin",
        -2,
        DF,
        ONE,
        "sorted_set",
        "Removes and returns the members with the lowest scores.",
    ),
    spec(
        "zpopmax",
        -2,
        DF,
        ONE,
        "sorted_set",
        "Removes and returns the members with the highest scores.",
    ),
    spec(
        "zmpop",
        -4,
        D,
        NONE,
        "sorted_set",
        "Pops from the first non-empty sorted set of several.",
    ),
    spec(
        "bzpopmin",
        -3,
        &["write", "noscript", "fast"],
        (1, -2, 1),
        "sorted_set",
        "ZPOPMIN, waiting for a member.",
    ),
    spec(
        "bzpopmax",
        -3,
        &["write", "noscript", "fast"],
        (1, -2, 1),
        "sorted_set",
        "ZPOPMAX, waiting for a member.",
    ),
    spec(
        "bzmpop",
        -5,
        &["write", "noscript"],
        NONE,
        "sorted_set",
        "ZMPOP, waiting for a member.",
    ),
    spec(
        "zrandmember",
        -2,
        R,
        ONE,
        "sorted_set",
        "Returns members chosen at random.",
    ),
    spec(
        "zunion",
        -3,
        R,
        NONE,
        "sorted_set",
        "The union of sorted sets.",
    ),
    spec(
        "zinter",
        -3,
        R,
        NONE,
        "sorted_set",
        "The intersection of sorted sets.",
    ),
    spec(
        "zdiff",
        -3,
        R,
        NONE,
        "sorted_set",
        "The difference of sorted sets.",
    ),
    spec(
        "zunionstore",
        -4,
        W,
        ONE,
        "sorted_set",
        "Stores the union of sorted sets.",
    ),
    spec(
        "zinterstore",
        -4,
        W,
        ONE,
        "sorted_set",
        "Stores the intersection of sorted sets.",
    ),
    spec(
        "zdiffstore",
        -4,
        W,
        ONE,
        "sorted_set",
        "Stores the difference of sorted sets.",
    ),
    spec(
        "zintercard",
        -3,
        R,
        NONE,
        "sorted_set",
        "The size of the intersection of sorted sets.",
    ),
    spec(
        "zadd",
        -4,
        WF,
        ONE,
        "sorted_set",
        "Adds members with scores.",
    ),
    spec("zrem", -3, DF, ONE, "sorted_set", "Removes members."),
    spec("zcard", 2, RF, ONE, "sorted_set", "Counts the members."),
    spec(
        "zscore",
        3,
        RF,
        ONE,
        "sorted_set",
        "Returns a member's score.",
    ),
    spec(
        "zrangebyscore",
        -4,
        R,
        ONE,
        "sorted_set",
        "Returns members in a score range.",
    ),
];

/// Where command `upper_name` (in capitals, as dispatched) is in [`COMMANDS`].
pub(crate) fn index(upper_name: &str) -> Option<usize> {
    static BY_NAME: std::sync::OnceLock<std::collections::HashMap<String, usize>> =
        std::sync::OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            COMMANDS
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name.to_ascii_uppercase(), i))
                .collect()
        })
        .get(upper_name)
        .copied()
}

/// The spec of command `name` (any case).
pub(crate) fn find(name: &[u8]) -> Option<&'static Spec> {
    COMMANDS
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

fn describe(c: &Spec, out: &mut Out) {
    out.array(10);
    out.bulk(c.name.as_bytes());
    out.int(c.arity);
    out.array(c.flags.len());
    for f in c.flags {
        out.simple(f);
    }
    out.int(c.first_key);
    out.int(c.last_key);
    out.int(c.step);
    // ACL categories, tips, key specifications, subcommands: not described.
    out.array(0);
    out.array(0);
    out.array(0);
    out.array(0);
}

fn docs(c: &Spec, out: &mut Out) {
    out.bulk(c.name.as_bytes());
    out.map(3);
    out.bulk(b"summary");
    out.bulk(c.summary.as_bytes());
    out.bulk(b"since");
    out.bulk(b"1.0.0");
    out.bulk(b"group");
    out.bulk(c.group.as_bytes());
}

/// How CONFIG SET treats a parameter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Set {
    /// Taken and kept, with no effect: strata has no such mechanism (the small-collection
    /// encodings, scripting, replication, RDB saves). CONFIG GET shows what was set.
    Kept,
    /// Taken and applied.
    Applied,
    /// Fixed when the server starts (its command line); CONFIG SET refuses it.
    Fixed,
}

/// What a parameter's values may be.
#[derive(Clone, Copy)]
enum Kind {
    /// An integer, or a memory size with a unit (1gb, 10mb, 512k).
    Number,
    Bool,
    Text,
}

/// A parameter CONFIG knows (Redis 7's names; an alias answers for the same value).
struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    kind: Kind,
    set: Set,
}

const fn param(name: &'static str, alias: Option<&'static str>, kind: Kind, set: Set) -> Param {
    Param {
        name,
        alias,
        kind,
        set,
    }
}

const PARAMS: &[Param] = &[
    param(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        Kind::Number,
        Set::Kept,
    ),
    param(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        Kind::Number,
        Set::Kept,
    ),
    param(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        Kind::Number,
        Set::Kept,
    ),
    param(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        Kind::Number,
        Set::Kept,
    ),
    param(
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        Kind::Number,
        Set::Kept,
    ),
    param("list-compress-depth", None, Kind::Number, Set::Kept),
    param("set-max-intset-entries", None, Kind::Number, Set::Kept),
    param(
        "lua-time-limit",
        Some("busy-reply-threshold"),
        Kind::Number,
        Set::Kept,
    ),
    param(
        "min-replicas-to-write",
        Some("min-slaves-to-write"),
        Kind::Number,
        Set::Kept,
    ),
    param(
        "replica-serve-stale-data",
        Some("slave-serve-stale-data"),
        Kind::Bool,
        Set::Kept,
    ),
    param(
        "replica-read-only",
        Some("slave-read-only"),
        Kind::Bool,
        Set::Kept,
    ),
    param("rdb-key-save-delay", None, Kind::Number, Set::Kept),
    param("save", None, Kind::Text, Set::Kept),
    param("appendonly", None, Kind::Bool, Set::Kept),
    param("proto-max-bulk-len", None, Kind::Number, Set::Applied),
    param(
        "client-query-buffer-limit",
        None,
        Kind::Number,
        Set::Applied,
    ),
    param("appendfsync", None, Kind::Text, Set::Fixed),
    param("maxclients", None, Kind::Number, Set::Fixed),
    param("timeout", None, Kind::Number, Set::Fixed),
    param("requirepass", None, Kind::Text, Set::Fixed),
    param("maxmemory", None, Kind::Number, Set::Fixed),
    param("databases", None, Kind::Number, Set::Fixed),
    param("port", None, Kind::Number, Set::Fixed),
];

/// A memory size as Redis reads it (`memtoll`): digits with an optional unit k, kb, m,
/// mb, g, gb (k = 1000, kb = 1024), any case.
fn memory_value(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?.to_ascii_lowercase();
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[digits.len()..];
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

impl Server {
    /// The values of CONFIG's parameters at start: Redis's defaults for the kept ones, the
    /// server's own settings for the rest.
    pub(crate) fn initial_parameters(
        config: &crate::Config,
    ) -> std::collections::BTreeMap<&'static str, Vec<u8>> {
        let defaults: [(&str, String); 23] = [
            ("hash-max-listpack-entries", "128".into()),
            ("hash-max-listpack-value", "64".into()),
            ("zset-max-listpack-entries", "128".into()),
            ("zset-max-listpack-value", "64".into()),
            ("list-max-listpack-size", "-2".into()),
            ("list-compress-depth", "0".into()),
            ("set-max-intset-entries", "512".into()),
            ("lua-time-limit", "5000".into()),
            ("min-replicas-to-write", "0".into()),
            ("replica-serve-stale-data", "yes".into()),
            ("replica-read-only", "yes".into()),
            ("rdb-key-save-delay", "0".into()),
            ("save", "".into()),
            ("appendonly", "yes".into()),
            ("proto-max-bulk-len", config.limits.max_request.to_string()),
            (
                "client-query-buffer-limit",
                config.limits.max_request.to_string(),
            ),
            (
                "appendfsync",
                match config.sync {
                    crate::SyncMode::Always => "always",
                    crate::SyncMode::Batch => "everysec",
                    crate::SyncMode::None => "no",
                }
                .into(),
            ),
            ("maxclients", config.maxclients.to_string()),
            (
                "timeout",
                config.idle_timeout.map_or(0, |t| t.as_secs()).to_string(),
            ),
            // Redis answers the password itself (to a client that has given it).
            (
                "requirepass",
                String::from_utf8_lossy(config.requirepass.as_deref().unwrap_or_default())
                    .into_owned(),
            ),
            ("maxmemory", "0".into()),
            ("databases", "1".into()),
            ("port", config.port.to_string()),
        ];
        defaults
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect()
    }

    /// COMMAND and its subcommands.
    pub(crate) fn command_command(&self, args: &[Vec<u8>], out: &mut Out) {
        match args.get(1).map(|a| upper(a)).as_deref() {
            None => {
                out.array(COMMANDS.len());
                for c in COMMANDS {
                    describe(c, out);
                }
            }
            Some("COUNT") if args.len() == 2 => out.int(COMMANDS.len() as i64),
            Some("LIST") if args.len() == 2 => {
                out.array(COMMANDS.len());
                for c in COMMANDS {
                    out.bulk(c.name.as_bytes());
                }
            }
            Some("INFO") => {
                let named: Vec<Option<&Spec>> = if args.len() == 2 {
                    COMMANDS.iter().map(Some).collect()
                } else {
                    args[2..].iter().map(|n| find(n)).collect()
                };
                out.array(named.len());
                for c in named {
                    match c {
                        Some(c) => describe(c, out),
                        None => out.null(),
                    }
                }
            }
            Some("DOCS") => {
                let named: Vec<&Spec> = if args.len() == 2 {
                    COMMANDS.iter().collect()
                } else {
                    args[2..].iter().filter_map(|n| find(n)).collect()
                };
                out.map(named.len());
                for c in named {
                    docs(c, out);
                }
            }
            Some(sub) => out.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try COMMAND HELP.",
                sub.to_ascii_lowercase()
            )),
        }
    }

    /// CONFIG GET, SET, RESETSTAT (REWRITE refused: the parameters come from the command
    /// line).
    pub(crate) fn config_command(&self, args: &[Vec<u8>], out: &mut Out) {
        let sub = upper(&args[1]);
        match sub.as_str() {
            "GET" if args.len() >= 3 => {
                let values = lock(&self.parameters);
                let mut found: Vec<(&str, &[u8])> = Vec::new();
                for p in PARAMS {
                    let names = [Some(p.name), p.alias];
                    for n in names.into_iter().flatten() {
                        let asked = args[2..].iter().any(|pat| {
                            glob(&pat.to_ascii_lowercase(), n.as_bytes())
                        });
                        if asked && !found.iter().any(|(f, _)| *f == n) {
                            found.push((n, values.get(p.name).map_or(&[][..], |v| v.as_slice())));
                        }
                    }
                }
                out.map(found.len());
                for (n, v) in found {
                    out.bulk(n.as_bytes());
                    out.bulk(v);
                }
            }
            "SET" if args.len() >= 4 && args.len().is_multiple_of(2) => {
                // All or nothing: every pair is checked before any is applied.
                let mut changes: Vec<(&str, Vec<u8>)> = Vec::new();
                for pair in args[2..].chunks(2) {
                    let asked = pair[0].to_ascii_lowercase();
                    let Some(p) = PARAMS
                        .iter()
                        .find(|p| p.name.as_bytes() == asked || p.alias.is_some_and(|a| a.as_bytes() == asked))
                    else {
                        out.error(&format!(
                            "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                            String::from_utf8_lossy(&pair[0])
                        ));
                        return;
                    };
                    let shown = String::from_utf8_lossy(&pair[0]).into_owned();
                    if changes.iter().any(|(n, _)| *n == p.name) {
                        out.error(&format!(
                            "ERR CONFIG SET failed (possibly related to argument '{shown}') - duplicate parameter"
                        ));
                        return;
                    }
                    if p.set == Set::Fixed {
                        out.error(&format!(
                            "ERR CONFIG SET failed (possibly related to argument '{shown}') - \
                             strata-server takes it at start (its command line), not at run time"
                        ));
                        return;
                    }
                    let value = match p.kind {
                        Kind::Number => {
                            let neg = pair[1].first() == Some(&b'-');
                            let body = if neg { &pair[1][1..] } else { &pair[1][..] };
                            match memory_value(body) {
                                Some(n) if !neg => n.to_string().into_bytes(),
                                Some(n) if n <= i64::MAX as u64 => format!("-{n}").into_bytes(),
                                _ => {
                                    out.error(&format!(
                                        "ERR CONFIG SET failed (possibly related to argument '{shown}') - argument couldn't be parsed into an integer"
                                    ));
                                    return;
                                }
                            }
                        }
                        Kind::Bool => match pair[1].to_ascii_lowercase().as_slice() {
                            b"yes" => b"yes".to_vec(),
                            b"no" => b"no".to_vec(),
                            _ => {
                                out.error(&format!(
                                    "ERR CONFIG SET failed (possibly related to argument '{shown}') - argument must be 'yes' or 'no'"
                                ));
                                return;
                            }
                        },
                        Kind::Text => pair[1].clone(),
                    };
                    // The request limit may move within [1 MiB (Redis's least), the
                    // server's --max-request-bytes]: below, a client could make every
                    // request (the CONFIG SET undoing it too) a protocol error; above, make
                    // the server buffer more than its operator allowed.
                    if p.set == Set::Applied {
                        let most = self.config.limits.max_request as u64;
                        let ok = memory_value(&value)
                            .is_some_and(|n| n >= (1 << 20).min(most) && n <= most);
                        if !ok {
                            out.error(&format!(
                                "ERR CONFIG SET failed (possibly related to argument '{shown}') - \
                                 argument must be between {} and {most} (--max-request-bytes)",
                                (1u64 << 20).min(most)
                            ));
                            return;
                        }
                    }
                    changes.push((p.name, value));
                }
                let mut values = lock(&self.parameters);
                for (name, value) in changes {
                    values.insert(name, value);
                }
                // The request limit follows the two parameters that bound it.
                let number = |n: &str| values.get(n).and_then(|v| memory_value(v)).unwrap_or(u64::MAX);
                let max = number("proto-max-bulk-len").min(number("client-query-buffer-limit"));
                self.max_request
                    .store(usize::try_from(max).unwrap_or(usize::MAX), Ordering::Release);
                out.simple("OK");
            }
            "RESETSTAT" if args.len() == 2 => {
                self.commands.store(0, Ordering::Relaxed);
                for counters in &self.command_stats {
                    counters.iter().for_each(|c| c.store(0, Ordering::Relaxed));
                }
                out.simple("OK");
            }
            "REWRITE" if args.len() == 2 => out.error(
                "ERR strata-server has no configuration file to rewrite (its parameters come from its command line)",
            ),
            _ => out.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try CONFIG HELP.",
                sub.to_ascii_lowercase()
            )),
        }
    }

    /// FUNCTION: strata-server keeps no function library; FLUSH empties it, LIST shows it.
    pub(crate) fn function_command(&self, args: &[Vec<u8>], out: &mut Out) {
        let sub = upper(&args[1]);
        match sub.as_str() {
            "FLUSH" if args.len() <= 3 => {
                let mode = args.get(2).map(|a| upper(a));
                if mode.as_deref().is_some_and(|m| m != "ASYNC" && m != "SYNC") {
                    out.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
                } else {
                    out.simple("OK");
                }
            }
            "LIST" => out.array(0),
            "STATS" if args.len() == 2 => {
                out.map(2);
                out.bulk(b"running_script");
                out.null();
                out.bulk(b"engines");
                out.map(0);
            }
            _ => out.error(&format!(
                "ERR strata-server does not run functions (FUNCTION {} is not supported)",
                sub
            )),
        }
    }
}
