//! DGT bus-mode decoding of arbitrary bytes split at arbitrary points: never panics; decoding
//! the bytes in one chunk, byte by byte, or in the chunks the input chooses gives the same
//! replies, the same messages and the same counters (for the whole line and for one board);
//! and every decoded reply re-encodes to a frame that decodes to it again.
//!
//! Input layout: byte 0 = `n`, the next `n % 16` bytes are chunk lengths (cycled, each
//! `len % 32 + 1`), the rest is the byte stream. The board followed is 1025 (`08 01`), the
//! address of the seeds' first board.
#![no_main]

use eboardd::driver::{Decoder, Message};
use eboardd::driver::dgt::BwTime;
use eboardd::driver::dgt::bus::{BusDecoder, BusLineStream, BusReply, BusStream};
use libfuzzer_sys::fuzz_target;

/// The board a [`BusStream`] follows.
const ADDRESS: u16 = 1025;

/// Everything one decoding gives: the line's replies and counters, the line stream's
/// messages, one board's messages (with a held FROM_START flushed) and its counters.
type Outcome = (
    Vec<BusReply>,
    [u64; 4],
    Vec<Message>,
    Vec<Message>,
    [u64; 4],
);

fn decode_chunks<'a>(chunks: impl Iterator<Item = &'a [u8]>) -> Outcome {
    let mut line = BusDecoder::new();
    let mut replies = Vec::new();
    let mut line_stream = BusLineStream::new();
    let mut line_messages = Vec::new();
    let mut board = BusStream::new(ADDRESS);
    let mut board_messages = Vec::new();
    for c in chunks {
        line.decode(c, &mut replies);
        line_stream.decode(c, &mut line_messages);
        board.decode(c, &mut board_messages);
    }
    board.flush(&mut board_messages);
    (
        replies,
        [
            line.dropped_bytes(),
            line.bad_frames(),
            line.foreign_frames(),
            line.ee_skipped_bytes(),
        ],
        line_messages,
        board_messages,
        [
            board.dropped_bytes(),
            board.bad_frames(),
            board.foreign_frames(),
            board.ee_skipped_bytes(),
        ],
    )
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

    let (replies, [dropped, bad, foreign, _], line_messages, _, [_, board_bad, ..]) = &whole;
    assert!(*dropped <= bytes.len() as u64);
    assert_eq!(*foreign, 0, "the line keeps every board's frames");
    assert_eq!(board_bad, bad, "bad frames do not depend on the address");
    assert_eq!(line_messages.len(), replies.len(), "one driver reply per frame");

    // Every reply re-encodes to one frame that decodes to it again (clock times that are all
    // zero are sent as the null payload).
    for r in replies {
        let mut again = Vec::new();
        BusDecoder::new().decode(&r.encode(), &mut again);
        let expected = match r {
            BusReply::Clock {
                address,
                clock: BwTime::Times(t),
            } if *t == Default::default() => BusReply::Clock {
                address: *address,
                clock: BwTime::Null,
            },
            other => other.clone(),
        };
        assert_eq!(again, vec![expected], "re-encoded reply");
    }
});
