//! A value store's file format as the layers below the stores see it ([`ValueFormat`]):
//! its id, names and format features, how its files are opened and their records checked,
//! when a file is all garbage, and its manifest records. Every [`ValueFile`] carries its
//! own ([`Format`]); the version decodes manifest records through a list of them that the
//! registry hands it ([`Formats`]), never through the stores themselves.

use crate::error::Result;
use crate::fs::ReadAccess;
use crate::options::Options;

use super::{record, StoreId, ValueFile, ValuePointer};

/// What the layers below the value stores know of one store's files. Each store implements
/// it beside its `Store` (`vstore/mod.rs`), which extends it.
pub trait ValueFormat: Sync {
    /// Its id: the tag of its pointers and files.
    fn id(&self) -> StoreId;
    /// Its name in messages ("blob files", "value log").
    fn name(&self) -> &'static str;
    /// The format feature a manifest naming its files lists (docs/format/manifest.md).
    fn feature(&self) -> &'static str;
    /// Its files' extension (`NNNNNN.<extension>`).
    fn extension(&self) -> &'static str;
    /// Format features beyond [`ValueFormat::feature`] that some of its files need a reader
    /// to know (a binary that does not know one refuses the database). Default: none.
    fn more_features(&self) -> &'static [&'static str] {
        &[]
    }
    /// Of [`ValueFormat::more_features`], those file `f` needs. Default: none.
    fn file_features(&self, _f: &ValueFile) -> &'static [&'static str] {
        &[]
    }

    // --- Its files ---

    /// How its file `f` is opened for reading (`Growing`: a file still appended to).
    fn read_access(&self, _f: &ValueFile) -> ReadAccess {
        ReadAccess::default()
    }
    /// Bytes after a record that a forward scan most likely reads next, brought into the
    /// CPU's cache after each record such a scan reads from a mapped file
    /// (`RandomAccessFile::cache_ahead`). Default 0: none.
    fn cache_ahead(&self) -> usize {
        0
    }
    /// Whether `p` can lie inside `f`'s records (checked before any read).
    fn pointer_fits(&self, p: &ValuePointer, f: &ValueFile) -> bool;
    /// The value of `user_key` in the record `bytes` read at `p`.
    ///
    /// # Errors
    /// `Corruption` naming `path` and the offset when the record is damaged or another
    /// key's.
    fn value_of<'a>(
        &self,
        bytes: &'a [u8],
        user_key: &[u8],
        path: &std::path::Path,
        p: &ValuePointer,
    ) -> Result<&'a [u8]> {
        record::decode_checked(bytes, user_key, path, p)
    }
    /// Whether no live pointer can reach `f` (it then leaves the version).
    fn all_garbage(&self, _f: &ValueFile) -> bool {
        false
    }
    /// Whether compactions move `f`'s live values out (GC by compaction: blob files).
    fn compaction_collects(&self, _f: &ValueFile, _opts: &Options) -> bool {
        false
    }
    /// Whether flushes and compactions leave the store's pointers to the compaction
    /// filter of the store's own GC (which offers each live value it moves and writes what
    /// the filter decides as a new write). Stores whose GC moves values with writes of its
    /// own answer true: the hash store, whose GC judges a record live from its own records
    /// (a pointer a compaction removed would still be live to it, and written back), and
    /// the value log, whose GC writes a value it found live as a new put (one a flush or
    /// compaction removed in place after that lookup would come back with it). Blob files
    /// and group files are moved by compactions themselves: their pointers are offered.
    fn filtered_by_own_gc(&self) -> bool {
        false
    }
    /// Whether the store's GC judges a record live from the store's own records (the hash
    /// store). A range deletion leaves no record there, only its tombstone in the LSM,
    /// which the GC asks about the keys it covers: so a version holding such a file keeps
    /// every range tombstone (docs/design/range-deletes.md, "When a tombstone leaves").
    fn judges_by_own_records(&self) -> bool {
        false
    }
    /// How a checkpoint takes file `f` ([`CheckpointCopy`]); by default it refuses the
    /// database (a new store says what holds for its files).
    fn checkpoint_copy(&self, _f: &ValueFile) -> CheckpointCopy {
        CheckpointCopy::Refuse("its files are not known to copy consistently")
    }

    // --- Its manifest records ---

    /// The manifest tags its file records use (docs/format/manifest.md; tags < 64).
    fn manifest_tags(&self) -> &'static [u32];
    /// Appends the record naming `f` (tag and fields).
    fn encode_file(&self, f: &ValueFile, dst: &mut Vec<u8>);
    /// The file a record of tag `tag` names, its fields read from `src`; `None` if they
    /// do not decode.
    fn decode_file(&self, tag: u32, src: &mut &[u8]) -> Option<ValueFile>;
}

/// A value file's format: its store's [`ValueFormat`]. Two are equal when their stores'
/// ids are.
#[derive(Clone, Copy)]
pub struct Format(pub(crate) &'static dyn ValueFormat);

impl Format {
    /// Its store's id.
    pub(crate) fn id(self) -> StoreId {
        self.0.id()
    }
}

impl std::ops::Deref for Format {
    type Target = dyn ValueFormat;

    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl Eq for Format {}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.0.name(), self.id().0)
    }
}

/// The formats of every registered store, in registration order (`registry.rs`): what the
/// version decodes manifests with and orders their format features by.
pub(crate) type Formats = &'static [&'static dyn ValueFormat];

/// The format that owns manifest tag `tag`.
pub(crate) fn by_manifest_tag(formats: Formats, tag: u32) -> Option<&'static dyn ValueFormat> {
    formats
        .iter()
        .copied()
        .find(|s| s.manifest_tags().contains(&tag))
}

/// Whether `feature` is one of `formats`' format features.
pub(crate) fn is_feature(formats: Formats, feature: &str) -> bool {
    formats
        .iter()
        .any(|s| s.feature() == feature || s.more_features().contains(&feature))
}

/// The format features the value files `files` use, in the order of `formats`: each
/// store's own, then those some of its files add ([`ValueFormat::file_features`]).
pub(crate) fn features<'a>(
    formats: Formats,
    files: impl IntoIterator<Item = &'a ValueFile>,
) -> Vec<String> {
    // One pass, no copies: every edit naming a value file asks, over every file the
    // version holds (thousands with a hash store of many groups).
    let mut used: Vec<(bool, Vec<bool>)> = formats
        .iter()
        .map(|s| (false, vec![false; s.more_features().len()]))
        .collect();
    for f in files {
        let Some(i) = formats.iter().position(|s| s.id() == f.store()) else {
            continue;
        };
        let (s, (any, extras)) = (formats[i], &mut used[i]);
        *any = true;
        let mine = s.file_features(f);
        if mine.is_empty() {
            continue;
        }
        for (seen, extra) in extras.iter_mut().zip(s.more_features()) {
            *seen |= mine.contains(extra);
        }
    }
    let mut out = Vec::new();
    for (s, (any, extras)) in formats.iter().zip(used) {
        if !any {
            continue;
        }
        out.push(s.feature().to_string());
        for (seen, extra) in extras.into_iter().zip(s.more_features()) {
            if seen {
                out.push((*extra).to_string());
            }
        }
    }
    out
}

/// How a checkpoint takes a value file (`ValueFormat::checkpoint_copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointCopy {
    /// Its bytes never change once the manifest names it (blob files, group files): a
    /// hard link is as good as a copy.
    Link,
    /// It takes appends after it is named, and bytes past what the pinned version's
    /// pointers reach are garbage to its store (the value log's head: its GC asks the LSM
    /// which records are live): a copy of whatever it holds when read is consistent. Never
    /// linked: the two databases would append to one file.
    Copy,
    /// It holds no value the pinned version's tables point to, only values of writes the
    /// copy does not hold (the hash store's write-time file still open: its records are
    /// those of memtables not yet flushed, and a checkpoint holds flushed ones only). The
    /// copy leaves it out, and its manifest does not name it: a record in it would be live
    /// to the copy's GC, which judges liveness from its own records.
    LeaveOut,
    /// The checkpoint is refused, for this reason (the hash store: a record appended after
    /// the checkpoint's instant would be live to its GC, which judges liveness from its
    /// own records).
    Refuse(&'static str),
}
