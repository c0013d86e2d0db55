//! The house's arrows run one way (`docs/ARCHITECTURE.md`, "What each room may import"): every
//! `crate::ROOM` path in the code of a room names a room on a lower floor. Comments and each
//! file's `#[cfg(test)]` module (a test may build a whole daemon) are not code of the room.

use std::path::Path;

mod support;

/// The house's floors, from the ground up (`docs/ARCHITECTURE.md`, "What each room may
/// import"): the code of a room names only rooms on floors below its own, so no circle can
/// pass between rooms. Two rooms on one floor name neither the other.
const FLOORS: &[&[&str]] = &[
    &["core"],
    &["pgn", "parallel", "service"],
    &["capture", "round"],
    &["driver"],
    &["session", "family"],
    &["device"],
    &["replay", "sim"],
    &["output"],
    &["config"],
    &["daemon"],
    &["cli"],
    &["lib", "main"],
];

/// The floor of `room`, if the house has it.
fn floor(room: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&room))
}

/// Why `room` may not name `named`, if it may not: a room on the same floor or above.
fn arrow_up(room: &str, named: &str) -> Option<String> {
    if room == named {
        return None;
    }
    let (Some(from), Some(to)) = (floor(room), floor(named)) else {
        return Some(format!("{room} or {named} has no floor in FLOORS"));
    };
    (to >= from).then(|| format!("{room} (floor {from}) names crate::{named} (floor {to})"))
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
fn arrows_run_down_the_floors_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = support::files_with_extension(&src, "rs");
    assert!(files.len() > 50, "the sources are found ({})", files.len());
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in &files {
        let room = room_of(&src, file);
        if floor(&room).is_none() {
            wrong.push(format!("room {room} has no floor in FLOORS"));
        }
        let text = std::fs::read_to_string(file).expect("source file");
        for (line, named) in named_rooms(&text) {
            checked += 1;
            if let Some(why) = arrow_up(&room, &named) {
                wrong.push(format!(
                    "{}:{line}: {why}",
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    assert!(checked > 100, "crate paths are read ({checked})");
    assert!(
        wrong.is_empty(),
        "arrows that do not run down:\n{}",
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
    // The circles this house once had, each now an arrow up: the rule holds them open.
    for (room, named) in [
        ("driver", "session"),
        ("config", "daemon"),
        ("output", "config"),
        ("family", "sim"),
        ("core", "output"),
        ("round", "output"),
        ("driver", "daemon"),
    ] {
        assert!(arrow_up(room, named).is_some(), "{room} -> {named}");
    }
    // Two rooms on one floor name neither the other; a room names itself freely.
    assert!(arrow_up("session", "family").is_some());
    assert!(arrow_up("family", "session").is_some());
    assert!(arrow_up("session", "session").is_none());
    assert!(arrow_up("session", "driver").is_none());
    assert!(arrow_up("daemon", "output").is_none());
    // A room the house does not list is refused until it has a floor.
    assert!(arrow_up("newroom", "core").is_some());
}

#[test]
fn there_is_no_protocol_shim() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(!src.join("protocol").exists(), "src/protocol is gone");
    assert!(!src.join("protocol.rs").exists(), "src/protocol.rs is gone");
}
