//! Pairings files (TRF and CSV) of arbitrary bytes: never panics; a refusal is one line naming
//! a line and a field; an accepted file has distinct, ascending board numbers.
#![no_main]

use eboardd::round::{Format, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let round = u32::from(data.first().copied().unwrap_or(1) % 8).max(1);
    for format in [Format::Trf, Format::Csv] {
        match parse(format, data, round) {
            Ok(r) => {
                assert!(!r.boards.is_empty());
                assert!(r.boards.windows(2).all(|w| w[0].0 < w[1].0), "board order");
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
                assert!(msg.starts_with("line "), "{msg:?}");
            }
        }
    }
});
