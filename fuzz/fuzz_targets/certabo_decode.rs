//! Certabo decoding of arbitrary bytes split at arbitrary points: never panics; decoding the
//! bytes in one chunk, byte by byte, or in the chunks the input chooses gives the same messages
//! and the same counters (the read filter and the id table learn the same from the same lines
//! however they are cut).
//!
//! Input layout: byte 0 = `n`, the next `n % 16` bytes are chunk lengths (cycled, each
//! `len % 64 + 1`), the rest is the byte stream.
#![no_main]

use eboardd::driver::certabo::CertaboStream;
use eboardd::driver::{Decoder, Message};
use libfuzzer_sys::fuzz_target;

fn decode_chunks<'a>(chunks: impl Iterator<Item = &'a [u8]>) -> (Vec<Message>, [u64; 2]) {
    let mut d = CertaboStream::new();
    let mut out = Vec::new();
    for c in chunks {
        d.decode(c, &mut out);
    }
    (out, [d.dropped_bytes(), d.bad_frames()])
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let k = usize::from(n % 16).min(rest.len());
    let (lens, stream) = rest.split_at(k);
    let whole = decode_chunks(std::iter::once(stream));
    let bytes = decode_chunks(stream.chunks(1));
    assert_eq!(whole, bytes, "byte by byte");
    if !lens.is_empty() {
        let mut chunks = Vec::new();
        let mut at = 0;
        for len in lens.iter().cycle() {
            if at >= stream.len() {
                break;
            }
            let end = (at + usize::from(len % 64) + 1).min(stream.len());
            chunks.push(&stream[at..end]);
            at = end;
        }
        assert_eq!(whole, decode_chunks(chunks.into_iter()), "in the input's chunks");
    }
});
