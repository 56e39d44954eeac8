"""The strata Python package: behaviour against a dict, iteration, snapshots, batches,
reopening, the lock, threads, and bad input."""

import os
import time
import random
import subprocess
import sys
import threading

import pytest

import strata


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "db")


def test_put_get_delete_and_mapping_protocol(path):
    with strata.DB(path, create_if_missing=True) as db:
        db.put(b"a", b"1")
        db[b"b"] = b"2"
        assert db.get(b"a") == b"1"
        assert db[b"b"] == b"2"
        assert db.get(b"missing") is None
        assert db.get(b"missing", b"dflt") == b"dflt"
        assert b"a" in db and b"zz" not in db
        assert len(db) == 2
        del db[b"a"]
        db.delete(b"never-there")
        assert b"a" not in db
        with pytest.raises(KeyError):
            db[b"a"]
        db.put(bytearray(b"ba"), memoryview(b"mv"))
        assert db[b"ba"] == b"mv"
        db.put(b"", b"")
        assert db[b""] == b""


def test_randomized_against_a_dict(path):
    rng = random.Random(7)
    model = {}
    with strata.DB(path, create_if_missing=True, write_buffer_size=64 << 10) as db:
        for step in range(20000):
            k = b"k%05d" % rng.randrange(3000)
            r = rng.random()
            if r < 0.6:
                v = os.urandom(rng.randrange(0, 200))
                db.put(k, v)
                model[k] = v
            elif r < 0.8:
                db.delete(k)
                model.pop(k, None)
            else:
                assert db.get(k) == model.get(k), step
        assert list(db) == sorted(model.items())
    with strata.DB(path, create_if_missing=True) as db:
        assert dict(db) == model


def test_iteration_bounds_prefix_reverse_and_projection(path):
    with strata.DB(path, create_if_missing=True) as db:
        for k in [b"a1", b"a2", b"b1", b"b2", b"c1"]:
            db.put(k, k.upper())
        keys = lambda **kw: list(db.iterator(include_value=False, **kw))
        assert keys() == [b"a1", b"a2", b"b1", b"b2", b"c1"]
        assert keys(start=b"a2", stop=b"c1") == [b"a2", b"b1", b"b2"]
        assert keys(prefix=b"b") == [b"b1", b"b2"]
        assert keys(prefix=b"b", reverse=True) == [b"b2", b"b1"]
        assert keys(reverse=True) == [b"c1", b"b2", b"b1", b"a2", b"a1"]
        assert list(db.iterator(prefix=b"c", include_key=False)) == [b"C1"]
        assert list(db.iterator(start=b"b2")) == [(b"b2", b"B2"), (b"c1", b"C1")]
        # As plyvel's: neither key nor value gives None items.
        assert list(db.iterator(include_key=False, include_value=False)) == [None] * 5


def test_snapshots_see_the_past(path):
    with strata.DB(path, create_if_missing=True) as db:
        db.put(b"k", b"old")
        with db.snapshot() as snap:
            db.put(b"k", b"new")
            db.put(b"k2", b"x")
            assert snap.get(b"k") == b"old"
            assert snap.get(b"k2") is None
            assert list(db.iterator(snapshot=snap)) == [(b"k", b"old")]
        assert db.get(b"k") == b"new"


def test_write_batch_is_atomic_and_a_transaction_is_discarded_on_exception(path):
    with strata.DB(path, create_if_missing=True) as db:
        with db.write_batch() as wb:
            wb.put(b"x", b"1")
            wb.put(b"y", b"2")
            wb.delete(b"x")
            assert len(wb) == 3
        assert db.get(b"x") is None and db.get(b"y") == b"2"
        # As plyvel's: a block that raises still writes, unless transaction=True.
        with pytest.raises(RuntimeError):
            with db.write_batch() as wb:
                wb.put(b"v", b"5")
                raise RuntimeError("boom")
        assert db.get(b"v") == b"5"
        with pytest.raises(RuntimeError):
            with db.write_batch(transaction=True) as wb:
                wb.put(b"z", b"3")
                raise RuntimeError("boom")
        assert db.get(b"z") is None
        wb = db.write_batch(sync=True)
        wb.put(b"w", b"4")
        wb.write()
        assert db.get(b"w") == b"4"
        # As plyvel's: a batch written stays filled; writing it again applies it again.
        db.put(b"w", b"changed")
        wb.write()
        assert db.get(b"w") == b"4"


def test_reopen_keeps_everything(path):
    db = strata.DB(path, create_if_missing=True)
    for i in range(1000):
        db.put(b"key%04d" % i, b"v%d" % i)
    db.close()
    db.close()  # harmless
    assert db.closed
    with pytest.raises(strata.ClosedError):
        db.get(b"key0001")
    with strata.DB(path, create_if_missing=False) as db:
        assert len(db) == 1000 and db[b"key0999"] == b"v999"


def test_options_and_presets(path, tmp_path):
    with strata.DB(path, create_if_missing=True, preset="blob", min_blob_size=64, value_dir=str(tmp_path / "v"),
                   compression="lz4", block_cache_size=1 << 20) as db:
        db.put(b"big", b"x" * 1000)
        db.flush()
        assert db.get(b"big") == b"x" * 1000
        assert int(db.property("strata.value-files")) == 1
        db.compact_range()
    with strata.DB(path + "b", create_if_missing=True, l0_layout="buckets", l0_buckets=4, wal_recovery_mode="point_in_time",
                   memory_limit=None, idle_compaction_delay=0.5, num_levels=5,
                   separate_flush_thread=True) as db:
        db.put(b"k", b"v")
        assert db.property("strata.l0-layout") == "Buckets"
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path + "c", create_if_missing=True, wal_recovery_mode="sometimes")
    with pytest.raises(TypeError):
        strata.DB(path + "2", create_if_missing=True, no_such_option=1)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path + "3", create_if_missing=True, preset="nonesuch")
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path + "4", create_if_missing=True, write_buffer_size=1)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path + "5", create_if_missing=True, compression="zstd")


def test_checkpoint_is_an_openable_copy_of_one_instant(path, tmp_path):
    target = str(tmp_path / "ckpt")
    with strata.DB(path, create_if_missing=True, preset="blob", min_blob_size=64,
                   value_dir=str(tmp_path / "v")) as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"%d" % i * 30)
        db.checkpoint(target)
        db.put(b"after", b"1")
        with pytest.raises(strata.InvalidArgumentError):
            db.checkpoint(target)
    with strata.DB(target) as c:
        assert sum(1 for _ in c.iterator()) == 2000
        assert c.get(b"k00042") == b"42" * 30
        assert c.get(b"after") is None
    with strata.DB(path + "h", create_if_missing=True, preset="hashkv", min_blob_size=64) as db:
        db.put(b"big", b"x" * 1000)
        db.checkpoint(str(tmp_path / "hash-ckpt"))
    with strata.DB(str(tmp_path / "hash-ckpt")) as c:
        assert c.get(b"big") == b"x" * 1000
    with strata.DB(path + "m", create_if_missing=True, preset="matrixkv",
                   pmem_dir=str(tmp_path / "pmem")) as db:
        db.put(b"big", b"x" * 1000)
        db.checkpoint(str(tmp_path / "matrix-ckpt"))
    with strata.DB(str(tmp_path / "matrix-ckpt")) as c:
        assert c.get(b"big") == b"x" * 1000


def test_backups_are_incremental_verified_restored_and_purged(path, tmp_path):
    backups = str(tmp_path / "backups")
    with strata.DB(path, create_if_missing=True) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, b"%d" % i * 20)
        with strata.BackupEngine(backups) as be:
            first = be.create_backup(db)
            assert first["id"] == 1 and first["copied_files"] == first["files"]
            db.put(b"after", b"1")
            second = be.create_backup(db)
            assert second["copied_files"] < second["files"]
            with pytest.raises(strata.BusyError):
                strata.BackupEngine(backups)
            assert [b["id"] for b in be.list()] == [1, 2]
            be.verify()
            be.restore(1, str(tmp_path / "r1"))
            with pytest.raises(strata.InvalidArgumentError):
                be.restore(1, str(tmp_path / "r1"))
            assert be.purge(1) == 1
            assert [b["id"] for b in be.list()] == [2]
            assert be.damaged() == []
            be.restore(2, str(tmp_path / "r2"))
        with pytest.raises(strata.ClosedError):
            be.list()
    with strata.DB(str(tmp_path / "r1")) as r:
        assert r.get(b"k00042") == b"42" * 20 and r.get(b"after") is None
    with strata.DB(str(tmp_path / "r2")) as r:
        assert r.get(b"after") == b"1"


def test_a_compaction_filter_removes_and_changes_and_its_exception_fails_the_job(path):
    seen = set()

    def rule(key, value, reason):
        seen.add(reason)
        if value.startswith(b"x"):
            return False
        if value.startswith(b"c"):
            return b"C" + value[1:]
        return None

    with strata.DB(path, create_if_missing=True, compaction_filter=rule) as db:
        for i in range(300):
            db.put(b"k%03d" % i, [b"x", b"c", b"k"][i % 3] + b"%d" % i)
        db.compact_range()
        assert db.get(b"k000") is None
        assert db.get(b"k001") == b"C1"
        assert db.get(b"k002") == b"k2"
        assert sum(1 for _ in db.iterator()) == 200
        assert seen & {"flush", "compaction"}
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path, compaction_filter=42)

    def broken(key, value, reason):
        raise ValueError("no")

    with strata.DB(path, compaction_filter=broken) as db:
        db.put(b"k999", b"v")
        with pytest.raises(strata.Error) as e:
            db.compact_range()
        assert "compaction filter" in str(e.value)
        with pytest.raises(strata.Error):
            db.put(b"after", b"v")


def test_a_db_with_a_python_filter_dropped_without_close_does_not_hang(path):
    # The last handle closes the database, which waits for a background job that may be
    # inside the filter, waiting for the GIL: it must be let go with the GIL released.
    code = (
        "import strata\n"
        "def f(k, v, r):\n"
        "    return None\n"
        f"db = strata.DB({path!r}, create_if_missing=True, compaction_filter=f,"
        " write_buffer_size=64 * 1024)\n"
        "for i in range(60000):\n"
        "    db.put(b'k%08d' % i, b'v' * 50)\n"
        "it = db.iterator()\n"
        "del db\n"
        "del it\n"
        "print('done')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert out.stdout.strip() == b"done", out.stderr


def test_a_put_with_a_ttl_is_gone_once_its_time_is_up(path):
    with strata.DB(path, create_if_missing=True) as db:
        db.put(b"k", b"old")
        db.put(b"k", b"brief", ttl=0.3)
        db.put(b"long", b"1", ttl=3600)
        wb = db.write_batch()
        wb.put(b"b", b"2", ttl=0.3)
        wb.write()
        assert db.get(b"k") == b"brief" and db.get(b"b") == b"2"
        with pytest.raises(ValueError):
            db.put(b"k", b"v", ttl=-1)
        time.sleep(0.5)
        # Gone, and the older value does not come back.
        assert db.get(b"k") is None and db.get(b"b") is None
        assert [k for k, _ in db.iterator()] == [b"long"]
    with strata.DB(path) as db:
        assert db.get(b"k") is None and db.get(b"long") == b"1"
    with strata.DB(path, default_ttl=0.2) as db:
        db.put(b"d", b"1")
        time.sleep(0.4)
        assert db.get(b"d") is None


def test_delete_range_deletes_from_start_to_before_end(path):
    with strata.DB(path, create_if_missing=True) as db:
        for k in [b"a", b"b", b"c", b"d"]:
            db.put(k, b"1")
        snap = db.snapshot()
        db.delete_range(b"b", b"d")
        assert [k for k, _ in db.iterator()] == [b"a", b"d"]
        assert snap.get(b"c") == b"1"
        wb = db.write_batch()
        wb.put(b"x", b"2")
        wb.delete_range(b"a", b"z")
        wb.put(b"y", b"3")
        wb.write()
        assert [k for k, _ in db.iterator()] == [b"y"]
        with pytest.raises(strata.InvalidArgumentError):
            db.delete_range(b"z", b"a")
        p = db.prefixed_db(b"p/")
        p.put(b"1", b"v")
        p.put(b"2", b"v")
        db.put(b"p0", b"outside")
        p.delete_range(b"0", b"2")
        assert [k for k, _ in p.iterator()] == [b"2"] and db.get(b"p0") == b"outside"
        snap.close()


def test_repair_and_destroy_find_the_directories_the_database_recorded(path, tmp_path):
    values, levels = str(tmp_path / "values"), str(tmp_path / "levels")
    big = lambda i: (b"%d:" % i) * 60
    with strata.DB(path, create_if_missing=True, preset="blob", min_blob_size=64,
                   value_dir=values, level_dir=levels) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, big(i))
        db.flush()
        db.compact_range()
    os.remove(os.path.join(path, "CURRENT"))
    strata.repair_db(path)
    with strata.DB(path, preset="blob", min_blob_size=64, value_dir=values, level_dir=levels) as db:
        assert sum(1 for _ in db.iterator()) == 3000
        assert db.get(b"k00042") == big(42)
    # A damaged OPTIONS file: the options given instead.
    with open(os.path.join(path, "OPTIONS"), "w") as f:
        f.write("not options\n")
    os.remove(os.path.join(path, "CURRENT"))
    with pytest.raises(strata.Error):
        strata.repair_db(path)
    strata.repair_db(path, preset="blob", min_blob_size=64, value_dir=values, level_dir=levels)
    with strata.DB(path, preset="blob", min_blob_size=64, value_dir=values, level_dir=levels) as db:
        assert sum(1 for _ in db.iterator()) == 3000
    strata.destroy_db(path)
    assert not any(n.endswith(".blob") for n in os.listdir(values))
    assert not any(n.endswith(".sst") for n in os.listdir(levels))


def test_an_open_without_the_wal_dir_finds_the_recorded_one(path, tmp_path):
    wal, other = str(tmp_path / "wal"), str(tmp_path / "other")
    with strata.DB(path, create_if_missing=True, wal_dir=wal) as db:
        for i in range(1000):
            db.put(b"k%04d" % i, b"v%d" % i)
    # Another directory while the WALs are in wal_dir: refused, nothing created.
    with pytest.raises(strata.CorruptionError, match="wal_dir"):
        strata.DB(path, wal_dir=other)
    assert not os.path.exists(other)
    with strata.DB(path) as db:  # no wal_dir: the recorded one is read
        assert sum(1 for _ in db.iterator()) == 1000
        db.put(b"new", b"1")
    with strata.DB(path, wal_dir=wal) as db:
        assert sum(1 for _ in db.iterator()) == 1001


def test_a_prefixed_snapshot_stays_inside_its_prefix(path):
    with strata.DB(path, create_if_missing=True) as db:
        db.put(b"3", b"root")
        view = db.prefixed_db(b"p/")
        view.put(b"3", b"prefixed")
        view.put(b"4", b"four")
        snap = view.snapshot()
        view.put(b"3", b"later")
        assert snap.get(b"3") == b"prefixed"
        assert list(snap.iterator()) == [(b"3", b"prefixed"), (b"4", b"four")]
        assert list(view.iterator(snapshot=snap)) == [(b"3", b"prefixed"), (b"4", b"four")]
        assert list(snap.iterator(reverse=True, include_value=False)) == [b"4", b"3"]
        assert list(snap.iterator(start=b"4")) == [(b"4", b"four")]
        with pytest.raises(TypeError):
            snap.get(3)
        snap.release()
        root = db.snapshot()
        root.release()


def test_missing_database_is_refused_by_default(path):
    # create_if_missing defaults to False, as plyvel's does.
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path, create_if_missing=False)
    assert not os.path.exists(os.path.join(path, "CURRENT"))


def test_a_database_that_lost_current_is_never_created_over(path):
    with strata.DB(path, create_if_missing=True, write_buffer_size=64 << 10) as db:
        for i in range(3000):
            db.put(b"key%05d" % i, b"v" * 100)
    for name in os.listdir(path):
        if name.startswith("MANIFEST-") or name == "CURRENT":
            os.remove(os.path.join(path, name))
    before = sorted(os.listdir(path))
    with pytest.raises(strata.CorruptionError, match="strata repair"):
        strata.DB(path, create_if_missing=True)
    assert sorted(os.listdir(path)) == before


def test_str_is_refused_with_a_clear_type_error(path):
    with strata.DB(path, create_if_missing=True) as db:
        with pytest.raises(TypeError, match="bytes, not str"):
            db.put("key", b"v")
        with pytest.raises(TypeError, match="bytes, not str"):
            db.get("key")
        with pytest.raises(TypeError):
            db.put(b"k", 5)
        with pytest.raises(TypeError, match="bytes, not str"):
            list(db.iterator(prefix="a"))


def test_errors_form_a_hierarchy():
    for e in [strata.CorruptionError, strata.InvalidArgumentError, strata.IOError,
              strata.NotSupportedError, strata.ClosedError, strata.BusyError]:
        assert issubclass(e, strata.Error)


def test_a_second_process_is_refused_by_the_lock(path):
    with strata.DB(path, create_if_missing=True) as db:
        db.put(b"k", b"v")
        code = ("import strata, sys\n"
                "try:\n    strata.DB(sys.argv[1])\nexcept strata.BusyError as e:\n"
                "    print('busy:', e); sys.exit(3)\n")
        r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True)
        assert r.returncode == 3, r.stdout + r.stderr
    with pytest.raises(strata.BusyError):
        with strata.DB(path, create_if_missing=True):
            strata.DB(path, create_if_missing=True)


def test_threads_read_and_write_concurrently(path):
    with strata.DB(path, create_if_missing=True) as db:
        errors = []

        def worker(t):
            try:
                for i in range(3000):
                    k = b"t%d-%05d" % (t, i)
                    db.put(k, k)
                    assert db.get(k) == k
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(db) == 12000


def test_read_only_open_reads_while_another_holds_the_database(path):
    with strata.DB(path, create_if_missing=True) as db:
        db.put(b"k", b"v")
        with strata.DB(path, read_only=True) as ro:
            assert ro.get(b"k") == b"v"
            with pytest.raises(strata.NotSupportedError, match="read-only"):
                ro.put(b"x", b"1")


def test_exceptions_are_strata_s_and_io_errors_are_os_errors():
    assert issubclass(strata.IOError, strata.Error)
    assert issubclass(strata.IOError, OSError)
    for e in (strata.Error, strata.CorruptionError, strata.IOError, strata.BusyError):
        assert e.__module__ == "strata", e
    scope = {}
    exec("from strata import *", scope)
    assert "IOError" not in scope  # the builtin is not shadowed


def test_bad_durations_are_refused_not_a_panic(path):
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(strata.InvalidArgumentError, match="seconds"):
            strata.DB(path, create_if_missing=True, idle_compaction_delay=bad)


def test_a_failed_batch_write_keeps_the_batch(path):
    db = strata.DB(path, create_if_missing=True)
    wb = db.write_batch()
    wb.put(b"a", b"1")
    db.close()
    with pytest.raises(strata.ClosedError):
        wb.write()
    assert len(wb) == 1  # still there: it can be written again
    with pytest.raises(strata.ClosedError):
        wb.write()


def test_iteration_reads_with_the_gil_released(path):
    import threading
    with strata.DB(path, create_if_missing=True) as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"v" * 100)
        seen = []
        t = threading.Thread(target=lambda: seen.extend(k for k, _ in db.iterator()))
        t.start()
        assert sum(1 for _ in db.iterator()) == 2000
        t.join()
        assert len(seen) == 2000


def test_plyvel_style_api(path):
    with strata.DB(path, create_if_missing=True) as db:
        for k in (b"a", b"b", b"c", b"d"):
            db.put(k, k.upper())
        # include_start / include_stop
        keys = lambda it: [k for k, _ in it]
        assert keys(db.iterator(start=b"a", stop=b"c")) == [b"a", b"b"]
        assert keys(db.iterator(start=b"a", stop=b"c", include_start=False,
                                include_stop=True)) == [b"b", b"c"]
        # seek / prev / seek_to_start / seek_to_stop / close
        it = db.iterator()
        it.seek(b"b")
        assert next(it) == (b"b", b"B")
        assert it.prev() == (b"b", b"B")
        assert next(it) == (b"b", b"B")
        it.seek_to_start()
        with pytest.raises(StopIteration):
            it.prev()
        assert next(it) == (b"a", b"A")
        it.seek_to_stop()
        assert it.prev() == (b"d", b"D")
        it.close()
        assert list(it) == []
        rit = db.iterator(reverse=True, include_value=False)
        assert next(rit) == b"d" and next(rit) == b"c" and rit.prev() == b"c"
        # snapshot.iterator()
        with db.snapshot() as snap:
            db.put(b"e", b"E")
            assert keys(snap.iterator()) == [b"a", b"b", b"c", b"d"]
        # prefixed_db
        users = db.prefixed_db(b"user:")
        users.put(b"ann", b"1")
        users.put(b"bob", b"2")
        assert db.get(b"user:ann") == b"1" and users.get(b"bob") == b"2"
        assert list(users.iterator()) == [(b"ann", b"1"), (b"bob", b"2")]
        with users.write_batch() as wb:
            wb.delete(b"ann")
        assert users.get(b"ann") is None
        # approximate_sizes
        db.flush()
        sizes = db.approximate_sizes((b"a", b"z"), (b"x", b"y"))
        assert len(sizes) == 2 and sizes[0] > 0 and sizes[1] == 0
    assert isinstance(strata.__version__, str)
    strata.repair_db(path)
    with strata.DB(path) as db:
        assert db.get(b"user:bob") == b"2"
    strata.destroy_db(path)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path)


def test_every_field_of_the_options_text_can_be_set_by_name(path, tmp_path):
    # pmem_dir and wal_in_pmem are not among the typed options: set through the options
    # text, as are the matrix's and the policy enums (by variant name).
    pmem = str(tmp_path / "pmem")
    with strata.DB(path, create_if_missing=True, preset="matrixkv", pmem_dir=pmem,
                   matrix_container_size=1 << 20, write_buffer_size=64 << 10,
                   level_sizing="Flattened") as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"v" * 100)
        names = os.listdir(pmem)
        assert "matrix.pmem" in names, names
        assert any(n.endswith(".log") for n in names), "the preset's WAL in pmem_dir"
        assert not any(n.endswith(".log") for n in os.listdir(path))
    with strata.DB(path, preset="matrixkv", pmem_dir=pmem, matrix_container_size=1 << 20,
                   write_buffer_size=64 << 10, wal_in_pmem=False) as db:
        assert db.get(b"k01999") == b"v" * 100
        db.put(b"later", b"x")
        assert any(n.endswith(".log") for n in os.listdir(path))
    with pytest.raises(TypeError):
        strata.DB(path, no_such_option=1)
    with pytest.raises(strata.InvalidArgumentError):
        strata.DB(path, level_sizing="Sideways")
