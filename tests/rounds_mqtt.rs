//! A round loaded over the API reaches MQTT: the retained per-board state carries the round's
//! players (against a real mosquitto, started by the test on a free localhost port).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use serde_json::Value;

mod support;

use support::broker::{Broker, require_mosquitto};

use eboardd::output::{Hub, HubConfig, MqttConfig, OutputConfig, RoundInfo};

const TOKEN: &str = "round-token-123";

fn broker() -> (Broker, u16) {
    let bin = require_mosquitto().expect("mosquitto");
    let broker = Broker::start(&bin, None);
    let port = broker.port;
    (broker, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_round_reaches_the_mqtt_board_state() {
    let (_broker, port) = broker();
    let info = RoundInfo {
        boards: vec!["board-1".into(), "board-2".into(), "board-3".into()],
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        token: Some(TOKEN.into()),
        mqtt: Some(MqttConfig {
            brokers: vec![eboardd::output::MqttBroker {
                host: "127.0.0.1".into(),
                port,
            }],
            prefix: "eboardd".into(),
            node: "hall-a".into(),
            queue: 1000,
        }),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let stats = out.mqtt.clone().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stats.connected.load(Ordering::Relaxed) {
        assert!(Instant::now() < deadline, "publisher did not connect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut opts = MqttOptions::new(
        format!("rounds-sub-{}", std::process::id()),
        "127.0.0.1",
        port,
    );
    opts.set_keep_alive(Duration::from_secs(10));
    let (client, mut eventloop) = AsyncClient::new(opts, 100);
    client
        .subscribe("eboardd/hall-a/board/board-1/state", QoS::AtLeastOnce)
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut ready = Some(ready_tx);
        while let Ok(e) = eventloop.poll().await {
            match e {
                Event::Incoming(Packet::SubAck(_)) => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Event::Incoming(Packet::Publish(p)) => {
                    if let Ok(v) = serde_json::from_slice(&p.payload)
                        && tx.send(v).is_err()
                    {
                        break;
                    }
                }
                _ => {}
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ready_rx)
        .await
        .unwrap()
        .unwrap();

    let trf = std::fs::read(support::data("rounds/round4.trf")).unwrap();
    let http = out.http.unwrap();
    let status = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(http).unwrap();
        let head = format!(
            "POST /api/v1/round?round=4&format=trf HTTP/1.0\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n",
            trf.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&trf).unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        r
    })
    .await
    .unwrap();
    assert!(status.contains(" 200 "), "{status}");

    let found = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(v) = rx.recv().await {
            if v["white"]["name"] == "Kowalska, Anna" {
                return v;
            }
        }
        panic!("subscriber ended");
    })
    .await
    .expect("the board state with the round's players on the broker");
    assert_eq!(found["black"]["name"], "Novak, Petr");
    assert_eq!(found["white"]["fide_id"], 1100002);
    out.shutdown().await;
}
