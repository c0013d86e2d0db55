//! The accept loop shared by the HTTP and LiveChess listeners: connection caps (in total and
//! per client address, below the descriptor limit with a reserve kept for boards, captures and
//! relay files), a header deadline that also closes idle keep-alive connections, a write-stall
//! deadline that drops clients that stop reading, and the security headers of every response.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, header};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

/// Descriptors kept free besides boards and client connections, at least: listening sockets,
/// relay files being written, a capture of the next day opened before the old one is closed,
/// boards plugged in after the start.
pub const MIN_RESERVE: usize = 256;

/// Limits of the servers' connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Client connections at once, over every listener.
    pub total: usize,
    /// Client connections at once from one address.
    pub per_address: usize,
    /// Time a client has to send a request's headers; also how long a keep-alive connection may
    /// stay idle between requests.
    pub header_timeout: Duration,
    /// Time a request body has to arrive in full.
    pub body_timeout: Duration,
    /// How long a write to a client may make no progress before the client is dropped.
    pub write_stall: Duration,
}

impl Limits {
    /// Limits for a descriptor limit of `nofile` with no boards (see [`Limits::for_budget`]).
    pub fn for_nofile(nofile: u64) -> Limits {
        Limits::for_budget(nofile, 0)
    }

    /// The reserve kept free under a descriptor limit of `nofile`: a sixteenth, at least
    /// [`MIN_RESERVE`].
    pub fn reserve(nofile: u64) -> usize {
        (usize::try_from(nofile).unwrap_or(usize::MAX).min(1 << 20) / 16).max(MIN_RESERVE)
    }

    /// Limits for a descriptor limit of `nofile` of which `boards` are kept for the boards:
    /// client connections get what is left after the boards and a [`Limits::reserve`] (at
    /// least 16); one address may hold half of them.
    pub fn for_budget(nofile: u64, boards: usize) -> Limits {
        let reserve = Limits::reserve(nofile);
        let nofile = usize::try_from(nofile).unwrap_or(usize::MAX).min(1 << 20);
        let total = nofile
            .saturating_sub(reserve)
            .saturating_sub(boards)
            .max(16);
        Limits {
            total,
            per_address: (total / 2).max(8),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            write_stall: Duration::from_secs(20),
        }
    }

    /// Limits for this process's descriptor limit (the soft one: the systemd unit sets it with
    /// `LimitNOFILE=`; the daemon does not raise it, as `setrlimit` is outside the unit's
    /// system call filter).
    pub fn from_process() -> Limits {
        Limits::for_nofile(nofile())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::from_process()
    }
}

/// The soft descriptor limit of this process (1024 when it cannot be read).
pub fn nofile() -> u64 {
    use nix::sys::resource::{Resource, getrlimit};
    getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft)
}

/// Counts open connections, in total and per address.
#[derive(Debug)]
pub struct Limiter {
    limits: Limits,
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One admitted connection; frees its place when dropped.
#[derive(Debug)]
pub struct Permit {
    limiter: Arc<Limiter>,
    ip: IpAddr,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.limiter.open.lock().unwrap_or_else(|p| p.into_inner());
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.ip);
            }
        }
    }
}

impl Limiter {
    /// A limiter with these limits.
    pub fn new(limits: Limits) -> Arc<Limiter> {
        Arc::new(Limiter {
            limits,
            open: Mutex::new((0, HashMap::new())),
        })
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// Admit a connection from `ip`, unless a cap is reached.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Permit> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let here = open.1.get(&ip).copied().unwrap_or(0);
        if open.0 >= self.limits.total || here >= self.limits.per_address {
            return None;
        }
        open.0 += 1;
        *open.1.entry(ip).or_insert(0) += 1;
        Some(Permit {
            limiter: self.clone(),
            ip,
        })
    }
}

/// A stream whose writes fail once they made no progress for the stall deadline (a client
/// that stopped reading), so its buffers are freed.
pub struct Guarded<T> {
    io: T,
    stall: Duration,
    timer: Pin<Box<Sleep>>,
    waiting: bool,
}

impl<T> Guarded<T> {
    /// Guard `io` with a write-stall deadline.
    pub fn new(io: T, stall: Duration) -> Self {
        Guarded {
            io,
            stall,
            timer: Box::pin(tokio::time::sleep(stall)),
            waiting: false,
        }
    }

    fn pending<R>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<R>> {
        if !self.waiting {
            self.waiting = true;
            let deadline = Instant::now() + self.stall;
            self.timer.as_mut().reset(deadline);
        }
        if self.timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "client stopped reading",
            )));
        }
        Poll::Pending
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Guarded<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Guarded<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write(cx, buf) {
            Poll::Pending => self.pending(cx),
            ready => {
                self.waiting = false;
                ready
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.pending(cx),
            ready => {
                self.waiting = false;
                ready
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match Pin::new(&mut self.io).poll_flush(cx) {
            Poll::Pending => self.pending(cx),
            ready => {
                self.waiting = false;
                ready
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Whether clients on other machines can reach `addr`.
pub fn beyond_loopback(addr: &SocketAddr) -> bool {
    !addr.ip().is_loopback()
}

/// Warn, once per listener, that `what` on `addr` is reachable from the network in clear text.
pub fn warn_if_exposed(what: &str, addr: &SocketAddr) {
    if beyond_loopback(addr) {
        tracing::warn!(
            "{what} listens on {addr}, beyond loopback, without TLS: tokens and games cross the \
             network in clear text; put a TLS reverse proxy (nginx, caddy: see docs/operations.md, \
             \"Broadcasting on the venue network\") in front and listen on 127.0.0.1"
        );
    }
}

/// `nosniff` on every response; the page may not be framed by other sites.
pub fn security_headers(router: Router) -> Router {
    router.layer(axum::middleware::map_response(
        |mut resp: axum::response::Response| async move {
            let h = resp.headers_mut();
            h.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            if h.get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"text/html"))
            {
                h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
                h.insert(
                    header::CONTENT_SECURITY_POLICY,
                    HeaderValue::from_static("frame-ancestors 'none'"),
                );
                h.insert(
                    header::REFERRER_POLICY,
                    HeaderValue::from_static("no-referrer"),
                );
            }
            resp
        },
    ))
}

/// Serve `router` on `listener` until `stop` is cancelled, within `limiter`'s caps: the
/// server's accept loop, for the caller to run as a task.
pub fn serve(
    what: &'static str,
    listener: tokio::net::TcpListener,
    router: Router,
    limiter: Arc<Limiter>,
    stop: CancellationToken,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let router = security_headers(router);
    async move {
        let mut refused_logged: Option<std::time::Instant> = None;
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = stop.cancelled() => break,
            };
            let (tcp, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors or similar: wait a little instead of spinning.
                    tracing::warn!("{what}: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Some(permit) = limiter.admit(peer.ip()) else {
                if refused_logged.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(
                        "{what}: connection from {peer} refused: {} connections open (caps: {} \
                         in total, {} per address)",
                        limiter.open(),
                        limiter.limits.total,
                        limiter.limits.per_address
                    );
                    refused_logged = Some(std::time::Instant::now());
                }
                drop(tcp);
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let io = hyper_util::rt::TokioIo::new(Guarded::new(tcp, limiter.limits.write_stall));
            let svc = hyper_util::service::TowerToHyperService::new(router.clone());
            let header_timeout = limiter.limits.header_timeout;
            let stop = stop.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .max_buf_size(64 * 1024)
                    .max_headers(64)
                    .serve_connection(io, svc)
                    .with_upgrades();
                let mut conn = std::pin::pin!(conn);
                let finished = tokio::select! {
                    _ = conn.as_mut() => true,
                    _ = stop.cancelled() => false,
                };
                if !finished {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(2), conn).await;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_stay_below_the_descriptor_limit_with_a_reserve() {
        let l = Limits::for_nofile(4096);
        assert_eq!(l.total, 4096 - 256);
        assert!(l.per_address < l.total);
        let small = Limits::for_nofile(1024);
        assert_eq!(small.total, 1024 - MIN_RESERVE);
        let unit = Limits::for_nofile(65_536);
        assert_eq!(unit.total, 65_536 - 4096);
    }

    #[test]
    fn clients_get_what_the_boards_leave() {
        // 756 boards at two descriptors each and the daemon's own 64, under 4,096: the
        // clients may not take the boards' descriptors (they were allowed 3,584 before).
        let l = Limits::for_budget(4096, 64 + 2 * 756);
        assert_eq!(l.total, 4096 - 256 - 1576);
        assert!(l.total + 1576 + MIN_RESERVE <= 4096);
        // More boards than the limit holds: still a few connections for the API.
        assert_eq!(Limits::for_budget(1024, 5000).total, 16);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_stops_reading_is_dropped_at_the_write_stall_deadline() {
        use tokio::io::AsyncWriteExt;
        // A peer that never reads: the pipe fills, then writes make no progress.
        let (near, _far) = tokio::io::duplex(1024);
        let mut io = Guarded::new(near, Duration::from_secs(20));
        let chunk = [0u8; 512];
        let err = loop {
            if let Err(e) = io.write_all(&chunk).await {
                break e;
            }
        };
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    }

    #[test]
    fn the_limiter_counts_per_address_and_in_total() {
        let limiter = Limiter::new(Limits {
            total: 3,
            per_address: 2,
            ..Limits::for_nofile(4096)
        });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let p1 = limiter.admit(a).unwrap();
        let _p2 = limiter.admit(a).unwrap();
        assert!(limiter.admit(a).is_none(), "per-address cap");
        let _p3 = limiter.admit(b).unwrap();
        assert!(limiter.admit(b).is_none(), "total cap");
        drop(p1);
        assert!(
            limiter.admit(a).is_some(),
            "a closed connection frees its place"
        );
    }
}
