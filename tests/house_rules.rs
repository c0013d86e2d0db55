//! The house's arrows run one way (`docs/ARCHITECTURE.md`, "What each room may import"): every
//! `crate::ROOM` path in the code of a lower room names a room it may import. Comments and each
//! file's `#[cfg(test)]` module (a test may build a whole daemon) are not code of the room.

use std::path::Path;

mod support;

/// The rooms no code of `room` may name.
fn forbidden(room: &str) -> &'static [&'static str] {
    const ABOVE_THE_BOARDS: &[&str] = &["daemon", "output", "cli", "config"];
    match room {
        // The core names nothing outside it.
        "core" => &[
            "driver", "session", "capture", "device", "replay", "family", "pgn", "round", "sim",
            "daemon", "output", "cli", "config",
        ],
        "driver" | "session" | "capture" | "device" | "replay" | "family" | "pgn" | "sim" => {
            ABOVE_THE_BOARDS
        }
        "round" => &[
            "output", "daemon", "cli", "config", "driver", "session", "sim",
        ],
        "output" => &["daemon", "cli"],
        "daemon" => &["cli"],
        _ => &[],
    }
}

/// The room a source file belongs to: its top folder or file under `src/`.
fn room_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The rooms named by `crate::ROOM` in the code of `text` (not its comments, not its test module),
/// with their line numbers.
fn named_rooms(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let code = code.split(" //").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let room: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !room.is_empty() {
                out.push((i + 1, room));
            }
        }
        // `use crate::{a, b}` names several rooms at once.
        if let Some(at) = code.find("crate::{") {
            for part in code[at + "crate::{".len()..].split(',') {
                let room: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !room.is_empty() {
                    out.push((i + 1, room));
                }
            }
        }
    }
    out
}

#[test]
fn lower_rooms_import_nothing_from_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = support::files_with_extension(&src, "rs");
    assert!(files.len() > 50, "the sources are found ({})", files.len());
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in &files {
        let room = room_of(&src, file);
        let text = std::fs::read_to_string(file).expect("source file");
        for (line, named) in named_rooms(&text) {
            checked += 1;
            if forbidden(&room).contains(&named.as_str()) {
                wrong.push(format!(
                    "{}:{line}: {room} names crate::{named}",
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    assert!(checked > 100, "crate paths are read ({checked})");
    assert!(
        wrong.is_empty(),
        "arrows that run back:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_sees_a_back_arrow() {
    let text = "use crate::core::event::CoreEvent;\n\
                // crate::daemon in a comment\n\
                use crate::{capture, output::Hub};\n\
                #[cfg(test)]\nmod tests { use crate::daemon::Ctx; }\n";
    let rooms: Vec<String> = named_rooms(text).into_iter().map(|(_, r)| r).collect();
    assert_eq!(rooms, ["core", "capture", "output"]);
    assert!(forbidden("core").contains(&"output"));
    assert!(forbidden("round").contains(&"output"));
    assert!(forbidden("driver").contains(&"daemon"));
}

#[test]
fn there_is_no_protocol_shim() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(!src.join("protocol").exists(), "src/protocol is gone");
    assert!(!src.join("protocol.rs").exists(), "src/protocol.rs is gone");
}
