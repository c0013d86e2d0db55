//! End to end over Bluetooth LE: `eboardd run` with `chessnut:ble` ports meets emulated
//! Chessnut boards through the stand-in BlueZ (`eboardd::sim::bluez`: a private `dbus-daemon`
//! and `org.bluez` served in this process), so the daemon's real `bluer` path scans, connects,
//! resolves services, subscribes and writes as it would through `bluetoothd`.
//!
//! Two boards play demo games at once, one of them going out of range mid-game and coming back:
//! both games come out exact in the event stream and in the replay of the daemon's captures. A
//! board whose link cuts every frame to 20 bytes (ATT MTU 23) gives an error naming the MTU in
//! health, and never a position or a move. Every board took every write (none not taken), and
//! the stand-in refused no call. The stand-in itself refuses what BlueZ refuses and counts the
//! writes a board does not take. Without `dbus-daemon` the tests fail, saying so.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use eboardd::sim::bluez::{BlueZ, BoardSpec, BoardStatus};
use eboardd::sim::emulator::chessnut::{ChessnutConfig, ChessnutEmulator};
use eboardd::sim::emulator::{ClockModel, Emulator, EmulatorConfig, Script};
use eboardd::sim::pgn::ScriptGame;
use eboardd::sim::{SimConfig, Style};
use support::daemon::*;

/// Script time per real time: a frame every 100 ms of script time is 200 frames a second.
const SPEED: f64 = 20.0;
const WAIT: Duration = Duration::from_secs(150);

/// `game` with its `[%clk]` times dropped: the players think 1–12 s a move (blitz), so that a
/// whole game takes minutes of script time, not hours.
fn quick(game: &ScriptGame) -> ScriptGame {
    let mut g = game.clone();
    g.clocks = vec![None; g.moves.len()];
    g
}

/// An emulated Chessnut playing `game`, advertised as `name`, at `address` with ATT MTU `mtu`.
fn chessnut(game: &ScriptGame, seed: u64, name: &str, address: &str, mtu: u16) -> BoardSpec {
    let script = Script::from_games(
        std::slice::from_ref(&quick(game)),
        &SimConfig::new(Style::Blitz, seed),
        5_000_000,
    )
    .delayed(2_000_000);
    let players = Emulator::new(
        script,
        EmulatorConfig {
            clock: ClockModel::None,
            ..Default::default()
        },
    );
    BoardSpec {
        board: Box::new(ChessnutEmulator::new(
            players,
            ChessnutConfig {
                name: Some(name.into()),
                battery: 80,
                ..Default::default()
            },
        )),
        address: address.into(),
        mtu,
    }
}

/// The stand-in BlueZ serving `boards`, or the test fails with the reason (`dbus-daemon`
/// missing: Debian package `dbus`).
fn bluez(dir: &std::path::Path, boards: Vec<BoardSpec>) -> BlueZ {
    BlueZ::start(&dir.join("bluez"), boards, SPEED)
        .unwrap_or_else(|why| panic!("the stand-in BlueZ cannot run: {why}"))
}

/// The daemon's id of the board at `address` (`chessnut-` and the address without colons).
fn id_of(address: &str) -> String {
    format!("chessnut-{}", address.replace(':', ""))
}

/// Every board took every write, none was cut where no cut was meant, and the stand-in
/// refused nothing.
fn assert_strict(bz: BlueZ) -> Vec<BoardStatus> {
    let refused = bz.refused();
    let st = bz.stop().expect("the stand-in served to the end");
    for s in &st {
        assert_eq!(
            s.unknown_writes, 0,
            "{}: writes not taken; the first: {:02x?}",
            s.address, s.unknown_sample
        );
        assert!(s.writes_taken >= 1, "{}: never started", s.address);
    }
    assert!(refused.is_empty(), "calls refused: {refused:?}");
    st
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_boards_play_exact_games_through_bluez_one_dropping_out_and_back() {
    let started = Instant::now();
    let dir = scratch("ble-two");
    let caps = dir.join("captures");
    let games = demo_games();
    let (ga, gb) = (&games[25], &games[36]);
    let (addr_a, addr_b) = ("C0:FF:EE:00:00:0A", "C0:FF:EE:00:00:0B");
    let mut bz = bluez(
        &dir,
        vec![
            chessnut(ga, 11, "Chessnut Air", addr_a, 185),
            chessnut(gb, 12, "Chessnut GO", addr_b, 247),
        ],
    );
    // Board B goes out of range once 12 plies are settled; its players hold while it is away.
    let away_after = 12;
    assert!(gb.moves.len() > away_after + 10);
    bz.drop_out_after(1, away_after);
    let cfg = dir.join("eboardd.toml");
    std::fs::write(&cfg, "[daemon]\nble_reconnect_secs = 1\n").unwrap();
    let cfg_arg = cfg.to_string_lossy().to_string();
    // One port by name prefix, one for any board of the family.
    let ports: Vec<PathBuf> = vec!["chessnut:ble:name=Chessnut*".into(), "chessnut:ble".into()];
    let mut d = Daemon::start_env(
        &ports,
        &caps,
        &["--config", &cfg_arg],
        &[("DBUS_SYSTEM_BUS_ADDRESS", bz.bus_address())],
    );
    let (ida, idb) = (id_of(addr_a), id_of(addr_b));

    // B's link is lost at its point: the daemon says so; then B is back.
    assert!(
        bz.wait_for(WAIT, |s| !s[1].present).await,
        "board B never went away: {:?}",
        bz.status()
    );
    d.wait_for("board B's link lost", WAIT, |ev| {
        !of(ev, &idb, "board_disconnected").is_empty()
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        let made_b = moves_from_events(&ev, &idb);
        assert!(
            !made_b.is_empty() && made_b.len() <= away_after,
            "B before it went: {made_b:?}"
        );
        assert_eq!(made_b[..], uci(gb)[..made_b.len()], "B before it went");
    }
    bz.come_back(1);

    let played = [(ida.as_str(), ga), (idb.as_str(), gb)];
    d.wait_for("both games to be played", WAIT, |ev| {
        played
            .iter()
            .all(|(id, g)| made(ev, id, g.moves.len()) && moves_from_events(ev, id) == uci(g))
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        for (id, g) in played {
            assert_eq!(moves_from_events(&ev, id), uci(g), "{id}: event stream");
            assert_eq!(of(&ev, id, "game_started").len(), 1, "{id}: one game");
            assert_eq!(of(&ev, id, "board_connected")[0]["driver"], "chessnut");
        }
        assert_eq!(of(&ev, &ida, "board_connected").len(), 1, "A: one link");
        assert_eq!(of(&ev, &idb, "board_connected").len(), 2, "B: back once");
    }
    d.terminate();
    let st = assert_strict(bz);
    assert_eq!(st[0].connections, 1, "A");
    assert_eq!(st[1].connections, 2, "B: connected again after coming back");
    assert!(st.iter().all(|s| s.cut == 0), "{st:?}");
    assert_replay_exact(&caps, &played);
    eprintln!(
        "two boards ({} and {} plies, {} and {} frames) exact live and in replay in {:.1} s",
        ga.moves.len(),
        gb.moves.len(),
        st[0].notifications,
        st[1].notifications,
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_cutting_frames_to_the_mtu_gives_an_error_naming_it_and_no_move() {
    let dir = scratch("ble-mtu");
    let caps = dir.join("captures");
    let games = demo_games();
    let address = "C0:FF:EE:00:00:23";
    let mut bz = bluez(
        &dir,
        vec![chessnut(&games[47], 13, "Chessnut Pro", address, 23)],
    );
    let port = support::http::free_port();
    let http = format!("127.0.0.1:{port}");
    let ports: Vec<PathBuf> = vec![format!("chessnut:ble:{address}").into()];
    let d = Daemon::start_env(
        &ports,
        &caps,
        &["--http", &http],
        &[("DBUS_SYSTEM_BUS_ADDRESS", bz.bus_address())],
    );
    // Several moves' worth of cut frames.
    assert!(
        bz.wait_for(WAIT, |s| s[0].plies_settled >= 6 && s[0].cut >= 100)
            .await,
        "the board did not play: {:?}",
        bz.status()
    );
    let problem = {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let health = support::http::json_when_up(port, "/api/v1/health").await;
            let problems = health["link_problems"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            if let Some(p) = problems.values().next() {
                break p.as_str().unwrap_or("").to_string();
            }
            assert!(Instant::now() < deadline, "no link problem: {health}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    assert!(
        problem.contains("MTU 23") && problem.contains("38-byte frame to 20 bytes"),
        "{problem}"
    );
    let id = id_of(address);
    {
        let ev = d.events.lock().unwrap();
        for kind in ["game_started", "move_made", "move_completed"] {
            assert!(of(&ev, &id, kind).is_empty(), "{kind} from cut frames");
        }
    }
    d.terminate();
    let st = assert_strict(bz);
    assert!(st[0].cut >= 100, "{st:?}");
    let log = std::fs::read_dir(dir.clone())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("captures.log"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect::<String>();
    assert!(log.contains("MTU 23"), "the log names the MTU:\n{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_stand_in_refuses_what_bluez_refuses_and_counts_writes_not_taken() {
    use dbus::arg::{PropMap, RefArg};
    use dbus::blocking::Connection;
    use std::collections::HashMap;

    type Objects = HashMap<dbus::Path<'static>, HashMap<String, PropMap>>;
    let dir = scratch("ble-strict");
    let games = demo_games();
    let address = "C0:FF:EE:00:00:5E";
    let bz = bluez(
        &dir,
        vec![chessnut(&games[47], 14, "Chessnut GO", address, 185)],
    );
    let mut ch = dbus::channel::Channel::open_private(bz.bus_address()).unwrap();
    ch.register().unwrap();
    let conn = Connection::from(ch);
    let t = Duration::from_secs(5);
    let dev = format!("/org/bluez/hci0/dev_{}", address.replace(':', "_"));
    let objects = |conn: &Connection| -> Objects {
        let (o,): (Objects,) = conn
            .with_proxy("org.bluez", "/", t)
            .method_call(
                "org.freedesktop.DBus.ObjectManager",
                "GetManagedObjects",
                (),
            )
            .unwrap();
        o
    };
    let call = |path: &str, iface: &str, method: &str| -> Result<(), String> {
        conn.with_proxy("org.bluez", path, t)
            .method_call::<(), _, _, _>(iface, method, ())
            .map_err(|e| e.name().unwrap_or("").to_string())
    };
    let write = |path: &str, bytes: &[u8]| -> Result<(), String> {
        conn.with_proxy("org.bluez", path, t)
            .method_call::<(), _, _, _>(
                "org.bluez.GattCharacteristic1",
                "WriteValue",
                (bytes.to_vec(), PropMap::new()),
            )
            .map_err(|e| e.name().unwrap_or("").to_string())
    };
    // In range, not connected: the adapter and the device, no services.
    let o = objects(&conn);
    let d = &o[&dbus::Path::from(dev.clone())]["org.bluez.Device1"];
    assert_eq!(d["Name"].0.as_str(), Some("Chessnut GO"));
    assert_eq!(d["Address"].0.as_str(), Some(address));
    assert!(o.contains_key(&dbus::Path::from("/org/bluez/hci0")));
    assert_eq!(o.len(), 2, "{:?}", o.keys());
    // Unknown methods and objects are errors.
    assert_eq!(
        call(&dev, "org.bluez.Device1", "Pair").unwrap_err(),
        "org.freedesktop.DBus.Error.UnknownMethod"
    );
    assert!(call(&format!("{dev}/service0010"), "org.bluez.GattService1", "X").is_err());
    // Connected: the services are resolved; connecting again is refused.
    call(&dev, "org.bluez.Device1", "Connect").unwrap();
    assert_eq!(
        call(&dev, "org.bluez.Device1", "Connect").unwrap_err(),
        "org.bluez.Error.AlreadyConnected"
    );
    let o = objects(&conn);
    let d = &o[&dbus::Path::from(dev.clone())]["org.bluez.Device1"];
    assert_eq!(
        d["ServicesResolved"].0.as_any().downcast_ref::<bool>(),
        Some(&true)
    );
    let chars: Vec<(&dbus::Path, &PropMap)> = o
        .iter()
        .filter_map(|(p, i)| i.get("org.bluez.GattCharacteristic1").map(|c| (p, c)))
        .collect();
    assert_eq!(chars.len(), 3);
    let by_uuid = |u: &str| -> String {
        chars
            .iter()
            .find(|(_, c)| c["UUID"].0.as_str() == Some(u))
            .map(|(p, _)| p.to_string())
            .unwrap()
    };
    let (pos, wr) = (
        by_uuid("1b7e8262-2877-41c3-b46e-cf057c562023"),
        by_uuid("1b7e8272-2877-41c3-b46e-cf057c562023"),
    );
    assert_eq!(
        call(&wr, "org.bluez.GattCharacteristic1", "StartNotify").unwrap_err(),
        "org.bluez.Error.NotSupported"
    );
    call(&pos, "org.bluez.GattCharacteristic1", "StartNotify").unwrap();
    // Every write reaches the board: a command it does not know is counted, as is a write
    // to its position characteristic (refused by BlueZ too: not writable).
    write(&wr, &[0x21, 0x01, 0x00]).unwrap();
    write(&wr, &[0x44]).unwrap();
    assert_eq!(
        write(&pos, &[0x21, 0x01, 0x00]).unwrap_err(),
        "org.bluez.Error.NotPermitted"
    );
    call(&dev, "org.bluez.Device1", "Disconnect").unwrap();
    assert_eq!(
        call(&dev, "org.bluez.Device1", "Disconnect").unwrap_err(),
        "org.bluez.Error.NotConnected"
    );
    // Its services are gone with the link: the write reaches no board (1 taken, below).
    assert!(write(&wr, &[0x21, 0x01, 0x00]).is_err());
    assert_eq!(objects(&conn).len(), 2);
    let refused = bz.refused();
    assert_eq!(refused.len(), 4, "{refused:?}");
    let st = bz.stop().unwrap();
    assert_eq!(st[0].writes_taken, 1);
    // Counted in bytes: 1 + 3.
    assert_eq!(st[0].unknown_writes, 4, "{:?}", st[0].unknown_sample);
    assert_eq!(st[0].connections, 1);
    let _ = std::fs::remove_dir_all(&dir);
}
