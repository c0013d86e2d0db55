//! A real MQTT broker for tests: Debian's mosquitto, started on a free localhost port. Its
//! absence fails the test with the reason (CI installs it, see `.ci/run`): never a pass that
//! checked nothing.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The broker binary, if installed.
pub fn mosquitto_binary() -> Option<PathBuf> {
    [
        "/usr/sbin/mosquitto",
        "/usr/bin/mosquitto",
        "/usr/local/sbin/mosquitto",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// The broker binary; its absence fails the test.
pub fn require_mosquitto() -> Option<PathBuf> {
    let found = mosquitto_binary();
    assert!(
        found.is_some(),
        "mosquitto is not installed: .ci/run must install Debian's mosquitto package (APT_PACKAGES) (apt-get install mosquitto)"
    );
    found
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
        let port = port.unwrap_or_else(|| {
            TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        });
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
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "mosquitto did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
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
