package strata.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * A YCSB binding for any Redis-protocol server, written for strata (YCSB's own
 * redis-binding 0.17.0 jar is not served by the registry here). It stores records the
 * way that binding's documentation describes: each record is a hash of its fields, and
 * a sorted set "_indices" holds every key, scored by the key's hash code, for scans.
 *
 * Properties: redis.host (127.0.0.1), redis.port (6379), redis.password (none),
 * redis.timeout (ms, 10000).
 */
public class RedisHashClient extends DB {
  private static final String INDEX = "_indices";
  private Jedis jedis;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String host = p.getProperty("redis.host", "127.0.0.1");
    int port = Integer.parseInt(p.getProperty("redis.port", String.valueOf(Protocol.DEFAULT_PORT)));
    int timeout = Integer.parseInt(p.getProperty("redis.timeout", "10000"));
    jedis = new Jedis(host, port, timeout);
    jedis.connect();
    String password = p.getProperty("redis.password");
    if (password != null) {
      jedis.auth(password);
    }
  }

  @Override
  public void cleanup() throws DBException {
    if (jedis != null) {
      jedis.close();
    }
  }

  private static double score(String key) {
    return key.hashCode();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    if (fields == null) {
      Map<String, String> all = jedis.hgetAll(key);
      StringByteIterator.putAllAsByteIterators(result, all);
      return all.isEmpty() ? Status.NOT_FOUND : Status.OK;
    }
    String[] names = fields.toArray(new String[0]);
    List<String> values = jedis.hmget(key, names);
    boolean any = false;
    for (int i = 0; i < names.length; i++) {
      String v = values.get(i);
      if (v != null) {
        result.put(names[i], new StringByteIterator(v));
        any = true;
      }
    }
    return any ? Status.OK : Status.NOT_FOUND;
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    String ok = jedis.hmset(key, StringByteIterator.getStringMap(values));
    if (!"OK".equals(ok)) {
      return Status.ERROR;
    }
    jedis.zadd(INDEX, score(key), key);
    return Status.OK;
  }

  @Override
  public Status delete(String table, String key) {
    long removed = jedis.del(key);
    jedis.zrem(INDEX, key);
    return removed == 0 ? Status.NOT_FOUND : Status.OK;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    String ok = jedis.hmset(key, StringByteIterator.getStringMap(values));
    return "OK".equals(ok) ? Status.OK : Status.ERROR;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    Set<String> keys = jedis.zrangeByScore(INDEX, score(startkey), Double.POSITIVE_INFINITY, 0, recordcount);
    for (String key : keys) {
      HashMap<String, ByteIterator> values = new HashMap<>();
      read(table, key, fields, values);
      result.add(values);
    }
    return Status.OK;
  }
}
