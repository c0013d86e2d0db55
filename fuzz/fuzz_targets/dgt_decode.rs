//! DGT decoding of arbitrary bytes split at arbitrary points: never panics, and decoding the
//! bytes in one chunk, byte by byte, or in the chunks the input chooses gives the same messages
//! and the same error counters.
//!
//! Input layout: byte 0 = `n`, the next `n % 16` bytes are chunk lengths (cycled, each
//! `len % 32 + 1`), the rest is the byte stream.
#![no_main]

use eboardd::driver::dgt::{DgtDecoder, DgtMessage};
use libfuzzer_sys::fuzz_target;

fn decode_chunks<'a>(chunks: impl Iterator<Item = &'a [u8]>) -> (Vec<DgtMessage>, u64, u64) {
    let mut d = DgtDecoder::new();
    let mut out = Vec::new();
    for c in chunks {
        d.decode(c, &mut out);
    }
    (out, d.dropped_bytes(), d.bad_frames())
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let k = (n as usize % 16).min(rest.len());
    let (lens, bytes) = rest.split_at(k);

    let whole = decode_chunks(std::iter::once(bytes));
    let single = decode_chunks(bytes.chunks(1));
    assert_eq!(whole, single, "one chunk vs byte by byte");

    let mut chunks = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < bytes.len() {
        let len = if lens.is_empty() {
            bytes.len()
        } else {
            lens[i % lens.len()] as usize % 32 + 1
        };
        let end = (pos + len).min(bytes.len());
        chunks.push(&bytes[pos..end]);
        pos = end;
        i += 1;
    }
    let split = decode_chunks(chunks.into_iter());
    assert_eq!(whole, split, "one chunk vs input-chosen chunks");

    // `push` + `next_message` agrees with `decode`.
    let mut d = DgtDecoder::new();
    d.push(bytes);
    let mut pulled = Vec::new();
    while let Some(m) = d.next_message() {
        pulled.push(m);
    }
    assert_eq!(whole.0, pulled, "decode vs push/next_message");
});
