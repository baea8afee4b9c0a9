//! Whether a change set replaces or removes whole content the agent saw only in part,
//! following that content through the set's moves: the one rule `change_set` and
//! `apply_patch` share (`PARTLY_SEEN`).
//!
//! A path whose revision the agent saw in part holds that content at the start. An edit (a
//! patch's hunks) keeps it; a move carries it to the destination; a write, a delete, an Add
//! or a move onto the path destroys what the path holds — refused when it holds such
//! content. So moving a file read in part and then deleting or overwriting it, in the same
//! set, is refused as a delete of it would be, and a plain move is not.

use std::collections::HashMap;

/// What one operation does to the content of its paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step<'a> {
    /// An edit or a patch's hunks: the content stays, changed in place.
    Keep(&'a str),
    /// A write or an Add: the content is replaced whole.
    Replace(&'a str),
    /// A delete.
    Remove(&'a str),
    /// A move: the content goes to the destination, replacing whatever that held.
    Move(&'a str, &'a str),
}

/// The first path seen in part (`partly`) whose content `steps` replace or remove whole,
/// and the verb for its message ("overwrite" or "delete"); `None` when every such content
/// survives, edited or moved.
pub(super) fn replaced<'a>(
    steps: &[Step<'a>],
    partly: &dyn Fn(&str) -> bool,
) -> Option<(String, &'static str)> {
    // Which seen-in-part base (by its path) each path holds now.
    let mut holds: HashMap<&'a str, Option<&'a str>> = HashMap::new();
    for step in steps {
        match *step {
            Step::Keep(path) => {
                origin(&mut holds, path, partly);
            }
            Step::Replace(path) | Step::Remove(path) => {
                if let Some(base) = origin(&mut holds, path, partly) {
                    let verb = if matches!(step, Step::Remove(_)) {
                        "delete"
                    } else {
                        "overwrite"
                    };
                    return Some((base.to_owned(), verb));
                }
            }
            Step::Move(from, to) => {
                let carried = origin(&mut holds, from, partly);
                if let Some(base) = origin(&mut holds, to, partly) {
                    return Some((base.to_owned(), "overwrite"));
                }
                holds.insert(from, None);
                holds.insert(to, carried);
            }
        }
    }
    None
}

/// The seen-in-part base `path` holds now: at its first mention, itself when seen in part.
fn origin<'a>(
    holds: &mut HashMap<&'a str, Option<&'a str>>,
    path: &'a str,
    partly: &dyn Fn(&str) -> bool,
) -> Option<&'a str> {
    *holds
        .entry(path)
        .or_insert_with(|| partly(path).then_some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(steps: &[Step<'_>]) -> Option<(String, &'static str)> {
        replaced(steps, &|p| p == "long")
    }

    #[test]
    fn content_seen_in_part_is_followed_through_moves() {
        use Step::{Keep, Move, Remove, Replace};
        let refused =
            |s: &[Step<'_>], verb| assert_eq!(check(s), Some(("long".to_owned(), verb)), "{s:?}");
        refused(&[Remove("long")], "delete");
        refused(&[Replace("long")], "overwrite");
        refused(&[Keep("long"), Replace("long")], "overwrite");
        refused(&[Move("long", "tmp"), Remove("tmp")], "delete");
        refused(&[Move("long", "tmp"), Replace("tmp")], "overwrite");
        refused(
            &[Move("long", "tmp"), Move("tmp", "long"), Replace("long")],
            "overwrite",
        );
        refused(&[Move("other", "long")], "overwrite");
        refused(
            &[
                Move("long", "a"),
                Move("a", "b"),
                Move("b", "c"),
                Remove("c"),
            ],
            "delete",
        );
        refused(&[Move("long", "tmp"), Move("x", "tmp")], "overwrite");
        // What keeps the content lands.
        let lands = |s: &[Step<'_>]| assert_eq!(check(s), None, "{s:?}");
        lands(&[Keep("long")]);
        lands(&[Move("long", "tmp")]);
        lands(&[Move("long", "tmp"), Keep("tmp"), Move("tmp", "long")]);
        lands(&[Move("long", "tmp"), Replace("long")]);
        lands(&[Move("long", "tmp"), Remove("long")]);
        lands(&[Replace("other"), Remove("other"), Move("x", "y")]);
    }
}
