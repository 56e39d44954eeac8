//! Group files (store [`ID`] 4, `Options::coalesce_group_size`, preset `cleveldb`): a flush
//! packs the small puts it writes (key + value under `coalesce_item_threshold`) into groups
//! of `coalesce_group_size` bytes, CLeveldb's coalesced groups, in one new group file, and
//! its tables hold, per item, a pointer to the item in its group (the group's place in the
//! file, the item's offset in it and its size): CLeveldb's UMeta entry <key, group, index,
//! size>, kept sorted in the LSM's own tables (docs/design/cleveldb.md). A read takes the
//! item's bytes out of its group and checks them. Compactions count the pointers they drop
//! as the file's garbage and, past `coalesce_gc_ratio`, move the live items of a file into
//! new groups.
//!
//! Format: docs/format/coalesce.md. A file: a 16-byte header (magic, version, group size),
//! groups of the group size, the last unpadded (`item count u32 | items | zero padding`, an item a
//! value record: `masked crc32c | key length varint32 | value length varint32 | key |
//! value`, the CRC over everything after it), and a 24-byte footer (group count, item
//! count, magic).

use std::sync::Arc;

use crate::coding::varint_len;
use crate::error::Result;
use crate::filename::FileNumber;
use crate::fs::{Fs, WritableFile};
use crate::options::Options;
use crate::placement::{FileKind, PathId, Placement};
use crate::vstore::record::{self, Walk};
use crate::vstore::{
    FileWriter, FlushEntry, FlushSeparator, OneFile, Store, StoreEnv, StoreId, ValueFile,
    ValueFormat, ValuePointer,
};

/// The store's id: the tag of its pointers (docs/format/value-pointer.md).
pub(crate) const ID: StoreId = StoreId(4);
/// Its files' format, as each of them carries it.
pub(crate) const FORMAT: crate::value::Format = crate::value::Format(&Groups);

/// Manifest tag of the record naming a group file (docs/format/manifest.md).
const TAG_NEW_GROUP_FILE: u32 = 17;

/// First bytes of a group file.
const MAGIC: &[u8; 8] = b"strgrp\x00\x01";
/// Last bytes of a complete group file.
const FOOTER_MAGIC: &[u8; 8] = b"strgrpE\x00";
/// The format version in the header.
const VERSION: u32 = 1;
/// Header: magic + version u32 LE + group size u32 LE.
const HEADER_LEN: u64 = 16;
/// Footer: group count u64 LE + item count u64 LE + magic.
const FOOTER_LEN: u64 = 24;
/// The largest `Options::coalesce_group_size` (checked by this store, `check_options`):
/// group GC writes the items it moves in groups of this size, so that an item of any group
/// file fits whatever size is configured (docs/format/coalesce.md).
pub(crate) const MAX_GROUP_SIZE: usize = 1 << 20;
/// Bytes of a group's frame before its items: the item count.
const GROUP_HEAD: usize = 4;

/// The format feature a database with group files names in its manifest.
const FEATURE: &str = "coalesced-groups";

/// Whether an item of `key` and `value` fits in a group of `group_size` bytes by itself.
fn fits(group_size: usize, key: &[u8], value: &[u8]) -> bool {
    GROUP_HEAD + item_len(key, value) <= group_size
}

/// Bytes of an item's record (`record::encode`'s layout).
fn item_len(key: &[u8], value: &[u8]) -> usize {
    4 + varint_len(key.len() as u64) + varint_len(value.len() as u64) + key.len() + value.len()
}

/// Writes one group file: items are packed into the open group until the next does not
/// fit; each group is written whole, zero-padded to the group size but the file's last.
pub(crate) struct GroupWriter {
    file: Box<dyn WritableFile>,
    number: FileNumber,
    path_id: PathId,
    group_size: usize,
    /// The open group's offset in the file.
    offset: u64,
    /// The open group: its item count (filled in by `seal`), then its items' records.
    open: Vec<u8>,
    open_items: u32,
    groups: u64,
    items: u64,
    item_bytes: u64,
}

impl GroupWriter {
    /// Creates group file `number` in the value directory.
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(
        fs: &dyn Fs,
        placement: &Placement,
        number: FileNumber,
        group_size: usize,
    ) -> Result<GroupWriter> {
        let path_id = placement.path_id(FileKind::Value);
        let path = crate::vstore::file_path(&Groups, number, path_id, placement);
        let mut file = fs.create(&path)?;
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&(group_size as u32).to_le_bytes());
        file.append(&header)?;
        let mut open = Vec::with_capacity(group_size);
        open.extend_from_slice(&[0; GROUP_HEAD]);
        Ok(GroupWriter {
            file,
            number,
            path_id,
            group_size,
            offset: HEADER_LEN,
            open,
            open_items: 0,
            groups: 0,
            items: 0,
            item_bytes: 0,
        })
    }

    /// Writes the open group, if it holds an item; with `pad`, zero-padded to the group
    /// size (every group but a file's last).
    fn seal(&mut self, pad: bool) -> Result<()> {
        if self.open_items == 0 {
            return Ok(());
        }
        self.open[..GROUP_HEAD].copy_from_slice(&self.open_items.to_le_bytes());
        if pad {
            self.open.resize(self.group_size, 0);
        }
        self.file.append(&self.open)?;
        self.offset += self.open.len() as u64;
        self.groups += 1;
        self.open.clear();
        self.open.extend_from_slice(&[0; GROUP_HEAD]);
        self.open_items = 0;
        Ok(())
    }
}

impl FileWriter for GroupWriter {
    /// Adds `user_key`'s `value` to the open group (after sealing it if the item does not
    /// fit); returns the pointer to the item. REQUIRES: `fits`.
    ///
    /// # Errors
    /// I/O errors; `InvalidArgument` for an item of 4 GiB or more.
    fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<ValuePointer> {
        debug_assert!(fits(self.group_size, user_key, value));
        if self.open.len() + item_len(user_key, value) > self.group_size {
            self.seal(true)?;
        }
        let at = self.offset + self.open.len() as u64;
        let size = record::encode(&mut self.open, user_key, value)?;
        self.open_items += 1;
        self.items += 1;
        self.item_bytes += u64::from(size);
        Ok(ValuePointer {
            store: ID,
            file: self.number.0,
            offset: at,
            size,
        })
    }

    /// Seals the open group, writes the footer and syncs the file (not its directory).
    ///
    /// # Errors
    /// I/O errors.
    fn finish(mut self) -> Result<ValueFile> {
        self.seal(false)?;
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend_from_slice(&self.groups.to_le_bytes());
        footer.extend_from_slice(&self.items.to_le_bytes());
        footer.extend_from_slice(FOOTER_MAGIC);
        self.file.append(&footer)?;
        self.file.sync()?;
        let mut f = ValueFile::new(FORMAT, self.number.0, self.path_id);
        f.size = self.offset + FOOTER_LEN;
        f.records = self.items;
        f.record_bytes = self.item_bytes;
        f.meta = self.group_size as u64;
        Ok(f)
    }
}

/// Group files, as the engine sees them (one static object, registered in
/// `registry::STORES`).
pub(crate) struct Groups;

/// Whether `opts` coalesce items into groups at flush.
fn grouping(opts: &Options) -> bool {
    opts.coalesce_item_threshold > 0 && opts.coalesce_group_size > 0
}

impl ValueFormat for Groups {
    fn checkpoint_copy(&self, _f: &ValueFile) -> crate::value::CheckpointCopy {
        crate::value::CheckpointCopy::Link
    }

    fn id(&self) -> StoreId {
        ID
    }

    fn name(&self) -> &'static str {
        "group files"
    }

    fn feature(&self) -> &'static str {
        FEATURE
    }

    fn extension(&self) -> &'static str {
        "grp"
    }

    /// Mapped, the kernel told to expect random access: an item is tens of bytes, and a
    /// fault that read around it (128 KiB) made gets 150x slower than `default`'s once the
    /// group files outgrew a 256 MiB memory limit (issue 33).
    fn read_access(&self, _f: &ValueFile) -> crate::fs::ReadAccess {
        crate::fs::ReadAccess::MappedRandom
    }

    /// A flush writes its items in key order, so a scan's next item from this file is
    /// most likely the record after this one: four cache lines, three or four small
    /// records (a 100-item scan touches a dozen files' runs of a few records each, too
    /// short for the hardware's stream prefetch; scans 11 % faster, docs/design/cleveldb.md).
    fn cache_ahead(&self) -> usize {
        256
    }

    /// Inside one group's items (past its count), and inside the file's groups.
    fn pointer_fits(&self, p: &ValuePointer, f: &ValueFile) -> bool {
        let group = f.meta;
        if group == 0 || p.offset < HEADER_LEN || p.size == 0 {
            return false;
        }
        // (Saturating: a damaged pointer may hold any offset.)
        let at = p.offset - HEADER_LEN;
        let end = at.saturating_add(u64::from(p.size));
        at % group >= GROUP_HEAD as u64
            && (end - 1) / group == at / group
            && end.saturating_add(HEADER_LEN + FOOTER_LEN) <= f.size
    }

    fn all_garbage(&self, f: &ValueFile) -> bool {
        f.garbage_records >= f.records
    }

    fn manifest_tags(&self) -> &'static [u32] {
        &[TAG_NEW_GROUP_FILE]
    }

    fn encode_file(&self, f: &ValueFile, dst: &mut Vec<u8>) {
        crate::vstore::put_file_record(dst, TAG_NEW_GROUP_FILE, f, &crate::vstore::counts(f, true));
    }

    fn decode_file(&self, _tag: u32, src: &mut &[u8]) -> Option<ValueFile> {
        crate::vstore::get_file_record(src, FORMAT, |f| crate::vstore::counts_mut(f, true))
    }

    fn compaction_collects(&self, f: &ValueFile, opts: &Options) -> bool {
        f.garbage_bytes as f64 >= opts.coalesce_gc_ratio * f.record_bytes as f64
    }
}

impl Store for Groups {
    fn check_options(&self, o: &Options) -> Result<()> {
        use crate::vstore::bad_option as bad;
        if o.coalesce_group_size != 0 && !(64..=MAX_GROUP_SIZE).contains(&o.coalesce_group_size) {
            return bad(
                "coalesce_group_size",
                "must be 0 (off) or 64 bytes to 1 MiB",
            );
        }
        if !(o.coalesce_gc_ratio > 0.0 && o.coalesce_gc_ratio <= 1.0) {
            return bad("coalesce_gc_ratio", "must be in (0, 1]");
        }
        Ok(())
    }

    fn configured(&self, opts: &Options) -> bool {
        grouping(opts)
    }

    fn walk<'a>(&self, bytes: &'a [u8]) -> Walk<'a> {
        let mut records = Vec::new();
        let Some(size) = group_size_of(bytes).filter(|&s| s > GROUP_HEAD) else {
            return (records, Some((0, "not a group file header")));
        };
        let end = bytes.len().saturating_sub(FOOTER_LEN as usize);
        let mut group = HEADER_LEN as usize;
        // Every group but the last is `size` bytes; the last ends at the footer.
        while group < end {
            let g = &bytes[group..(group + size).min(end)];
            if g.len() < GROUP_HEAD {
                return (records, Some((group, "a group shorter than its count")));
            }
            let count = u32::from_le_bytes([g[0], g[1], g[2], g[3]]);
            let mut at = GROUP_HEAD;
            for _ in 0..count {
                match record::parse(&g[at..]) {
                    Ok(r) => {
                        let n = r.size;
                        records.push((group + at, r));
                        at += n;
                    }
                    Err(what) => return (records, Some((group + at, what))),
                }
            }
            if g[at..].iter().any(|&b| b != 0) {
                return (
                    records,
                    Some((group + at, "bytes after a group's last item")),
                );
            }
            group += size;
        }
        (records, None)
    }

    fn describe(
        &self,
        path: &std::path::Path,
        bytes: &[u8],
    ) -> std::result::Result<String, String> {
        let (h, f) = (HEADER_LEN as usize, FOOTER_LEN as usize);
        if bytes.len() < h + f || &bytes[..8] != MAGIC || &bytes[bytes.len() - 8..] != FOOTER_MAGIC
        {
            return Err("not a complete group file (header or footer)".into());
        }
        let foot = &bytes[bytes.len() - f..];
        let groups = u64::from_le_bytes(foot[..8].try_into().expect("8 bytes"));
        let items = u64::from_le_bytes(foot[8..16].try_into().expect("8 bytes"));
        Ok(format!(
            "group file {}: {} B, groups of {} B, footer says {groups} groups, {items} items",
            path.display(),
            bytes.len(),
            group_size_of(bytes).unwrap_or(0)
        ))
    }

    fn rebuilt(
        &self,
        number: u64,
        path_id: PathId,
        read: &mut dyn FnMut() -> Result<Vec<u8>>,
        reached: (u64, u64),
    ) -> Result<ValueFile> {
        let bytes = read()?;
        let (found, _) = self.walk(&bytes);
        let mut f = crate::vstore::counted_file(
            FORMAT,
            number,
            path_id,
            bytes.len() as u64,
            &found,
            reached,
        );
        f.meta = group_size_of(&bytes).unwrap_or(0) as u64;
        Ok(f)
    }

    /// While configured.
    fn flush_separator(
        &self,
        env: &StoreEnv,
        _min: usize,
        _v: &crate::version::Version,
    ) -> Option<Box<dyn FlushSeparator>> {
        grouping(&env.opts).then(|| {
            Box::new(GroupSeparator::new(
                env.fs.clone(),
                env.placement.clone(),
                env.opts.coalesce_item_threshold,
                env.opts.coalesce_group_size,
            )) as Box<dyn FlushSeparator>
        })
    }

    /// Live items of collected group files move into new groups whatever is configured
    /// now (a database reopened without coalescing still collects its group files), in
    /// groups of the largest size a group file may have (1 MiB), so that every item a
    /// compaction meets fits (one from a file of larger groups than the configured ones
    /// included).
    fn relocation_writer(&self, env: &StoreEnv) -> Option<Box<dyn FlushSeparator>> {
        Some(Box::new(GroupSeparator::new(
            env.fs.clone(),
            env.placement.clone(),
            usize::MAX,
            MAX_GROUP_SIZE,
        )))
    }
}

/// The group size a group file's header names, if it has a header.
fn group_size_of(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < HEADER_LEN as usize || &bytes[..8] != MAGIC {
        return None;
    }
    Some(u32::from_le_bytes(bytes[12..16].try_into().ok()?) as usize)
}

/// Packs the small puts of one flush (key + value under `threshold`) into one new group
/// file's groups.
pub(crate) struct GroupSeparator {
    threshold: usize,
    group_size: usize,
    file: OneFile<GroupWriter>,
}

impl GroupSeparator {
    pub fn new(fs: Arc<dyn Fs>, placement: Placement, threshold: usize, group_size: usize) -> Self {
        GroupSeparator {
            threshold,
            group_size,
            file: OneFile::new(fs, placement),
        }
    }
}

impl FlushSeparator for GroupSeparator {
    fn separate(
        &mut self,
        new_file_number: &mut dyn FnMut() -> FileNumber,
        e: FlushEntry<'_>,
    ) -> Result<Option<ValuePointer>> {
        let (user_key, value) = (e.user_key, e.value);
        if e.kind != crate::key::ValueKind::Put
            || user_key.len() + value.len() >= self.threshold
            || !fits(self.group_size, user_key, value)
        {
            return Ok(None);
        }
        let group_size = self.group_size;
        let create = |fs: &dyn Fs, placement: &Placement| {
            GroupWriter::create(fs, placement, new_file_number(), group_size)
        };
        Ok(Some(self.file.add(create, user_key, value)?))
    }

    fn finish(&mut self) -> Result<Vec<ValueFile>> {
        self.file.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn items_read_back_from_their_groups_and_damage_is_corruption() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/db")).unwrap();
        let placement = Placement::new(Path::new("/db"), None, None);
        let mut w = GroupWriter::create(&*fs, &placement, FileNumber(9), 256).unwrap();
        let mut ps = Vec::new();
        for i in 0..40u32 {
            let k = format!("key{:03}", i / 2);
            let v = format!("value-{i}-{}", "x".repeat(i as usize % 17));
            ps.push((
                k.clone(),
                v.clone(),
                w.add(k.as_bytes(), v.as_bytes()).unwrap(),
            ));
        }
        let f = w.finish().unwrap();
        assert_eq!(f.records, 40);
        assert!(ps.iter().all(|(_, _, p)| Groups.pointer_fits(p, &f)));
        let groups: std::collections::BTreeSet<u64> =
            ps.iter().map(|p| (p.2.offset - HEADER_LEN) / 256).collect();
        assert!(groups.len() >= 4, "{} groups", groups.len());
        // Every group but the last padded to the group size.
        let n = groups.len() as u64;
        assert!(
            f.size > HEADER_LEN + 256 * (n - 1) + FOOTER_LEN
                && f.size < HEADER_LEN + 256 * n + FOOTER_LEN,
            "{} bytes for {n} groups",
            f.size
        );
        let path = f.path(&placement);
        let good = fs.open(&path).unwrap().read_at(0, f.size as usize).unwrap();
        // What `ValueFiles::read` does: the pointer's bytes to the store.
        let read = |file: &[u8], k: &[u8], p: &ValuePointer| {
            let at = p.offset as usize;
            Groups
                .value_of(&file[at..at + p.size as usize], k, &path, p)
                .map(<[u8]>::to_vec)
        };
        // Two versions of a key share a group: each pointer reaches its own.
        for (k, v, p) in &ps {
            assert_eq!(read(&good, k.as_bytes(), p).unwrap(), v.as_bytes());
        }
        let e = read(&good, b"key999", &ps[0].2).unwrap_err();
        assert!(e.to_string().contains("another key"), "{e}");
        // A pointer across a group's end, or into its count, does not fit.
        let p = ps[0].2;
        let across = ValuePointer { size: 300, ..p };
        let count = ValuePointer {
            offset: HEADER_LEN,
            ..p
        };
        assert!(!Groups.pointer_fits(&across, &f) && !Groups.pointer_fits(&count, &f));
        // Every record found by a walk, in order.
        let (found, stop) = Groups.walk(&good);
        assert_eq!((found.len(), stop), (40, None));
        assert!(Groups.describe(&path, &good).unwrap().contains("40 items"));
        // Flip every byte of the first group in turn: the item's read is never a wrong
        // value, and a walk stops at the damage.
        for i in HEADER_LEN..HEADER_LEN + 256 {
            let mut bad = good.clone();
            bad[i as usize] ^= 0x40;
            let inside = (p.offset..p.offset + u64::from(p.size)).contains(&i);
            match read(&bad, ps[0].0.as_bytes(), &p) {
                Ok(v) => assert!(!inside && v == ps[0].1.as_bytes(), "byte {i}"),
                Err(e) => assert_eq!(
                    e.kind(),
                    crate::error::ErrorKind::Corruption,
                    "byte {i}: {e}"
                ),
            }
            assert!(
                Groups.walk(&bad).1.is_some(),
                "byte {i}: the walk missed it"
            );
        }
    }

    #[test]
    fn relocation_takes_items_larger_than_the_configured_groups() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/db")).unwrap();
        let placement = Placement::new(Path::new("/db"), None, None);
        let env = StoreEnv {
            stores: crate::registry::STORES,
            fs: fs.clone(),
            placement: placement.clone(),
            opts: Options {
                coalesce_item_threshold: 64,
                coalesce_group_size: 256,
                ..Options::default()
            },
            recovery: false,
        };
        // An item a file of 4 KiB groups held, moved while 256-byte groups are configured.
        let mut w = Groups.relocation_writer(&env).unwrap();
        let mut n = 100u64;
        let mut next = || {
            n += 1;
            FileNumber(n)
        };
        let big = vec![5u8; 3000];
        let p = w
            .separate(&mut next, FlushEntry::put(crate::key::SeqNo(1), b"k", &big))
            .unwrap()
            .expect("a relocated item is always taken");
        let f = w.finish().unwrap().pop().unwrap();
        assert!(Groups.pointer_fits(&p, &f));
        let bytes = fs
            .open(&f.path(&placement))
            .unwrap()
            .read_at(0, f.size as usize)
            .unwrap();
        let at = p.offset as usize;
        let got = Groups
            .value_of(&bytes[at..at + p.size as usize], b"k", Path::new("x"), &p)
            .unwrap();
        assert_eq!(got, &big[..]);
        let (found, stop) = Groups.walk(&bytes);
        assert_eq!((found.len(), stop), (1, None));
    }
}
