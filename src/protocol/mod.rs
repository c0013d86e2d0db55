//! Sans-IO wire protocol codecs, one module per board family.

pub mod dgt;
