"""strata-server driven by a real client library (redis-py): every command family, the
error paths, pipelining, SCAN, RESP2 and RESP3. Usage: python server-client-test.py PORT
(tools/server-smoke.sh runs it in a venv with redis-py)."""

import sys

import redis

port = int(sys.argv[1])
for proto in (2, 3):
    r = redis.Redis(port=port, protocol=proto)
    assert r.ping()
    r.flushdb() if False else None  # FLUSHDB is off unless --enable-flushdb
    p = f"p{proto}:"
    assert r.set(p + "k", b"v") is True
    assert r.get(p + "k") == b"v"
    assert r.set(p + "k", b"w", nx=True) is None
    assert r.set(p + "k", b"w", xx=True, get=True) == b"v"
    assert r.setnx(p + "n", 1) is True
    assert r.incr(p + "n") == 2 and r.incrby(p + "n", 40) == 42 and r.decr(p + "n") == 41
    assert r.mset({p + "a": 1, p + "b": 2}) is True
    assert r.mget(p + "a", p + "nope", p + "b") == [b"1", None, b"2"]
    assert r.exists(p + "a", p + "b", p + "nope") == 2
    assert r.append(p + "ap", "xy") == 2 and r.strlen(p + "ap") == 2
    assert r.delete(p + "a", p + "nope") == 1
    assert r.hset(p + "h", mapping={"f1": "1", "f2": "2"}) == 2
    assert r.hget(p + "h", "f1") == b"1"
    assert r.hmget(p + "h", ["f1", "zz"]) == [b"1", None]
    assert r.hgetall(p + "h") == {b"f1": b"1", b"f2": b"2"}
    assert r.hdel(p + "h", "f1") == 1 and r.hlen(p + "h") == 1
    assert r.zadd(p + "z", {"a": 1, "b": 2, "c": 3}) == 3
    assert r.zrangebyscore(p + "z", 2, "+inf") == [b"b", b"c"]
    got = r.zrangebyscore(p + "z", "-inf", "+inf", start=1, num=1, withscores=True)
    assert [tuple(x) for x in got] == [(b"b", 2.0)], got
    assert r.zscore(p + "z", "c") == 3.0
    assert r.zrem(p + "z", "a") == 1 and r.zcard(p + "z") == 2
    assert r.type(p + "z") in (b"zset", "zset")
    for bad in (lambda: r.incr(p + "k"), lambda: r.hget(p + "k", "f"), lambda: r.execute_command("NOSUCH")):
        try:
            bad()
        except redis.exceptions.ResponseError:
            pass
        else:
            raise AssertionError("expected an error")
    # The default pipeline is a MULTI/EXEC transaction: it runs once, as one.
    tx = r.pipeline()
    tx.set(f"{p}tx", 1)
    tx.incr(f"{p}tx")
    assert tx.execute() == [True, 2]
    assert r.rpush(f"{p}list", "a", "b") == 2
    items = [x.decode() if isinstance(x, bytes) else x for x in r.lrange(f"{p}list", 0, -1)]
    assert items == ["a", "b"], items
    assert r.sadd(f"{p}set", "x", "y") == 2 and r.scard(f"{p}set") == 2
    assert r.set(f"{p}ttl", "v", ex=100) and 99 <= r.ttl(f"{p}ttl") <= 100
    pipe = r.pipeline(transaction=False)
    for i in range(500):
        pipe.set(f"{p}pipe:{i}", i)
    assert all(pipe.execute())
    assert len(list(r.scan_iter(match=f"{p}pipe:*", count=37))) == 500
    assert r.dbsize() >= 500
    assert "db0" in r.info()
    r.close()
print("redis-py against strata-server: ok (RESP2 and RESP3)")
