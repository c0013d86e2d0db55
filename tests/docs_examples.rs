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
