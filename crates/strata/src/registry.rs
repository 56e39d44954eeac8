//! Where the engine's techniques are registered, and meet what checks and builds them from
//! the options: the one file a new value store adds its line to ([`STORES`]), above every
//! store and every layer that uses the list, which reaches them as a parameter (the
//! version as a list of formats, [`formats`]; the stores' environment as a list of
//! stores). [`Options::validate`] runs the options' own field checks
//! (`options/validate.rs`, importing no technique) and then each technique's (the L0
//! layout's, in its folder), so that the options sit below the techniques in the crate's
//! layers (docs/design/seams.md, ARCHITECTURE.md).

use std::sync::{Arc, LazyLock};

use crate::error::Result;
use crate::filename::FileType;
use crate::l0::LayoutList;
use crate::memtable::{ChunkPool, Side};
use crate::options::Options;
use crate::value::{Formats, StoreId, ValueFormat};
use crate::version::Registered;
use crate::vstore::{Store, StoreList};

/// Every value store this build knows, in registration order (the order their format
/// features are listed in a manifest): the one line a new store adds.
pub(crate) static STORES: StoreList = &[
    &crate::vstore::blob::BlobFiles,
    &crate::vstore::vlog::ValueLog,
    &crate::vstore::hash::HashStore,
    &crate::coalesce::groups::Groups,
];

/// Every L0 layout this build knows: the one line a new layout adds.
pub(crate) static LAYOUTS: LayoutList = &[
    crate::l0::flat::LAYOUT,
    crate::l0::buckets::LAYOUT,
    crate::l0::matrix::LAYOUT,
];

/// What keeps some of a memtable's entries outside its skiplist (`memtable::Side`): each
/// technique's maker answers with its side when the options configure it. The one line a
/// new side adds.
pub(crate) static SIDES: &[SideMaker] = &[crate::coalesce::side];

/// A side's maker: the side a new memtable of a database opened with the options keeps,
/// its arena chunks taken from the pool, if the options configure it.
pub(crate) type SideMaker = fn(&Options, &Arc<ChunkPool>) -> Option<Arc<dyn Side>>;

/// The side a new memtable keeps under `opts`: the first registered maker's that answers.
pub(crate) fn memtable_side(opts: &Options, pool: &Arc<ChunkPool>) -> Option<Arc<dyn Side>> {
    SIDES.iter().find_map(|make| make(opts, pool))
}

/// What the version reads manifests with: the layouts and the stores' formats.
pub(crate) fn registered() -> Registered {
    Registered {
        layouts: LAYOUTS,
        formats: formats(),
    }
}

/// The formats of [`STORES`], in the same order: what the version reads manifests with.
pub(crate) fn formats() -> Formats {
    static FORMATS: LazyLock<Vec<&'static dyn ValueFormat>> =
        LazyLock::new(|| STORES.iter().map(|&s| s as &dyn ValueFormat).collect());
    &FORMATS
}

/// The registered store with id `id`.
pub(crate) fn store(id: StoreId) -> Option<&'static dyn Store> {
    crate::vstore::store(STORES, id)
}

/// The registered store whose files end in `.ext`.
pub(crate) fn store_by_extension(ext: &str) -> Option<&'static dyn Store> {
    STORES.iter().copied().find(|s| s.extension() == ext)
}

/// Parses a file name, a value file's by the registered stores' extensions; `None` for
/// names strata does not own.
pub(crate) fn parse_file_name(name: &str) -> Option<FileType> {
    crate::filename::parse_with(name, &|ext| store_by_extension(ext).map(|s| s.id()))
}

impl Options {
    /// Checks every field: the options' own checks, then every registered value store's
    /// (each checks its own tunables, whatever store is configured), then the configured L0
    /// layout's. With several bad fields, the first in that order is named.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        self.validate_fields()?;
        for s in STORES {
            s.check_options(self)?;
        }
        crate::l0::check_options(LAYOUTS, self)
    }
}

#[cfg(test)]
mod tests {
    //! A technique registered from its list alone: a toy value store and a toy L0 layout,
    //! defined here and listed beside the real ones, are read and written by the version
    //! (manifest records, format features, layout records) and named by file names with no
    //! change anywhere else, the version naming neither.

    use super::*;
    use crate::l0::{L0Context, Layout};
    use crate::placement::{PathId, Placement};
    use crate::value::{Format, ValueFile, ValuePointer};
    use crate::version::{L0Record, VersionEdit};

    /// A store of id 9 whose files end in `.toy`, recorded with manifest tag 60.
    struct Toy;

    const TOY: Format = Format(&Toy);

    impl ValueFormat for Toy {
        fn id(&self) -> StoreId {
            StoreId(9)
        }
        fn name(&self) -> &'static str {
            "toy values"
        }
        fn feature(&self) -> &'static str {
            "toy-values"
        }
        fn extension(&self) -> &'static str {
            "toy"
        }
        fn pointer_fits(&self, p: &ValuePointer, f: &ValueFile) -> bool {
            p.offset < f.size
        }
        fn manifest_tags(&self) -> &'static [u32] {
            &[60]
        }
        fn encode_file(&self, f: &ValueFile, dst: &mut Vec<u8>) {
            crate::value::put_file_record(dst, 60, f, &crate::value::counts(f, false));
        }
        fn decode_file(&self, _tag: u32, src: &mut &[u8]) -> Option<ValueFile> {
            crate::value::get_file_record(src, TOY, |f| crate::value::counts_mut(f, false))
        }
    }

    /// A layout of id 9: the flat layout's behaviour under another id and a feature.
    const TOY_LAYOUT: Layout = Layout {
        id: 9,
        feature: Some("toy-l0"),
        ..crate::l0::flat::LAYOUT
    };

    /// The registered lists with the toys added: the one line each a technique adds.
    fn with_toys() -> Registered {
        let layouts: &'static [Layout] = Box::leak(Box::new([
            crate::l0::flat::LAYOUT,
            crate::l0::buckets::LAYOUT,
            crate::l0::matrix::LAYOUT,
            TOY_LAYOUT,
        ]));
        let mut formats = formats().to_vec();
        formats.push(&Toy);
        Registered {
            layouts,
            formats: Box::leak(formats.into_boxed_slice()),
        }
    }

    #[test]
    fn a_toy_store_and_layout_register_from_their_lists_alone() {
        let reg = with_toys();
        let mut f = ValueFile::new(TOY, 5, PathId::VALUES);
        f.size = 4096;
        f.records = 3;
        let edit = VersionEdit {
            features: vec!["toy-l0".into(), "toy-values".into()],
            l0_layout: Some(L0Record {
                layout: 9,
                state: Vec::new(),
            }),
            new_value_files: vec![f.clone()],
            ..VersionEdit::default()
        };
        let bytes = edit.encode();
        // The version reads both through the lists it is handed...
        assert_eq!(VersionEdit::decode(&bytes, reg).unwrap(), edit);
        assert_eq!(
            crate::value::features(reg.formats, [&f]),
            ["toy-values".to_string()]
        );
        // ... and a build without them refuses the database, naming the feature.
        let err = VersionEdit::decode(&bytes, registered()).unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::NotSupported);
        assert!(err.to_string().contains("toy-l0"), "{err}");
        // The layout record builds the toy layout from the context's list alone.
        let opts = Options::default();
        let placement = Placement::new(std::path::Path::new("/db"), None, None);
        let ctx = L0Context::new(reg.layouts, &opts, &placement);
        let l0 = crate::l0::from_record(
            &L0Record {
                layout: 9,
                state: Vec::new(),
            },
            &ctx,
        );
        assert!(l0.is_ok());
        let without = L0Context::new(LAYOUTS, &opts, &placement);
        assert!(crate::l0::from_record(
            &L0Record {
                layout: 9,
                state: Vec::new()
            },
            &without
        )
        .is_err_and(|e| e.kind() == crate::error::ErrorKind::NotSupported));
        assert_eq!(
            crate::l0::features(reg.layouts).collect::<Vec<_>>(),
            ["l0-buckets", "l0-matrix", "toy-l0"]
        );
        // Its files are named by the extension it gives.
        assert_eq!(
            crate::filename::parse_with("000005.toy", &|ext| {
                reg.formats
                    .iter()
                    .find(|s| s.extension() == ext)
                    .map(|s| s.id())
            }),
            Some(FileType::Value(crate::filename::FileNumber(5), StoreId(9)))
        );
    }

    /// What each registered layout builds says what its registration says: the same kind,
    /// id and format feature (the version reads features through the registrations and
    /// writes the ones the built layouts give: two that disagreed would write a manifest
    /// the same build refuses), and its record builds it again.
    #[test]
    fn each_layout_builds_what_its_registration_says() {
        let opts = Options {
            fs: Arc::new(crate::fs::MemFs::new()),
            write_buffer_size: 64 << 10,
            matrix_container_size: 1 << 20,
            ..Options::matrixkv(std::path::PathBuf::from("/pmem"))
        };
        let placement = Placement::of(std::path::Path::new("/db"), &opts);
        assert_eq!(LAYOUTS.len(), 3);
        for l in LAYOUTS {
            let ctx = L0Context::new(LAYOUTS, &opts, &placement);
            let built = (l.initial)(&ctx).unwrap();
            assert_eq!(built.kind(), l.kind);
            assert_eq!(built.record().layout, l.id, "{:?}", l.kind);
            assert_eq!(built.feature(), l.feature, "{:?}", l.kind);
            let again = crate::l0::from_record(&built.record(), &ctx).unwrap();
            assert_eq!(again.kind(), l.kind);
            assert_eq!(again.record(), built.record());
        }
        let ids: std::collections::BTreeSet<u32> = LAYOUTS.iter().map(|l| l.id).collect();
        assert_eq!(ids.len(), LAYOUTS.len(), "two layouts share an id");
    }

    /// A layout's checks run when it is configured: the buckets' trigger past the stop
    /// trigger (a hang) is refused under buckets, and means nothing under a flat L0.
    #[test]
    fn the_configured_layout_checks_its_options() {
        let o = Options {
            bucket_compaction_trigger: 40,
            level0_stop_writes_trigger: 36,
            ..Options::default()
        };
        assert!(o.validate().is_ok());
        let e = Options {
            l0_layout: crate::options::L0Layout::Buckets,
            ..o
        }
        .validate()
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("Options::bucket_compaction_trigger:"),
            "{e}"
        );
    }

    /// Each store checks its own tunables whatever store is configured (a database keeps
    /// collecting a store's files after it is configured away), through the one
    /// `Options::validate` every open runs.
    #[test]
    fn every_store_checks_its_options_whatever_is_configured() {
        let refused = |o: Options, field: &str| {
            let e = o.validate().unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument);
            assert!(e.to_string().contains(&format!("Options::{field}:")), "{e}");
        };
        refused(
            Options {
                hash_groups: 0,
                ..Options::default()
            },
            "hash_groups",
        );
        refused(
            Options {
                hash_gc_memory: 1,
                ..Options::blob()
            },
            "hash_gc_memory",
        );
        refused(
            Options {
                vlog_segment_size: 4096,
                ..Options::hashkv()
            },
            "vlog_segment_size",
        );
        refused(
            Options {
                coalesce_group_size: 32,
                ..Options::default()
            },
            "coalesce_group_size",
        );
        refused(
            Options {
                coalesce_gc_ratio: 0.0,
                ..Options::wisckey()
            },
            "coalesce_gc_ratio",
        );
        for p in Options::PRESETS {
            let o = Options::preset(p).unwrap();
            o.validate().unwrap_or_else(|e| panic!("{p}: {e}"));
        }
    }
}
