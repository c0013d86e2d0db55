//! Plain CSV pairings: a header row naming the columns, then one row per board.
//!
//! Columns: `board`, `white`, `black` (required), and optionally `white_fide_id`,
//! `black_fide_id`, `white_title`, `black_title`, `white_rating`, `black_rating`,
//! `white_federation`, `black_federation`, `white_team`, `black_team` (team events: the boards
//! of two teams form a match, [`super::matches`]), in any order. Fields may be quoted (RFC 4180: `""`
//! is a quote inside quotes); the separator is `,`, or `;` when the header has no comma (as
//! spreadsheets write it in some locales). Blank lines are skipped.

use std::collections::HashMap;

use super::{LoadedRound, Pairing, PairingError, Player};

/// Every column this format knows.
const COLUMNS: [&str; 13] = [
    "board",
    "white",
    "black",
    "white_fide_id",
    "black_fide_id",
    "white_title",
    "black_title",
    "white_rating",
    "black_rating",
    "white_federation",
    "black_federation",
    "white_team",
    "black_team",
];

/// Split `text` into records of fields, each with the line it starts on (1-based).
fn records(text: &str, sep: char) -> Result<Vec<(usize, Vec<String>)>, PairingError> {
    let mut out = Vec::new();
    let mut fields = Vec::new();
    let mut field = String::new();
    let (mut line, mut start) = (1, 1);
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    field.push(' ');
                }
                c => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.trim().is_empty() && !was_quoted => {
                field.clear();
                quoted = true;
                was_quoted = true;
            }
            '"' => {
                return Err(PairingError::new(
                    line,
                    format!("column {}", fields.len() + 1),
                    "a quote inside an unquoted field",
                ));
            }
            c if c == sep => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            '\r' => {}
            '\n' => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
                if fields.iter().any(|f| !f.trim().is_empty()) {
                    out.push((start, std::mem::take(&mut fields)));
                }
                fields.clear();
                line += 1;
                start = line;
            }
            c => {
                if was_quoted && !c.is_whitespace() {
                    return Err(PairingError::new(
                        line,
                        format!("column {}", fields.len() + 1),
                        "text after a closing quote",
                    ));
                }
                field.push(c);
            }
        }
    }
    if quoted {
        return Err(PairingError::new(
            start,
            format!("column {}", fields.len() + 1),
            "a quoted field is not closed",
        ));
    }
    fields.push(field);
    if fields.iter().any(|f| !f.trim().is_empty()) {
        out.push((start, fields));
    }
    Ok(out)
}

/// Where each known column is in the header (at line `hline`): every name known, none twice,
/// and board, white and black present.
fn columns(hline: usize, header: &[String]) -> Result<HashMap<&'static str, usize>, PairingError> {
    let mut index: HashMap<&'static str, usize> = HashMap::new();
    for (i, h) in header.iter().enumerate() {
        let name = h.trim().to_ascii_lowercase().replace([' ', '-'], "_");
        let Some(&known) = COLUMNS.iter().find(|c| **c == name) else {
            return Err(PairingError::new(
                hline,
                crate::pgn::clean_tag(h),
                format!("unknown column; the columns are {}", COLUMNS.join(", ")),
            ));
        };
        if index.insert(known, i).is_some() {
            return Err(PairingError::new(hline, known, "column given twice"));
        }
    }
    for required in ["board", "white", "black"] {
        if !index.contains_key(required) {
            return Err(PairingError::new(
                hline,
                required,
                "missing column (the header must name board, white and black)",
            ));
        }
    }
    Ok(index)
}

/// The pairings of a CSV file (the same for every round number: the file is the round).
pub fn parse(text: &str, round: u32) -> Result<LoadedRound, PairingError> {
    let first = text.lines().next().unwrap_or("");
    let sep = if !first.contains(',') && first.contains(';') {
        ';'
    } else {
        ','
    };
    let rows = records(text, sep)?;
    let Some((hline, header)) = rows.first() else {
        return Err(PairingError::new(0, "header", "the file is empty"));
    };
    let index = columns(*hline, header)?;
    let mut boards: Vec<(u32, Pairing)> = Vec::new();
    let mut seen: HashMap<u32, usize> = HashMap::new();
    for (line, row) in rows.iter().skip(1) {
        let line = *line;
        if row.len() > header.len() {
            return Err(PairingError::new(
                line,
                format!("column {}", header.len() + 1),
                format!("{} fields, the header has {}", row.len(), header.len()),
            ));
        }
        let get = |c: &str| -> &str {
            index
                .get(c)
                .and_then(|&i| row.get(i))
                .map_or("", |s| s.trim())
        };
        let b = get("board");
        let board = match b.parse::<u32>() {
            Ok(n) if n >= 1 && n as usize <= super::MAX_BOARDS => n,
            _ => {
                return Err(PairingError::new(
                    line,
                    "board",
                    format!("{b:?} is not a board number (1 to {})", super::MAX_BOARDS),
                ));
            }
        };
        if let Some(first) = seen.insert(board, line) {
            return Err(PairingError::new(
                line,
                "board",
                format!("board {board} is given twice (also on line {first})"),
            ));
        }
        let player = |side: &str| -> Result<Player, PairingError> {
            let f = |what: &str| format!("{side}_{what}");
            Ok(Player {
                name: super::name(line, side, get(side))?,
                fide_id: super::fide_id(line, &f("fide_id"), get(&f("fide_id")))?,
                title: super::title(line, &f("title"), get(&f("title")))?,
                elo: super::rating(line, &f("rating"), get(&f("rating")))?,
                federation: super::federation(line, &f("federation"), get(&f("federation")))?,
                team: super::team(line, &f("team"), get(&f("team")))?,
            })
        };
        boards.push((
            board,
            Pairing {
                white: player("white")?,
                black: player("black")?,
            },
        ));
    }
    boards.sort_by_key(|(b, _)| *b);
    Ok(LoadedRound {
        round,
        event: None,
        site: None,
        boards,
        ranks: HashMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_in_any_order_quotes_and_semicolons() {
        let text = "board,white,black,white_rating,black_rating,white_title,black_fide_id\n\
                    2,\"Berg, Emil\",\"Petrov, Ivan\",1980,2650,,24100010\n\
                    \n\
                    1,\"Kowalska, Anna\",\"Novak, Petr\",2390,2105,WGM,\n";
        let r = parse(text, 3).unwrap();
        assert_eq!(r.round, 3);
        assert_eq!(r.boards.len(), 2);
        let (n, p) = &r.boards[0];
        assert_eq!(*n, 1);
        assert_eq!(p.white.name.as_deref(), Some("Kowalska, Anna"));
        assert_eq!(p.white.title.as_deref(), Some("WGM"));
        assert_eq!(p.white.elo, Some(2390));
        assert_eq!(r.boards[1].1.black.fide_id, Some(24100010));
        let semi = "Board;White;Black\r\n1;Alpha, Ann;\"Beta; Bob\"\r\n";
        let r = parse(semi, 1).unwrap();
        assert_eq!(r.boards[0].1.black.name.as_deref(), Some("Beta; Bob"));
    }

    #[test]
    fn team_columns() {
        let text = "board,white,black,white_team,black_team\n\
                    1,\"Adler, Anna\",\"Engel, Emma\",SK Aachen,SF Berlin\n\
                    2,\"Fischer, Felix\",\"Bauer, Ben\",SF Berlin,SK Aachen\n\
                    3,A,B,,\n";
        let r = parse(text, 1).unwrap();
        assert_eq!(r.boards[0].1.white.team.as_deref(), Some("SK Aachen"));
        assert_eq!(r.boards[0].1.black.team.as_deref(), Some("SF Berlin"));
        assert_eq!(r.boards[1].1.white.team.as_deref(), Some("SF Berlin"));
        assert_eq!(r.boards[2].1.white.team, None, "blank: no team");
        let e = err("board,white,black,black_team\n1,A,B,\"Team \\ X\"\n");
        assert_eq!((e.line, e.field.as_str()), (2, "black_team"), "{e}");
    }

    fn err(text: &str) -> PairingError {
        parse(text, 1).unwrap_err()
    }

    #[test]
    fn broken_files_name_line_and_field() {
        let e = err("board,white,black,white_rating\n1,A,B,2000\n2,C,D,twothousand\n");
        assert_eq!((e.line, e.field.as_str()), (3, "white_rating"), "{e}");
        let e = err("board,white,black\n1,A,B\n1,C,D\n");
        assert_eq!((e.line, e.field.as_str()), (3, "board"), "{e}");
        let e = err("board,white,black,colour\n1,A,B,w\n");
        assert_eq!((e.line, e.field.as_str()), (1, "colour"), "{e}");
        let e = err("board,white\n1,A\n");
        assert_eq!((e.line, e.field.as_str()), (1, "black"), "{e}");
        let e = err("board,white,black\nx,A,B\n");
        assert_eq!((e.line, e.field.as_str()), (2, "board"), "{e}");
        let e = err("board,white,black\n1,A,\"B\n");
        assert_eq!(e.line, 2, "{e}");
        let e = err("board,white,black,black_title\n1,A,B,Dr\n");
        assert_eq!((e.line, e.field.as_str()), (2, "black_title"), "{e}");
        let e = err("board,white,black\n1,A,B,C\n");
        assert_eq!(e.line, 2, "{e}");
        let e = err("board,white,black\n1,A \\ B,C\n");
        assert_eq!(e.field, "white", "a backslash in a name is refused: {e}");
        assert!(e.to_string().starts_with("line 2, field white: "), "{e}");
    }
}
