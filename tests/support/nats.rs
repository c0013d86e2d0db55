//! A real MQTT broker cluster for tests: Debian's `nats-server`, several nodes on 127.0.0.1
//! routed to each other, each with JetStream (which NATS's MQTT needs) and an MQTT listener,
//! on free ports. Its absence fails the test with the reason (CI installs it, see `.ci/run`).
//! Shares the binary look-up and the wait for a listener with the mosquitto helper
//! ([`super::broker`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::broker::{require_binary, wait_listening};
use super::http::{self, free_port};

/// The `nats-server` binary; its absence fails the test.
pub fn require_nats() -> Option<PathBuf> {
    require_binary("nats-server", "nats-server")
}

/// One node of the cluster.
pub struct NatsNode {
    /// Its `server_name`.
    pub name: String,
    /// Its MQTT port on 127.0.0.1.
    pub mqtt_port: u16,
    /// Its monitoring port (`/healthz`, `/jsz`, `/connz`).
    pub http_port: u16,
    conf: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl NatsNode {
    /// `mqtt://127.0.0.1:PORT`.
    pub fn mqtt_url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.mqtt_port)
    }

    fn spawn(&mut self, bin: &Path) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        self.child = Some(
            Command::new(bin)
                .arg("-c")
                .arg(&self.conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start nats-server"),
        );
    }

    /// Kill it at once (SIGKILL): no goodbye to its clients or to the other nodes.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Running now.
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// MQTT client ids connected to this node now (from its `/connz`), `None` if it does not
    /// answer.
    pub fn mqtt_clients(&self) -> Option<Vec<String>> {
        let r = http::try_get(http::local(self.http_port), "/connz?limit=1024")?;
        let v: serde_json::Value = serde_json::from_str(&r.body).ok()?;
        Some(
            v["connections"]
                .as_array()?
                .iter()
                .filter_map(|c| c["mqtt_client"].as_str().map(str::to_string))
                .collect(),
        )
    }

    /// JetStream streams this node holds (a replica of each replicated one), by its `/jsz`.
    pub fn streams(&self) -> Option<u64> {
        let r = http::try_get(http::local(self.http_port), "/jsz")?;
        serde_json::from_str::<serde_json::Value>(&r.body).ok()?["streams"].as_u64()
    }

    /// Ready: its monitoring port says healthy and JetStream has a cluster leader it knows.
    fn ready(&self) -> bool {
        let healthy =
            http::try_get(http::local(self.http_port), "/healthz").is_some_and(|r| r.status == 200);
        let leader = http::try_get(http::local(self.http_port), "/jsz")
            .and_then(|r| serde_json::from_str::<serde_json::Value>(&r.body).ok())
            .is_some_and(|v| {
                v["meta_cluster"]["leader"]
                    .as_str()
                    .is_some_and(|l| !l.is_empty())
            });
        healthy && leader && std::net::TcpStream::connect(("127.0.0.1", self.mqtt_port)).is_ok()
    }
}

/// A running cluster of `nats-server` nodes, stopped (and its files removed) when dropped.
pub struct NatsCluster {
    /// The nodes, in the order of [`NatsCluster::mqtt_urls`].
    pub nodes: Vec<NatsNode>,
    bin: PathBuf,
    dir: PathBuf,
}

impl NatsCluster {
    /// Start `n` nodes in `dir` (created), each routed to every other, with JetStream and an
    /// MQTT listener whose streams are replicated on every node (`stream_replicas`), and wait
    /// until the cluster is ready.
    pub fn start(bin: &Path, n: usize, dir: &Path) -> NatsCluster {
        std::fs::create_dir_all(dir).unwrap();
        let ports: Vec<[u16; 4]> = (0..n)
            .map(|_| [free_port(), free_port(), free_port(), free_port()])
            .collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|p| format!("\"nats-route://127.0.0.1:{}\"", p[1]))
            .collect();
        let nodes = ports
            .iter()
            .enumerate()
            .map(|(i, &[client, cluster, mqtt, monitor])| {
                let name = format!("n{}", i + 1);
                let store = dir.join(format!("{name}-store"));
                let conf = dir.join(format!("{name}.conf"));
                std::fs::write(
                    &conf,
                    format!(
                        "server_name: {name}\n\
                         listen: \"127.0.0.1:{client}\"\n\
                         http: \"127.0.0.1:{monitor}\"\n\
                         jetstream {{ store_dir: \"{}\" }}\n\
                         cluster {{\n  name: eboardd-test\n  listen: \"127.0.0.1:{cluster}\"\n  \
                         routes: [{}]\n}}\n\
                         mqtt {{ listen: \"127.0.0.1:{mqtt}\", stream_replicas: {n} }}\n",
                        store.display(),
                        routes.join(", ")
                    ),
                )
                .unwrap();
                NatsNode {
                    log: dir.join(format!("{name}.log")),
                    name,
                    mqtt_port: mqtt,
                    http_port: monitor,
                    conf,
                    child: None,
                }
            })
            .collect();
        let mut cluster = NatsCluster {
            nodes,
            bin: bin.to_path_buf(),
            dir: dir.to_path_buf(),
        };
        for node in &mut cluster.nodes {
            node.spawn(bin);
        }
        for node in &cluster.nodes {
            wait_listening(node.http_port, &format!("nats-server {}", node.name));
        }
        cluster.wait_ready();
        cluster
    }

    /// Every node's MQTT address, in order.
    pub fn mqtt_urls(&self) -> Vec<String> {
        self.nodes.iter().map(NatsNode::mqtt_url).collect()
    }

    /// Waits (at most 30 s) until every running node is ready: healthy, routed, with a
    /// JetStream leader, its MQTT port open.
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self
            .nodes
            .iter()
            .filter(|n| n.running())
            .all(NatsNode::ready)
        {
            assert!(
                Instant::now() < deadline,
                "the NATS cluster did not get ready; logs:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Start node `i` again (after [`NatsNode::kill9`]) with its stored state; waits until it
    /// is ready.
    pub fn restart(&mut self, i: usize) {
        let bin = self.bin.clone();
        self.nodes[i].spawn(&bin);
        wait_listening(self.nodes[i].http_port, "nats-server");
        self.wait_ready();
    }

    /// Waits (at most 30 s) until every node holds a replica of NATS's three MQTT streams
    /// (sessions, messages, retained messages), which the first MQTT client's connection
    /// creates: only then can the cluster lose a node (three replicas cannot be placed on two).
    pub fn wait_mqtt_streams(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self
            .nodes
            .iter()
            .all(|n| n.streams().is_some_and(|s| s >= 3))
        {
            assert!(
                Instant::now() < deadline,
                "the MQTT streams are not on every node; logs:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The node the MQTT client `client_id` is connected to now, by its `/connz`.
    pub fn node_of(&self, client_id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| {
            n.running()
                && n.mqtt_clients()
                    .is_some_and(|c| c.iter().any(|c| c == client_id))
        })
    }

    /// Every node's log, for failure messages.
    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("--- {} ---\n{}", n.name, n.log()))
            .collect()
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            n.kill9();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
