//! Every real Certabo line the public repositories keep (`tests/data/certabo/frames.json`),
//! decoded: each Certabo line to the position of its `expect` (with the id table learnt from its
//! set's calibration lines), the Sentio lines to their occupied squares, the rejected sample
//! rejected; every cut of the whole stream gives the same lines; the misread sample comes out
//! right through the read filter; and a real board's id table shows why misreads are not
//! matched to the nearest known id.

use std::collections::{BTreeMap, BTreeSet};

use eboardd::core::observation::{Observation, SquareReading};
use eboardd::driver::certabo::calibration::{PieceTable, Reading};
use eboardd::driver::certabo::codec::{CertaboFrame, CertaboLine, LineDecoder, PieceId, occupied};
use eboardd::driver::certabo::{Certabo, CertaboStream};
use eboardd::driver::{BoardDriver, Decoder, Message};
use serde_json::Value;
use shakmaty::{Board, File, Rank, Square};

fn data() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/certabo/frames.json"
    ))
    .expect("tests/data/certabo/frames.json");
    serde_json::from_str(&text).expect("frames.json is JSON")
}

/// A sample's bytes, read by read (latin-1), with the `:` its source leaves out.
fn chunks(sample: &Value) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = sample["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c.as_str()
                .unwrap()
                .chars()
                .map(|ch| ch as u32 as u8)
                .collect()
        })
        .collect();
    if sample["add_colon"].as_bool() == Some(true) {
        out[0].insert(0, b':');
    }
    out
}

fn frames(sample: &Value) -> (Vec<CertaboFrame>, LineDecoder) {
    let mut d = LineDecoder::new();
    let mut out = Vec::new();
    for c in chunks(sample) {
        d.decode(&c, &mut out);
    }
    (out, d)
}

fn lines(sample: &Value) -> Vec<CertaboLine> {
    frames(sample)
        .0
        .into_iter()
        .filter_map(|f| match f {
            CertaboFrame::Line(l) => Some(*l),
            _ => None,
        })
        .collect()
}

fn samples(d: &Value) -> BTreeMap<String, Value> {
    d["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_string(), s.clone()))
        .collect()
}

/// Line index 0 = a8 (the normal way round).
fn square(i: usize) -> Square {
    Square::from_coords(File::new(i as u32 % 8), Rank::new(7 - i as u32 / 8))
}

fn tables(d: &Value) -> BTreeMap<String, PieceTable> {
    let by_name = samples(d);
    d["sets"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, set)| {
            assert_eq!(set["orientation"], "normal");
            let calib: Vec<CertaboLine> = set["calibrate_from"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|n| lines(&by_name[n.as_str().unwrap()]))
                .collect();
            let table = PieceTable::from_start_lines(&calib)
                .unwrap_or_else(|e| panic!("set {name} calibrates: {e}"));
            assert_eq!(table.len(), 32, "set {name}");
            (name.clone(), table)
        })
        .collect()
}

#[test]
fn every_sample_decodes_to_its_expected_position() {
    let d = data();
    let tables = tables(&d);
    let empty = PieceTable::new();
    let mut checked = 0;
    for (name, s) in samples(&d) {
        let expect = s["expect"].as_array().unwrap();
        let (all, dec) = frames(&s);
        if expect.is_empty() {
            assert!(
                !all.iter().any(|f| matches!(f, CertaboFrame::Line(_))),
                "{name} must be rejected"
            );
            assert!(dec.bad_lines() >= 1, "{name}: counted bad");
            checked += 1;
            continue;
        }
        assert_eq!(dec.bad_lines(), 0, "{name}");
        if expect[0].get("occupied").is_some() {
            let occ: Vec<[bool; 64]> = all
                .iter()
                .filter_map(|f| match f {
                    CertaboFrame::Occupancy(rows) => Some(occupied(rows)),
                    _ => None,
                })
                .collect();
            assert_eq!(occ.len(), expect.len(), "{name}");
            for (o, e) in occ.iter().zip(expect) {
                let text: String = o
                    .chunks(8)
                    .map(|r| {
                        r.iter()
                            .map(|b| if *b { '1' } else { '.' })
                            .collect::<String>()
                    })
                    .collect::<Vec<_>>()
                    .join("/");
                assert_eq!(text, e["occupied"].as_str().unwrap(), "{name}");
            }
            checked += 1;
            continue;
        }
        let table = s["set"].as_str().map_or(&empty, |set| &tables[set]);
        let got = lines(&s);
        assert_eq!(got.len(), expect.len(), "{name}: lines");
        for (k, (line, e)) in got.iter().zip(expect).enumerate() {
            let mut board = Board::empty();
            let mut unknown = BTreeSet::new();
            // Squares whose bytes are neither all zero nor an id, but have three zeros or more:
            // junk the expectation counts as unknown and Certabo's rule reads as empty.
            let mut zero_junk = BTreeSet::new();
            for (i, id) in line.squares.iter().enumerate() {
                match table.reading(*id) {
                    Reading::Piece(p) => board.set_piece_at(square(i), p),
                    Reading::Unknown(_) => {
                        unknown.insert(square(i).to_string());
                    }
                    Reading::Empty if *id != PieceId::EMPTY => {
                        zero_junk.insert(square(i).to_string());
                    }
                    Reading::Empty => {}
                }
            }
            let fen = format!("{}", board.board_fen());
            assert_eq!(fen, e["board_fen"].as_str().unwrap(), "{name} line {k}");
            let expected: BTreeSet<String> = e["unknown"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u.as_str().unwrap().to_string())
                .collect();
            let ours: BTreeSet<String> = unknown.union(&zero_junk).cloned().collect();
            assert_eq!(ours, expected, "{name} line {k}: unknown squares");
        }
        checked += 1;
    }
    assert_eq!(checked, samples(&d).len());
}

#[test]
fn every_cut_of_the_whole_stream_gives_the_same_frames() {
    let d = data();
    let stream: Vec<u8> = samples(&d)
        .values()
        .flat_map(|s| chunks(s).concat())
        .collect();
    let mut dec = LineDecoder::new();
    let mut whole = Vec::new();
    dec.decode(&stream, &mut whole);
    let lines = whole
        .iter()
        .filter(|f| matches!(f, CertaboFrame::Line(_)))
        .count();
    assert_eq!(lines, 16);
    for cut in (0..stream.len()).step_by(97) {
        let mut d2 = LineDecoder::new();
        let mut out = Vec::new();
        d2.decode(&stream[..cut], &mut out);
        d2.decode(&stream[cut..], &mut out);
        assert_eq!(out, whole, "cut at {cut}");
        assert_eq!(
            (d2.bad_lines(), d2.dropped_bytes()),
            (dec.bad_lines(), dec.dropped_bytes())
        );
    }
}

fn observations(d: &mut CertaboStream, line: &CertaboLine) -> Vec<Observation> {
    let mut out = Vec::new();
    d.decode(&line.encode(), &mut out);
    out.into_iter()
        .filter_map(|m| match m {
            Message::Observation(o) => Some(o),
            _ => None,
        })
        .collect()
}

#[test]
fn the_misread_sample_reads_right_through_the_filter() {
    let d = data();
    let s = samples(&d);
    let start = &lines(&s["B-start"])[0];
    let lifted = &lines(&s["B-h7-lifted"])[0];
    let noisy = &lines(&s["B-h7-lifted-noise"])[0];
    let mut dec = CertaboStream::new();
    let mut got = Vec::new();
    for _ in 0..8 {
        got.extend(observations(&mut dec, start));
    }
    assert!(
        matches!(got[..], [Observation::BoardDump(_)]),
        "calibrated from the standing start position: {got:?}"
    );
    // h7 lifted, then the line with five misread ids, then h7 lifted again: only h7 changes.
    let mut got = observations(&mut dec, lifted);
    got.extend(observations(&mut dec, noisy));
    got.extend(observations(&mut dec, lifted));
    got.extend(observations(&mut dec, lifted));
    assert_eq!(
        got,
        vec![Observation::Field {
            index: 15,
            reading: SquareReading::Empty
        }]
    );
    assert!(dec.unknown_fields().is_empty());
    assert_eq!(dec.ignored_reads(), 5);
}

#[test]
fn junk_on_empty_squares_never_reaches_the_core() {
    let d = data();
    let s = samples(&d);
    let calib: Vec<CertaboLine> = (1..=7)
        .flat_map(|k| lines(&s[&format!("A-calib-{k}")]))
        .collect();
    let mut dec = Certabo.decoder();
    let mut out = Vec::new();
    // The start position standing: the seven recorded lines, twice.
    for l in calib.iter().chain(&calib) {
        dec.decode(&l.encode(), &mut out);
    }
    // 1.e4 in a recorded line with its junk, then the same position with other junk (junk is
    // different in every line: here none).
    let e4 = &lines(&s["A-junk-in-front"])[0];
    let table = &tables(&d)["picochess-A"];
    let mut clean = e4.clone();
    for id in clean.squares.iter_mut() {
        if table.piece(id).is_none() {
            *id = PieceId::EMPTY;
        }
    }
    dec.decode(&e4.encode(), &mut out);
    dec.decode(&clean.encode(), &mut out);
    // The pawn counts on e4 after two lines, e2 as emptied after three (a lift needs three
    // lines with nothing like the piece: drop-outs come two in three far more often).
    dec.decode(&clean.encode(), &mut out);
    let obs: Vec<&Observation> = out
        .iter()
        .filter_map(|m| match m {
            Message::Observation(o) => Some(o),
            _ => None,
        })
        .collect();
    let mut start = [SquareReading::Empty; 64];
    for (sq, p) in Board::default() {
        start[(7 - sq.rank() as usize) * 8 + sq.file() as usize] = SquareReading::Piece(p);
    }
    assert_eq!(obs.len(), 3, "{obs:?}");
    assert_eq!(*obs[0], Observation::BoardDump(Box::new(start)));
    assert_eq!(
        obs[1..],
        [
            &Observation::Field {
                index: 36,
                reading: start[52]
            },
            &Observation::Field {
                index: 52,
                reading: SquareReading::Empty
            }
        ]
    );
    assert_eq!(dec.bad_frames(), 0);
}

#[test]
fn ids_of_different_pieces_can_differ_in_one_byte() {
    // Why a misread is not matched to the nearest known id (module `filter`).
    let d = data();
    let tables = tables(&d);
    let a = &tables["picochess-A"];
    let ids: Vec<(&PieceId, _)> = a.iter().collect();
    let close: Vec<_> = ids
        .iter()
        .flat_map(|(x, p)| ids.iter().map(move |(y, q)| (x, p, y, q)))
        .filter(|(x, p, y, q)| {
            x < y && p != q && x.0.iter().zip(y.0.iter()).filter(|(a, b)| a != b).count() == 1
        })
        .map(|(x, p, y, q)| (x.to_string(), p.char(), y.to_string(), q.char()))
        .collect();
    assert!(
        close.contains(&("3 0 84 107 52".into(), 'k', "3 0 84 107 56".into(), 'p')),
        "{close:?}"
    );
    // FirePlank's real board: every id differs from every other in the last two bytes, and all
    // share `91 0 12x`.
    let fp = &d["fireplank_real_board"]["piece_codes_after_new_setup_calibration"];
    let all: Vec<Vec<u64>> = fp
        .as_object()
        .unwrap()
        .values()
        .flat_map(|v| v.as_array().unwrap().clone())
        .map(|id| {
            id.as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap())
                .collect()
        })
        .collect();
    // 31 pieces (a black bishop was missing at calibration) and two spare queens.
    assert_eq!(all.len(), 33);
    assert!(all.iter().all(|id| id[0] == 91 && id[1] == 0));
}
