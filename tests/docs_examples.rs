//! The examples of `docs/` against the binary: the replay example of `docs/events.md` §6 is what
//! `eboardd replay` prints for the capture it names; `serve-replay --help` and
//! `serve-mqtt --help` name only the flags they have.

mod support;

use std::path::PathBuf;
use std::process::Command;

use support::daemon::bin;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_replay_example_is_what_replay_prints() {
    let doc = std::fs::read_to_string(root().join("docs/events.md")).unwrap();
    let marker = "<!-- replay-example -->\n```\n";
    let at = doc.find(marker).expect("the replay example's marker") + marker.len();
    let block = &doc[at..at + doc[at..].find("```").unwrap()];
    let (command, shown) = block.split_once('\n').unwrap();
    let args: Vec<&str> = command
        .strip_prefix("$ eboardd ")
        .expect("the example starts with its command")
        .split_whitespace()
        .collect();
    let out = Command::new(bin())
        .args(&args)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{command}");
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        shown.trim_end(),
        printed.trim_end(),
        "docs/events.md §6: the example is not what `{command}` prints"
    );
}

#[test]
fn serve_commands_take_the_configuration_their_help_names() {
    for command in ["serve-replay", "serve-mqtt"] {
        let out = Command::new(bin())
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        if help.contains("[outputs]") {
            assert!(
                help.contains("--config <FILE>"),
                "{command} --help names [outputs] of a configuration it cannot be given:\n{help}"
            );
        }
    }
}

#[test]
fn serve_replay_reads_the_outputs_of_its_configuration() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let dir = support::scratch("serve-replay-config");
    let config = dir.join("eboardd.toml");
    std::fs::write(
        &config,
        format!("[outputs]\nhttp = \"127.0.0.1:{port}\"\n\n[event]\nname = \"Config Open\"\n"),
    )
    .unwrap();
    let out = Command::new(bin())
        .arg("serve-replay")
        .arg("--config")
        .arg(&config)
        .args(["--exit", "--speed", "0"])
        .arg(support::capture("human/g0003.jsonl"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("serving http://127.0.0.1:{port}/")),
        "the configuration's [outputs] http:\n{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
