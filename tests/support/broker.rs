//! A real MQTT broker for tests: Debian's mosquitto, started on a free localhost port. Its
//! absence fails the test with the reason (CI installs it, see `.ci/run`): never a pass that
//! checked nothing.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The binary `name` in the usual system directories, if installed.
pub fn system_binary(name: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"]
        .iter()
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.is_file())
}

/// The binary `name` of Debian's package `package`; its absence fails the test.
pub fn require_binary(name: &str, package: &str) -> Option<PathBuf> {
    let found = system_binary(name);
    assert!(
        found.is_some(),
        "{name} is not installed: .ci/run must install Debian's {package} package (APT_PACKAGES) (apt-get install {package})"
    );
    found
}

/// The broker binary, if installed.
pub fn mosquitto_binary() -> Option<PathBuf> {
    system_binary("mosquitto")
}

/// The broker binary; its absence fails the test.
pub fn require_mosquitto() -> Option<PathBuf> {
    require_binary("mosquitto", "mosquitto")
}

/// Waits until something listens on `port` of 127.0.0.1 (at most 10 s), or fails the test
/// naming `what`.
pub fn wait_listening(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running mosquitto, stopped when dropped.
pub struct Broker {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    /// The binary (to start it again on the same port).
    pub bin: PathBuf,
}

impl Broker {
    /// Start mosquitto on `port` (a free one when `None`) and wait until it listens.
    pub fn start(bin: &PathBuf, port: Option<u16>) -> Broker {
        let port = port.unwrap_or_else(super::http::free_port);
        let dir = std::env::temp_dir().join(format!("eboardd-mqtt-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!(
                "listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n\
                 max_queued_messages 200000\nmax_inflight_messages 100\n"
            ),
        )
        .unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mosquitto");
        wait_listening(port, "mosquitto");
        Broker {
            child,
            port,
            dir,
            bin: bin.clone(),
        }
    }

    /// Stop it (kill).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A TCP relay to a broker on 127.0.0.1 that can hold (swallow) what its clients send and cut
/// their connections: what was held never reaches the broker, as on a link that died.
pub struct Relay {
    /// Its port on 127.0.0.1 (give it to the client instead of the broker's).
    pub port: u16,
    hold: std::sync::Arc<std::sync::atomic::AtomicBool>,
    cut: tokio::sync::watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Relay to the broker on `broker_port`, forwarding everything until told otherwise.
    pub async fn start(broker_port: u16) -> Relay {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hold = Arc::new(AtomicBool::new(false));
        let (cut, cut_rx) = tokio::sync::watch::channel(0u64);
        let held = hold.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(broker) = tokio::net::TcpStream::connect(("127.0.0.1", broker_port)).await
                else {
                    continue;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut br, mut bw) = broker.into_split();
                let (hold, mut cut) = (held.clone(), cut_rx.clone());
                cut.mark_unchanged();
                // Held from the cut on too, until the connection is closed.
                let generation = *cut.borrow();
                let cut_view = cut_rx.clone();
                tokio::spawn(async move {
                    let up = async {
                        let mut buf = vec![0u8; 64 << 10];
                        loop {
                            let n = cr.read(&mut buf).await.unwrap_or(0);
                            if n == 0 {
                                break;
                            }
                            let held =
                                hold.load(Ordering::SeqCst) || *cut_view.borrow() != generation;
                            if !held && bw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    let down = tokio::io::copy(&mut br, &mut cw);
                    tokio::select! {
                        _ = up => {}
                        _ = down => {}
                        _ = cut.changed() => {}
                    }
                    // Dropping both halves of both sockets closes them.
                });
            }
        });
        Relay {
            port,
            hold,
            cut,
            task,
        }
    }

    /// From now on, swallow what the clients send instead of passing it to the broker.
    pub fn hold(&self) {
        self.hold.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Close every connection open now (the clients see the link die), then forward again.
    pub fn cut(&self) {
        self.cut.send_modify(|n| *n += 1);
        self.hold.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}
