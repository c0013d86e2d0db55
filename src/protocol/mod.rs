//! Wire protocol codecs: kept as a path for the DGT codec, which now lives with its driver in
//! [`crate::driver::dgt`].

pub use crate::driver::dgt;
