// The OHDB paper's Table II / 40 on HyperLevelDB 1.1.0: how many compactions its own rules make
// (docs/design/baselines.md). Built and run by tools/hyperleveldb/run.sh.
// fill (db_bench-style fillrandom: key = Random(seed).Next() % num, "%016d"),
// wait until background work is quiet, readrandom, wait again, report.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <sys/stat.h>
#include <time.h>

#include "hyperleveldb/db.h"
#include "hyperleveldb/options.h"
#include "hyperleveldb/env.h"
#include "util/random.h"
#include "db/db_impl.h"

using namespace std::chrono;

static long logsize(const std::string& db) {
  struct stat st;
  std::string p = db + "/LOG";
  if (stat(p.c_str(), &st) != 0) return -1;
  return st.st_size;
}

static double now() {
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

static int l0(leveldb::DB* db) {
  std::string v;
  db->GetProperty("leveldb.num-files-at-level0", &v);
  return atoi(v.c_str());
}

// Count compaction lines ("Compacting", "Moved #", "Optimistic compaction
// started") in the LOG.
static long compaction_lines(const std::string& db) {
  std::string p = db + "/LOG";
  FILE* f = fopen(p.c_str(), "r");
  if (!f) return -1;
  char buf[4096];
  long n = 0;
  while (fgets(buf, sizeof(buf), f)) {
    if (strstr(buf, " Compacting ") || strstr(buf, " Moved #") ||
        strstr(buf, "Optimistic compaction started")) n++;
  }
  fclose(f);
  return n;
}

// Wait until no compaction line has appeared for quiet_s seconds.
// HyperLevelDB 1.1.0 can leave its level thread asleep with work pending
// (the optimistic thread never signals bg_compaction_cv_), so after 2 s of
// silence we nudge it once per silence with DBImpl::TEST_CompactMemTable():
// this switches the memtable (flushing the remainder of the fill the first
// time, an empty memtable that yields no table afterwards) and signals
// bg_compaction_cv_ (db_impl.cc:583).  Returns seconds until the last
// compaction line; *nudges counts the nudges.
static double wait_quiet(leveldb::DB* db, const std::string& dbname,
                         double quiet_s, int* nudges, bool nudge) {
  double t0 = now();
  long last = compaction_lines(dbname);
  double last_change = now();
  bool nudged = false;
  while (true) {
    std::this_thread::sleep_for(milliseconds(250));
    long c = compaction_lines(dbname);
    if (c != last) { last = c; last_change = now(); nudged = false; }
    if (nudge && !nudged && now() - last_change >= 2.0) {
      static_cast<leveldb::DBImpl*>(db)->TEST_CompactMemTable();
      nudged = true;
      (*nudges)++;
    }
    if (now() - last_change >= quiet_s) break;
  }
  return last_change - t0;
}

int main(int argc, char** argv) {
  std::string dbname = "hyperleveldb-db";
  long num = 2500000, reads = 250000;
  size_t wb = 838861;
  double rate = 0;  // puts/s; 0 = unpaced
  int seed = 301;
  double quiet = 8;
  int value_size = 100;
  int nudge = 1;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--db=", 5)) dbname = argv[i] + 5;
    else if (!strncmp(argv[i], "--num=", 6)) num = atol(argv[i] + 6);
    else if (!strncmp(argv[i], "--reads=", 8)) reads = atol(argv[i] + 8);
    else if (!strncmp(argv[i], "--write_buffer_size=", 20)) wb = atol(argv[i] + 20);
    else if (!strncmp(argv[i], "--rate=", 7)) rate = atof(argv[i] + 7);
    else if (!strncmp(argv[i], "--seed=", 7)) seed = atoi(argv[i] + 7);
    else if (!strncmp(argv[i], "--quiet=", 8)) quiet = atof(argv[i] + 8);
    else if (!strncmp(argv[i], "--nudge=", 8)) nudge = atoi(argv[i] + 8);
    else { fprintf(stderr, "bad flag %s\n", argv[i]); return 2; }
  }
  leveldb::Options opt;
  opt.create_if_missing = true;
  opt.error_if_exists = true;
  opt.write_buffer_size = wb;
  opt.compression = leveldb::kNoCompression;
  opt.filter_policy = NULL;  // no Bloom filter
  opt.max_open_files = 10000;  // all ~1.1K tables stay open (reads only)
  leveldb::DestroyDB(dbname, opt);
  leveldb::DB* db = NULL;
  leveldb::Status s = leveldb::DB::Open(opt, dbname, &db);
  if (!s.ok()) { fprintf(stderr, "open: %s\n", s.ToString().c_str()); return 1; }

  // L0 monitor: peak count, and seconds with L0 >= 8 (kL0_SlowdownWritesTrigger)
  std::atomic<bool> stop(false);
  std::atomic<int> l0max(0);
  std::atomic<long> ticks_ge8(0), ticks(0);
  std::thread mon([&] {
    while (!stop.load()) {
      int n = l0(db);
      if (n > l0max.load()) l0max.store(n);
      ticks++;
      if (n >= 8) ticks_ge8++;
      std::this_thread::sleep_for(milliseconds(20));
    }
  });

  printf("log_offset_start %ld\n", logsize(dbname));
  leveldb::Random rnd(seed), vrnd(seed + 1000);
  std::string value(value_size, 'x');
  for (int i = 0; i < value_size; i++) value[i] = 'a' + vrnd.Uniform(26);
  char key[32];
  leveldb::WriteOptions wo;
  long slow1ms = 0; double slow_s = 0, worst = 0;
  double t0 = now();
  for (long i = 0; i < num; i++) {
    if (rate > 0) {
      double target = t0 + i / rate;
      double d = target - now();
      if (d > 0.0005) std::this_thread::sleep_for(duration<double>(d));
    }
    snprintf(key, sizeof(key), "%016d", (int)(rnd.Next() % num));
    value[i % value_size] = 'a' + (i % 26);
    double a = now();
    s = db->Put(wo, leveldb::Slice(key, 16), value);
    double b = now() - a;
    if (b > 0.001) { slow1ms++; slow_s += b; }
    if (b > worst) worst = b;
    if (!s.ok()) { fprintf(stderr, "put: %s\n", s.ToString().c_str()); return 1; }
  }
  double fill_s = now() - t0;
  int l0_end_fill = l0(db);
  printf("fill_ops_per_s %.0f\nfill_s %.2f\nputs_over_1ms %ld\nputs_over_1ms_s %.2f\nworst_put_ms %.1f\n",
         num / fill_s, fill_s, slow1ms, slow_s, worst * 1e3);
  printf("l0_at_fill_end %d\n", l0_end_fill);
  printf("log_offset_fill_end %ld\n", logsize(dbname));
  int nudges = 0;
  double w = wait_quiet(db, dbname, quiet, &nudges, nudge);
  printf("wait_s %.2f\nnudges_wait %d\nl0_after_wait %d\n", w, nudges, l0(db));
  int peak = l0max.load();
  long t8 = ticks_ge8.load(), tt = ticks.load();
  printf("l0_peak_fill_and_wait %d\nl0_ge8_fraction %.4f\n", peak, tt ? (double)t8 / tt : 0.0);
  printf("log_offset_reads_start %ld\n", logsize(dbname));
  {
    std::string st; db->GetProperty("leveldb.stats", &st);
    printf("stats_before_reads\n%s", st.c_str());
  }

  leveldb::Random rr(seed + 7);
  leveldb::ReadOptions ro;
  std::string v;
  long found = 0;
  t0 = now();
  for (long i = 0; i < reads; i++) {
    snprintf(key, sizeof(key), "%016d", (int)(rr.Next() % num));
    if (db->Get(ro, leveldb::Slice(key, 16), &v).ok()) found++;
  }
  double read_s = now() - t0;
  printf("read_ops_per_s %.0f\nread_s %.2f\nfound %ld\n", reads / read_s, read_s, found);
  printf("log_offset_reads_end %ld\n", logsize(dbname));
  nudges = 0;
  w = wait_quiet(db, dbname, quiet, &nudges, nudge);
  printf("wait_after_reads_s %.2f\nnudges_after_reads %d\n", w, nudges);
  printf("log_offset_end %ld\n", logsize(dbname));
  stop = true; mon.join();
  long tables = 0;
  for (int L = 0; L < 7; L++) {
    std::string x, p = "leveldb.num-files-at-level" + std::to_string(L);
    db->GetProperty(p, &x);
    printf("files_L%d %s\n", L, x.c_str());
    tables += atol(x.c_str());
  }
  printf("tables_end %ld\n", tables);
  std::string st; db->GetProperty("leveldb.stats", &st);
  printf("stats_end\n%s", st.c_str());
  fflush(stdout);
  delete db;
  return 0;
}
