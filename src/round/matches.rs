//! Team matches of a round: the boards whose players belong to the same two teams, one after
//! the other in board order, form a match; each team's board points (1, ½, 0 a board, from
//! the boards' results) and match points (2 a win, 1 a draw, 0 a loss on board points, once
//! every board of the match has a result). Pure: boards in, matches out.
//!
//! Colours are as the pairing gives them (in team events they usually alternate by board):
//! a board's points go to the team of the player who scored them, whatever their colour.
//! Two scores are kept: `confirmed` counts only the results the arbiter confirmed,
//! `provisional` also those the boards' games ended with but nobody confirmed yet.

use super::results::GameResult;

/// One board of a round as the match table needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardScore<'a> {
    /// Board number.
    pub number: u32,
    /// White's team.
    pub white_team: Option<&'a str>,
    /// Black's team.
    pub black_team: Option<&'a str>,
    /// The board's result: the arbiter's, else the one its game ended with (`None`: none yet).
    pub result: Option<GameResult>,
    /// Whether the arbiter confirmed it.
    pub confirmed: bool,
}

/// One match: two teams and their boards, with the points scored so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// The teams: the first is White's on the match's first board.
    pub teams: [String; 2],
    /// Its boards' numbers, in board order.
    pub boards: Vec<u32>,
    /// For each board (as [`Match::boards`]), which team has White: 0 or 1.
    pub white: Vec<usize>,
    /// Board points of each team, in half points, from the confirmed results alone.
    pub confirmed: [u32; 2],
    /// Board points of each team, in half points, from every result (confirmed or not).
    pub provisional: [u32; 2],
    /// How many of its boards have a result (confirmed or not).
    pub finished: usize,
    /// How many of its boards have a confirmed result.
    pub confirmed_boards: usize,
}

/// Match points of two teams from their board points: 2 the winner, 0 the loser, 1 each on a
/// draw.
pub fn match_points(half: [u32; 2]) -> [u32; 2] {
    match half[0].cmp(&half[1]) {
        std::cmp::Ordering::Greater => [2, 0],
        std::cmp::Ordering::Less => [0, 2],
        std::cmp::Ordering::Equal => [1, 1],
    }
}

impl Match {
    /// Match points from every result, once every board has one (`None` before).
    pub fn provisional_match_points(&self) -> Option<[u32; 2]> {
        (self.finished == self.boards.len()).then(|| match_points(self.provisional))
    }

    /// Match points from the confirmed results, once every board's is confirmed.
    pub fn confirmed_match_points(&self) -> Option<[u32; 2]> {
        (self.confirmed_boards == self.boards.len()).then(|| match_points(self.confirmed))
    }

    /// The side (0 or 1) of team `team`.
    fn side(&self, team: &str) -> usize {
        usize::from(self.teams[0] != team)
    }
}

/// The matches of a round's boards (in board order): consecutive boards whose players are of
/// the same two teams (in either colour) are one match. A board whose players are not of two
/// different teams is in no match (and ends the match before it).
pub fn matches(boards: &[BoardScore]) -> Vec<Match> {
    let mut out: Vec<Match> = Vec::new();
    let mut open = false;
    for b in boards {
        let (Some(w), Some(k)) = (b.white_team, b.black_team) else {
            open = false;
            continue;
        };
        if w == k {
            open = false;
            continue;
        }
        let same = |m: &Match| {
            (m.teams[0] == w && m.teams[1] == k) || (m.teams[0] == k && m.teams[1] == w)
        };
        if !(open && out.last().is_some_and(same)) {
            out.push(Match {
                teams: [w.to_string(), k.to_string()],
                boards: Vec::new(),
                white: Vec::new(),
                confirmed: [0, 0],
                provisional: [0, 0],
                finished: 0,
                confirmed_boards: 0,
            });
            open = true;
        }
        let Some(m) = out.last_mut() else { continue };
        let (ws, bs) = (m.side(w), m.side(k));
        m.boards.push(b.number);
        m.white.push(ws);
        if let Some(r) = b.result {
            let (wp, bp) = r.half_points();
            m.finished += 1;
            m.provisional[ws] += wp;
            m.provisional[bs] += bp;
            if b.confirmed {
                m.confirmed_boards += 1;
                m.confirmed[ws] += wp;
                m.confirmed[bs] += bp;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board<'a>(
        number: u32,
        white: &'a str,
        black: &'a str,
        result: Option<&str>,
        confirmed: bool,
    ) -> BoardScore<'a> {
        BoardScore {
            number,
            white_team: Some(white),
            black_team: Some(black),
            result: result.map(|r| r.parse().unwrap()),
            confirmed,
        }
    }

    /// Two matches of four boards, colours alternating by board: board points go to the team
    /// of the player who scored them (worked out by hand).
    #[test]
    fn boards_of_two_teams_form_a_match_and_points_follow_the_players() {
        let boards = [
            board(1, "A", "B", Some("1-0"), true),      // A 1
            board(2, "B", "A", Some("1-0"), true),      // B 1
            board(3, "A", "B", Some("1/2-1/2"), false), // ½ each, not confirmed
            board(4, "B", "A", Some("0-1"), false),     // A 1, not confirmed
            board(5, "C", "D", Some("+"), true),        // C 1 (forfeit)
            board(6, "D", "C", None, false),
            board(7, "C", "D", Some("--"), true),  // nobody
            board(8, "D", "C", Some("0-1"), true), // C 1
        ];
        let m = matches(&boards);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].teams, ["A".to_string(), "B".to_string()]);
        assert_eq!(m[0].boards, [1, 2, 3, 4]);
        assert_eq!(m[0].white, [0, 1, 0, 1]);
        assert_eq!(m[0].confirmed, [2, 2], "1-1 confirmed");
        assert_eq!(m[0].provisional, [5, 3], "2½-1½ with the unconfirmed");
        assert_eq!(m[0].provisional_match_points(), Some([2, 0]));
        assert_eq!(m[0].confirmed_match_points(), None);
        assert_eq!(m[1].teams, ["C".to_string(), "D".to_string()]);
        assert_eq!(m[1].provisional, [4, 0]);
        assert_eq!((m[1].finished, m[1].confirmed_boards), (3, 3));
        assert_eq!(m[1].provisional_match_points(), None, "board 6 plays on");
    }

    #[test]
    fn a_drawn_match_and_boards_outside_matches() {
        let mut boards = vec![
            board(1, "A", "B", Some("1-0"), true),
            board(2, "B", "A", Some("1-0"), true),
        ];
        // A board without teams ends the match; the same teams after it are a new match.
        boards.push(BoardScore {
            number: 3,
            white_team: None,
            black_team: Some("A"),
            result: None,
            confirmed: false,
        });
        boards.push(board(4, "B", "A", None, false));
        let m = matches(&boards);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].confirmed_match_points(), Some([1, 1]));
        assert_eq!(m[1].teams, ["B".to_string(), "A".to_string()]);
        assert_eq!(m[1].boards, [4]);
        assert!(matches(&[board(1, "A", "A", None, false)]).is_empty());
    }
}
