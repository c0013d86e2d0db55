//! The `eboardd` binary: a thin command-line front over the library.

fn main() {}
