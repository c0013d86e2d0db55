//! FIDE Tournament Report File (TRF-16), as Swiss-Manager, Vega and JaVaFo write it.
//!
//! Layout used (FIDE Handbook C.04 Annex 2, "TRF16", and FIDE's `example1.txt`; 1-based
//! columns of a `001` player line):
//!
//! | columns | field |
//! | --- | --- |
//! | 1–3 | `001` |
//! | 5–8 | start rank (pairing number) |
//! | 10 | sex (`m`/`w`) |
//! | 11–13 | title (`GM` … or the old `g`, `m`, `f`, `wg`, `wm`, `wf`, ...) |
//! | 15–47 | name, `Last,First` |
//! | 49–52 | rating |
//! | 54–56 | federation |
//! | 58–68 | FIDE id |
//! | 70–79 | birth date |
//! | 81–84 | points |
//! | 86–89 | rank |
//! | 92–95, 97, 99 | round 1: opponent's start rank (`0000`/blank: none), colour `w`/`b`, result |
//! | +10 per round | the next rounds |
//!
//! Header lines used: `012` tournament name, `022` city. Everything else is ignored but the
//! team records, which give each player their team (FIDE TRF-26, "Team Section", as
//! transcribed in `echecsjs/trf` `SPEC.md` from <https://handbook.fide.com/files/handbook/TRF26.pdf>;
//! 1-based columns):
//!
//! | record | columns | field |
//! | --- | --- | --- |
//! | `013` (TRF-16, "to be phased out") | 5–36 | team name |
//! | | 37–40, 42–45, … (5 apart) | the team's players' start ranks, in board order |
//! | `310` (TRF-26, replaces `013`) | 5–7 | team pairing number |
//! | | 9–40 | team name |
//! | | 42–46, 48–53, 55–60, 62–67, 69–71 | nickname, strength, match points, game points, rank (not read) |
//! | | 74–77, 79–82, … (5 apart) | the team's players' start ranks, in board order |
//!
//! A file with `310` records is read by them alone (a `013` record next to them is the same
//! team in the old form). A `013` team's number is its place among the `013` records.
//!
//! A TRF gives no board numbers: boards are ordered by the usual rule of pairing programs —
//! the higher score (before the round) of the two players first, then the higher sum of their
//! scores, then the better (lower) start rank of the pair (start ranks follow rating order).
//! In a team event the boards of a match come together: matches in the order of their better
//! (lower) team number, a match's boards in the order of the better board of the two players
//! in their teams; then any board whose players are not of two teams, by the rule above.

use std::collections::HashMap;

use super::{LoadedRound, Pairing, PairingError, Player};

/// One `001` line, as far as pairings need it.
#[derive(Debug, Clone)]
struct Entry {
    line: usize,
    rank: u32,
    player: Player,
    /// Per round: (opponent start rank or 0, colour char, result char).
    rounds: Vec<(u32, char, char)>,
}

/// `chars[a..b]` as a string (short lines padded with blanks).
fn cols(chars: &[char], a: usize, b: usize) -> String {
    (a..b)
        .map(|i| chars.get(i).copied().unwrap_or(' '))
        .collect()
}

fn number_of(line: usize, field: &str, raw: &str) -> Result<u32, PairingError> {
    let t = raw.trim();
    if t.is_empty() {
        return Ok(0);
    }
    t.parse::<u32>()
        .map_err(|_| PairingError::new(line, field, format!("{t:?} is not a number")))
}

fn score(result: char) -> u32 {
    // Half points, so sums stay integers.
    match result.to_ascii_lowercase() {
        '1' | '+' | 'w' | 'f' | 'u' => 2,
        '=' | 'd' | 'h' => 1,
        _ => 0,
    }
}

fn entry(line: usize, text: &str) -> Result<Entry, PairingError> {
    let chars: Vec<char> = text.trim_end_matches(['\r', '\n']).chars().collect();
    let rank = number_of(line, "start rank", &cols(&chars, 4, 8))?;
    if rank == 0 {
        return Err(PairingError::new(
            line,
            "start rank",
            "a player needs a start rank",
        ));
    }
    let name = super::name(line, "name", &cols(&chars, 14, 47))?;
    if name.is_none() {
        return Err(PairingError::new(line, "name", "the name is blank"));
    }
    let player = Player {
        name,
        title: super::title(line, "title", &cols(&chars, 10, 13))?,
        elo: super::rating(line, "rating", &cols(&chars, 48, 52))?,
        federation: super::federation(line, "federation", &cols(&chars, 53, 56))?,
        fide_id: super::fide_id(line, "FIDE id", &cols(&chars, 57, 68))?,
        team: None,
    };
    let mut rounds = Vec::new();
    let mut base = 91;
    while base < chars.len() {
        let r = rounds.len() + 1;
        let opp = number_of(
            line,
            &format!("round {r} opponent"),
            &cols(&chars, base, base + 4),
        )?;
        let colour = chars.get(base + 5).copied().unwrap_or(' ');
        let result = chars.get(base + 7).copied().unwrap_or(' ');
        if !matches!(colour.to_ascii_lowercase(), 'w' | 'b' | 's' | '-' | ' ') {
            return Err(PairingError::new(
                line,
                format!("round {r} colour"),
                format!("{colour:?} is not a colour (w, b or -)"),
            ));
        }
        if !"10=+-wdlhfuzWDLHFUZ ".contains(result) {
            return Err(PairingError::new(
                line,
                format!("round {r} result"),
                format!("{result:?} is not a TRF result (1, 0, =, +, -, W, D, L, H, F, U, Z)"),
            ));
        }
        if opp != 0 && !matches!(colour.to_ascii_lowercase(), 'w' | 'b' | 's') {
            return Err(PairingError::new(
                line,
                format!("round {r} colour"),
                format!("an opponent ({opp}) without a colour"),
            ));
        }
        rounds.push((opp, colour.to_ascii_lowercase(), result));
        base += 10;
    }
    Ok(Entry {
        line,
        rank,
        player,
        rounds,
    })
}

/// A team of a team record: its number, name and its players' start ranks in board order.
#[derive(Debug, Clone)]
struct Team {
    line: usize,
    number: u32,
    name: String,
    players: Vec<u32>,
}

/// A team record: `013` (`number` is its place among the `013` records) or `310`.
fn team_record(line: usize, text: &str, number: u32) -> Result<Team, PairingError> {
    let chars: Vec<char> = text.trim_end_matches(['\r', '\n']).chars().collect();
    let new = text.starts_with("310");
    let (number, name, first) = if new {
        let n = number_of(line, "team number", &cols(&chars, 4, 7))?;
        if n == 0 {
            return Err(PairingError::new(
                line,
                "team number",
                "a team needs a team pairing number (1 to 999)",
            ));
        }
        (n, cols(&chars, 8, 40), 73)
    } else {
        (number, cols(&chars, 4, 36), 36)
    };
    let Some(name) = super::team(line, "team name", &name)? else {
        return Err(PairingError::new(
            line,
            "team name",
            "the team name is blank",
        ));
    };
    let mut players = Vec::new();
    let mut at = first;
    while at < chars.len() {
        let rank = number_of(line, "team player", &cols(&chars, at, at + 4))?;
        if rank != 0 {
            players.push(rank);
        }
        at += 5;
    }
    Ok(Team {
        line,
        number,
        name,
        players,
    })
}

/// The team of each start rank (team number, name, board in the team, 0-based), checked: a
/// player in one team only, every player a `001` line's; team numbers distinct.
fn teams_by_rank(
    teams: &[Team],
    by_rank: &HashMap<u32, usize>,
) -> Result<HashMap<u32, (u32, String, usize)>, PairingError> {
    let mut of: HashMap<u32, (u32, String, usize)> = HashMap::new();
    let mut numbers: HashMap<u32, usize> = HashMap::new();
    for t in teams {
        if let Some(first) = numbers.insert(t.number, t.line) {
            return Err(PairingError::new(
                t.line,
                "team number",
                format!("team {} is given twice (also on line {first})", t.number),
            ));
        }
        for (board, &rank) in t.players.iter().enumerate() {
            if !by_rank.contains_key(&rank) {
                return Err(PairingError::new(
                    t.line,
                    "team player",
                    format!("no player has start rank {rank}"),
                ));
            }
            if let Some((_, other, _)) = of.insert(rank, (t.number, t.name.clone(), board)) {
                return Err(PairingError::new(
                    t.line,
                    "team player",
                    format!(
                        "start rank {rank} is in two teams ({other:?} and {:?})",
                        t.name
                    ),
                ));
            }
        }
    }
    Ok(of)
}

/// Text of a header line (`012 Name`), trimmed; `None` when blank.
fn header(text: &str) -> Option<String> {
    let v = crate::pgn::clean_tag(text.get(4..).unwrap_or(""));
    (!v.is_empty()).then_some(v)
}

/// The pairings of round `round` in a TRF.
pub fn parse(text: &str, round: u32) -> Result<LoadedRound, PairingError> {
    if round == 0 {
        return Err(PairingError::new(0, "round", "rounds are numbered from 1"));
    }
    let mut file = TrfFile::read(text)?;
    let team_of = teams_by_rank(&file.teams, &file.by_rank)?;
    for p in &mut file.players {
        p.player.team = team_of.get(&p.rank).map(|t| t.1.clone());
    }
    let mut pairs = file.pairs(round)?;
    if pairs.len() > super::MAX_BOARDS {
        return Err(PairingError::new(
            0,
            "pairings",
            format!("more than {} boards", super::MAX_BOARDS),
        ));
    }
    // A board of two teams: (its match's teams, the better of its two boards in the teams).
    let in_match = |x: &Ranked| -> (bool, u32, u32, usize) {
        match (team_of.get(&x.3.0), team_of.get(&x.3.1)) {
            (Some(w), Some(b)) if w.0 != b.0 => (false, w.0.min(b.0), w.0.max(b.0), w.2.min(b.2)),
            _ => (true, 0, 0, 0),
        }
    };
    pairs.sort_by(|a, b| {
        in_match(a)
            .cmp(&in_match(b))
            .then(b.0.cmp(&a.0))
            .then(b.1.cmp(&a.1))
            .then(a.2.cmp(&b.2))
    });
    Ok(LoadedRound {
        round,
        event: file.event,
        site: file.site,
        ranks: pairs
            .iter()
            .enumerate()
            .map(|(i, x)| (i as u32 + 1, x.3))
            .collect(),
        boards: pairs
            .into_iter()
            .enumerate()
            .map(|(i, (_, _, _, _, p))| (i as u32 + 1, p))
            .collect(),
    })
}

/// A pair of a round, for the board order: (top score, sum of scores, best start rank,
/// (White's, Black's start rank), players).
type Ranked = (u32, u32, u32, (u32, u32), Pairing);

/// The lines of a TRF eboardd reads: the tournament's name and place, the players and the
/// teams.
struct TrfFile {
    event: Option<String>,
    site: Option<String>,
    players: Vec<Entry>,
    /// Index in `players` by start rank.
    by_rank: HashMap<u32, usize>,
    /// The teams: of the new records (310) when there are any, else of the old (013).
    teams: Vec<Team>,
}

impl TrfFile {
    /// Reads every line; a start rank given twice, or no player at all, is refused.
    fn read(text: &str) -> Result<Self, PairingError> {
        let mut event = None;
        let mut site = None;
        let mut players: Vec<Entry> = Vec::new();
        let mut by_rank: HashMap<u32, usize> = HashMap::new();
        let (mut old_teams, mut new_teams) = (Vec::new(), Vec::new());
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if line.starts_with("013") {
                old_teams.push(team_record(n, line, old_teams.len() as u32 + 1)?);
            } else if line.starts_with("310") {
                new_teams.push(team_record(n, line, 0)?);
            } else if line.starts_with("012") {
                event = header(line);
            } else if line.starts_with("022") {
                site = header(line);
            } else if line.starts_with("001") {
                let e = entry(n, line)?;
                if let Some(&first) = by_rank.get(&e.rank) {
                    return Err(PairingError::new(
                        n,
                        "start rank",
                        format!(
                            "start rank {} is given twice (also on line {})",
                            e.rank, players[first].line
                        ),
                    ));
                }
                by_rank.insert(e.rank, players.len());
                players.push(e);
            }
        }
        if players.is_empty() {
            return Err(PairingError::new(
                0,
                "001",
                "no player lines (001): not a TRF file",
            ));
        }
        let teams = if new_teams.is_empty() {
            old_teams
        } else {
            new_teams
        };
        Ok(TrfFile {
            event,
            site,
            players,
            by_rank,
            teams,
        })
    }

    /// The pairs of round `round`, each once (from White's line), with their scores before
    /// it; both lines of a pair must name each other with the other colour.
    fn pairs(&self, round: u32) -> Result<Vec<Ranked>, PairingError> {
        let r = round as usize;
        let mut pairs: Vec<Ranked> = Vec::new();
        for p in &self.players {
            let Some(&(opp, colour, _)) = p.rounds.get(r - 1) else {
                continue;
            };
            if opp == 0 {
                continue;
            }
            let field = format!("round {round} opponent");
            let Some(&oi) = self.by_rank.get(&opp) else {
                return Err(PairingError::new(
                    p.line,
                    field,
                    format!("no player has start rank {opp}"),
                ));
            };
            let o = &self.players[oi];
            let back = o.rounds.get(r - 1).copied().unwrap_or((0, ' ', ' '));
            let white_here = colour == 'w';
            if back.0 != p.rank || (back.1 == 'w') == white_here {
                return Err(PairingError::new(
                    o.line,
                    format!("round {round} opponent"),
                    format!(
                        "start rank {} plays {} with {} on line {}, but this line does not \
                         pair them with the other colour",
                        p.rank,
                        opp,
                        if white_here { "White" } else { "Black" },
                        p.line
                    ),
                ));
            }
            if !white_here {
                continue; // the pair is taken once, from White's line
            }
            let before =
                |e: &Entry| -> u32 { e.rounds.iter().take(r - 1).map(|x| score(x.2)).sum() };
            let (sw, sb) = (before(p), before(o));
            pairs.push((
                sw.max(sb),
                sw + sb,
                p.rank.min(o.rank),
                (p.rank, o.rank),
                Pairing {
                    white: p.player.clone(),
                    black: o.player.clone(),
                },
            ));
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Six players, three rounds played in full and round 4 paired without results (as
    /// Swiss-Manager exports the file after pairing). Written for these tests following the
    /// column layout of TRF16 (FIDE Handbook C.04 Annex 2) and FIDE's example1.txt.
    const SAMPLE: &str = "\
012 Rhein-Main Open 2026
022 Frankfurt
042 2026/11/27
062 6
092 Individual: Swiss-System
001    1 m GM Petrov,Ivan                       2650 RUS    24100010 1990/01/01  1.5    3     4 w 1     2 b =     3 w 0     6 b  
001    2 m IM Schmidt,Jonas                     2480 GER     4610001 1995/05/05  2.0    2     5 b 1     1 w =     6 b =     4 w  
001    3 wWGM Kowalska,Anna                     2390 POL     1100002 1998/03/03  2.5    1     6 w =     4 b 1     1 b 1     5 w  
001    4 m    Dubois,Luc                        2210 FRA      600003 2000/02/02  1.0    4     1 b 0     3 w 0     5 b 1     2 b  
001    5 m    Novak,Petr                        2105 CZE      300004 2001/07/07  0.5    5     2 w 0     6 b =     4 w 0     3 b  
001    6 m    Berg,Emil                         1980 SWE     1700005 2003/09/09  1.5    6     3 b =     5 w =     2 w =     1 w  
";

    #[test]
    fn round_four_is_paired_by_score_then_rating() {
        let r = parse(SAMPLE, 4).unwrap();
        assert_eq!(r.event.as_deref(), Some("Rhein-Main Open 2026"));
        assert_eq!(r.site.as_deref(), Some("Frankfurt"));
        let names: Vec<(u32, &str, &str)> = r
            .boards
            .iter()
            .map(|(b, p)| {
                (
                    *b,
                    p.white.name.as_deref().unwrap(),
                    p.black.name.as_deref().unwrap(),
                )
            })
            .collect();
        // Scores before round 4: Kowalska 2.5, Schmidt 2, Petrov 1.5, Berg 1.5, Dubois 1,
        // Novak 0.5. Board 1: top score 2.5; board 2: top score 2; board 3: top score 1.5
        // (the top seed, Petrov, plays on the last board).
        assert_eq!(
            names,
            vec![
                (1, "Kowalska, Anna", "Novak, Petr"),
                (2, "Schmidt, Jonas", "Dubois, Luc"),
                (3, "Berg, Emil", "Petrov, Ivan"),
            ]
        );
        let k = &r.boards[0].1.white;
        assert_eq!(k.title.as_deref(), Some("WGM"));
        assert_eq!(k.elo, Some(2390));
        assert_eq!(k.federation.as_deref(), Some("POL"));
        assert_eq!(k.fide_id, Some(1100002));
    }

    #[test]
    fn an_earlier_round_and_old_style_titles() {
        let r = parse(SAMPLE, 1).unwrap();
        assert_eq!(r.boards.len(), 3);
        let first = &r.boards[0].1;
        assert_eq!(first.white.name.as_deref(), Some("Petrov, Ivan"));
        assert_eq!(first.black.name.as_deref(), Some("Dubois, Luc"));
        let old = "001    1    g Vasquez,Rodrigo                   2558 CHI     3400042 1969.12.06  1.0    1     2 w 1\n\
                   001    2   wf Heymann,Anna                      2096         4681468 1982.01.07  0.0    2     1 b 0\n";
        let r = parse(old, 1).unwrap();
        assert_eq!(r.boards[0].1.white.title.as_deref(), Some("GM"));
        assert_eq!(r.boards[0].1.black.title.as_deref(), Some("WFM"));
        assert_eq!(r.boards[0].1.black.federation, None);
    }

    #[test]
    fn byes_are_left_out() {
        let text = "\
001    1      Alpha,Ann                         2000 GER     1000001 2000/01/01  0.0    1     2 w  
001    2      Beta,Bob                          1900 GER     1000002 2000/01/01  0.0    2     1 b  
001    3      Gamma,Carl                        1800 GER     1000003 2000/01/01  0.0    3  0000 - U
";
        let r = parse(text, 1).unwrap();
        assert_eq!(r.boards.len(), 1);
    }

    fn err(text: &str, round: u32) -> PairingError {
        parse(text, round).unwrap_err()
    }

    #[test]
    fn broken_files_name_line_and_field() {
        // A letter in the rating of line 8 (the third player).
        let bad = SAMPLE.replace("2390 POL", "23x0 POL");
        let e = err(&bad, 4);
        assert_eq!((e.line, e.field.as_str()), (8, "rating"), "{e}");
        // An opponent who does not exist.
        let bad = SAMPLE.replace("4 w 0     3 b", "4 w 0    33 b");
        let e = err(&bad, 4);
        assert_eq!((e.line, e.field.as_str()), (10, "round 4 opponent"), "{e}");
        // One-sided pairing: line 6 says Petrov plays 6 but 6 says it plays 1 with White too.
        let bad = SAMPLE.replace("2 w =     1 w", "2 w =     1 b");
        let e = err(&bad, 4);
        assert_eq!(e.field, "round 4 opponent", "{e}");
        assert!(e.line == 6 || e.line == 11, "{e}");
        // Twice the same start rank.
        let bad = SAMPLE.replace("001    6 m", "001    5 m");
        let e = err(&bad, 4);
        assert_eq!((e.line, e.field.as_str()), (11, "start rank"), "{e}");
        // An unknown title.
        let bad = SAMPLE.replace("WGM Kowalska", "XYZ Kowalska");
        assert_eq!(err(&bad, 4).field, "title");
        // A bad colour.
        let bad = SAMPLE.replace("4 w 1     2 b =", "4 q 1     2 b =");
        let e = err(&bad, 1);
        assert_eq!((e.line, e.field.as_str()), (6, "round 1 colour"), "{e}");
        // Not a TRF at all.
        assert_eq!(err("board,white,black\n1,a,b\n", 1).field, "001");
        // A round nobody is paired in.
        let e = super::super::parse(super::super::Format::Trf, SAMPLE.as_bytes(), 9).unwrap_err();
        assert_eq!(e.field, "pairings");
    }

    proptest::proptest! {
        #[test]
        fn no_input_panics(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
            at in 0usize..2000,
            with in proptest::num::u8::ANY,
            round in 0u32..6,
        ) {
            let _ = super::super::parse(super::super::Format::Trf, &bytes, round.max(1));
            let _ = parse(&String::from_utf8_lossy(&bytes), round);
            // One byte of a good file changed: an answer, never a panic.
            let mut sample = SAMPLE.as_bytes().to_vec();
            let i = at % sample.len();
            sample[i] = with;
            let _ = super::super::parse(super::super::Format::Trf, &sample, round.max(1));
            let _ = super::super::parse(super::super::Format::Csv, &sample, round.max(1));
        }
    }

    fn data(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/trf")
            .join(name);
        String::from_utf8(std::fs::read(&path).unwrap()).unwrap()
    }

    /// (board, White, White's team, Black, Black's team) of every board.
    fn team_boards(r: &LoadedRound) -> Vec<(u32, String, String, String, String)> {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        r.boards
            .iter()
            .map(|(n, p)| {
                (
                    *n,
                    s(&p.white.name),
                    s(&p.white.team),
                    s(&p.black.name),
                    s(&p.black.team),
                )
            })
            .collect()
    }

    fn row(n: u32, w: &str, wt: &str, b: &str, bt: &str) -> (u32, String, String, String, String) {
        (n, w.into(), wt.into(), b.into(), bt.into())
    }

    /// `teams-26.trf`: a TRF-26 of four teams of four (`310` records: team pairing number at
    /// 5–7, name at 9–40, players' start ranks from 74 on, 5 apart), round 1 paired (CRLF line
    /// ends), written for this test from the TRF-26 team section. Every player has their
    /// team; the boards of a match come together, colours as the file gives them.
    #[test]
    fn trf26_team_records_give_every_player_a_team() {
        let r = parse(&data("teams-26.trf"), 1).unwrap();
        let (a, b, c, d) = ("SK Aachen", "SF Berlin", "SV Chemnitz", "USV Dresden");
        assert_eq!(
            team_boards(&r),
            [
                row(1, "Adler, Anna", a, "Engel, Emma", b),
                row(2, "Fischer, Felix", b, "Bauer, Ben", a),
                row(3, "Conrad, Clara", a, "Graf, Greta", b),
                row(4, "Hahn, Hugo", b, "Dietz, David", a),
                row(5, "Iske, Ida", c, "Maier, Mia", d),
                row(6, "Neumann, Noah", d, "Jung, Jonas", c),
                row(7, "Keller, Karla", c, "Otto, Olga", d),
                row(8, "Peters, Paul", d, "Lang, Lukas", c),
            ]
        );
    }

    /// `teams-16.trf`: the same teams as TRF-16 `013` records (name at 5–36, players from 37
    /// on, 5 apart), round 1 played and round 2 paired (Aachen–Dresden, Berlin–Chemnitz). By
    /// scores alone the boards would be mixed (Adler's board has the top score, 1 point, as
    /// do four others); the matches keep their boards together: the match of team 1 first,
    /// boards in team order.
    #[test]
    fn trf16_team_records_keep_each_match_together() {
        let r = parse(&data("teams-16.trf"), 2).unwrap();
        let (a, b, c, d) = ("SK Aachen", "SF Berlin", "SV Chemnitz", "USV Dresden");
        assert_eq!(
            team_boards(&r),
            [
                row(1, "Maier, Mia", d, "Adler, Anna", a),
                row(2, "Bauer, Ben", a, "Neumann, Noah", d),
                row(3, "Otto, Olga", d, "Conrad, Clara", a),
                row(4, "Dietz, David", a, "Peters, Paul", d),
                row(5, "Engel, Emma", b, "Iske, Ida", c),
                row(6, "Jung, Jonas", c, "Fischer, Felix", b),
                row(7, "Graf, Greta", b, "Keller, Karla", c),
                row(8, "Lang, Lukas", c, "Hahn, Hugo", b),
            ]
        );
        // Round 1 of the same file: the same teams.
        assert_eq!(parse(&data("teams-16.trf"), 1).unwrap().boards.len(), 8);
    }

    #[test]
    fn broken_team_records_name_line_and_field() {
        let text = data("teams-16.trf");
        // Start rank 5 in two teams (line 23: the second team's record).
        let bad = text.replace(
            "013 SF Berlin                          5",
            "013 SF Berlin                          1",
        );
        let e = err(&bad, 2);
        assert_eq!((e.line, e.field.as_str()), (23, "team player"), "{e}");
        let bad = text.replace("   16\n", "   17\n");
        assert_eq!(err(&bad, 2).field, "team player");
        let bad = text.replace("013 SK Aachen  ", "013            ");
        let e = err(&bad, 2);
        assert_eq!((e.line, e.field.as_str()), (22, "team name"), "{e}");
        let bad = text.replace(
            "013 SK Aachen                          1",
            "013 SK Aachen                          x",
        );
        assert_eq!(err(&bad, 2).field, "team player");
        let text = data("teams-26.trf");
        let bad = text.replace("310   2 SF", "310   1 SF");
        let e = err(&bad, 1);
        assert_eq!((e.line, e.field.as_str()), (28, "team number"), "{e}");
        let bad = text.replace("310   3 SV Chemnitz", "310   3 SV \"Chemnitz\"");
        assert_eq!(err(&bad, 1).field, "team name");
    }

    #[test]
    fn latin1_names_are_read() {
        let mut bytes = Vec::new();
        let line = |name: &str| {
            format!(
                "001    1      {name:<33} 2000 GER     1000001 2000/01/01  0.0    1     2 w  \n"
            )
        };
        bytes.extend(line("M\u{fc}ller,J\u{f6}rg").chars().map(|c| c as u8));
        bytes.extend(
            "001    2      Beta,Bob                          1900 GER     1000002 2000/01/01  0.0    2     1 b  \n"
                .bytes(),
        );
        let r = super::super::parse(super::super::Format::Trf, &bytes, 1).unwrap();
        assert_eq!(
            r.boards[0].1.white.name.as_deref(),
            Some("M\u{fc}ller, J\u{f6}rg")
        );
    }
}
