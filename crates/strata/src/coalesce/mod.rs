//! Coalescing small items (CLeveldb, issue 33; docs/design/cleveldb.md).
//!
//! A memtable offers every entry to its coalescing buffer ([`buffer::Buffer`], a
//! `memtable::Side`) before its skiplist: small puts are appended in arrival order and
//! found through a hash index, and sorted only when an iterator or the flush asks. With
//! `coalesce_group_size`, a flush packs them into groups in group files ([`groups`], a
//! value store registered in `registry::STORES`), its tables holding a pointer per item.

mod buffer;
pub(crate) mod groups;

use std::sync::Arc;

use crate::memtable::{ChunkPool, Side};
use crate::options::Options;

/// The side a new memtable of a database opened with `opts` keeps, if any: the coalescing
/// buffer when `Options::coalesce_item_threshold` is set (registered in
/// `registry::SIDES`). Its items take arena chunks from
/// `pool`, as the skiplist's do.
pub(crate) fn side(opts: &Options, pool: &Arc<ChunkPool>) -> Option<Arc<dyn Side>> {
    (opts.coalesce_item_threshold > 0).then(|| {
        Arc::new(buffer::Buffer::new(
            opts.coalesce_item_threshold,
            opts.write_buffer_size,
            pool.clone(),
        )) as Arc<dyn Side>
    })
}
