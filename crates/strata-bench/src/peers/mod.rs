//! Peer engines behind cargo features: RocksDB (`rocksdb` crate, built from source in release
//! mode) and LevelDB (the system library through its C API).

#[cfg(feature = "leveldb")]
pub mod level;
#[cfg(feature = "rocksdb")]
pub mod rocks;
