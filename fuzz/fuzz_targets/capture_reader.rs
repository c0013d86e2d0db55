//! Capture parsing of arbitrary text: never panics; an error displays as one line.
#![no_main]

use eboardd::capture::parse_capture;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_capture("fuzz.jsonl", &text) {
        Ok(capture) => {
            for w in &capture.warnings {
                assert!(!w.contains('\n'), "multi-line warning: {w:?}");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
            assert!(
                msg.starts_with("fuzz.jsonl"),
                "error without file name: {msg:?}"
            );
        }
    }
});
