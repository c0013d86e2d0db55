//! PGN as the tests read it: tags, main-line moves as printed and the comments after each, by
//! `pgn-reader` (the same reader for eboardd's output and for files others wrote).

use std::{collections::BTreeMap, io::Cursor, ops::ControlFlow};

use pgn_reader::{Outcome, RawComment, RawTag, Reader, SanPlus, Visitor};

/// One game as printed: its tags and main line.
#[derive(Debug, Default)]
pub struct PgnGame {
    /// Tags by name.
    pub tags: BTreeMap<String, String>,
    /// Main-line moves as printed, with the comments that follow each.
    pub moves: Vec<PgnMove>,
    /// The game termination marker.
    pub outcome: Option<String>,
    /// Comments before the first move.
    pub leading_comments: Vec<String>,
}

/// One main-line move as printed, with the comments that follow it.
#[derive(Debug)]
pub struct PgnMove {
    /// SAN as printed.
    pub san: String,
    /// The comments after it, each without its braces.
    pub comments: Vec<String>,
}

impl PgnGame {
    /// A tag's value.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags.get(name).map(String::as_str)
    }
}

/// Collects tags, main-line SANs and comments; variations are skipped (the default).
pub struct Collect;

impl Visitor for Collect {
    type Tags = BTreeMap<String, String>;
    type Movetext = PgnGame;
    type Output = PgnGame;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(BTreeMap::new())
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        tags.insert(
            String::from_utf8_lossy(name).into_owned(),
            value.decode_utf8_lossy().into_owned(),
        );
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        ControlFlow::Continue(PgnGame {
            tags,
            ..PgnGame::default()
        })
    }

    fn san(&mut self, game: &mut Self::Movetext, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        game.moves.push(PgnMove {
            san: san_plus.to_string(),
            comments: Vec::new(),
        });
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        game: &mut Self::Movetext,
        comment: RawComment<'_>,
    ) -> ControlFlow<Self::Output> {
        let text = String::from_utf8_lossy(comment.as_bytes()).into_owned();
        match game.moves.last_mut() {
            Some(last) => last.comments.push(text),
            None => game.leading_comments.push(text),
        }
        ControlFlow::Continue(())
    }

    fn outcome(
        &mut self,
        game: &mut Self::Movetext,
        outcome: Outcome,
    ) -> ControlFlow<Self::Output> {
        game.outcome = Some(outcome.to_string());
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, game: Self::Movetext) -> Self::Output {
        game
    }
}

/// Every game of a PGN text.
pub fn parse_pgn(text: &[u8]) -> Result<Vec<PgnGame>, String> {
    let mut reader = Reader::new(Cursor::new(text));
    let mut games = Vec::new();
    while let Some(game) = reader
        .read_game(&mut Collect)
        .map_err(|e| format!("cannot read PGN: {e}"))?
    {
        games.push(game);
    }
    Ok(games)
}

/// The seconds of a `[%clk h:mm:ss]` or `[%emt h:mm:ss]` command in a comment (`name` is
/// `clk` or `emt`; a line break may stand for the space, as LiveChess wraps lines inside
/// comments); fractions of a second are dropped.
pub fn clock_command(comment: &str, name: &str) -> Option<u32> {
    let tag = format!("[%{name}");
    let at = comment.find(&tag)?;
    let rest = &comment[at + tag.len()..];
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let value = rest.split(']').next()?.trim();
    let mut seconds = 0u32;
    for part in value.split('.').next()?.split(':') {
        seconds = seconds.checked_mul(60)?.checked_add(part.parse().ok()?)?;
    }
    Some(seconds)
}

/// The clock comments of a move as LiveChess writes them: `{[%clk …]}` then, except on the
/// game's first move, `{[%emt …]}`, each its own comment. Returns `(clk, emt)` in seconds, or
/// why the move's comments have another shape.
pub fn clock_comments(m: &PgnMove, first: bool) -> Result<(Option<u32>, Option<u32>), String> {
    let kinds: Vec<&str> = m
        .comments
        .iter()
        .map(|c| {
            if clock_command(c, "clk").is_some() && clock_command(c, "emt").is_none() {
                "clk"
            } else if clock_command(c, "emt").is_some() && clock_command(c, "clk").is_none() {
                "emt"
            } else {
                "other"
            }
        })
        .filter(|k| *k != "other")
        .collect();
    let clk = m.comments.iter().find_map(|c| clock_command(c, "clk"));
    let emt = m.comments.iter().find_map(|c| clock_command(c, "emt"));
    let want: &[&str] = match (clk.is_some(), first) {
        (false, _) => &[],
        (true, true) => &["clk"],
        (true, false) => &["clk", "emt"],
    };
    if kinds != want {
        return Err(format!(
            "{}: comments {:?}, want {want:?}",
            m.san, m.comments
        ));
    }
    Ok((clk, emt))
}

/// Every move of every game in `text` that has a `[%clk]` has its `[%emt]` after it (the
/// game's first move excepted), as LiveChess writes them; `what` names the output in the panic.
pub fn assert_emt_on_every_clocked_move(what: &str, text: &str) {
    let games = parse_pgn(text.as_bytes()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut clocked = 0;
    for game in &games {
        for (i, m) in game.moves.iter().enumerate() {
            let (clk, _) = clock_comments(m, i == 0).unwrap_or_else(|e| panic!("{what}: {e}"));
            clocked += usize::from(clk.is_some() && i > 0);
        }
    }
    assert!(clocked > 0, "{what}: no move with a clock in:\n{text}");
}
