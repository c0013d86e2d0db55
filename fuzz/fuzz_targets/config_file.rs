//! The configuration file on arbitrary text: never panics, an error is one line, and a
//! configuration that is accepted has no name that could forge a PGN tag.
#![no_main]

use eboardd::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Config::parse("fuzz.toml", &text) {
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
        }
        Ok(cfg) => {
            let names = [&cfg.event.name, &cfg.event.site, &cfg.event.round]
                .into_iter()
                .chain(cfg.boards.iter().flat_map(|b| [&b.white, &b.black]))
                .flatten();
            for n in names {
                assert!(!n.chars().any(eboardd::pgn::unsafe_char), "{n:?}");
            }
            for o in cfg.allowed_origins() {
                assert!(eboardd::output::ws::valid_origin(&o), "{o:?}");
            }
        }
    }
});
