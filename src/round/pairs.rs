//! The pairing list JaVaFo and BBP Pairings print (`-p FILE`; BBP Pairings' README: "designed
//! to be very similar to that described in the advanced user manual for JaVaFo 1.4"): a first
//! line with the number of pairs, then one pair a line, `white black` start ranks, a bye
//! `N 0`. Board order is the order of the pairs. [`parse`] reads it; [`merge`] writes it into
//! the TRF it was paired from, so that the round loads as any TRF round (in the list's order).

use std::collections::HashMap;

use super::results::{Ranks, WriteError, fill_round};
use super::{LoadedRound, PairingError};

/// One line of a pairing list: White's and Black's start ranks (`black` 0: a bye for `white`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// White's start rank (or the player with the bye).
    pub white: u32,
    /// Black's start rank, 0 for a bye.
    pub black: u32,
}

/// Read a pairing list (line ends `\n`, `\r\n` or `\r`; blank lines skipped).
pub fn parse(text: &str) -> Result<Vec<Pair>, PairingError> {
    let mut lines = text
        .split(['\n', '\r'])
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    // Line numbers count `\r\n` as two ends: count them again on `\n` alone when present.
    let crlf = text.contains("\r\n");
    let line_no = |i: usize| if crlf { i.div_ceil(2) } else { i };
    let Some((first, count)) = lines.next() else {
        return Err(PairingError::new(0, "pairs", "the pairing list is empty"));
    };
    let count: usize = count.parse().map_err(|_| {
        PairingError::new(
            line_no(first),
            "number of pairs",
            format!("{count:?} is not the number of pairs"),
        )
    })?;
    if count > super::MAX_BOARDS {
        return Err(PairingError::new(
            line_no(first),
            "number of pairs",
            format!("more than {} pairs", super::MAX_BOARDS),
        ));
    }
    let mut pairs = Vec::new();
    let mut seen: HashMap<u32, usize> = HashMap::new();
    for (i, l) in lines {
        let n = line_no(i);
        let fields: Vec<&str> = l.split_whitespace().collect();
        let [w, b] = fields[..] else {
            return Err(PairingError::new(
                n,
                "pair",
                format!("{l:?} is not a pair of start ranks (\"white black\")"),
            ));
        };
        let rank = |s: &str, field: &str| {
            s.parse::<u32>()
                .map_err(|_| PairingError::new(n, field, format!("{s:?} is not a start rank")))
        };
        let pair = Pair {
            white: rank(w, "white")?,
            black: rank(b, "black")?,
        };
        if pair.white == 0 {
            return Err(PairingError::new(n, "white", "start ranks begin at 1"));
        }
        for p in [pair.white, pair.black].into_iter().filter(|&p| p != 0) {
            if let Some(before) = seen.insert(p, n) {
                return Err(PairingError::new(
                    n,
                    "pair",
                    format!("start rank {p} is paired twice (also on line {before})"),
                ));
            }
        }
        pairs.push(pair);
    }
    if pairs.len() != count {
        return Err(PairingError::new(
            line_no(first),
            "number of pairs",
            format!("the list says {count} pairs but gives {}", pairs.len()),
        ));
    }
    Ok(pairs)
}

/// The TRF `trf` with round `round` paired as `pairs` says: each player's opponent and colour
/// (result blank), a bye `0000 - U` (the pairing-allocated bye, its point counted); the ranks
/// kept (the standings before the round, which the results' ranking breaks ties by); every
/// other byte kept ([`fill_round`]).
pub fn merge(trf: &[u8], round: u32, pairs: &[Pair]) -> Result<Vec<u8>, WriteError> {
    let mut wanted = HashMap::new();
    for p in pairs {
        if p.black == 0 {
            wanted.insert(p.white, (0, '-', 'U'));
        } else {
            wanted.insert(p.white, (p.black, 'w', ' '));
            wanted.insert(p.black, (p.white, 'b', ' '));
        }
    }
    fill_round(trf, round, &wanted, Ranks::Keep)
}

/// `loaded` (the round as parsed from the merged TRF) with its boards in the order of `pairs`.
pub fn in_list_order(mut loaded: LoadedRound, pairs: &[Pair]) -> LoadedRound {
    let by_ranks: HashMap<(u32, u32), super::Pairing> = loaded
        .boards
        .drain(..)
        .filter_map(|(n, p)| Some((*loaded.ranks.get(&n)?, p)))
        .collect();
    loaded.ranks.clear();
    for (i, pair) in pairs.iter().filter(|p| p.black != 0).enumerate() {
        let ranks = (pair.white, pair.black);
        if let Some(p) = by_ranks.get(&ranks) {
            let board = i as u32 + 1;
            loaded.boards.push((board, p.clone()));
            loaded.ranks.insert(board, ranks);
        }
    }
    loaded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/trf")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn a_list_as_the_engines_print_it() {
        let pairs = parse("3\r\n3 5\r\n2 4\r\n6 0\r\n").unwrap();
        assert_eq!(
            pairs,
            [
                Pair { white: 3, black: 5 },
                Pair { white: 2, black: 4 },
                Pair { white: 6, black: 0 },
            ]
        );
    }

    #[test]
    fn broken_lists_name_line_and_field() {
        let e = parse("2\n1 2\n").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "number of pairs"), "{e}");
        let e = parse("2\n1 2\n3 1\n").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (3, "pair"), "{e}");
        let e = parse("1\n1 x\n").unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "black"), "{e}");
        let e = parse("1\n1 2 3\n").unwrap_err();
        assert_eq!(e.field, "pair");
        assert_eq!(parse("").unwrap_err().field, "pairs");
        assert_eq!(parse("x\n").unwrap_err().field, "number of pairs");
    }

    /// Round 4 of `round4-unpaired.trf` (rounds 1–3 played, nothing of round 4) paired by a
    /// list: the merged file is `round4-paired.trf` byte for byte, and loads in the list's
    /// board order; a bye (`N 0`) is written `0000 - U` with its point.
    #[test]
    fn a_list_merged_into_its_trf_loads_in_the_lists_order() {
        let unpaired = data("round4-unpaired.trf");
        let pairs = parse("3\n6 1\n3 5\n2 4\n").unwrap();
        let merged = merge(&unpaired, 4, &pairs).unwrap();
        let text = String::from_utf8(merged).unwrap();
        let paired = String::from_utf8(data("round4-paired.trf")).unwrap();
        assert_eq!(text, paired);
        let loaded = super::super::trf::parse(&text, 4).unwrap();
        let loaded = in_list_order(loaded, &pairs);
        let order: Vec<(u32, (u32, u32))> = loaded
            .boards
            .iter()
            .map(|(n, _)| (*n, loaded.ranks[n]))
            .collect();
        assert_eq!(order, [(1, (6, 1)), (2, (3, 5)), (3, (2, 4))]);
        assert_eq!(loaded.boards[0].1.white.name.as_deref(), Some("Berg, Emil"));
        // A bye: start rank 5 gets 0000 - U and a point; 3 plays 6.
        let pairs = parse("2\n6 3\n5 0\n").unwrap();
        let merged = String::from_utf8(merge(&unpaired, 4, &pairs).unwrap()).unwrap();
        let novak = merged.lines().find(|l| l.contains("Novak")).unwrap();
        assert_eq!(&novak[80..84], " 1.5");
        assert_eq!(&novak[121..129], "0000 - U");
        // Nothing is played yet: every rank stays as the file had it.
        for (line, before) in merged
            .lines()
            .zip(String::from_utf8(unpaired).unwrap().lines())
        {
            if line.starts_with("001") {
                assert_eq!(line.get(85..89), before.get(85..89), "{line}");
            }
        }
    }
}
