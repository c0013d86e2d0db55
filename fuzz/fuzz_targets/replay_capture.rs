//! The whole `replay` on arbitrary capture text (header fields, tags, operator records, device
//! ids, bytes): never panics, and every PGN tag line it writes is one well-formed line (no
//! value can end a tag early or start a forged one).
#![no_main]

use eboardd::capture::parse_capture;
use eboardd::replay::{Timeline, Playback};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(capture) = parse_capture("fuzz.jsonl", &text) else {
        return;
    };
    let mut sink = |_: &str, _: &eboardd::core::event::CoreEvent| Ok(());
    let session =
        Playback::play(Timeline::from_capture(capture.clone()), &mut sink).expect("no output, no error");
    let pgn = session.pgn();
    for line in pgn.lines().filter(|l| l.starts_with('[')) {
        assert!(line.ends_with("\"]"), "broken tag line: {line:?}");
        assert!(
            !line.chars().any(eboardd::pgn::unsafe_char),
            "unsafe character in a tag: {line:?}"
        );
        let inner = &line[1..line.len() - 1];
        let (_, value) = inner.split_once(' ').expect("name and value");
        // The value is one quoted string: every inner quote is escaped.
        let body = &value[1..value.len() - 1];
        let mut escaped = false;
        for c in body.chars() {
            assert!(escaped || c != '"', "unescaped quote in {line:?}");
            escaped = !escaped && c == '\\';
        }
    }
    // The replay's date of the same capture.
    let plan = Timeline::from_capture(capture);
    if let Some(d) = &plan.date() {
        assert!(d.len() == 10 && d.is_ascii(), "date {d:?}");
    }
});
