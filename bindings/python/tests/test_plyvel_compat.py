"""plyvel's documented behaviour, case by case: code written for plyvel runs unchanged.

Each case follows plyvel's own code and tests (its iterator's states, its raw iterator, its
write batch, its options), not strata's earlier choices."""

import os

import pytest

import strata


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "db")


def fill(db, keys=(b"1", b"2", b"3", b"4", b"5")):
    for k in keys:
        db.put(k, b"v" + k)


def test_plyvel_options_are_taken(path):
    # plyvel's constructor keywords, its defaults included (None leaves strata's).
    with strata.DB(path, create_if_missing=True, error_if_exists=False, paranoid_checks=True,
                   write_buffer_size=None, max_open_files=None, lru_cache_size=8 << 20,
                   block_size=None, block_restart_interval=None, max_file_size=4 << 20,
                   compression="snappy", bloom_filter_bits=10) as db:
        db.put(b"k", b"v")
        assert db.get(b"k") == b"v"
        options = db.property("strata.options")
        assert "block_cache_size = 8388608" in options, options
        assert "target_file_size_base = 4194304" in options, options
        assert "bloom_bits_per_key = 10" in options, options
        assert "compression = Lz4" in options, options
    with strata.DB(path, compression=None, paranoid_checks=None) as db:
        assert "compression = None" in db.property("strata.options")
    with strata.DB(path, compression=b"snappy") as db:
        assert db.get(b"k") == b"v"
    with pytest.raises(strata.NotSupportedError):
        strata.DB(path, comparator=lambda a, b: 0, comparator_name=b"reverse")


def test_every_layout_and_store_is_reachable_by_name(path, tmp_path):
    with strata.DB(path, create_if_missing=True, l0_layout="matrix",
                   pmem_dir=str(tmp_path / "pmem"), matrix_container_size=1 << 20,
                   write_buffer_size=64 << 10) as db:
        db.put(b"k", b"v")
        assert db.property("strata.l0-layout") == "Matrix"
    with strata.DB(path + "h", create_if_missing=True, value_store="hash",
                   min_blob_size=16) as db:
        db.put(b"k", b"v" * 100)
        assert db.get(b"k") == b"v" * 100
        assert "value_store = Hash" in db.property("strata.options")
    for layout in ("flat", "Flat", "buckets"):
        with strata.DB(path + layout, create_if_missing=True, l0_layout=layout) as db:
            db.put(b"k", b"v")


def test_name_and_bytes_paths(path):
    with strata.DB(path.encode(), create_if_missing=True) as db:
        assert db.name == path.encode()
        db.put(b"k", b"v")
    with strata.DB(path) as db:
        assert db.name == path
        assert db.get(b"k") == b"v"


def test_get_property_and_approximate_size(path):
    with strata.DB(path, create_if_missing=True) as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"v" * 100)
        db.flush()
        stats = db.get_property(b"leveldb.stats")
        assert isinstance(stats, bytes) and stats
        assert db.get_property(b"strata.levels") is not None
        assert db.get_property(b"leveldb.no-such-property") is None
        assert db.get_property(b"leveldb.num-files-at-level0") is not None
        assert db.approximate_size(b"k", b"l") > 0
        assert db.approximate_size(b"x", b"y") == 0
        assert db.approximate_sizes() == []


def test_read_keywords_are_taken(path):
    with strata.DB(path, create_if_missing=True) as db:
        fill(db)
        assert db.get(b"1", verify_checksums=True, fill_cache=False) == b"v1"
        it = db.iterator(verify_checksums=True, fill_cache=False)
        assert next(it) == (b"1", b"v1")
        with db.snapshot() as snap:
            assert snap.get(b"2", verify_checksums=True) == b"v2"
            assert next(snap.iterator(fill_cache=False)) == (b"1", b"v1")


def test_neither_key_nor_value_gives_none_items(path):
    with strata.DB(path, create_if_missing=True) as db:
        fill(db)
        assert list(db.iterator(include_key=False, include_value=False)) == [None] * 5


def test_forward_seek_next_prev(path):
    with strata.DB(path, create_if_missing=True) as db:
        fill(db)
        it = db.iterator(include_value=False)
        it.seek(b"2")
        assert next(it) == b"2"
        it.seek(b"2")
        assert it.prev() == b"1"
        it.seek(b"0")
        with pytest.raises(StopIteration):
            it.prev()
        assert next(it) == b"1"
        it.seek(b"6")
        with pytest.raises(StopIteration):
            next(it)
        # next() and prev() alternately repeat one entry.
        it.seek_to_start()
        assert next(it) == b"1" and it.prev() == b"1" and next(it) == b"1"


def test_reverse_seek_lands_between_entries(path):
    with strata.DB(path, create_if_missing=True) as db:
        fill(db)
        it = db.iterator(reverse=True, include_value=False)
        # The target present: next() gives the entry below it, prev() the target.
        it.seek(b"3")
        assert next(it) == b"2"
        it.seek(b"3")
        assert it.prev() == b"3"
        # Past the end: next() gives the last entries, in order.
        it.seek(b"6")
        assert next(it) == b"5" and next(it) == b"4"
        # Below the first: nothing before it; prev() gives the first.
        it.seek(b"1")
        with pytest.raises(StopIteration):
            next(it)
        it.seek(b"1")
        assert it.prev() == b"1"
        # Between two keys.
        it.seek(b"25")
        assert next(it) == b"2"


def test_prev_at_the_start_and_next_at_the_end_raise(path):
    with strata.DB(path, create_if_missing=True) as db:
        it = db.iterator()
        with pytest.raises(StopIteration):
            next(it)
        with pytest.raises(StopIteration):
            it.prev()
        fill(db)
        it = db.iterator(include_value=False)
        with pytest.raises(StopIteration):
            it.prev()
        assert list(it) == [b"1", b"2", b"3", b"4", b"5"]
        with pytest.raises(StopIteration):
            next(it)
        assert it.prev() == b"5"
        rit = db.iterator(reverse=True, include_value=False)
        with pytest.raises(StopIteration):
            rit.prev()
        assert next(rit) == b"5"


def test_raw_iterator(path):
    with strata.DB(path, create_if_missing=True) as db:
        fill(db)
        it = db.raw_iterator()
        assert not it.valid()
        for call in (it.key, it.value, it.item, it.next, it.prev):
            with pytest.raises(strata.IteratorInvalidError):
                call()
        it.seek_to_first()
        assert it.valid() and it.key() == b"1" and it.value() == b"v1"
        it.next()
        assert it.item() == (b"2", b"v2")
        it.seek_to_last()
        assert it.key() == b"5"
        it.next()
        assert not it.valid()
        it.seek(b"25")
        assert it.key() == b"3"
        it.prev()
        assert it.key() == b"2"
        it.seek(b"9")
        assert not it.valid()
        assert issubclass(strata.IteratorInvalidError, strata.Error)
        with db.snapshot() as snap:
            db.put(b"6", b"v6")
            r = snap.raw_iterator()
            r.seek_to_last()
            assert r.key() == b"5"
        with db.raw_iterator() as r:
            r.seek_to_last()
            assert r.key() == b"6"
        it.close()
        with pytest.raises(strata.ClosedError):
            it.valid()


def test_write_batch_append_and_size(path):
    with strata.DB(path, create_if_missing=True) as db:
        a, b = db.write_batch(), db.write_batch()
        a.put(b"a", b"1")
        b.put(b"b", b"2")
        b.delete(b"c")
        empty = a.approximate_size()
        a.append(b)
        assert len(a) == 3 and a.approximate_size() > empty
        with pytest.raises(TypeError):
            a.append(b"not a batch")
        a.write()
        assert db.get(b"a") == b"1" and db.get(b"b") == b"2"
        # Leaving a block writes and clears: the batch is empty after it.
        with db.write_batch() as wb:
            wb.put(b"x", b"1")
        assert len(wb) == 0 and db.get(b"x") == b"1"


def test_prefixed_db_follows_the_same_rules(path):
    with strata.DB(path, create_if_missing=True) as db:
        view = db.prefixed_db(b"p/")
        fill(view)
        db.put(b"q", b"outside")
        it = view.iterator(reverse=True, include_value=False)
        it.seek(b"3")
        assert next(it) == b"2"
        with pytest.raises(StopIteration):
            view.iterator().prev()
        assert list(view.iterator(include_key=False, include_value=False)) == [None] * 5
