//! Test support shared by the test files (`mod support;`): the PGN corpus under
//! `tests/data/pgn`. Each test file uses only part of it.
#![allow(dead_code)]

pub mod streams;

use std::path::{Path, PathBuf};

use eboardd::sim::pgn::{ScriptGame, parse_games_bytes};

/// `tests/data/<rel>`.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// The PGN corpus, `tests/data/pgn`.
pub fn pgn_dir() -> PathBuf {
    data("pgn")
}

/// Every `.pgn` file under `dir`, sorted.
pub fn pgn_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "pgn") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every game of every PGN file under `tests/data/pgn/<sub>`, in file order (a game that does
/// not parse fails the test, naming its file).
pub fn games(sub: &str) -> Vec<ScriptGame> {
    let mut out = Vec::new();
    for f in pgn_files(&pgn_dir().join(sub)) {
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for g in parse_games_bytes(&bytes) {
            out.push(g.unwrap_or_else(|e| panic!("{}: {e}", f.display())));
        }
    }
    out
}
