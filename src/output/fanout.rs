//! The event stream's fan-out: the hub's messages gathered into [`Batch`]es, each encoded once
//! for every WebSocket and SSE client.
//!
//! Serving a message to a thousand clients one write each costs a system call, a TCP segment
//! and a task wake-up per message per client; a profile of 200 boards at 20× pace and 1,000
//! WebSocket clients spent most of the server's core there (see `docs/operations.md`). So the
//! hub hands every message to one task (no channel in between: the task cannot fall behind
//! it), which sends what is waiting at once. Under a steady stream it holds the batches to one
//! per window, a window that grows with the number of clients ([`gather_window`]): nothing with
//! a few clients, at most [`MOST_GATHER`] with a thousand; a few batches ([`BURST`]) may go back
//! to back. A move reaches every client as soon as the server can write it when the server is
//! not busy; only what piles up under load goes out together. A client
//! then writes one buffer per batch, the frames already made (shared, not copied, by every
//! client that wants the whole stream).
//!
//! Before, every message that followed a batch within 50 ms waited out those 50 ms, even with
//! four clients: a move's `move_made`, clock and status messages come together, so the second
//! and third of them always waited (publish → client p50 27 ms, p99 51 ms with 4 clients).

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::broadcast;

use super::change::{Follower, Published};

/// The longest window of a steady stream: one batch per window (with a thousand clients or
/// more).
pub const MOST_GATHER: Duration = Duration::from_millis(20);

/// The gathering window each client adds: one batch costs every client a wake-up and a write,
/// so the batch rate falls as clients grow (1,000 clients: [`MOST_GATHER`], 50 batches a
/// second; 50 clients: 1 ms).
const GATHER_PER_CLIENT: Duration = Duration::from_micros(20);

/// Windows shorter than this are not waited for (Tokio's timer counts whole milliseconds):
/// the task only lets the other tasks run before it looks again.
const LEAST_GATHER: Duration = Duration::from_millis(1);

/// The window of a steady stream when `clients` receive the batches: one batch per window
/// after a burst of [`BURST`].
pub fn gather_window(clients: usize) -> Duration {
    GATHER_PER_CLIENT
        .saturating_mul(u32::try_from(clients).unwrap_or(u32::MAX))
        .min(MOST_GATHER)
}

/// Most messages in one batch.
const MOST: usize = 1024;

/// Messages of the hub that go out together, in `seq` order, with their encodings.
#[derive(Debug)]
pub struct Batch {
    /// The messages (empty only in a gap).
    pub msgs: Vec<Arc<Published>>,
    /// Messages were dropped before this batch (the gathering task was starved for longer than
    /// [`WAITING_MOST`] messages): every client starts again from a snapshot.
    pub gap: bool,
    /// The messages as WebSocket frames and as SSE events, each made by the first client of
    /// that transport that takes the whole batch.
    encoded: [std::sync::OnceLock<Bytes>; 2],
}

/// How a stream client reads its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// WebSocket text frames (server frames are not masked).
    Ws,
    /// SSE events (`id:` and `data:`).
    Sse,
}

impl Transport {
    /// Append one message in this transport's encoding.
    pub fn push(self, out: &mut BytesMut, seq: u64, json: &[u8]) {
        match self {
            Transport::Ws => push_ws_text(out, json),
            Transport::Sse => push_sse_event(out, seq, json),
        }
    }
}

impl Batch {
    fn new(msgs: Vec<Arc<Published>>, gap: bool) -> Batch {
        Batch {
            msgs,
            gap,
            encoded: Default::default(),
        }
    }

    /// Every message of the batch in `transport`'s encoding, back to back (made once, shared
    /// by every client of that transport).
    pub fn encoded(&self, transport: Transport) -> Bytes {
        self.encoded[transport as usize]
            .get_or_init(|| {
                let size: usize = self.msgs.iter().map(|m| m.json.len() + 32).sum();
                let mut out = BytesMut::with_capacity(size);
                for m in &self.msgs {
                    transport.push(&mut out, m.seq, m.json.as_bytes());
                }
                out.freeze()
            })
            .clone()
    }

    /// The `seq` of its first message.
    pub fn first_seq(&self) -> Option<u64> {
        self.msgs.first().map(|m| m.seq)
    }

    /// The `seq` of its last message.
    pub fn last_seq(&self) -> Option<u64> {
        self.msgs.last().map(|m| m.seq)
    }
}

/// The header of an unmasked final WebSocket text frame of `len` bytes (RFC 6455 §5.2).
pub fn ws_text_header(len: usize) -> Bytes {
    let mut h = BytesMut::with_capacity(10);
    h.put_u8(0x81);
    match len {
        0..=125 => h.put_u8(len as u8),
        126..=0xFFFF => {
            h.put_u8(126);
            h.put_u16(len as u16);
        }
        _ => {
            h.put_u8(127);
            h.put_u64(len as u64);
        }
    }
    h.freeze()
}

/// Append `text` (valid UTF-8) as one WebSocket text frame.
pub fn push_ws_text(out: &mut BytesMut, text: &[u8]) {
    out.put(ws_text_header(text.len()));
    out.put_slice(text);
}

/// Append one SSE event: `id`, then the JSON (one line) as `data`.
pub fn push_sse_event(out: &mut BytesMut, seq: u64, json: &[u8]) {
    out.put_slice(format!("id: {seq}\ndata: ").as_bytes());
    out.put_slice(json);
    out.put_slice(b"\n\n");
}

/// Most messages waiting for the next batch: past this (the gathering task starved) they are
/// dropped and a gap is sent in their place.
const WAITING_MOST: usize = 65_536;

/// What the hub hands over and the gathering task takes.
#[derive(Debug, Default)]
struct Waiting {
    msgs: Vec<Arc<Published>>,
    gap: bool,
    closed: bool,
}

#[derive(Debug)]
struct Shared {
    waiting: std::sync::Mutex<Waiting>,
    wake: tokio::sync::Notify,
    tx: broadcast::Sender<Arc<Batch>>,
}

impl Shared {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The batches of one hub.
#[derive(Debug)]
pub struct Fanout {
    shared: Arc<Shared>,
}

impl Fanout {
    /// Start gathering the messages handed to [`Fanout::hand`] into batches, keeping the last
    /// `capacity` batches for slow clients. Must be called inside the Tokio runtime; the task
    /// ends when the fan-out is dropped.
    pub fn start(capacity: usize) -> Fanout {
        let (tx, _) = broadcast::channel(capacity.max(16));
        let shared = Arc::new(Shared {
            waiting: Default::default(),
            wake: tokio::sync::Notify::new(),
            tx,
        });
        tokio::spawn(gather(shared.clone()));
        Fanout { shared }
    }

    /// Hand over the hub's next message (in `seq` order: the hub calls it under its lock).
    /// Never waits.
    pub fn hand(&self, msg: Arc<Published>) {
        let mut w = self.shared.waiting();
        if w.msgs.len() >= WAITING_MOST {
            w.msgs.clear();
            w.gap = true;
        }
        w.msgs.push(msg);
        drop(w);
        self.shared.wake.notify_one();
    }

    /// Number of clients receiving the batches.
    pub fn receivers(&self) -> usize {
        self.shared.tx.receiver_count()
    }
}

/// The fan-out follows its hub: every message is handed over as it is published, and its
/// clients count as the hub's subscribers.
impl Follower for Fanout {
    fn published(&self, message: &Arc<Published>) {
        self.hand(message.clone());
    }

    fn receivers(&self) -> usize {
        Fanout::receivers(self)
    }
}

impl Fanout {
    /// Batches sent from now on: every message handed over after this call is in one of them.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Batch>> {
        self.shared.tx.subscribe()
    }
}

impl Drop for Fanout {
    fn drop(&mut self) {
        self.shared.waiting().closed = true;
        self.shared.wake.notify_one();
    }
}

/// Batches that may go out back to back before the window applies: a move's messages
/// (`move_made`, the clock, the status) and a few moves at once go out as they come, with a
/// thousand clients too; only a steady stream is held to one batch per window.
const BURST: f64 = 4.0;

/// A token bucket of batches: [`BURST`] deep, filled at one batch per gathering window.
#[derive(Debug)]
struct Pace {
    tokens: f64,
    at: tokio::time::Instant,
}

impl Pace {
    fn new() -> Pace {
        Pace {
            tokens: BURST,
            at: tokio::time::Instant::now(),
        }
    }

    /// How long to wait before the next batch may go out with windows of `window`.
    fn wait(&mut self, window: Duration) -> Option<Duration> {
        let now = tokio::time::Instant::now();
        if window < LEAST_GATHER {
            self.tokens = BURST;
        } else {
            let filled = now.duration_since(self.at).as_secs_f64() / window.as_secs_f64();
            self.tokens = (self.tokens + filled).min(BURST);
        }
        self.at = now;
        (self.tokens < 1.0).then(|| window.mul_f64(1.0 - self.tokens))
    }

    /// A batch went out.
    fn spend(&mut self) {
        self.tokens -= 1.0;
    }
}

async fn gather(shared: Arc<Shared>) {
    let mut pace = Pace::new();
    loop {
        shared.wake.notified().await;
        // What is waiting goes out at once while the pace allows; under a steady stream, what
        // piles up within a window goes out together.
        loop {
            if let Some(wait) = pace.wait(gather_window(shared.tx.receiver_count())) {
                tokio::time::sleep(wait).await;
            }
            let (msgs, gap, closed) = {
                let mut w = shared.waiting();
                (
                    std::mem::take(&mut w.msgs),
                    std::mem::take(&mut w.gap),
                    w.closed,
                )
            };
            if closed {
                return;
            }
            if msgs.is_empty() && !gap {
                break;
            }
            // No receivers is fine: nobody is watching.
            if gap {
                // Messages were dropped: the gap goes first, what came after it follows.
                let _ = shared.tx.send(Arc::new(Batch::new(Vec::new(), true)));
            }
            let mut msgs = msgs.into_iter().peekable();
            while msgs.peek().is_some() {
                let part: Vec<Arc<Published>> = msgs.by_ref().take(MOST).collect();
                let _ = shared.tx.send(Arc::new(Batch::new(part, false)));
            }
            pace.spend();
            // Let the publisher (and the clients) run before looking again.
            tokio::task::yield_now().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::event::{CoreEvent, EventKind};
    use crate::output::hub::{Hub, HubConfig};
    use crate::output::model::RoundInfo;

    fn publish(hub: &Hub, n: usize) {
        for i in 0..n {
            let event = CoreEvent {
                t: i as i64,
                game: 0,
                kind: EventKind::BoardConnected {
                    driver: format!("d{i}"),
                    serial: None,
                },
            };
            hub.publish("b1", &event);
        }
    }

    /// The frames of a batch's WebSocket bytes, read back as a client reads them.
    fn frames(mut ws: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        while !ws.is_empty() {
            assert_eq!(ws[0], 0x81, "a final text frame");
            let (head, len) = match ws[1] {
                126 => (4, u16::from_be_bytes([ws[2], ws[3]]) as usize),
                127 => (
                    10,
                    u64::from_be_bytes(ws[2..10].try_into().unwrap()) as usize,
                ),
                n => (2, n as usize),
            };
            out.push(String::from_utf8(ws[head..head + len].to_vec()).unwrap());
            ws = &ws[head + len..];
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn with_few_clients_nothing_waits_for_a_window() {
        let hub = Hub::new(RoundInfo::default(), HubConfig::default());
        let mut rx = hub.fanout().subscribe();
        let t0 = tokio::time::Instant::now();
        publish(&hub, 1);
        let first = rx.recv().await.unwrap();
        assert_eq!((first.first_seq(), first.last_seq()), (Some(1), Some(1)));
        // Right after a batch (a move's clock and status messages after its move_made).
        publish(&hub, 2);
        let next = rx.recv().await.unwrap();
        assert_eq!((next.first_seq(), next.last_seq()), (Some(2), Some(3)));
        assert!(t0.elapsed() < LEAST_GATHER, "waited {:?}", t0.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_thousand_clients_a_steady_stream_goes_together() {
        let hub = Hub::new(RoundInfo::default(), HubConfig::default());
        let mut rx = hub.fanout().subscribe();
        let others: Vec<_> = (0..999).map(|_| hub.fanout().subscribe()).collect();
        let t0 = tokio::time::Instant::now();
        // A burst (a move's messages, one at a time): every one at once.
        for seq in 1..=BURST as u64 {
            publish(&hub, 1);
            let b = rx.recv().await.unwrap();
            assert_eq!((b.first_seq(), b.last_seq()), (Some(seq), Some(seq)));
        }
        assert_eq!(t0.elapsed(), Duration::ZERO, "a burst does not wait");
        // The stream goes on: what comes within the next window goes out together at its end.
        publish(&hub, 5);
        let steady = rx.recv().await.unwrap();
        assert_eq!(
            t0.elapsed(),
            MOST_GATHER,
            "the steady stream waited for the window"
        );
        let first = BURST as u64 + 1;
        assert_eq!(
            (steady.first_seq(), steady.last_seq()),
            (Some(first), Some(first + 4))
        );
        assert!(!steady.gap);
        let jsons: Vec<String> = steady.msgs.iter().map(|m| m.json.to_string()).collect();
        assert_eq!(frames(&steady.encoded(Transport::Ws)), jsons);
        let sse = String::from_utf8(steady.encoded(Transport::Sse).to_vec()).unwrap();
        let want: String = steady
            .msgs
            .iter()
            .map(|m| format!("id: {}\ndata: {}\n\n", m.seq, m.json))
            .collect();
        assert_eq!(sse, want);
        // Quiet for a few windows: the next messages go at once again.
        tokio::time::sleep(MOST_GATHER * BURST as u32).await;
        let t1 = tokio::time::Instant::now();
        publish(&hub, 1);
        let alone = rx.recv().await.unwrap();
        assert_eq!(t1.elapsed(), Duration::ZERO);
        assert_eq!(alone.first_seq(), Some(first + 5));
        drop(others);
    }

    #[test]
    fn the_window_grows_with_the_clients() {
        assert_eq!(gather_window(0), Duration::ZERO);
        assert_eq!(gather_window(4), Duration::from_micros(80));
        assert_eq!(gather_window(50), Duration::from_millis(1));
        assert_eq!(gather_window(1000), MOST_GATHER);
        assert_eq!(gather_window(usize::MAX), MOST_GATHER);
    }

    #[tokio::test(start_paused = true)]
    async fn a_starved_fanout_sends_a_gap_then_what_came_after() {
        let hub = Hub::new(RoundInfo::default(), HubConfig::default());
        let mut rx = hub.fanout().subscribe();
        // The gathering task cannot run while this thread publishes.
        publish(&hub, WAITING_MOST + 10);
        let gap = rx.recv().await.unwrap();
        assert!(gap.gap && gap.msgs.is_empty());
        let rest = rx.recv().await.unwrap();
        let last = (WAITING_MOST + 10) as u64;
        assert_eq!(
            (rest.first_seq(), rest.last_seq()),
            (Some(last - 9), Some(last))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_burst_is_cut_into_batches_of_at_most_most() {
        let hub = Hub::new(RoundInfo::default(), HubConfig::default());
        let mut rx = hub.fanout().subscribe();
        publish(&hub, MOST + 1);
        let a = rx.recv().await.unwrap();
        let b = rx.recv().await.unwrap();
        assert_eq!(a.msgs.len(), MOST);
        assert_eq!(
            (b.first_seq(), b.last_seq()),
            (Some(MOST as u64 + 1), Some(MOST as u64 + 1))
        );
    }

    #[test]
    fn frame_headers_follow_rfc_6455() {
        assert_eq!(&ws_text_header(5)[..], [0x81, 5]);
        assert_eq!(&ws_text_header(125)[..], [0x81, 125]);
        assert_eq!(&ws_text_header(126)[..], [0x81, 126, 0, 126]);
        assert_eq!(&ws_text_header(65_535)[..], [0x81, 126, 0xFF, 0xFF]);
        assert_eq!(
            &ws_text_header(65_536)[..],
            [0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]
        );
    }

    #[test]
    fn sse_events_carry_their_seq() {
        let mut out = BytesMut::new();
        push_sse_event(&mut out, 7, br#"{"seq":7}"#);
        assert_eq!(&out[..], b"id: 7\ndata: {\"seq\":7}\n\n");
    }
}
